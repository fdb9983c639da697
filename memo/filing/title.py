"""A bug's issue title: the layer or operator that fails (a wrapper with the layer it wraps; an engine's failing
ONNX node) and the symptom in one line, from the reduced model and the checked script's run."""
from __future__ import annotations

import re
from typing import Any

from memo.backends.idioms import ONNX
from memo.backends.inner_libraries import inner_culprit
from memo.filing.check import MinimalScript
from memo.filing.folder import ONNX_FILE, BugFolder
from memo.filing.observed import error_text, message_head, quoted, stated_message, whole_words
from memo.filing.script import idiom_for
from memo.filing.remat_folder import (WITHOUT_REMAT, assigned_cause, folder_remat, folder_remat_control,
                                      remat_holders)
from memo.filing.training_idiom import training_symptom, weight_by_class
from memo.backends.training_optimizers import (ADAM_LEARNING_RATE, OPTIMIZER_STAGE, SGD_LEARNING_RATE,
                                               constructor_text, known_entry)
from memo.kinds import TRAINING_KINDS
from memo.training.judge import UPDATE_STAGES
from memo.training.selection import weight_dtypes
from memo.model.ir import Layer
from memo.triage.failing_node import culprit_operator
from memo.triage.stored_weights import COMPUTED_WEIGHT, stored_weight_parts
from memo.triage.training_signature import ANY_MIXED, MIXED
from memo.triage.onnx_reference import SHAPE_ORIGIN_KEY
from memo.triage.bug_reduction import WRAPPED, changed_settings
from memo.bug_files import Reduction

# ONNX operators a converter writes around every layer (layouts, shapes, dtypes): never what a title names.
LAYOUT_OPERATORS = frozenset({"Transpose", "Reshape", "Cast", "Shape", "Gather", "Concat", "Slice", "Unsqueeze",
                              "Squeeze", "Identity", "Constant", "Flatten"})
TITLE_CHARS = 110
KIND_WORDS = {"nan": "produces NaN/Inf", "inconsistency": "gives wrong results", "shape": "gives a wrong output shape",
              "hang": "hangs"}


_SETTING = re.compile(r"^(?P<library>[\w.]+)-opset(?P<opset>\d+)$")


def tracker_name(library: str) -> str:
    """How a title names the library a tracker knows: memo's backend name without memo's configuration suffix
    (``tf2onnx-opset11`` is tf2onnx run with ``--opset 11``: "tf2onnx (opset 11)")."""
    setting = _SETTING.match(library)
    return f"{setting['library']} (opset {setting['opset']})" if setting else library


def _operators(folder: BugFolder) -> list[str]:
    """The ONNX graph's operators, layout plumbing (a converter's Transpose, Reshape, Cast...) left out."""
    import onnx

    path = folder.file(ONNX_FILE)
    if path is None:
        return []
    ops = list(dict.fromkeys(node.op_type for node in onnx.load(str(path)).graph.node))
    return [op for op in ops if op not in LAYOUT_OPERATORS] or ops


def layer_name(layer: Layer) -> str:
    """How a title names a layer: its class, a wrapper's with the class it wraps (``Bidirectional(LSTM)``)."""
    inner = layer.config.get("layer")
    wrapped = inner.get("class_name") if isinstance(inner, dict) else None
    return f"{layer.class_name}({wrapped})" if wrapped else layer.class_name


NAMED_SETTINGS = ("activation", "recurrent_activation")
"""Settings a finished reduction kept that a title names with the class: a function fused into the layer, lowered to
an operator of its own (t60: tf2onnx's crash on ``DepthwiseConv2D(activation='hard_sigmoid')``, the activation's)."""


def needed_settings(bug: BugFolder, layer: Layer) -> str:
    """``(activation='hard_sigmoid')`` for a :data:`NAMED_SETTINGS` setting ``layer`` keeps off its default after a
    reduction that tried every default (DONE, or KNOWN: the bug database records finished bugs only): the bug needs
    it; "" otherwise (a wrapper: its class; ``linear``, the identity, which some constructors default to None)."""
    named = [key for key in NAMED_SETTINGS if isinstance(layer.config.get(key), str) and layer.config[key] != "linear"]
    if not named or WRAPPED in layer.config \
            or Reduction.of(bug.info.get("reduction")) not in (Reduction.DONE, Reduction.KNOWN):
        return ""  # the constructor's defaults (Keras imported) only for a layer that holds such a setting
    changed = changed_settings(layer.class_name, layer.config)
    kept = [f"{key}={layer.config[key]!r}" for key in named if key in changed]
    return f"({', '.join(kept)})" if kept else ""


