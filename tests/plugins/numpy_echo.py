"""Test plugin without a DL library (starts in a fraction of a second): returns its inputs as outputs."""
from memo.backends import BackendSpec


def run(path, inputs):
    return list(inputs.values())


SPEC = BackendSpec(name="numpy-echo", consumes="keras", load=str, run=run)
