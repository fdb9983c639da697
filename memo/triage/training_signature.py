"""Signatures of the training check's findings (:data:`memo.kinds.TRAINING_KINDS`), their folding into inference
bugs, and their localization in backward order: pure, no execution (docs/training.md, "Triage").

A training verdict's bug is its kind, library, judged stage (``forward``, ``loss``, ``state``, ``gradients``,
``sgd``, ``adam``, ``optimizer``: then also the Keras class of the model's catalogue entry) and the class of the layer
owning the first array that differs (the verdict names the weight by its Keras path, ``dense/kernel``, mapped to the
layer through the mutant's IR; a wrapper's inner layer is the wrapper's); at an optimizer stage, which updates every
variable alike, the differing weight's dtype and the model's mixed weight dtypes instead of that class
(:func:`update_precision`); a ``training-crash`` is its exception and masked message instead (dtype names masked
too). A ``prepare``, ``forward`` or ``loss`` verdict on a model whose inference run shows a verdict against the same
backend is that inference bug again: it is folded (:func:`folded`), not listed twice.
"""
from __future__ import annotations

import re
from typing import Any, Iterable, Sequence

from memo.backends import REFERENCE
from memo.backends.training_remat import REMAT_KEY, recorded_remat
from memo.backends.training_optimizers import OPTIMIZER_STAGE, optimizer_class, recorded_optimizer
from memo.json_types import JsonObject
from memo.kinds import BUG_KINDS, TRAINING_KINDS, VerdictKind
from memo.model.ir import Layer, ModelIR
from memo.oracle import KERAS_FRONT_END, Verdict
from memo.triage.masks import normalize_message
from memo.training.judge import MODEL_IR_KEY, UPDATE_STAGES
from memo.training.selection import variable_dtype, weight_dtypes
from memo.truth import NOISE
from memo.triage.signature import (LAYER_OBJECT, TRUTH_DECISION, culprit_classes, culprits, digest, message_pattern,
                                   reduced_keys)

UNLOCALIZED = "?"
INPUT_OWNER = "input"  # the owner class named for an input's gradient
# Stages whose difference is the loading or the forward pass's (an inference difference shows there first).
FORWARD_STAGES = frozenset({"prepare", "forward", "loss"})
# A training-crash's message: "gradients error: ValueError: ..." (memo.training.judge._failure_verdict)
_CRASH = re.compile(r"^\S+ (?:error|crash|hang|unsupported): (?:([\w.]+): )?(.*)$", re.S)
_INPUT = re.compile(r"^input (\d+)$")
# dtype names in a training crash's message: the same step failing on float16 and on float64 weights beside float32
# ones ("expected to be a half tensor but is a float tensor", "... a double tensor ...") is one defect
# the witnesses a crash of the reference names ("(finished by keras-jax, keras-torch)"): which ran, not the bug
_FINISHED_BY = re.compile(r"\s*\((?:finished by|also on) [^)]*\)")  # who else ran the stage: not the cause
_DTYPES = re.compile(r"\b(?:b?float(?:16|32|64)|half|float|double|int(?:8|16|32|64)|uint8|bool)\b")
_OUTPUT = re.compile(r"^output (\d+)$")
# A training finding's kind as the inference finding of the same forward difference (inference_twin).
_INFERENCE_KIND = {VerdictKind.TRAINING_INCONSISTENCY.value: VerdictKind.INCONSISTENCY.value,
                   VerdictKind.TRAINING_NAN.value: VerdictKind.NAN.value}
# Layers whose call in training mode runs code of its own: batch statistics (BatchNormalization), a power iteration
# (SpectralNormalization), randomness the check makes deterministic (dropout, noise, random augmentation).
_OWN_TRAINING_CODE = re.compile(r"BatchNormalization|SpectralNormalization|Dropout|Noise|^Random")


def training_record(verdict: Verdict) -> JsonObject:
    """The training verdict's own fields as the store keeps them (array, weight name, figures)."""
    record = verdict.extra.get("training")
    return record if isinstance(record, dict) else {}


