"""Test plugin without a DL library: its start-up and every model take MEMO_TEST_SLOW_S seconds (default 0),
then it echoes its inputs. Shows what the per-model limit counts (not the start-up; a grace for a first model)."""
import os
import time

from memo.backends import BackendSpec

SLOW_S = float(os.environ.get("MEMO_TEST_SLOW_S", "0"))


def setup():
    time.sleep(SLOW_S)
    return {}


def run(path, inputs):
    time.sleep(SLOW_S)
    return list(inputs.values())


SPEC = BackendSpec(name="slow-model", consumes="keras", load=str, run=run, setup=setup)