def layer_classes(bug: BugFolder) -> list[str]:
    """The reduced model's layers as a title names them (:func:`layer_name`, and the settings the bug needs:
    :func:`needed_settings`)."""
    ir = bug.ir()
    return list(dict.fromkeys(layer_name(layer) + needed_settings(bug, layer) for layer in ir.body)) if ir else []


LAYOUT_LAYERS = frozenset({"Reshape", "Flatten", "Permute"})
"""Keras layers that only move elements: a title's list of the layers before a culprit leaves them out."""


def wrong_together(bug: BugFolder) -> list[str]:
    """The layers before a numeric bug's culprit that it is wrong with, as a title names them: its localization
    found it right alone, fed the reference's arrays (:func:`memo.triage.localize.recheck_alone`); [] otherwise."""
    located = bug.info.get("localization") if isinstance(bug.info.get("localization"), dict) else {}
    ir = bug.ir()
    together = [str(name) for name in located.get("together") or []]
    if located.get("alone") != "right" or ir is None or len(together) < 2:
        return []
    layers = ir.by_name()
    culprit = str(located.get("layer") or "")
    return list(dict.fromkeys(layer_name(layers[name]) for name in together if name in layers and name != culprit))


def _classes_of(name: str) -> tuple[str, ...]:
    """The classes a title's layer name stands for: ``SpectralNormalization(Dense)`` -> both."""
    outer, _, inner = name.partition("(")
    return (outer, inner.rstrip(")")) if inner and "=" not in inner else (outer,)  # settings are not a class


def engine_operator(folder: BugFolder, checked: MinimalScript | None) -> str | None:
    """The operator of the converted file an engine's crash failed in (:func:`memo.triage.failing_node.
    culprit_operator`), from the checked script's message or the campaign's."""
    if folder.kind != "crash":
        return None
    computed = stored_weight_parts(folder.library, list(folder.frames), folder.file(ONNX_FILE)).get(COMPUTED_WEIGHT)
    if computed:  # t69's reader: "Conv in a Loop body" sent onnx2pytorch's maintainer into Loop, not to its weight
        return f"{computed} whose weight is no initializer"
    said = error_text(folder, checked) if checked is not None else ""
    for message in dict.fromkeys((said, str(folder.info.get("error_message") or ""))):
        found = culprit_operator(message, folder.frames, folder.file(ONNX_FILE)) if message else None
        if found:
            return found
    return None


def wrong_shape(folder: BugFolder) -> dict[str, Any]:
    """The first node whose output shape the engine got otherwise than the reference on the same file, before it
    crashed (:func:`memo.triage.onnx_reference.trace_shape_origin`); empty where none is known."""
    found = folder.info.get(SHAPE_ORIGIN_KEY)
    return found if isinstance(found, dict) and found.get("op") else {}


def shape_text(shapes: list[list[int]]) -> str:
    return ", ".join("(" + ", ".join(str(d) for d in shape) + ")" for shape in shapes)


def stepped_optimizer(folder: BugFolder) -> tuple[str, list[str]] | None:
    """A training bug at an optimizer stage: the optimizer as its script builds it
    ("Adam(learning_rate=0.1, global_clipnorm=1.0)") and the dtypes of the variables it steps; None for any other."""
    stage = str(folder.info.get("stage") or "")
    if folder.kind not in TRAINING_KINDS or stage not in UPDATE_STAGES:
        return None
    entry = str((folder.info.get("training") or {}).get("optimizer") or "") if stage == OPTIMIZER_STAGE else ""
    fixed = {"sgd": f"SGD(learning_rate={SGD_LEARNING_RATE:g})", "adam": f"Adam(learning_rate={ADAM_LEARNING_RATE:g})"}
    built = constructor_text(entry).removeprefix("keras.optimizers.") if entry and known_entry(entry) is not None \
        else fixed.get(stage, "the optimizer")
    ir = folder.ir()
    return built, list(weight_dtypes(ir)) if ir is not None else []


