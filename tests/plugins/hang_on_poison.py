"""Test plugin: ONNX Runtime, except that loading an artifact whose path says "poison" never returns."""
import time

from memo.backends import BackendSpec
from memo.backends.onnxruntime_backend import SPEC as ORT


def load(path):
    while "poison" in str(path):
        time.sleep(1)
    return ORT.load(path)


SPEC = BackendSpec(name="hang-on-poison", consumes="onnx", load=load, run=ORT.run, setup=ORT.setup,
                   unsupported_patterns=ORT.unsupported_patterns, messages=ORT.messages)  # declines what ORT declines
