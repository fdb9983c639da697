"""OpenVINO (CPU plugin) on tf2onnx's default-opset conversion.

Stages: ``convert`` is OpenVINO's ONNX frontend turning the file into an ``ov.Model`` (``Core.read_model``),
``load`` the CPU plugin's compilation (``Core.compile_model``), ``execute`` one inference request. The
model keeps its dynamic batch dimension: the CPU plugin compiles it with a dynamic shape and infers the
batch from the inputs, as it does for a user's ONNX file.

The CPU plugin runs single-threaded (one inference thread, one stream, no core pinning) and in f32:
on CPUs with bf16 or fp16 units its default ``INFERENCE_PRECISION_HINT`` is that lower precision, which
would make every difference from the reference a precision artefact rather than a bug.

openvino is imported inside the functions below, which run in the worker only: the orchestrator
imports this module to read the spec and must never import a library under test.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from memo.backends import trackers
from memo.backends.idioms import engine_idiom
from memo.backends.spec import BackendSpec, MessageRules, ModelInputs, ReproRecipe, UnsupportedPhrase, Upstream
from memo.backends.versions import distribution_versions

DISTRIBUTIONS = ("openvino",)

# compile_model's configuration: one core, full precision.
CPU_CONFIG = {
    "INFERENCE_NUM_THREADS": 1,
    "NUM_STREAMS": 1,
    "PERFORMANCE_HINT": "LATENCY",
    "ENABLE_CPU_PINNING": False,
    "ENABLE_HYPER_THREADING": False,
    "INFERENCE_PRECISION_HINT": "f32",
}


def _setup() -> dict[str, str]:
    import openvino  # noqa: F401

    return distribution_versions(DISTRIBUTIONS)


def _convert(path: Path) -> Any:
    """OpenVINO's ONNX frontend: the file read and converted to an ``ov.Model``."""
    import openvino

    return openvino.Core().read_model(str(path))


def _load(model: Any) -> Any:
    """The CPU plugin compiles the model (dynamic batch kept), single-threaded, in f32."""
    import openvino

    return openvino.Core().compile_model(model, "CPU", CPU_CONFIG)


def _run(compiled: Any, inputs: ModelInputs) -> list[Any]:
    """One inference: inputs by position (the ONNX graph's inputs are the model's, in order); outputs in
    the compiled model's order, which is the ONNX graph's output order (the frontend keeps it)."""
    request = compiled.create_infer_request()
    results = request.infer({port: array for port, array in zip(compiled.inputs, inputs.values())})
    return [results[port] for port in compiled.outputs]  # copies of the output tensors (infer's default)


# The ONNX frontend's report when an op has no translator, and nothing else failed: its summary then lists
# only "No conversion rule found" (an op whose translator raised adds a "Failed operations detailed log"
# after "Model wasn't fully converted." and "Conversion is failed for" to the summary: a bug, not a refusal).
# The example is OpenVINO 2026.4's message for a one-node ONNX graph of StringNormalizer (opset 18).
UNSUPPORTED = (
    UnsupportedPhrase(r"Model wasn't fully converted\.\nSummary:\n"
                      r"-- No conversion rule found for operations: [^\n]*\n*$", exc_types=("RuntimeError",),
                      example="Exception from src/inference/src/cpp/core.cpp:84:\nCheck 'false' failed at "
                              "src/frontends/common_translators/src/unconverted_ops_report.cpp:151:\nFrontEnd API "
                              "failed with OpConversionFailure:\nModel wasn't fully converted.\nSummary:\n-- No "
                              "conversion rule found for operations: StringNormalizer-18\n\n"),
)

# No documented differences: its bicubic Resize differs from TensorFlow on tf2onnx's file (max |diff| 0.04 on a
# 4x4 -> 7x7 Resizing), but that file's cubic_coeff_a=-0.5 and exclude_outside=1 fix the result: a bug.
UPSTREAM = Upstream("active", "https://github.com/openvinotoolkit/openvino/issues",
                    "Intel releases OpenVINO several times a year (2026.4.1 installed)", trackers.OPENVINO)

# Its ONNX frontend lists the operations it failed to convert, each with its message ("-- Conv-17 with a message:
# While validating ONNX node '<Node(Conv): y>': ..."), sorted by name, not by the graph: an operation reading what an
# unconverted one left fails on its element type ("Element not supported", element_visitor.hpp), a cascade, never
# the cause where another failure is listed (t53: LSTM, LeakyRelu and Pad after ConvLSTM's Loop; the file passes
# onnx.checker and ONNX Runtime runs it). Of the others the first is taken.
_ELEMENT_TYPE = r":\s*Exception from \S+\s*Element not supported"  # a node's failure on its input's element type
MESSAGES = MessageRules(failing_nodes=(
    rf"-- (?P<op>[A-Za-z]\w*)-\d+ with a message:(?!(?:(?!-- )[^'])*'<Node\(\w+\): [^>]*>'{_ELEMENT_TYPE})",
    rf"While validating ONNX node '<Node\((?P<op>[A-Za-z]\w*)\): (?P<node>[^>]*)>'(?!{_ELEMENT_TYPE})"))

SPEC = BackendSpec(name="openvino", consumes="onnx", convert=_convert, load=_load, run=_run, setup=_setup,
                   distributions=DISTRIBUTIONS, unsupported_patterns=UNSUPPORTED, repro=ReproRecipe(),
                   upstream=UPSTREAM, messages=MESSAGES, idiom=engine_idiom("openvino", (
                       'onnx.save(model, "bug.onnx")',
                       'compiled = openvino.Core().compile_model("bug.onnx", "CPU", {"INFERENCE_PRECISION_HINT": "f32"})',
                       "result = compiled(list(feed.values()))",
                       "actual = [result[output] for output in compiled.outputs]")))
