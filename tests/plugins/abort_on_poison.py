"""Test plugin: ONNX Runtime, except that loading an artifact whose path says "poison" aborts the process."""
import os

from memo.backends import BackendSpec
from memo.backends.onnxruntime_backend import SPEC as ORT


def load(path):
    if "poison" in str(path):
        os.abort()
    return ORT.load(path)


SPEC = BackendSpec(name="abort-on-poison", consumes="onnx", load=load, run=ORT.run, setup=ORT.setup,
                   unsupported_patterns=ORT.unsupported_patterns, messages=ORT.messages)  # declines what ORT declines
