"""Test plugin without a DL library: raises on its first model ever (``MEMO_TEST_CRASH_ONCE_DIR`` holds the mark, so
a fresh worker or a repro script remembers it), echoes its inputs after; with ``MEMO_TEST_CRASH_ALWAYS=1`` it raises
on every model, its message saying whether the model holds a ReLU layer (two bugs). A flaky crash that triage must
call "not shown again", steady ones it must reduce."""
import json
import os
import zipfile
from pathlib import Path

from memo.backends import BackendSpec


def _has_relu(path):
    with zipfile.ZipFile(path) as archive:
        config = json.loads(archive.read("config.json"))
    return any(layer["class_name"] == "ReLU" for layer in config["config"]["layers"])


def run(path, inputs):
    mark = Path(os.environ["MEMO_TEST_CRASH_ONCE_DIR"]) / "crashed"
    if os.environ.get("MEMO_TEST_CRASH_ALWAYS") == "1" or not mark.exists():
        mark.touch()
        raise ValueError(f"planted bug: this engine fails on a model {'with' if _has_relu(path) else 'without'} ReLU")
    return list(inputs.values())


SPEC = BackendSpec(name="crash-once", consumes="keras", load=str, run=run)
