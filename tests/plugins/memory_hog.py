"""Test plugin without a DL library: a model whose first input's first value is above 0 makes it hold that many
hundred MB (touched, so resident) for a few seconds before it echoes its inputs. Shows the bound on one model's
memory (memo.backends.supervisor.request_memory_bound)."""
import time

import numpy as np

from memo.backends import BackendSpec

HOLD_S = 5.0


def run(path, inputs):
    hundreds = int(next(iter(inputs.values())).flat[0])
    if hundreds > 0:
        held = np.ones(hundreds * 100 * 2**20, dtype=np.uint8)  # np.ones writes every page
        time.sleep(HOLD_S)
        del held
    return list(inputs.values())


SPEC = BackendSpec(name="memory-hog", consumes="keras", load=str, run=run)
