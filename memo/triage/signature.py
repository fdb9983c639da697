"""Bug signatures: what makes two findings the same bug.

A crash (or hang, or shape mismatch) is identified by the library, the stage, the exception type, the
exception message with every run-specific detail masked (addresses, paths, tensor names, shapes, numbers)
and the innermost traceback frames that lie inside the library itself. A numerical finding (NaN/Inf,
inconsistency) is identified by the library (and its reference) and the class of the first layer whose
output goes wrong, which :mod:`memo.triage.localize` finds.

Everything here is pure (no execution, no DL import) so that it can be unit-tested and run while a
campaign is still writing.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from memo.backends import BACKENDS, CONVERTERS, REFERENCE, declared_messages, find_spec, load_spec
from memo.backends.result import TRACE_STAGE, ExecutionResult, StageResult
from memo.backends.spec import MessageRules
from memo.kinds import NUMERIC_KINDS, VerdictKind
from memo.layers.catalogue import get_spec
from memo.model.ir import Layer, ModelIR
from memo.oracle import KERAS_FRONT_END, TF_FUNCTION_STAGE, Verdict
from memo.text import without_traced_graph
from memo.triage.masks import MESSAGE_LIMIT, library_frames, library_modules, normalize_message
from memo.triage.stored_weights import COMPUTED_WEIGHT
from memo.triage.type_check import cast_into, type_check_cause

UNSUPPORTED_KIND = VerdictKind.UNSUPPORTED.value
UNLOCALIZED = "?"


def recorded_as(backend: str, stage: str | None) -> tuple[str, str | None, tuple[str, ...]]:
    """Where the workers recorded the failure a verdict names: (backend, stage, other backends to look in).
    A failure of Keras' shared front end is the reference's own record; TensorFlow's graph-mode trace
    ("tf-function") ran in, and was recorded by, the converters at their "trace" stage. That is also
    whose code a bug's script runs."""
    if backend == KERAS_FRONT_END:
        return REFERENCE, stage, ()
    if backend == REFERENCE and stage == TF_FUNCTION_STAGE:
        return next(iter(CONVERTERS)), TRACE_STAGE, tuple(CONVERTERS)
    return backend, stage, ()


def _stage_record(result: ExecutionResult | None, backend: str, stage: str | None) -> StageResult | None:
    """The failing stage of ``backend`` in ``result`` (None if absent)."""
    backend, stage, others = recorded_as(backend, stage)
    entries = result.backends if result is not None else {}
    entry = next((entries[name] for name in (backend, *others) if name in entries), None)
    stages = entry.stages if entry is not None else []
    named = [s for s in stages if s.stage == stage]
    failed = [s for s in stages if s.status not in (None, "ok")]
    return (named or failed or [None])[0]


@dataclass(frozen=True)
class FailureDetails:
    """What a verdict's failing stage recorded: exception type, message, traceback and stderr tail."""

    exception: str = ""
    message: str = ""
    traceback: str = ""
    stderr: str = ""


def failure_details(verdict: Verdict, result: ExecutionResult | None) -> FailureDetails:
    """Exception type, message, traceback and stderr tail of a verdict's failing stage.

    A worker killed by a signal has no exception: its type is ``signal N`` (or ``exit N``) and its
    message the last line of its stderr, where native crashes print their cause.
    """
    stage = _stage_record(result, str(verdict.backend or ""), verdict.stage)
    if stage is None:
        return FailureDetails(message=str(verdict.message or ""))
    exception = str(stage.exc_type or "")
    message = str(stage.message or "")
    stderr = str(stage.stderr_tail or "")
    if not exception and stage.signal:
        exception = f"signal {stage.signal}"
    elif not exception and stage.exit_code not in (None, 0):
        exception = f"exit {stage.exit_code}"
    if not message and stderr.strip():
        lines = stderr.strip().splitlines()
        fatal = [line for line in lines if line.startswith("Fatal Python error")]
        message = fatal[0] if fatal else lines[-1]
    return FailureDetails(exception, message or str(verdict.message or ""), str(stage.traceback or ""), stderr)


