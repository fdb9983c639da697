"""Test plugin: ONNX Runtime, except that a model holding a Relu node makes ``run`` raise, always with the
same message: a planted bug that triage must reduce to the one layer that makes a Relu and reproduce."""
import onnx

from memo.backends import BackendSpec
from memo.backends.onnxruntime_backend import SPEC as ORT


def load(path):
    return onnx.load(str(path)), ORT.load(path)


def run(handle, inputs):
    model, session = handle
    if any(node.op_type == "Relu" for node in model.graph.node):
        raise ValueError("planted bug: this engine cannot run Relu")
    return ORT.run(session, inputs)


SPEC = BackendSpec(name="crash-on-relu", consumes="onnx", load=load, run=run, setup=ORT.setup,
                   unsupported_patterns=ORT.unsupported_patterns, messages=ORT.messages)  # declines what ORT declines