def optimizer_culprit(folder: BugFolder) -> str:
    """What a title names for a training bug at an optimizer stage: the optimizer with its settings but the learning
    rate, and the variables' dtypes ("Adam(global_clipnorm=1.0) on float16+float32 variables"); "" for any other."""
    stepped = stepped_optimizer(folder)
    if stepped is None:
        return ""
    built, dtypes = stepped
    short = re.sub(r"learning_rate=[^,)]*(, )?", "", built)
    if any_optimizer(folder):  # the options are not the cause: the precisions are (q48's reader checked Adam alone)
        short = short.partition("(")[0] + "()"
    return short + (f" on {'+'.join(dtypes)} variables" if dtypes else "")


def any_optimizer(folder: BugFolder) -> bool:
    """Whether the bug is keyed by its variables' mixed precisions alone, whichever optimizer and options showed it
    (:func:`memo.triage.training_signature.training_parts`: Keras on torch's first-variable scalars)."""
    signature = folder.info.get("signature")
    return isinstance(signature, dict) and str(signature.get("weights", "")).endswith(MIXED + ANY_MIXED)


def culprit(folder: BugFolder, checked: MinimalScript | None = None) -> str:
    """:func:`layer_culprit`, under the ``keras.RematScope`` mode a training bug's layers were built with; under
    remat, the layers holding a setting of the base Layer instead, with it (t55's reader: "Conv2D under
    RematScope(full)" hid the Conv1D's activity_regularizer the bug needs: its loss is added inside the
    rematerialized call)."""
    mode = folder_remat(folder)
    if not mode:
        return layer_culprit(folder, checked)
    holding = remat_holders(folder)
    return f"{listed(holding) if holding else layer_culprit(folder, checked)} under RematScope({mode})"


GRADIENT_KINDS = ("training-nan", "training-inconsistency")
MINIMAL_WEIGHTS = ("minimal", "weights.npz")  # the checked minimal script's weights, one array per "layer/index"


def weightless_after(bug: BugFolder) -> list[str]:
    """A gradient bug's layers after the one owning the first differing gradient in backward order (localization's
    layer, else the differing weight's), when none of them holds a weight: the gradient may go wrong in their
    backward pass, which no weight's gradient shows apart (t54: a JAX NaN "of Conv2D" made by AutoContrast after
    it). Their classes in the model's order; [] for any other bug, or without the minimal script's weights."""
    if bug.kind not in GRADIENT_KINDS or str(bug.info.get("stage") or "") != "gradients":
        return []
    ir, weights = bug.ir(), bug.path.joinpath(*MINIMAL_WEIGHTS)
    located = bug.info.get("localization") if isinstance(bug.info.get("localization"), dict) else {}
    differing = str((bug.info.get("training") or {}).get("name") or "").partition("/")[0]
    owner = str(located.get("layer") or differing)
    if ir is None or owner not in ir.by_name() or not weights.is_file():
        return []
    import numpy as np

    with np.load(weights) as stored:
        holding = {key.rpartition("/")[0] for key in stored.files}
    consumers, after, frontier = ir.consumers(), [], [owner]
    while frontier:
        for name in consumers.get(frontier.pop(), []):
            if name not in after:
                after.append(name)
                frontier.append(name)
    if not after or any(name in holding for name in after):
        return []
    order = [layer.name for layer in ir.layers]
    return list(dict.fromkeys(ir.get(name).class_name for name in sorted(after, key=order.index)))


