"""The files of an artifact, by kind, relative to its directory (what :mod:`memo.artifact` writes and reads).

Stdlib only: the backend declarations (:mod:`memo.backends.spec`, imported by every worker environment,
MXNet's included) check what a backend consumes against :data:`ARTIFACT_KINDS`, and this module sits below
both them and :mod:`memo.artifact`, so that neither imports the other for it.
"""
from __future__ import annotations

# The files a backend can consume, by kind. "onnx" is tf2onnx's default-opset conversion (dynamic batch);
# "onnx-opset11" is the opset-11, static-shape conversion with every initializer listed as a graph input, the
# form MXNet's importer accepts; "tflite" is TensorFlow's TFLite converter's flatbuffer (run by LiteRT);
# "keras-onnx" is Keras's own ONNX export (``Model.export(format="onnx")`` on the torch backend, i.e.
# torch.onnx), a second, independent path to ONNX.
ARTIFACT_FILES = {"keras": "model.keras", "onnx": "onnx/model.onnx", "onnx-opset11": "onnx/model.opset11.onnx",
                  "tflite": "tflite/model.tflite", "keras-onnx": "keras-onnx/model.onnx"}
ARTIFACT_KINDS = tuple(ARTIFACT_FILES)

INPUTS_FILE = "inputs.npz"  # the input arrays, keyed by model-input name
IR_FILE = "model.ir.json"  # memo's IR of the model
OUTPUTS_DIR = "outputs"  # each backend's outputs, as BACKEND.npz
# What the orchestrator writes; everything else in the directory is written by a run.
BASE_FILES = (ARTIFACT_FILES["keras"], INPUTS_FILE, IR_FILE)