def divergent_class(ir: ModelIR | None, layer_name: str | None) -> str:
    """Class of the localized layer, or ``"?"`` when localization has not run or found nothing."""
    if ir is None or not layer_name:
        return UNLOCALIZED
    try:
        return ir.get(layer_name).class_name
    except KeyError:
        return UNLOCALIZED


def signature_parts(verdict: Verdict, result: ExecutionResult | None, ir: ModelIR | None,
                    *, divergent_layer: str | None = None) -> dict[str, Any]:
    """The fields that identify a finding's bug (see the module docstring), as a JSON-able dict.

    ``divergent_layer`` names the first misbehaving node (from localization) for NaN and inconsistency.
    """
    kind = str(verdict.kind or "")
    backend = str(verdict.backend or "")
    parts: dict[str, Any] = {"kind": kind, "library": backend}
    if kind in NUMERIC_KINDS:
        parts["reference"] = (str((result.reference if result is not None else "") or "")
                              if kind == "inconsistency" else "")
        parts["layer"] = divergent_class(ir, divergent_layer)
        return parts
    details = failure_details(verdict, result)
    parts["stage"] = str(verdict.stage or "")
    if kind == UNSUPPORTED_KIND:
        parts["feature"] = unsupported_feature(verdict, details.message)
        return parts
    parts["exception"] = details.exception
    parts["message"] = normalize_message(details.message)
    parts["frames"] = library_frames(details.traceback or details.stderr, library_modules(backend))
    return parts


