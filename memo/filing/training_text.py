"""The sentences an issue text adds for a training bug (the optimizer's cause on Keras on torch, low-precision
variables, remat, weights a training-mode call assigns), and how issues name the libraries. Pure: reads a bug's folder
only."""
from __future__ import annotations

import math
import re

from memo.backends.training_remat import remat_scope
from memo.filing.folder import BugFolder
from memo.filing.remat_folder import assigned_cause, folder_remat
from memo.filing.title import weightless_after
from memo.triage.training_signature import held_settings

# How an issue names the reference libraries a maintainer knows by another name.
LIBRARY_NAMES = {"keras-tensorflow": "Keras on TensorFlow", "keras-jax": "Keras on JAX", "keras-torch": "Keras on "
                 "PyTorch", "keras-openvino": "Keras on OpenVINO", "keras": "Keras (on every backend)",
                 "keras-export": "Keras's `model.export(format=\"onnx\")` on the torch backend (torch.onnx underneath)"}


# Keras on torch's optimizers (keras/src/backend/torch/optimizers/torch_*.py) read as memo's keying rule for a
# numeric difference on mixed precisions (memo.triage.training_signature.ANY_MIXED) assumes it
TORCH_SCALARS = ("Keras on PyTorch's optimizers (`keras/src/backend/torch/optimizers/torch_*.py`) compute the step's "
                 "scalars (learning rate, bias corrections) once, in `variables[0].dtype`, and step every variable "
                 "with them; TensorFlow and JAX compute them per variable, in its own dtype.")
LOW_PRECISIONS = ("float16", "bfloat16")


def weightless_note(bug: BugFolder) -> str:
    """The sentence on :func:`weightless_after`'s layers (a sentence opening with a space; "" without them)."""
    classes = weightless_after(bug)
    if not classes:
        return ""
    listed = " and ".join(classes)
    return (f" {listed} {'come' if len(classes) > 1 else 'comes'} after the last layer whose weights' gradient "
            f"differs and {'hold' if len(classes) > 1 else 'holds'} no weights: the gradient may go wrong in "
            f"{'their' if len(classes) > 1 else 'its'} backward pass (the reduction could not remove "
            f"{'them' if len(classes) > 1 else 'it'}).")


def remat_note(bug: BugFolder) -> str:
    """Where a training bug's layers are built inside ``keras.RematScope``: that, and whether triage saw the reduced
    model without remat train right (its reduction's step, :mod:`memo.triage.training_bug`)."""
    mode = folder_remat(bug)
    if not mode:
        return ""
    steps = " ".join(str(step) for step in (bug.info.get("reduction") or {}).get("steps") or [])
    without = " The same model built without it does not show the bug." if f"remat {mode}: needed" in steps else ""
    ir = bug.ir()
    held = held_settings(ir) if ir else []
    # t58's reader: the text never said that the trigger is the activity regularizer (without it, the two agree)
    named = "" if not held else (f"`{held[0][1]}` of the {held[0][0]} that the {held[0][2]} wraps" if held[0][2]
                                 else f"{held[0][0]}'s `{held[0][1]}`")
    setting = (f" The {named} is part of it: the reduced model keeps it, where memo's "
               f"reduction drops every setting the bug does not need (Keras's base Layer adds that regularizer's "
               f"loss with `add_loss` after the layer's call, `keras/src/layers/layer.py`)." if held else "")
    return (f" The model's layers are built inside `{remat_scope(mode)}` (rematerialization: each layer's forward "
            f"pass is recomputed in the backward pass), which must not change what training computes.{without}"
            f"{setting}")


def low_precision_note(dtypes: list[str]) -> str:
    """What a Keras maintainer asks first of an optimizer bug on float16 or bfloat16 variables: where they come
    from, and that Keras accepts them (a sentence opening with a space; "" for other precisions)."""
    low = [dtype for dtype in dtypes if dtype in LOW_PRECISIONS]
    if not low:
        return ""
    return (f" The {' and '.join(low)} variables belong to layers built with `dtype=\"{low[0]}\"`: a per-layer dtype "
            f"Keras accepts and builds the variables in (not a mixed-precision policy such as `mixed_{low[0]}`, "
            f"whose variables are float32); the optimizer raises no error or warning about them.")


