"""A memo backend plugin: ONNX Runtime with every graph optimization turned off.

    python -m memo run examples/conv_net.json --backend-plugin examples/plugins/onnxruntime_noopt.py

Differences against the default `onnxruntime` backend (all optimizations on) point at ORT's optimizer.
"""
from memo.backends import BackendSpec


def load(path):
    import onnxruntime  # imported in the plugin's own worker process, never in memo's

    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def run(session, inputs):  # inputs: {name: array} in model-input order; return arrays in model-output order
    feed = {arg.name: array for arg, array in zip(session.get_inputs(), inputs.values())}
    return session.run(None, feed)


SPEC = BackendSpec(name="onnxruntime-noopt", consumes="onnx", load=load, run=run)