def digest(parts: dict[str, Any]) -> str:
    """A short, readable, stable id: ``kind-library-hash``."""
    short = hashlib.sha256(json.dumps(parts, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:10]
    return f"{parts.get('kind', 'bug')}-{parts.get('library', 'x')}-{short}"


def signature(verdict: Verdict, result: ExecutionResult | None, ir: ModelIR | None,
              *, divergent_layer: str | None = None) -> str:
    """The bug id of a finding: equal ids mean the same bug (pure; see :func:`signature_parts`)."""
    return digest(signature_parts(verdict, result, ir, divergent_layer=divergent_layer))


# How a refusal names its feature in any library's words, after the patterns the backends declare (their specs'
# ``messages.declined_features``: torch.onnx's aten operators, ONNX Runtime's and MXNet's operators).
_GENERIC_FEATURES = (
    re.compile(r"['\"`]([A-Z][A-Za-z0-9_]+)['\"`]"),                                   # 'Loop'
    re.compile(r"\b(?:op|operator|layer|node)s?\s*(?:type)?\s*[:=]?\s*['\"`]?([A-Z][A-Za-z0-9_]+)"),  # op Erfinv
    re.compile(r"\w/([A-Z][A-Za-z0-9]+)\b"),                                           # model/conv_1/Pad
    re.compile(r"\b((?:[A-Z][a-z0-9]+){2,}|[A-Z][a-z]+[A-Z0-9]\w*)\b"),                  # AvgPool, Conv2D
)
_NOT_A_FEATURE = re.compile(r"(Error|Exception|Warning|Description)$")


def feature_patterns() -> tuple[re.Pattern[str], ...]:
    """The patterns a refusal's feature is read with, in order: the registered backends', then memo's own."""
    return _feature_patterns(declared_messages())


@lru_cache(maxsize=4)
def _feature_patterns(rules: tuple[MessageRules, ...]) -> tuple[re.Pattern[str], ...]:
    declared = dict.fromkeys(pattern for rule in rules for pattern in rule.declined_features)
    return (*(re.compile(pattern) for pattern in declared), *_GENERIC_FEATURES)


def unsupported_feature(verdict: Verdict, message: str | None = None) -> str:
    """What a library declined: an op name in the message."""
    text = message if message is not None else str(verdict.message or "")
    text = without_traced_graph(text)  # the traced graph quoted after the cause names types, not the feature
    for pattern in feature_patterns():
        for found in pattern.finditer(text):
            if not _NOT_A_FEATURE.search(found.group(1)):
                return found.group(1)
    return normalize_message(text, limit=80) or "unknown"


# ---------------------------------------------------------------------------- the root cause, after reduction
# The parts of a provisional signature that survive into the exact root-cause key. The masked message does not
# (two wordings of one failure, with and without a shape, are one bug once the models coincide), nor does
# the stage (one native crash kills the eager run and the graph-mode trace alike).
TRUTH_DECISION = "truth"  # the float64 decision triage adds to a numeric bug's parts before keying it
_ROOT_CAUSE_PARTS = ("kind", "exception", "frames", "reference", "layer")
# An engine finding on a converted file whose engine differs from ONNX's reference evaluator on that file (its ONNX
# reference opinion blames the engine: memo.triage.rekey): a defect of that stack (OpenVINO's ONNX frontend and
# passes), never one entry with another stack computing with the same library (Keras's OpenVINO lowering; p40
# merged OpenVINO's Resize ignoring exclude_outside into Keras-on-OpenVINO's bicubic UpSampling2D).
OWN_STACK = "reference_opinion"
# Keras's wrapper around a layer's error ("Exception encountered when calling RandomHue.call().") names no failing code
_KERAS_CALL_WRAPPER = re.compile(r"Exception encountered when calling [\w.]+(?:\(\))?\.?\s*")
# Keras's traceback filter (``keras.utils.traceback_utils.error_handler``) re-raises every layer's error: not its site.
_KERAS_WRAPPER_FRAME = "keras/src/utils/traceback_utils.py:"
# A native library's own source location in its message (OpenVINO's "Exception from src/.../utils.cpp:71:", "Check
# '...' failed at src/...:201"): the innermost names the check that failed (crash_native_site).
_NATIVE_SITE = re.compile(r"(?:Exception from|failed at) ((?:src|include|onnxruntime|tensorflow|torch)/[\w/.+-]+"
                          r"\.(?:cpp|cc|c|h|hpp|cu):\d+)")
NATIVE_SITE = "site"  # the parts' key of a crash's native site (added by memo.triage.reassess.root_cause_parts)
# A failure the library did not describe (a signal, an exit status): its words cannot tell two bugs apart.
_UNDESCRIBED = re.compile(r"^(?:signal|exit) |^WorkerDied$")
# A stored message is cut at MESSAGE_LIMIT characters; with the wrapper (at most 44 characters and a 24-character class
# name) and names masked, two messages of one failure through classes of other name lengths agree on this many.
PATTERN_LIMIT = MESSAGE_LIMIT - 90


@dataclass(frozen=True)
class SharedOperator:
    """Layer classes computed by one operator, chosen by one attribute: a finding in one of them is a finding in
    the operator, whichever class reached it."""

    name: str
    classes: frozenset[str]
    attribute: str | None = None
    defaults: tuple[tuple[str, str], ...] = ()  # (class, the attribute's Keras default)

    def of(self, layer: Layer) -> str | None:
        if layer.class_name not in self.classes:
            return None
        if self.attribute is None:
            return self.name
        value = layer.config.get(self.attribute, dict(self.defaults).get(layer.class_name))
        return f"{self.name}:{str(value).lower()}"


SHARED_OPERATORS: tuple[SharedOperator, ...] = (
    # Keras's Resizing and UpSampling2D both call ops.image.resize with their ``interpolation``; tf2onnx writes
    # both as one ONNX Resize (a bicubic difference seen through either is one bug)
    SharedOperator("resize", frozenset({"Resizing", "UpSampling2D"}), "interpolation",
                   (("Resizing", "bilinear"), ("UpSampling2D", "nearest"))),
    # Keras's TensorFlow, JAX and NumPy backends derive the windows of all six adaptive poolings from one
    # helper (backend_utils.compute_adaptive_pooling_window_sizes)
    SharedOperator("adaptive-pooling", frozenset(f"Adaptive{op}Pooling{d}D" for op in ("Average", "Max")
                                                 for d in (1, 2, 3))),
    # each Keras backend implements average (and max) pooling of every rank with one function and its padding
    # rule (p30: Keras on torch's "same" average pooling counted the padding in 1-D and 3-D alike)
    SharedOperator("average-pooling", frozenset(f"AveragePooling{d}D" for d in (1, 2, 3)), "padding",
                   tuple((f"AveragePooling{d}D", "valid") for d in (1, 2, 3))),
    SharedOperator("max-pooling", frozenset(f"MaxPooling{d}D" for d in (1, 2, 3)), "padding",
                   tuple((f"MaxPooling{d}D", "valid") for d in (1, 2, 3))),
)


def shared_operator(layer: Layer) -> str | None:
    """The operator ``layer`` shares with other classes (see :data:`SHARED_OPERATORS`), None if none."""
    return next((found for op in SHARED_OPERATORS if (found := op.of(layer)) is not None), None)


def code_path(layer: Layer, *, wrapped: bool = False) -> str:
    """What a crash in ``layer`` shares with crashes in other classes: its shared operator, else its catalogue
    family (layers of one family share their library's code paths), else its class."""
    operator = shared_operator(layer)
    if operator is not None:
        return operator
    inner = layer.config.get("layer")
    if wrapped and isinstance(inner, dict) and inner.get("class_name"):  # the code of the layer it wraps
        return code_path(Layer(layer.name, str(inner["class_name"]), dict(inner.get("config") or {}), []))
    spec = get_spec(layer.class_name)
    return f"family:{spec.family}" if spec is not None else f"class:{layer.class_name}"


def divergent_path(class_name: str, reduced: ModelIR) -> str | None:
    """The code a numeric finding's first misbehaving layer (of class ``class_name``) runs in the reduced model:
    its shared operator (with the attribute that selects it), else its class; None when not localized."""
    if not class_name or class_name == UNLOCALIZED:
        return None
    layer = next((layer for layer in reduced.body if layer.class_name == class_name), None)
    return (shared_operator(layer) if layer is not None else None) or f"class:{class_name}"


def culprits(reduced: ModelIR) -> list[Layer]:
    """The reduced model's output layers: reduction cuts a failure at the node that fails."""
    layers = reduced.by_name()
    return [layers[name] for name in reduced.outputs if name in layers]


def culprit_classes(reduced: ModelIR) -> list[str]:
    """The culprits' classes, a wrapper's with the class it wraps: ``SpectralNormalization(Dense)``."""
    names = set()
    for layer in culprits(reduced):
        inner = layer.config.get("layer")
        wrapped = inner.get("class_name") if isinstance(inner, dict) else None
        names.add(f"{layer.class_name}({wrapped})" if wrapped else layer.class_name)
    return sorted(names)


@lru_cache(maxsize=None)
def library_of(backend: str) -> str:
    """One name for backends that run one library's code: the first registered backend or converter declared
    in the same module with the same distributions (``tf2onnx-opset11`` is ``tf2onnx`` at another opset)."""
    registry = {**BACKENDS, **CONVERTERS}
    if backend not in registry:
        return backend
    module = registry[backend].partition(":")[0]
    try:
        distributions = load_spec(backend).distributions
        return next(name for name, target in registry.items()
                    if target.partition(":")[0] == module and load_spec(name).distributions == distributions)
    except Exception:  # a spec that does not load (a plugin's missing dependency): the backend is its own library
        return backend


_RANK_SUFFIX = re.compile(r"\b([A-Z][A-Za-z]*?)[123][dD]\b")


def computing_library(backend: str) -> str:
    """The library whose kernels decide ``backend``'s numbers (its spec's ``computes_with``, else its own)."""
    spec = find_spec(backend)
    if spec is None:
        return backend
    return library_of(spec.computes_with or backend)


@lru_cache(maxsize=None)
def computed_for_others() -> frozenset[str]:
    """The libraries whose code another stack runs (a backend's :func:`computing_library` that is not its own)."""
    return frozenset(computing for backend in {**BACKENDS, **CONVERTERS}
                     if (computing := computing_library(backend)) != library_of(backend))


def keras_backends() -> frozenset[str]:
    """The Keras backends: the registered backends that run the ``.keras`` file themselves (not the converters)."""
    return frozenset(name for name in BACKENDS if (spec := find_spec(name)) is not None and spec.consumes == "keras")


def in_keras_core(parts: dict[str, Any]) -> bool:
    """Whether a crash of a Keras backend arises in Keras's own code shared by every backend: its innermost library
    frame (past Keras's traceback wrapper) is under ``keras/`` but not in a backend's ``keras/src/backend/<name>/``
    (Softmax's mask check in ``keras/src/layers/activations/softmax.py``), so another backend reaching that line
    fails alike. A frame in the backend's own code, or in the library under it (torch's ``Module._call_impl``
    around Keras on torch's SimpleRNN), is that backend's."""
    if str(parts.get("library", "")) not in keras_backends():
        return False
    frames = [str(frame) for frame in parts.get("frames") or [] if not str(frame).startswith(_KERAS_WRAPPER_FRAME)]
    return bool(frames) and frames[0].startswith("keras/") and not frames[0].startswith("keras/src/backend/")


def _also_libraries(parts: dict[str, Any], library: str) -> list[str]:
    """The other libraries a crash's code-path keys are also made for: the library whose code the backend runs
    (:func:`computing_library`), and Keras itself for a crash in Keras's shared code (:func:`in_keras_core`), so that
    it is one entry with Keras's front-end finding (every backend failed) and with the same crash on another backend."""
    others = [computing_library(str(parts.get("library", ""))), *([KERAS_FRONT_END] if in_keras_core(parts) else [])]
    return [other for other in dict.fromkeys(others) if other != library]


def native_site(message: str) -> str | None:
    """The innermost source location a native library's message names (OpenVINO's nested "Exception from
    src/common/snippets/src/utils/utils.cpp:71:"), None where it names none: a check at one line of the library's code
    is one defect, reached by Keras on OpenVINO or by OpenVINO's ONNX frontend alike."""
    found = _NATIVE_SITE.findall(message)
    return found[-1] if found else None


def message_pattern(message: str, reduced: ModelIR) -> str:
    """A masked message with what names the layer rather than the failing code masked too: Keras's wrapper,
    the reduced model's layer names, and its class names where they name the Keras layer object."""
    text = _KERAS_CALL_WRAPPER.sub("", message)
    for _, class_name in _named(reduced):
        # Python's own words for an attribute of the layer object ("property 'activation' of 'LSTM' object has no
        # setter"): the code that touched it is not the class's, any layer object would do
        text = re.sub(rf"'{re.escape(class_name)}'(?= object\b)", f"'{LAYER_OBJECT}'", text)
    # the 1-D/2-D/3-D twin a library picks for a layer of that rank (onnx2pytorch builds Conv2d for ConvLSTM1D
    # and Conv3d for ConvLSTM2D, and fails alike in both): one code path
    text = _RANK_SUFFIX.sub(r"\1Nd", text)
    for name, class_name in _named(reduced):
        if name:
            text = re.sub(rf"(?<![\w/]){re.escape(name)}(?![\w/])", "NAME", text)
        text = re.sub(rf"\b{re.escape(class_name)}(?=\.\w+\(\)|\s+layer\b| name=)", "LAYER", text)
    return text.strip()[:PATTERN_LIMIT]


LAYER_OBJECT = "LAYER"  # message_pattern's word for a layer class named as a Python object


def _named(reduced: ModelIR) -> list[tuple[str, str]]:
    """(name, class) of every layer and of the layer each wrapper wraps: a wrapper's failure is named by the wrapper
    (Keras's "Arguments received by LSTM.call()" inside a Bidirectional names the class it wraps, not the cause)."""
    named = []
    for layer in reduced.layers:
        named.append((layer.name, layer.class_name))
        inner = layer.config.get("layer")
        if isinstance(inner, dict) and inner.get("class_name"):
            named.append((str((inner.get("config") or {}).get("name") or ""), str(inner["class_name"])))
    return named


def reduced_keys(parts: dict[str, Any], reduced: ModelIR) -> tuple[str, ...]:
    """A bug's root-cause identities once its model is reduced; two bugs sharing one are one bug.

    The exact key: the failing library, its symptom (exception type and library frames, or the misbehaving
    layer class) and the class of the culprit. The root-cause key, which lets one fix reached through several
    layer classes be one entry: for a crash, the same exception with the same message pattern
    (:func:`message_pattern`) in layers of one code path (:func:`code_path`; the frames are left out, since
    they pass through each class's own module); a crash the library did not describe (a signal) only in a
    shared operator; for a numeric finding, the same shared operator (:func:`shared_operator`), since nothing
    else tells its code path. ``library`` is :func:`library_of` in both. A converter's or an engine's crash whose
    message names the node of the converted file it failed in (``operator`` in ``parts``:
    :mod:`memo.triage.failing_node`) also gets a key by that operator, whichever layer wrote it; a backend whose
    code another runs (:func:`computing_library`) one as that library's; every key but the exact one of a finding
    marked :data:`OWN_STACK` in a library another stack computes with (:func:`computed_for_others`) carries the mark,
    so that it shares none with another stack's finding (elsewhere the mark changes nothing: no other stack shares
    its keys, and its unmarked siblings still merge with it)."""
    library = library_of(str(parts.get("library", "")))
    found = culprits(reduced)
    exact = {name: parts[name] for name in _ROOT_CAUSE_PARTS if name in parts}
    keys = [digest({**exact, "library": library, "culprit": sorted({layer.class_name for layer in found})})]
    own = {OWN_STACK: parts[OWN_STACK]} if parts.get(OWN_STACK) and library in computed_for_others() else {}
    common = {"kind": parts.get("kind", ""), "library": library, "reference": parts.get("reference", ""), **own}
    if not found:
        return tuple(keys)
    if parts.get("kind") in NUMERIC_KINDS:
        # findings float64 judges differently (a confirmed defect, a NaN-semantics question) are never one entry
        common["decision"] = parts.get(TRUTH_DECISION, "")
        operators = {shared_operator(layer) for layer in found}
        if None not in operators:
            keys.append(digest({**common, "operator": sorted(operators)}))
        if (into := cast_into(reduced, found)) is not None:  # a wrong cast, whatever layer computes after it
            keys.append(digest({**common, "library": computing_library(str(parts.get("library", ""))), "cast": into}))
        divergent = divergent_path(str(parts.get("layer") or ""), reduced)
        if divergent:  # the first misbehaving layer's code in one library, whatever follows it in the model
            keys.append(digest({"kind": parts.get("kind", ""), "decision": parts.get(TRUTH_DECISION, ""),
                                "library": computing_library(str(parts.get("library", ""))), "divergent": divergent,
                                **own}))
    elif "exception" in parts:
        pattern = message_pattern(str(parts.get("message", "")), reduced)
        described = bool(pattern) and not _UNDESCRIBED.match(str(parts["exception"]))
        if described or all(shared_operator(layer) for layer in found):
            # a wrapper's failure is in its own code (SpectralNormalization around any layer) or in the code of
            # the layer it wraps (TimeDistributed(LayerNormalization) failing as LayerNormalization does): a key
            # for each, so that either merges
            for wrapped in (False, True):
                paths = sorted({code_path(layer, wrapped=wrapped) for layer in found})
                keys.append(digest({**common, "exception": parts["exception"], "code_path": paths,
                                    "message": pattern}))
                for other in _also_libraries(parts, library):  # Keras's export failing as Keras on torch does
                    keys.append(digest({**common, "library": other, "exception": parts["exception"],
                                        "code_path": paths, "message": pattern}))
        if described and parts.get(NATIVE_SITE):  # one native check failing, whichever stack and layers reached it
            keys.append(digest({"kind": parts.get("kind", ""), "library": computing_library(str(parts.get("library"))),
                                "exception": parts["exception"], NATIVE_SITE: parts[NATIVE_SITE], "message": pattern}))
        if parts.get(COMPUTED_WEIGHT):  # an importer assuming stored weights: one defect, whatever the operator
            keys.append(digest({**common, COMPUTED_WEIGHT: True}))
        if parts.get("translator"):  # an importer's translation of one operator: one defect, whatever it raises
            keys.append(digest({**common, "operator": parts.get("operator"), "translator": parts["translator"]}))
        if described and parts.get("operator"):  # the failing node of a converted file, whichever layer wrote it
            node = str(parts.get("node") or "")
            keys.append(digest({**common, "exception": parts["exception"], "operator": parts["operator"],
                                "message": pattern.replace(node, "NODE") if node else pattern}))
        cause = type_check_cause(str(parts.get("message", "")), reduced, found)
        if cause:  # ONNX's type check failing alike at any operator (memo.triage.type_check)
            keys.append(digest({**common, "exception": parts["exception"], **cause}))
    return tuple(dict.fromkeys(keys))


def reduced_key(parts: dict[str, Any], reduced: ModelIR) -> str:
    """:func:`reduced_keys` as the store keeps them (``bugs.final_key``, space-separated)."""
    return " ".join(reduced_keys(parts, reduced))
