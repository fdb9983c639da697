"""Is a converter's ONNX file valid? Checked before any ONNX engine runs it.

A converter that writes an invalid model (one the ONNX spec forbids) makes every engine that runs it look
wrong: tf2onnx's ConvTranspose with negative pads blamed ONNX Runtime, OpenVINO, MXNet and onnx2pytorch; its
Resize whose float32 scale gives 16 rows where TensorFlow gives 17 blamed onnx2pytorch and onnx2torch, which
follow the ONNX rule. :func:`validity_problems` lists what is wrong with a written file, most specific first:

* memo's own rules (first in ``VALIDITY_RULES``), for violations the checker reports only vaguely or under
  another node's name: negative ``pads`` on a convolution or pooling node; a Resize whose constant ``scales``
  give, by the spec's output-size rule, a size other than the one the converter declared for its output
  (the checker names the Transpose after it: "Inferred shape and existing shape differ");
* ``onnx.checker.check_model(full_check=True)``: the model's structure, types and (strict) shape inference;
* strict shape inference with data propagation (``infer_shapes(strict_mode=True, data_prop=True)``), which
  also follows shapes computed by Shape/Gather/Concat chains.

None of these fails on a valid file for a benign reason (docs/benchmarks.md, "Validity of converted ONNX
files"). onnx is imported inside the functions: this module is inlined
into standalone repro scripts (:mod:`memo.triage.inline`) and imported by the orchestrator.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from memo.backends.result import ConversionProblem

# Nodes whose ``pads`` attribute the spec bounds below by 0 (the same words in each operator's schema).
PADDED_OPS = ("Conv", "ConvTranspose", "ConvInteger", "QLinearConv", "MaxPool", "MaxUnpool", "AveragePool", "LpPool",
              "Col2Im")
# onnx.defs "pads" attribute of each of them (Conv, ConvTranspose, MaxPool... at opset 22): "Padding for the
# beginning and ending along each spatial axis, it can take any value greater than or equal to 0."
PADS_RULE = "the ONNX spec: pads 'can take any value greater than or equal to 0'"
# What the operator docs say an attribute may hold, which onnx.checker tests only in newer releases (1.14 lets
# negative pads pass): operator -> (attribute, least value of each entry, the docs' words). A converter's minimal script checks these on the file it writes
# (:mod:`memo.filing.script`), and :func:`negative_pads` on every converted file.
ATTRIBUTE_BOUNDS: dict[str, tuple[str, int, str]] = {op: ("pads", 0, PADS_RULE) for op in PADDED_OPS}
# onnx.defs Resize (opset 10-19): "Each dimension value of the output tensor is:
# output_dimension = floor(input_dimension * (roi_end - roi_start) * scale) if input "sizes" is not specified";
# roi "only takes effect when coordinate_transformation_mode is "tf_crop_and_resize"" (else roi is [0, 1]).
# The reference implementation (onnx.reference.ops.op_resize) computes the product of the float32 scale and
# the integer size in float64, exactly, then truncates: so does this rule.
RESIZE_RULE = "the ONNX spec: output_dimension = floor(input_dimension * scale)"


@dataclass(frozen=True)
class ValidityProblem:
    """One reason a model is invalid: the check that found it, the node's op type (None: the whole model)."""

    check: str
    message: str
    op: str | None = None


def _onnx_model(model: Any) -> Any:
    import onnx

    return onnx.load(str(model)) if isinstance(model, (str, Path)) else model


def _error_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


