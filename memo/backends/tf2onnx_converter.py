"""tf2onnx: converts the Keras model (on TensorFlow) to ONNX, once per model, for the ONNX backends.

Two conversions, each its own converter entry sharing one worker process and one frozen graph (the
worker caches what ``load`` returned, so the model is loaded, traced and frozen once per artifact):
``tf2onnx`` at tf2onnx's default opset with a dynamic batch dimension, and ``tf2onnx-opset11`` at
opset 11 with static shapes and every initializer also listed as a graph input (what MXNet imports).

Stages: memo's own Keras load and ``tf.function`` trace of the model is TensorFlow's graph mode, not
tf2onnx: a failure there is recorded at stage ``trace`` (the oracle files it against keras-tensorflow);
the grappler freeze and the conversion are tf2onnx's (stages ``load`` and ``convert``).

tf2onnx runs with ``continue_on_error``: it does not raise when it cannot convert an op, it logs an error
and leaves the TensorFlow node in the output graph. memo reads those logs:

* "Tensorflow op [NAME: OP] is not supported" (no handler for the op) and TensorFlow nodes left in the
  graph are "unsupported" (a known gap, grouped by op type);
* "Failed to convert node ..." (logged with the exception a handler raised) and "rewriter ...:
  exception ..." are tf2onnx crashing: status "error" with the exception's type, unless the exception is
  a deliberate refusal (NotImplementedError, or a phrase in ``UNSUPPORTED``);
* a complete conversion whose file is invalid ONNX (:mod:`memo.backends.onnx_validity`: the checker, strict
  shape inference, negative pads, a Resize scale that changes the size) is tf2onnx's failure too ("error",
  ``InvalidONNX``), so its engines are skipped rather than blamed.

TensorFlow, tf2onnx and onnx are imported inside the functions that use them, which run in the worker
only: the orchestrator imports this module to read the specs and must never import a library under test.
"""
from __future__ import annotations

import logging
import re
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from memo.backends import trackers
from memo.backends.idioms import CHECK_MODEL, Idiom, converter_idiom
from memo.backends.keras_common import _load as load_keras_model
from memo.backends.keras_common import keras_spec
from memo.backends.onnx_validity import conversion_problems
from memo.backends.result import TRACE_STAGE, ConversionProblem, StageFailure
from memo.library_coverage.measured import MeasuredCode
from memo.backends.spec import ConverterSpec, MessageRules, ModelInputs, ReproRecipe, UnsupportedPhrase, Upstream
from memo.backends.versions import distribution_versions
from memo.backends.worker import classify

DISTRIBUTIONS = ("tf2onnx", "onnx", "tensorflow-cpu", "keras")
STANDARD_DOMAINS = ("", "ai.onnx", "ai.onnx.ml")
_KERAS_TF = keras_spec("tensorflow", ("tensorflow-cpu",))


def _setup() -> dict[str, str]:
    import tf2onnx  # noqa: F401

    _KERAS_TF.setup()  # type: ignore[misc]
    return distribution_versions(DISTRIBUTIONS)