def layer_culprit(folder: BugFolder, checked: MinimalScript | None = None) -> str:
    """The layer or operator a title names, from the reduced model (a wrapper with the layer it wraps). An engine's
    crash: the operator of the file it failed in where its message or traceback tells it, else the file's operators
    where there are two at most (layout plumbing left out), else the Keras layers. Otherwise the class the checked
    script's error names (Keras's "X.call()"), else the class localization blamed when the reduced model still has
    it, else the reduced model's ONNX operators (an engine's numeric bug) or layer classes."""
    inner = inner_culprit(folder.inside, str(folder.info.get("error_message") or ""), folder.frames) \
        if folder.inside else None
    if inner:  # a failure inside a library of the stack: its operator, not the Keras layers around it
        return inner
    stepping = optimizer_culprit(folder)
    if stepping:  # an optimizer's step: the optimizer and the variables' precisions, not the layers holding them
        return stepping
    classes = layer_classes(folder)
    idiom = idiom_for(folder.library)
    engine = idiom is not None and idiom.builds == ONNX and not folder.converter_blamed
    origin = wrong_shape(folder) if idiom is not None and idiom.builds == ONNX else {}
    operator = origin.get("op") or (engine_operator(folder, checked) if engine else None)
    if operator:
        return str(operator)
    localized = str(folder.info.get("layer_class") or "")
    operators = _operators(folder) if engine else []
    if operators:  # the maintainer reads the ONNX file, never the Keras model: its operators, the layer a suffix
        layers = [name for name in classes if localized and localized in _classes_of(name)] or classes or (
            [localized] if localized else [])
        same = {part for name in layers for part in _classes_of(name)} >= set(operators)
        return listed(operators) + (f" {from_keras(layers)}" if layers and not same else "")
    names = classes
    said = error_text(folder, checked) if checked is not None else ""
    said = said or str(folder.info.get("error_message") or "")
    named = [name for name in names if any(f"{part}.call()" in said for part in _classes_of(name))]  # Keras names it
    located = [name for name in classes if localized in _classes_of(name)]
    if named:
        names = named
    elif weightless_after(folder):  # the gradient may go wrong in a weightless layer after the localized one
        names = classes
    elif localized and (located or localized in names or not names):
        before = wrong_together(folder)
        shown = [name for name in before if name not in LAYOUT_LAYERS] or before
        names = [f"{(located or [localized])[0]} after {listed(shown)}"] if before else located or [localized]
    return listed(names)


def listed(names: list[str], most: int = 3) -> str:
    """``names`` for a title: the first ``most``, ", ..." for the rest."""
    return ", ".join(names[:most]) + (", ..." if len(names) > most else "")


def from_keras(layers: list[str]) -> str:
    """The suffix naming the Keras layers an ONNX file's operators were converted from."""
    return f"(from Keras {listed(layers, 2)})"


# What a cause cut from a long message may open with that is no word of it: the end of a checked condition
# (MXNet's "(-1 vs. -1) : Index type must be set").
_LEADING_CODE = re.compile(r"^[^A-Za-z]*[)\]]\s*:?\s*")


# What a checker prefixes to each failure it lists: a qualified exception name, a bracketed tag, the node it concerns
# (ONNX's "onnx...InferenceError: [ShapeInferenceError] Inference error(s): (op_type:ConvTranspose, node name: x):").
_TAGS = re.compile(r"^(?:\s*(?:[\w.]+(?:Error|Exception):|\[\w+\]|Inference error\(s\):|\(op_type:[^)]*\):))+")


# A failed check's source location and condition, before the message it prints (dmlc's and glog's CHECK, MXNet's
# "../src/operator/tensor/../elemwise_op_common.h:134: Check failed: assign(&dattr, vec.at(i)): Incompatible attr...").
_CHECK_FAILED = re.compile(r"(?:\S+:\d+: )?Check failed: .*?\s?: ")
_WORDS = re.compile(r"\b[A-Za-z]{2,}\b")
# a status tag an engine repeats when it re-raises ("[ONNXRuntimeError] : 1 : FAIL : Exception during
# initialization: <C++ frame> [ONNXRuntimeError] : 1 : FAIL : upsamplebase.h:579 ScalesValidation 'Cubic' mode ...")
_NESTED_STATUS = re.compile(r"\[\w+Error\]\s*:\s*\d+\s*:\s*\w+\s*:\s*")
_SOURCE_LOCATION = re.compile(r"^\S+\.\w+:\d+\s+")  # a source file and line opening a message
# ONNX Runtime's wrapper around a kernel's status: the node it ran, then the kernel's own message (the cause)
_STATUS_MESSAGE = re.compile(r"Non-zero status code returned while running \w+ node\.\s*Name:\s*'[^']*'\s*"
                             r"Status Message:\s*")
_LIST_ITEM = re.compile(r"^\s*[*-]\s+")


def status_message(text: str) -> str:
    """The kernel's own message inside ONNX Runtime's status wrapper ("[ONNXRuntimeError] : 1 : FAIL : Non-zero
    status code returned while running Resize node. Name:'...' Status Message: upsamplebase.h:579 ScalesValidation
    'Cubic' mode only supports:\n  * 2-D inputs ...") in one line, its source location and list marks left out; ""
    where ``text`` has no such wrapper. The wrapper's words are the same for every failure: the title and the search
    words need the cause, and the operator the title names already."""
    found = list(_STATUS_MESSAGE.finditer(text))
    if not found:
        return ""
    lines = []
    for line in text[found[-1].end():].splitlines():
        if _TRACEBACK_LINE.match(line):
            break
        lines.append(_LIST_ITEM.sub("", line).strip())
    return _SOURCE_LOCATION.sub("", " ".join(line for line in lines if line)).strip()