def weight_owner(ir: ModelIR | None, name: str | None) -> Layer | None:
    """The IR layer owning the weight named by Keras path ``name`` (``dense/kernel``; a wrapped layer's weight, by
    the wrapper), the input layer of ``input N``, the layer computing ``output N``; None when the IR does not say."""
    if ir is None or not name:
        return None
    found = _INPUT.match(name)
    if found:
        inputs = ir.input_layers
        index = int(found[1])
        return inputs[index] if index < len(inputs) else None
    found = _OUTPUT.match(name)  # a forward difference: the layer computing that output
    if found:
        index = int(found[1])
        return ir.by_name().get(ir.outputs[index]) if index < len(ir.outputs) else None
    components = name.split("/")[:-1]
    layers = ir.by_name()
    wrappers = [(layer, inner) for layer in ir.body if isinstance(inner := layer.config.get("layer"), dict)]
    for component in components:  # the outermost layer of the model that the path names
        if component in layers:  # unless a wrapped layer Keras named itself has that name too (t51: a Dense named
            # ``dense`` after SpectralNormalization(Dense), whose kernel Keras also calls ``dense/kernel``): the
            # wrapper, whose own code a training difference of that path came through
            return next((layer for layer, inner in wrappers if _auto_named(inner, component)), layers[component])
    for component in components:
        for layer, inner in wrappers:
            if (inner.get("config") or {}).get("name") == component:
                return layer
    for component in components:  # a wrapped layer Keras named itself: ``dense`` or ``dense_3`` for a Dense
        for layer, inner in wrappers:
            if _auto_named(inner, component, numbered=True):
                return layer
    return None


def _auto_named(inner: dict, component: str, numbered: bool = False) -> bool:
    """Whether a wrapped layer's config without a name of its own is one Keras names ``component`` (its class in
    snake case; ``numbered``: with a ``_N`` suffix too)."""
    if (inner.get("config") or {}).get("name"):
        return False
    base = re.escape(snake_case(str(inner.get("class_name") or "")))
    return re.fullmatch(rf"{base}(?:_\d+)?" if numbered else base, component) is not None