class _ErrorLog(logging.Handler):
    """Collects tf2onnx's ERROR records (with their arguments and exception) during one conversion."""

    def __init__(self) -> None:
        super().__init__(level=logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


# Only an op without a handler is "unsupported" for tf2onnx (and NotImplementedError): an exception inside an
# op handler or a rewriter, even a precondition check of its own ("make_sure failure: ... not supported"),
# is filed as a tf2onnx crash, since such handler failures are the converter faults users hit. Except the
# checks that name a feature its handler declines by design:
# * RFFT/FFT (tf2onnx/onnx_opset/signal.py, CommonFFTOp): "Current implementation of RFFT or FFT only allows
#   ComplexAbs as consumer" -- a spectrum consumed by Real/Imag (MelSpectrogram, at both opsets).
# (Einsum at opset 11 needs no phrase: its handler starts at opset 12, so tf2onnx logs "Tensorflow op [...:
# Einsum] is not supported", already a refusal: MultiHeadAttention at opset 11.)
# * Einsum's optimizer (tf2onnx/optimizer/einsum_optimizer.py, _check_onnx_opset_): "Opset (11) must be >= 13 for
#   operator 'batch_dot'" -- the decomposition it rewrites Einsum into needs opset 13. tf2onnx by default catches
#   an optimizer's exception and keeps the graph unoptimized; memo runs with TF2ONNX_CATCH_ERRORS=FALSE (see
#   ``_export``), so this declared limit surfaces as an exception (MultiHeadAttention at opset 11).
UNSUPPORTED: tuple[UnsupportedPhrase, ...] = (
    UnsupportedPhrase(r"^make_sure failure: Current implementation of RFFT or FFT only allows ComplexAbs as "
                      r"consumer not ", exc_types=("ValueError",),
                      example="make_sure failure: Current implementation of RFFT or FFT only allows ComplexAbs as "
                              "consumer not {'Real', 'Imag'}"),
    UnsupportedPhrase(r"^Opset \(\d+\) must be >= \d+ for operator '\w+'\.$", exc_types=("RuntimeError",),
                      example="Opset (11) must be >= 13 for operator 'batch_dot'."),
    # the same optimizer declines equations with upper-case letters (CachedEinsum.build_onnx_einsum), e.g.
    # MultiHeadAttention's 'BNTS,BSNH->BTNH' at opset 11
    UnsupportedPhrase(r"^Only lower equation can be optimized, '[^']*' is not\.$", exc_types=("RuntimeError",),
                      example="Only lower equation can be optimized, 'BNTS,BSNH->BTNH' is not."),
)
# tf2onnx released 1.16.1 in Jan 2024 and 1.17.0 in 2026 (installed; conda-forge, Mar 2026).
UPSTREAM = Upstream("maintenance", "https://github.com/onnx/tensorflow-onnx/issues",
                    "rare releases: 1.16.1 (Jan 2024), then 1.17.0 (2026)", trackers.TF2ONNX)
# How a conversion's failure names the graph node it declined or failed on (BackendSpec.messages), and TensorFlow's
# graph-mode shape inference in the trace before it ("{{node model/conv/Pad}} = Pad[...]", the TFLite converter's
# trace too). TensorFlow's CPU wheel (tensorflow-cpu) is the package tensorflow.
TENSORFLOW_GRAPH_NODE = r"\{\{node (?P<node>[^}]+)\}\} = (?P<op>[\w.-]+)"
MESSAGES = MessageRules(declined_nodes=(
    r"no handler for op (?P<op>[\w.:-]+) \(node '(?P<node>[^']+)'\)",
    r"node '(?P<node>[^']+)' has op (?:[\w.]+::)?(?P<op>[\w.-]+), not an ONNX op",  # an unconverted node left over
    r"Failed to convert node '(?P<node>[^']+)' \(op (?P<op>[\w.-]+)\)",  # a handler declining
    TENSORFLOW_GRAPH_NODE), frame_modules=("tf2onnx", "onnx", "tensorflow", "keras"))
_NO_HANDLER = "Tensorflow op [%s: %s] is not supported"
_HANDLER_FAILED = "Failed to convert node %r (fct=%r)\n%r"
_REWRITER_FAILED = "rewriter %s: exception %s"


def _op_of(summary: object) -> str | None:
    match = re.search(r"^OP=(\S+)", str(summary), re.MULTILINE)
    return match.group(1) if match else None


def logged_problems(records: list[logging.LogRecord]) -> tuple[list[ConversionProblem], set[str]]:
    """The problems in tf2onnx's ERROR log records, and the names of the nodes they concern.

    Other ERROR lines (no exception, no missing handler) are not failures: when the output graph is
    complete, the ONNX backends judge the conversion on its results.
    """
    problems: list[ConversionProblem] = []
    nodes: set[str] = set()
    for record in records:
        args = record.args if isinstance(record.args, tuple) else ()
        if record.msg == _NO_HANDLER and len(args) == 2:
            name, op = str(args[0]), str(args[1])
            nodes.add(name)
            problems.append(ConversionProblem("unsupported", f"tf2onnx has no handler for op {op} (node {name!r})",
                                              "UnconvertedOps", feature=op))
        elif record.msg == _HANDLER_FAILED and record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            name, op = str(args[0]) if args else "?", _op_of(args[2]) if len(args) > 2 else None
            nodes.add(name)
            text = " ".join(str(exc).split())
            problems.append(ConversionProblem(
                classify(exc, UNSUPPORTED), f"Failed to convert node {name!r} (op {op}): {type(exc).__name__}: {text}",
                type(exc).__name__, feature=op,
                traceback="".join(traceback.format_exception(*record.exc_info))))
        elif record.msg == _REWRITER_FAILED and len(args) == 2 and isinstance(args[1], BaseException):
            exc = args[1]
            rewriter = getattr(args[0], "__name__", str(args[0]))
            problems.append(ConversionProblem(
                classify(exc, UNSUPPORTED), f"rewriter {rewriter} failed: {type(exc).__name__}: {exc}",
                type(exc).__name__, feature=rewriter,
                traceback="".join(traceback.format_exception(type(exc), exc, exc.__traceback__))))
    return problems, nodes


def unconverted_nodes(model: Any, skip: set[str] | frozenset[str] = frozenset()) -> list[str]:
    """Nodes whose op is not an ONNX op of the model's opsets: what tf2onnx left unconverted (``skip``:
    node names already reported from the log). Each message names the op type (the feature)."""
    import onnx

    opsets = {entry.domain: entry.version for entry in model.opset_import}
    problems = []
    for node in model.graph.node:
        domain = node.domain or ""
        known = domain in STANDARD_DOMAINS and onnx.defs.has(node.op_type, domain)
        if not known and node.name not in skip:
            problems.append(f"node {node.name!r} has op {domain + '::' if domain else ''}{node.op_type}, "
                            f"not an ONNX op (opset {opsets.get(domain, '?')})")
    return problems


@dataclass
class FrozenModel:
    """The Keras model traced into a frozen TensorFlow graph once; every conversion of the worker group starts
    from it (TensorFlow's TFLite converter from ``concrete``, the traced function before the freeze)."""

    graph_def: Any
    name: str
    input_names: list[str]
    output_names: list[str]
    renames: dict[str, str]
    concrete: Any = None  # the tf.function traced on the model's inputs (dynamic batch), not frozen
    model: Any = None  # the Keras model: keeps the variables ``concrete`` captures (weakly) alive
    freeze_error: Exception | None = None  # tf2onnx's freeze failed: tf2onnx's load, not the other conversions'


def _freeze(path: Path) -> FrozenModel:
    """Load the ``.keras`` model on TensorFlow and freeze it with a dynamic batch dimension."""
    import tensorflow as tf
    from tf2onnx import tf_loader
    from tf2onnx.convert import tensor_names_from_structed

    try:  # Keras on TensorFlow in graph mode: TensorFlow's stage, not tf2onnx's
        model = load_keras_model(path)  # what keras-tensorflow's worker loads (_KERAS_TF.load)
        signature = [tf.TensorSpec((None, *[int(d) for d in tensor.shape[1:]]),
                                   tf.as_dtype(np.dtype(tensor.dtype)), name=tensor.name.split(":")[0])
                     for tensor in model.inputs]
        function = tf.function(lambda *args: model(list(args), training=False))
        concrete = function.get_concrete_function(*signature)
    except Exception as exc:
        raise StageFailure(TRACE_STAGE, exc) from exc
    # Only the model's own inputs: the concrete function's later inputs are its captures (variables, and eager
    # constants such as an activity regularizer's factor), which the freeze turns into constants.
    inputs = [t.name for t in concrete.inputs[:len(signature)]]
    outputs = [t.name for t in concrete.outputs if t.dtype != tf.dtypes.resource]
    try:  # tf2onnx's freeze: its failure is tf2onnx's (stage load), recorded when a tf2onnx conversion starts
        renames = tensor_names_from_structed(concrete, inputs, outputs)
        with tf.device("/cpu:0"):
            graph_def = tf_loader.from_function(concrete, inputs, outputs)
    except Exception as exc:
        return FrozenModel(None, concrete.name, inputs, outputs, {}, concrete=concrete, model=model, freeze_error=exc)
    return FrozenModel(graph_def, concrete.name, inputs, outputs, renames, concrete=concrete, model=model)


def _export(frozen: FrozenModel, inputs: ModelInputs, out_path: Path, *, opset: int | None, static: bool,
            initializers_as_inputs: bool) -> list[ConversionProblem | str]:
    """What ``tf2onnx.convert.from_function`` does after freezing (its ``_convert_common``), so that the
    trace and freeze are shared by both conversions. ``static`` fixes every input shape to the arrays'."""
    import onnx
    import tensorflow as tf
    from tf2onnx.convert import _convert_common

    if frozen.freeze_error is not None:
        raise StageFailure("load", frozen.freeze_error)
    shapes = {name: list(array.shape) for name, array in zip(frozen.input_names, inputs.values())} if static else None
    errors = _ErrorLog()
    logger = logging.getLogger("tf2onnx")
    logger.addHandler(errors)
    try:
        with tf.device("/cpu:0"):
            proto, _ = _convert_common(frozen.graph_def, name=frozen.name, continue_on_error=True, opset=opset,
                                       input_names=frozen.input_names, output_names=frozen.output_names,
                                       tensors_to_rename=frozen.renames, shape_override=shapes)
    finally:
        logger.removeHandler(errors)
    if initializers_as_inputs:
        listed = {arg.name for arg in proto.graph.input}
        for init in proto.graph.initializer:
            if init.name not in listed:
                proto.graph.input.append(onnx.helper.make_tensor_value_info(init.name, init.data_type, init.dims))
    out_path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(proto, str(out_path))
    problems, reported = logged_problems(errors.records)
    # A complete conversion is checked before any engine runs it: an invalid file is tf2onnx's failure (an
    # incomplete one fails the checker on its leftover TensorFlow ops, already reported above).
    return [*problems, *unconverted_nodes(proto, reported)] or conversion_problems(proto)


def _export_default(frozen: FrozenModel, inputs: ModelInputs, out_path: Path) -> list[ConversionProblem | str]:
    return _export(frozen, inputs, out_path, opset=None, static=False, initializers_as_inputs=False)


def _export_opset11(frozen: FrozenModel, inputs: ModelInputs, out_path: Path) -> list[ConversionProblem | str]:
    return _export(frozen, inputs, out_path, opset=11, static=True, initializers_as_inputs=True)


# tf2onnx deep-copies the whole graph before each optimizer pass so that it can drop a pass that raises
# (its "catch errors" mode); that copying is over half of conversion time on memo's mutants. Without it a
# failing optimizer fails the conversion, which memo reports against tf2onnx: a finding, not noise.
def _idiom(opset: int | None, static: bool = False) -> Idiom:
    """A bug's minimal script: tf2onnx's conversion of the Keras model at ``opset`` (every input shape fixed to the
    arrays' where ``static``, as :func:`_export` converts), then ONNX's own checks."""
    opset_arg = f", opset={opset}" if opset else ""
    signature = ("signature = [tf.TensorSpec(a.shape, i.dtype, name=i.name) for i, a in zip(model.inputs, x if "
                 "isinstance(x, list) else [x])]" if static else
                 "signature = [tf.TensorSpec((None, *i.shape[1:]), i.dtype, name=i.name) for i in model.inputs]")
    return converter_idiom(("import onnx", "import tensorflow as tf", "import tf2onnx"),
                           '"tf2onnx", tf2onnx.__version__, "tensorflow", tf.__version__, "keras", keras.__version__',
                           (signature,
                            f"onnx_model, _ = tf2onnx.convert.from_keras(model, input_signature=signature{opset_arg})",
                            *CHECK_MODEL))


_COMMON = dict(consumes="keras", load=_freeze, setup=_setup, distributions=DISTRIBUTIONS,
               env={**_KERAS_TF.env, "TF2ONNX_CATCH_ERRORS": "FALSE"}, group="tf2onnx",
               unsupported_patterns=UNSUPPORTED, repro=ReproRecipe(), upstream=UPSTREAM, messages=MESSAGES,
               library_code=(MeasuredCode("tf2onnx", ("tf2onnx",)),))
SPEC = ConverterSpec(name="tf2onnx", produces="onnx", export=_export_default, idiom=_idiom(None), **_COMMON)  # type: ignore[arg-type]
# one tf2onnx defect failing both opsets alike on a model is one finding, tf2onnx's (two entries before: a
# ConvTranspose with negative pads, "max() arg is an empty sequence")
SPEC_OPSET11 = ConverterSpec(name="tf2onnx-opset11", produces="onnx-opset11", export=_export_opset11,
                             builds_on="tf2onnx", idiom=_idiom(11, static=True), **_COMMON)  # type: ignore[arg-type]