_TRACEBACK_LINE = re.compile(r"^(?:Traceback \(most recent|\s*File \"|Stack trace:)")
_QUOTED_PATH = re.compile(r"\s*'[^'\s]*/[^'\s]*'")


def stated_cause(folder: BugFolder, checked: MinimalScript | None = None) -> str:
    """A crash's cause as the checked script's run states it (the campaign's message where none reproduces): the
    message's stated line as a full clause (:func:`memo.triage.describe.full_clause`), and of a long one its first
    sentence in words."""
    checked = checked or MinimalScript()
    head = status_message(error_text(folder, checked) or str(folder.info.get("error_message") or "")) or \
        message_head(folder, checked)
    nested = _NESTED_STATUS.split(head)  # an error re-raised with its own status tag: the innermost one says why
    if len(nested) > 2 and len(_WORDS.findall(nested[-1])) >= 3:
        head = _SOURCE_LOCATION.sub("", nested[-1]).strip()
    quoted_code = any(mark in head for mark in ("%", "::"))  # a graph node torch.onnx quotes: the sentence around it
    text = head if head and not quoted_code else stated_message(folder, checked)
    text = _TAGS.sub("", text).strip() or text
    if len(text) <= TITLE_CHARS // 2:
        return text
    checked_message = _CHECK_FAILED.split(text, 1)  # a failed check: the message it prints after its condition
    text = checked_message[-1] if len(_WORDS.findall(checked_message[-1])) >= 3 else text
    named = " ".join(_QUOTED_PATH.sub("", text).split())  # a node or scope's quoted path: no word of the clause
    text = named if len(_WORDS.findall(named)) >= 3 else text
    sentences = [_LEADING_CODE.sub("", part.strip()) for part in text.split(". ") if part.strip()]
    stated = [sentence for sentence in sentences if len(sentence.split()) >= 3
              and not any(mark in sentence for mark in ("::", "/", "[", "]"))]
    return (stated or sentences or [text])[0]


def folder_training_symptom(folder: BugFolder) -> str:
    """A training bug's :func:`memo.filing.training_idiom.training_symptom` from its folder ("" for others, crashes)."""
    training = folder.info.get("training") if folder.kind in TRAINING_KINDS else None
    if not isinstance(training, dict):
        return ""
    also = _ALSO_ON.search(str(folder.info.get("message") or ""))
    compared = WITHOUT_REMAT if folder_remat_control(folder) else folder.reference
    said = training_symptom(str(folder.info.get("stage", "")), folder.kind, training, compared,
                            also.group(1) if also else "")
    if assigned_cause(folder):  # the layer's defect: the backends part, none of them is the truth
        said = said.replace(f" differs from {folder.reference}",
                            f" differs between backends ({folder.library} against {folder.reference})")
    return said


_ALSO_ON = re.compile(r"\(also on ([^)]*)\)")  # memo.training.judge: the other backends making the same NaN