def _constant_tensors(model: Any) -> dict[str, Any]:
    """Tensors known without running the model: initializers and Constant nodes' values, by name."""
    from onnx import numpy_helper

    values = {init.name: numpy_helper.to_array(init) for init in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "Constant" and node.output:
            for attr in node.attribute:
                if attr.name == "value":
                    values[node.output[0]] = numpy_helper.to_array(attr.t)
    return values


def _declared_shapes(model: Any) -> dict[str, list[int | None]]:
    """The shapes the model declares (graph inputs, value_info, graph outputs); None for an unknown dim."""
    shapes = {}
    for info in [*model.graph.input, *model.graph.value_info, *model.graph.output]:
        if info.type.HasField("tensor_type") and info.type.tensor_type.HasField("shape"):
            shapes[info.name] = [dim.dim_value if dim.HasField("dim_value") else None
                                 for dim in info.type.tensor_type.shape.dim]
    return shapes


def negative_pads(model: Any) -> list[ValidityProblem]:
    """Nodes with an attribute entry below the bound :data:`ATTRIBUTE_BOUNDS` gives it: convolution and pooling
    nodes whose ``pads`` has a negative entry (:data:`PADS_RULE`)."""
    problems = []
    for node in model.graph.node:
        if node.op_type not in ATTRIBUTE_BOUNDS or node.domain not in ("", "ai.onnx"):
            continue
        name, least, words = ATTRIBUTE_BOUNDS[node.op_type]
        values = next((list(attr.ints) for attr in node.attribute if attr.name == name), [])
        if any(value < least for value in values):
            problems.append(ValidityProblem("negative-pads", f"{node.op_type} node {node.name!r} has negative {name} "
                                            f"{values} ({words})", node.op_type))
    return problems


def _onnx_opset(model: Any) -> int:
    return next((entry.version for entry in model.opset_import if entry.domain in ("", "ai.onnx")), 0)


# Ops whose output is their input, or its permutation: a size declared after them is the Resize's own.
_SHAPE_KEEPING = ("Identity", "Cast", "Relu", "Neg", "Abs", "Sigmoid", "Tanh")


def _declared_output(model: Any, name: str, declared: dict[str, list[int | None]],
                     depth: int = 8) -> list[int | None] | None:
    """The shape the model declares for tensor ``name``, or failing that for the tensor that only permutes it
    (tf2onnx resizes in NCHW between two Transposes and declares only the last one's shape)."""
    if name in declared:
        return declared[name]
    consumers = [node for node in model.graph.node if name in node.input]
    if depth == 0 or len(consumers) != 1 or consumers[0].op_type not in ("Transpose", *_SHAPE_KEEPING) \
            or not consumers[0].output:
        return None
    node = consumers[0]
    after = _declared_output(model, node.output[0], declared, depth - 1)
    if after is None or node.op_type != "Transpose":
        return after
    perm = next((list(a.ints) for a in node.attribute if a.name == "perm"), None) or list(reversed(range(len(after))))
    if sorted(perm) != list(range(len(after))):
        return None
    shape: list[int | None] = [None] * len(after)
    for position, axis in enumerate(perm):  # Transpose: output[position] = input[perm[position]]
        shape[axis] = after[position]
    return shape


def _inferred_shapes(model: Any) -> dict[str, list[int | None]]:
    """Declared shapes completed by (lenient) shape inference: the known input size of every node."""
    import onnx

    try:
        return {**_declared_shapes(onnx.shape_inference.infer_shapes(model)), **_declared_shapes(model)}
    except Exception:  # noqa: BLE001  (the checker reports why inference fails)
        return _declared_shapes(model)


def resize_sizes(model: Any) -> list[ValidityProblem]:
    """Resize nodes whose constant ``scales``, applied to the known input size by the spec's rule
    (:data:`RESIZE_RULE`), give an output size other than the one the converter declared for the node's
    output (or for the Transpose that only permutes it): the float32 rounding of a scale changed the size
    (6 * float32(17/6) is 16.9999995, so 16 rows, where the converter declared, and TensorFlow computes, 17)."""
    import numpy as np

    resizes = [node for node in model.graph.node if node.op_type == "Resize" and node.domain in ("", "ai.onnx")]
    if not resizes:
        return []
    constants, declared, known = _constant_tensors(model), _declared_shapes(model), _inferred_shapes(model)
    scales_at = 1 if _onnx_opset(model) < 11 else 2  # Resize-10: (X, scales); from 11: (X, roi, scales, sizes)
    problems = []
    for node in resizes:
        attrs = {attr.name: attr for attr in node.attribute}
        mode = attrs["coordinate_transformation_mode"].s.decode() if "coordinate_transformation_mode" in attrs else ""
        scales = constants.get(node.input[scales_at]) if len(node.input) > scales_at else None
        sizes = constants.get(node.input[3]) if len(node.input) > 3 and node.input[3] else None
        given, wanted = known.get(node.input[0]), _declared_output(model, node.output[0], declared)
        if mode == "tf_crop_and_resize" or scales is None or scales.size == 0 or sizes is not None and sizes.size \
                or given is None or wanted is None or len(given) != len(wanted):
            continue
        axes = [a % len(given) for a in attrs["axes"].ints] if "axes" in attrs else list(range(len(given)))
        if len(axes) != scales.size:
            continue  # the checker reports the mismatch
        for axis, scale in zip(axes, scales.astype(np.float32).ravel()):
            size_in, size_out = given[axis], wanted[axis]
            if size_in is None or size_out is None:
                continue
            computed = int(np.floor(np.float64(size_in) * np.float64(scale)))
            if computed != size_out:
                problems.append(ValidityProblem(
                    "resize-scale", f"Resize node {node.name!r} scales axis {axis} of size {size_in} by float32 "
                    f"{float(scale)!r}, which gives {computed} ({RESIZE_RULE}), but the converter declared size "
                    f"{size_out}", "Resize"))
                break
    return problems


def checker_problems(model: Any) -> list[ValidityProblem]:
    """``onnx.checker.check_model`` with ``full_check`` (structure, types, strict shape inference)."""
    import onnx

    try:
        onnx.checker.check_model(model, full_check=True)
    except Exception as exc:  # noqa: BLE001  (ValidationError, InferenceError: both say the model is invalid)
        return [ValidityProblem("checker", f"onnx.checker: {_error_line(exc)}")]
    return []


def inference_problems(model: Any) -> list[ValidityProblem]:
    """Strict shape inference with data propagation: a shape the spec's rules contradict."""
    import onnx

    try:
        onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True, data_prop=True)
    except Exception as exc:  # noqa: BLE001
        return [ValidityProblem("shape-inference", f"shape inference: {_error_line(exc)}")]
    return []


# Most specific first: the first problem is the one a converter's failure is named after.
VALIDITY_RULES: tuple[Callable[[Any], list[ValidityProblem]], ...] = (negative_pads, resize_sizes, checker_problems,
                                                                    inference_problems)


def validity_problems(model: Any) -> list[ValidityProblem]:
    """Everything :data:`VALIDITY_RULES` finds wrong with ``model`` (a path to an ``.onnx`` file, or a
    ModelProto); empty for a valid model. A shape-inference failure already reported by the checker is not repeated."""
    proto = _onnx_model(model)
    problems: list[ValidityProblem] = []
    for rule in VALIDITY_RULES:
        if rule is inference_problems and any(p.check == "checker" for p in problems):
            continue
        problems += rule(proto)
    return problems


# The exception name a converter's invalid file is recorded under (its "error" stage): the converter returned,
# and onnx.checker or shape inference rejects what it wrote.
INVALID_ONNX = "InvalidONNX"


def conversion_problems(model: Any) -> list[ConversionProblem]:
    """The validity problems of a converter's written file as the converter's own failure (status "error",
    named ``InvalidONNX``, grouped by the node's op type): its engines are then skipped, not blamed."""
    return [ConversionProblem("error", f"invalid ONNX written: {problem.message}", INVALID_ONNX,
                              feature=problem.op or problem.check) for problem in validity_problems(model)]