# The decay factors in (0, 1) of Keras's optimizers with their defaults (keras 3.15.1's constructors): a factor that
# rounds to 1.0 in a variable's dtype makes every `1 - beta` and `1 - beta**t` an update step computes in it 0
DECAY_DEFAULTS: dict[str, dict[str, float]] = {
    **{name: {"beta_1": 0.9, "beta_2": 0.999} for name in ("Adam", "AdamW", "Adamax", "Nadam", "Lamb")},
    "Lion": {"beta_1": 0.9, "beta_2": 0.99}, "RMSprop": {"rho": 0.9}, "Adadelta": {"rho": 0.95},
    "Muon": {"adam_beta_1": 0.9, "adam_beta_2": 0.999, "momentum": 0.95}, "SGD": {"momentum": 0.0}}
SIGNIFICANT_BITS = {"float16": 11, "bfloat16": 8}  # the significand's bits, the implicit one included


def rounded(value: float, bits: int) -> float:
    """``value`` rounded to ``bits`` significant bits, to nearest, ties to even (what a cast to float16 or bfloat16
    does to a normal number)."""
    if value == 0 or not math.isfinite(value):
        return value
    mantissa, exponent = math.frexp(value)
    return round(mantissa * 2 ** bits) / 2 ** bits * 2 ** exponent


def rounded_decays_note(built: str, dtypes: list[str]) -> str:
    """The sentence naming an optimizer's decay factor that its low-precision variables' dtype rounds to 1.0
    (Nadam's ``beta_2=0.999`` in bfloat16, campaign t54), from the optimizer as the script builds it
    (``Nadam(learning_rate=0.01)``; its settings override the defaults); "" where none does."""
    name, _, arguments = built.partition("(")
    factors = dict(DECAY_DEFAULTS.get(name.strip(), {}))
    for setting, value in re.findall(r"(\w+)=([-+0-9.eE]+)", arguments):
        if setting in factors:
            factors[setting] = float(value)
    for dtype in dtypes:
        bits = SIGNIFICANT_BITS.get(dtype)
        ones = [setting for setting, value in factors.items() if bits and 0 < value < 1 and rounded(value, bits) == 1.0]
        if ones:
            named = " and ".join(f"`{setting}={factors[setting]:g}`" for setting in ones)
            return (f" In {dtype} ({bits} significant bits) {named} rounds to 1.0, and Keras's update steps cast the "
                    f"optimizer's factors to the variable's dtype: every `1 - {ones[0]}` and `1 - {ones[0]}**t` the "
                    f"step computes for the {dtype} variables is 0.")
    return ""


_FINISHED_BY = re.compile(r"\(finished by ([^)]*)\)")


def finished_by(bug: BugFolder) -> str:
    """The libraries that finish the stage a training crash fails in (its message's "(finished by ...)"), in words."""
    found = _FINISHED_BY.search(str(bug.info.get("message") or bug.info.get("error_message") or ""))
    names = [name.strip() for name in found.group(1).split(",")] if found else []
    return " and ".join(LIBRARY_NAMES.get(name, name) for name in names if name)


def assigned_text(bug: BugFolder) -> str:
    """The sentence on trainable weights the model's training-mode call assigns (bug.json's ``assigned_in_call``,
    recorded by Keras on TensorFlow and torch), "" where it assigns none."""
    names = assigned_cause(bug)
    if not names:
        return ""
    plural = "s" if len(names) > 1 else ""
    return (f" The layer's training-mode call assigns its trainable weight{plural} {', '.join(f'`{n}`' for n in names)}"
            f" (after the forward pass the value differs from the one before). Keras on JAX, stateless, "
            f"differentiates through that assignment; Keras on TensorFlow and on PyTorch take the gradient with "
            f"respect to the variable as the forward pass read it: one layer, two gradients, and Keras documents "
            f"neither (the numbers differ by far more than rounding).")