def title(folder: BugFolder, checked: MinimalScript | None = None) -> str:
    """``[library] Culprit: symptom`` in one line, from the reduced model and the checked script's run."""
    symptom = folder_training_symptom(folder)
    if symptom:  # a training stage's array, named with the figures its check prints
        what = symptom
    elif folder.kind in KIND_WORDS:
        what = KIND_WORDS[folder.kind]
        if folder.kind in ("nan", "inconsistency") and folder.reference:
            what += f" (against {'the ONNX reference evaluator' if folder.against_evaluator else folder.reference})"
    elif folder.converter_blamed and checked is not None and checked.reproduces:  # the script's words on the file:
        what = stated_cause(folder, checked)  # the node, its attribute, its size by the spec against Keras's
    elif wrong_shape(folder):  # where the shapes went wrong, before the crash
        origin = wrong_shape(folder)
        what = (f"output shape {shape_text(origin['engine'])} where {origin.get('by') or 'the reference'} gives "
                f"{shape_text(origin['reference'])}")
        if folder.converter_blamed:  # the converter's node, which engines following the spec size differently
            what = (f"output shape {shape_text(origin['engine'])} in {folder.library}, "
                    f"{shape_text(origin['reference'])} in {origin.get('by') or 'the reference'}")
    else:
        cause = stated_cause(folder, checked)
        if not folder.converter_blamed:  # the exception apart: a title too long drops it before the cause's words
            return fitted(f"[{tracker_name(folder.filed_on)}] ", culprit(folder, checked), folder.exception, cause)
        what = f"{folder.exception}: {cause}" if folder.exception else cause
        what = f"writes a file {folder.library} fails on ({what})"  # the converter's file, which an engine fails on
    named = culprit(folder, checked)
    filed = tracker_name(folder.filed_on)
    assigned = assigned_cause(folder)
    if assigned and symptom:  # the cause first: the layer overwrites the weight in its training call and backends
        # part by whether they differentiate through it; the weight by its own name (t58's path made the title long)
        leaves = {name: name.rsplit("/", 1)[-1] for name in assigned}
        named += f" assigns {', '.join(dict.fromkeys(leaves.values()))} in call()"
        for name, leaf in leaves.items():
            what = what.replace(f" of {name} ", f" of {leaf} ")
        filed = "keras"
    long = len(f"[{filed}] {named}: {what}") > TITLE_CHARS
    if symptom and long and folder.info.get("stage") not in UPDATE_STAGES:  # a weight's path too long for the title
        what = weight_by_class(what, str((folder.info.get("training") or {}).get("name") or ""), folder.ir())
    return fitted(f"[{filed}] ", named, "", what)


# asides in words ("(zero-based)", "(against keras-tensorflow)"), bracketed tags ("[Op:Mul]"), an empty trailing name;
# not a figure's brackets ("shape [*, 4]", "size (11)"), which state the bug
_ASIDES = re.compile(r"\s*(?:\([A-Za-z][A-Za-z -]*(?<! )(?: \d+)?\)|\[\w+:[^\[\]]*\])|\s+name:\s*$")
# Where a phrase may end: punctuation, or a word opening a clause or a complement
_CLAUSE_ENDS = re.compile(r"[,;:.]\s|\s-\s|\s(?=\()|\s(?=(?:as|but|where|with|for|because|since|when|while|which|by|in|at|"
                          r"from|after|before|than|between)\s)")
_MIN_WORDS = 3
_FROM_KERAS = re.compile(r" \(from Keras .*\)$")  # the layers an operator came from: their settings nest parentheses


def clauses(text: str) -> list[str]:
    """``text`` ended at each place a phrase may end, longest first (each of :data:`_MIN_WORDS` words at least)."""
    ends = [match.start() for match in _CLAUSE_ENDS.finditer(text)]
    cut = [text[:end].rstrip(" ,;:.-(") for end in reversed(ends)]
    return [part for part in dict.fromkeys(cut) if len(_WORDS.findall(part)) >= _MIN_WORDS
            and part.rsplit(" ", 1)[-1].lower() not in _OPEN_WORDS]


_OPEN_WORDS = frozenset({"a", "an", "the", "to", "of", "and", "or", "is", "was", "be", "are", "were", "not", "got"})


def fitted(head: str, named: str, exception: str, cause: str, limit: int = TITLE_CHARS) -> str:
    """``head named: exception: cause`` within ``limit`` characters, shortened by what says least first: the Keras
    layers an ONNX operator came from, the cause's asides, the exception's name, the cause's trailing clauses (never
    mid-sentence), the culprit's list after its first name; cut at a word with "..." only where nothing else fits."""
    bare = _ASIDES.sub("", cause).strip() or cause
    short_named = _FROM_KERAS.sub("", named)
    first_named = _FROM_KERAS.sub("", named.split(", ")[0] + (", ..." if ", " in named else ""))
    tries = [(named, exception, cause), (short_named, exception, cause), (short_named, exception, bare),
             (short_named, "", bare)]
    tries += [(culprit_name, said, part) for culprit_name in (short_named, first_named) for part in clauses(bare)
              for said in (exception, "")]
    for culprit_name, said, what in tries:
        text = f"{head}{culprit_name}: {f'{said}: ' if said and what else said}{what}"
        if len(text) <= limit:
            return text
    return whole_words(f"{head}{named}: {f'{exception}: ' if exception else ''}{cause}", limit)