def snake_case(class_name: str) -> str:
    """The name Keras gives a layer of ``class_name`` by default (``keras.src.utils.naming.to_snake_case``)."""
    name = re.sub(r"\W+", "", class_name)
    name = re.sub("(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub("([a-z])([A-Z])", r"\1_\2", name).lower()


def owner_class(ir: ModelIR | None, name: str | None) -> str:
    """The class of :func:`weight_owner` (``input`` for an input's gradient, ``?`` when unknown)."""
    layer = weight_owner(ir, name)
    if layer is None:
        return UNLOCALIZED
    return INPUT_OWNER if layer.is_input else layer.class_name


def crash_exception(message: str) -> tuple[str, str]:
    """(exception type, message) of a ``training-crash`` verdict's message."""
    found = _CRASH.match(" ".join(message.split()))
    if found is None:
        return "", message
    return found[1] or "", found[2]


def verdict_model(verdict: Verdict, ir: ModelIR | None) -> ModelIR | None:
    """The model a training verdict was computed on: the one its record keeps (an optimizer sweep's probe:
    :data:`memo.training.judge.MODEL_IR_KEY`), else ``ir`` (the executed model's)."""
    kept = training_record(verdict).get(MODEL_IR_KEY)
    if not kept:
        return ir
    try:
        return ModelIR.loads(str(kept))
    except Exception:  # noqa: BLE001  (an unreadable record: the executed model's)
        return ir


def training_parts(verdict: Verdict, ir: ModelIR | None) -> dict[str, Any]:
    """The signature parts of a training verdict (see the module docstring), as a JSON-able dict; ``ir``: the
    executed model (a sweep verdict's own probe instead, :func:`verdict_model`)."""
    ir = verdict_model(verdict, ir)
    kind, stage = str(verdict.kind), str(verdict.stage or "")
    parts: dict[str, Any] = {"kind": kind, "library": str(verdict.backend or ""), "stage": stage}
    if stage == OPTIMIZER_STAGE:  # the catalogue entry's Keras class: a Nadam defect and a Lion defect are two bugs
        parts["optimizer"] = optimizer_class(recorded_optimizer(training_record(verdict)) or "")
    remat = recorded_remat(training_record(verdict))
    if remat:  # a defect of remat's code (tf.recompute_grad, jax.checkpoint) is not the same model's without remat
        parts[REMAT_KEY] = remat
    if kind == VerdictKind.TRAINING_CRASH.value:
        exception, message = crash_exception(str(verdict.message or ""))
        parts["exception"] = exception
        parts["message"] = _DTYPES.sub("<dtype>", normalize_message(_FINISHED_BY.sub("", message)))
        return shared_code_parts(parts)
    record = training_record(verdict)
    name = str(record.get("name") or "")
    if stage in UPDATE_STAGES:  # an optimizer updates each variable alike whatever layer owns it: its precision counts
        parts["weights"] = update_precision(ir, name)
        if stage == OPTIMIZER_STAGE and kind == VerdictKind.TRAINING_NAN.value:
            # a non-finite update is the optimizer's own arithmetic in that precision, mixed or not (Nadam's
            # bfloat16 update alone and beside float32 weights: one defect)
            parts["weights"] = parts["weights"].split(MIXED)[0]
        elif stage == OPTIMIZER_STAGE and MIXED in parts["weights"]:
            # a numeric defect of mixed precisions is the optimizers' shared code (Keras on torch casts every scalar
            # of Adam, AdamW, Adamax and Nadam to the first variable's dtype): one entry, whichever entry and
            # whichever lower precision showed it
            parts.pop("optimizer", None)
            parts["weights"] = parts["weights"].split(MIXED)[0] + MIXED + ANY_MIXED
        return shared_code_parts(parts)
    parts["layer"] = "loss" if name == "loss" else owner_class(ir, name) if name else UNLOCALIZED
    return parts


TORCH_BACKEND = "keras-torch"
# the classes Keras on torch steps with its own ``torch._foreach`` code (keras/src/backend/torch/optimizers/)
TORCH_OWN_OPTIMIZERS = frozenset({"SGD", "Adam", "AdamW", "Adamax", "Nadam", "RMSprop", "Adagrad", "Adadelta", "Lion"})
GENERIC_CODE = "generic"  # Keras's generic ``update_step`` (keras/src/optimizers/), run by TensorFlow and JAX
_STAGE_CLASS = {"sgd": "SGD", "adam": "Adam"}  # the optimizer class of the fixed stages


def optimizer_code(backend: str, stage: str, optimizer: str) -> str:
    """Which Keras implementation stepped the variables at ``stage`` on ``backend`` (``optimizer``: the signature's
    Keras class at stage ``optimizer``): ``keras-torch`` (Keras on torch's own ``torch._foreach`` code) for a class
    of :data:`TORCH_OWN_OPTIMIZERS` on Keras on torch, else :data:`GENERIC_CODE`. A mixed-precision difference keyed
    without its class (:data:`ANY_MIXED`) on torch is torch's code (its first-variable scalars)."""
    if backend != TORCH_BACKEND:
        return GENERIC_CODE
    name = _STAGE_CLASS.get(stage) or optimizer
    return TORCH_BACKEND if not name or name in TORCH_OWN_OPTIMIZERS else GENERIC_CODE


MIXED = " among "  # update_precision's word before a model's mixed weight dtypes
ANY_MIXED = "mixed precisions"  # the key's dtypes of an optimizer-stage numeric defect on mixed precisions


def update_precision(ir: ModelIR | None, name: str) -> str:
    """What an optimizer's numeric defect is keyed by instead of a layer class: the dtype of the weight that differs,
    and the model's weight dtypes where they are mixed (``float16 among float16,float32``: Keras on torch computes
    an optimizer's scalars in the first variable's dtype)."""
    owner = weight_owner(ir, name) if name else None
    own = variable_dtype(owner) if owner is not None and not owner.is_input else UNLOCALIZED
    dtypes = weight_dtypes(ir) if ir is not None else ()
    return own + (f"{MIXED}{','.join(dtypes)}" if len(dtypes) > 1 else "")


def folded(verdict: Verdict, inference: Iterable[Verdict]) -> bool:
    """Whether a training verdict repeats an inference verdict of its model: a ``forward``/``loss`` difference (or
    crash, or a failure to load and prepare the model) on a backend whose inference run already shows a bug verdict
    is that bug again."""
    if verdict.kind not in TRAINING_KINDS or verdict.stage not in FORWARD_STAGES:
        return False
    return any(other.kind in BUG_KINDS and other.backend == verdict.backend for other in inference)


def backward_order(ir: ModelIR) -> list[str]:
    """Layer names from the outputs towards the inputs (reverse topological order)."""
    try:
        ordered = ir.copy().toposort()
    except Exception:  # a malformed graph: the IR's own order
        ordered = ir
    return [layer.name for layer in reversed(list(ordered))]


def first_in_backward_order(ir: ModelIR, wrong: Sequence[str]) -> Layer | None:
    """Localization of a gradient difference: of the weights and inputs whose gradients differ (``wrong``: Keras
    weight paths and ``input N``), the layer owning one that comes first from the outputs towards the inputs. A
    backward pass computes a layer's gradients from those after it, so that layer is the first whose own
    gradient computation goes wrong."""
    owners = {layer.name: layer for name in wrong if (layer := weight_owner(ir, name)) is not None}
    return next((owners[name] for name in backward_order(ir) if name in owners), None)


def shared_code_parts(parts: JsonObject) -> JsonObject:
    """``parts`` of an optimizer-stage bug (``sgd``, ``adam``, ``optimizer``) keyed by the code that steps the
    variables, not by the backend that showed it: every backend's optimizer step is Keras's code
    (``keras/src/optimizers/``; TensorFlow and JAX run the generic ``update_step``, Keras on torch its own
    ``keras/src/backend/torch/optimizers/`` for the classes of :data:`TORCH_OWN_OPTIMIZERS`), so the library is
    ``keras`` and ``code`` says which implementation (:func:`optimizer_code`). Parts signed before this rule (a
    stored finding's) are brought to it here: one root cause, one key, whichever backend showed it."""
    stage = str(parts.get("stage") or "")
    if stage not in UPDATE_STAGES or parts.get("library") == KERAS_FRONT_END:
        return parts
    code = optimizer_code(str(parts.get("library") or ""), stage, str(parts.get("optimizer") or ""))
    return {**parts, "library": KERAS_FRONT_END, "code": code}


def training_key(parts: JsonObject, reduced: ModelIR, decision: str = "", assigned: bool = False) -> str:
    """A reduced training bug's root-cause key (``bugs.final_key``): its signature (without the masked message; an
    optimizer stage's by the optimizer code it ran, :func:`shared_code_parts`) with the reduced model's culprit
    classes and the float64 decision; two training bugs with one key are one entry. ``assigned``: its model assigns
    a trainable weight in its training-mode call (bug.json's ``assigned_in_call``): the layer doing so is the root
    cause, whatever it wraps (:func:`assigning_key`)."""
    kept = {key: value for key, value in shared_code_parts(parts).items() if key != "message"}
    own = digest({**kept, "culprit": culprit_classes(reduced), "decision": decision})
    shared = shared_code_key(kept, parts, reduced, decision) or mixed_precision_key(kept, decision)
    twin = inference_twin(parts, reduced, decision)
    setting = remat_setting_key(parts, reduced)
    assigning = assigning_key(kept, reduced, decision) if assigned and not setting else None  # remat's, not the layer's
    return " ".join(dict.fromkeys([own, *([shared] if shared else ()), *([setting] if setting else ()),
                                   *([assigning] if assigning else ()), *(reduced_keys(twin, reduced) if twin else ())]))


def assigning_key(kept: JsonObject, reduced: ModelIR, decision: str = "") -> str:
    """The key of a training bug whose model assigns a trainable weight in its call: the signature with the culprits'
    own classes, not the classes they wrap. SpectralNormalization assigns its wrapped layer's kernel in ``call()``;
    JAX differentiates through the assignment whatever that layer is (t58: one defect as two entries, wrapping a
    Conv2D and a Conv2DTranspose)."""
    return digest({**kept, "assigning": sorted({layer.class_name for layer in culprits(reduced)}),
                   "decision": decision})


# A training crash's stages that run the same call of every layer: Keras's ``training`` flag apart, the inference-mode
# forward pass is the training-mode one (t58: LSTM's "property 'activation' of 'LSTM' object has no setter" under
# RematScope(activations) as two entries, stages forward and eval_forward)
CALL_STAGES: dict[str, str] = {"eval_forward": "forward", "eval_gradients": "gradients"}


# Settings Keras's base Layer runs with its own code whatever the class (keras/src/layers/layer.py): a remat difference
# that needs one is that code's under remat (t53: TensorFlow drops an activity regularizer's gradient under
# RematScope on a Dense and on a Conv1D model: one defect)
BASE_LAYER_SETTINGS = ("activity_regularizer",)


def base_layer_settings(reduced: ModelIR) -> list[str]:
    """The :data:`BASE_LAYER_SETTINGS` some layer of ``reduced`` sets, sorted."""
    return sorted({name for _, name, _ in held_settings(reduced)})


def held_settings(reduced: ModelIR) -> list[tuple[str, str, str]]:
    """(class, setting, wrapper) of every layer of ``reduced`` setting one of :data:`BASE_LAYER_SETTINGS`, a layer a
    wrapper holds too (wrapper "" for none): the wrapped layer's own call adds its regularizer's loss (t69: a Dense's
    activity_regularizer inside SpectralNormalization, titled as SpectralNormalization's kernel assignment)."""
    found: list[tuple[str, str, str]] = []
    for layer in reduced.body:
        levels = [(layer.class_name, layer.config, "")]
        while levels:
            class_name, config, wrapper = levels.pop(0)
            found += [(class_name, name, wrapper) for name in BASE_LAYER_SETTINGS if config.get(name)]
            levels += [(str(inner.get("class_name")), inner["config"], wrapper or class_name)
                       for inner in (config.get("layer"), config.get("backward_layer"))
                       if isinstance(inner, dict) and isinstance(inner.get("config"), dict)]
    return list(dict.fromkeys(found))


def mixed_precision_key(kept: JsonObject, decision: str = "") -> str | None:
    """The key of a numeric update difference on mixed weight precisions in Keras on torch's own optimizer code,
    whatever the stage, the class and the dtype of the weight that differs: that code computes every scalar in the
    first variable's dtype (``keras/src/backend/torch/optimizers/``), one defect (long150d: Adam, AdamW and the fixed
    ``adam`` stage as three entries, keys apart only by those); float64's "noise" apart, whatever else it decided
    (t69: a float16 gamma's Adam step, undecided, beside the confirmed float32 Dense entry). None for any other bug."""
    if kept.get("code") != TORCH_BACKEND or kept.get("kind") == VerdictKind.TRAINING_CRASH.value \
            or MIXED not in str(kept.get("weights") or ""):
        return None
    return digest({"kind": kept.get("kind"), "library": kept.get("library"), "code": TORCH_BACKEND,
                   "weights": ANY_MIXED, "decision": decision if decision == NOISE else ""})


def shared_code_key(kept: JsonObject, parts: JsonObject, reduced: ModelIR, decision: str = "") -> str | None:
    """A training bug's key without its culprit class where the code at fault is shared by every layer. A crash: its
    message names the layer only as the Python object some shared code touched (``property 'activation' of 'LSTM'
    object has no setter``, RematScope("activations") on every RNN class, t52), or the model is built under
    ``keras.RematScope``, whose wrapper runs every layer's call (t53: JAX's checkpoint traces ``training``, so
    ``if training`` fails alike in LSTM, BatchNormalization and Attention); the masked message pattern stands for
    the code path. A numeric difference under remat whose reduced model keeps a setting of the base Layer
    (:data:`BASE_LAYER_SETTINGS`): that setting stands for it. None for any other bug."""
    if parts.get("kind") != VerdictKind.TRAINING_CRASH.value:
        settings = base_layer_settings(reduced)
        if not parts.get(REMAT_KEY) or not settings:
            return None
        return digest({**{key: value for key, value in kept.items() if key != "layer"}, "decision": decision,
                       "base_layer": settings})
    pattern = message_pattern(str(parts.get("message") or ""), reduced)
    if f"'{LAYER_OBJECT}' object" not in pattern and not parts.get(REMAT_KEY):
        return None
    # its complete sentences: a message is stored cut at a length its paths' lengths move (t54: the same JAX error
    # through lstm.py and through batch_normalization.py cut 25 characters apart)
    whole = pattern.endswith(".") or ". " not in pattern
    stage = str(kept.get("stage") or "")
    return digest({**kept, "stage": CALL_STAGES.get(stage, stage),
                   "message": pattern if whole else pattern[:pattern.rfind(". ") + 1]})


def remat_setting_key(parts: JsonObject, reduced: ModelIR) -> str | None:
    """The key of a bug under ``keras.RematScope`` whose reduced model keeps a setting of the base Layer
    (:data:`BASE_LAYER_SETTINGS`), whatever its kind, backend and stage: the base Layer computes an activity
    regularizer's loss and adds it (``add_loss``) inside the call the remat wrapper recomputes, a side effect each
    backend's wrapper mishandles its own way (t55: TensorFlow's ``tf.recompute_grad`` drops its gradient, JAX's
    ``jax.checkpoint`` lets its tracer escape: UnexpectedTracerError), whatever float64 decided: the remat difference
    is the regularizer's gradient, small where the layer's output is (t69: TensorFlow 1.16 tolerances off float64 on a
    BatchNormalization gamma, called noise beside the confirmed entry of that defect). None for any other bug."""
    settings = base_layer_settings(reduced)
    mode = parts.get(REMAT_KEY)
    if not mode or not settings:
        return None
    return digest({REMAT_KEY: mode, "base_layer": settings})


def inference_twin(parts: JsonObject, reduced: ModelIR, decision: str) -> JsonObject | None:
    """The parts of the inference finding a training bug is, where it is one: a forward difference (or NaN) of a
    layer whose training-mode call runs the code its inference call runs (the forward pass of Keras on torch's
    'same' AveragePooling1D, found through a gradient: :mod:`memo.triage.training_forward`), keyed as an inference
    bug of that layer on that backend, so that the two are one entry; a crash at ``forward`` as the inference crash
    with its exception and message. None for any other stage, for a model built under ``keras.RematScope`` (remat's
    code), and for a culprit whose training-mode call is its own code (batch statistics, power iteration, randomness
    made deterministic)."""
    if parts.get("stage") != "forward" or parts.get(REMAT_KEY) \
            or any(_OWN_TRAINING_CODE.search(name) for name in culprit_classes(reduced)):
        return None
    if parts.get("kind") == VerdictKind.TRAINING_CRASH.value:  # the inference crash's message-pattern key (t51's
        # LayerNormalization on Keras on torch, failing alike at inference: one entry)
        return {"kind": VerdictKind.CRASH.value, "library": parts.get("library", ""), "stage": "execute",
                "exception": parts.get("exception", ""), "message": parts.get("message", "")}
    kind = _INFERENCE_KIND.get(str(parts.get("kind", "")))
    if kind is None or not parts.get("layer") or parts["layer"] == UNLOCALIZED:
        return None
    return {"kind": kind, "layer": parts["layer"], "library": parts.get("library", ""),
            "reference": REFERENCE, TRUTH_DECISION: decision}
