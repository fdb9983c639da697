"""The sentences an issue text adds for a training bug (the optimizer's cause on Keras on torch, low-precision
variables, remat, weights a training-mode call assigns), and how issues name the libraries. Pure: reads a bug's folder
only."""
from __future__ import annotations

import re

from memo.backends.training_remat import remat_scope
from memo.filing.folder import BugFolder
from memo.filing.title import folder_remat

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


def remat_note(bug: BugFolder) -> str:
    """Where a training bug's layers are built inside ``keras.RematScope``: that, and whether triage saw the reduced
    model without remat train right (its reduction's step, :mod:`memo.triage.training_bug`)."""
    mode = folder_remat(bug)
    if not mode:
        return ""
    steps = " ".join(str(step) for step in (bug.info.get("reduction") or {}).get("steps") or [])
    without = " The same model built without it does not show the bug." if f"remat {mode}: needed" in steps else ""
    return (f" The model's layers are built inside `{remat_scope(mode)}` (rematerialization: each layer's forward "
            f"pass is recomputed in the backward pass), which must not change what training computes.{without}")


def low_precision_note(dtypes: list[str]) -> str:
    """What a Keras maintainer asks first of an optimizer bug on float16 or bfloat16 variables: where they come
    from, and that Keras accepts them (a sentence opening with a space; "" for other precisions)."""
    low = [dtype for dtype in dtypes if dtype in LOW_PRECISIONS]
    if not low:
        return ""
    return (f" The {' and '.join(low)} variables belong to layers built with `dtype=\"{low[0]}\"`: a per-layer dtype "
            f"Keras accepts and builds the variables in (not a mixed-precision policy such as `mixed_{low[0]}`, "
            f"whose variables are float32); the optimizer raises no error or warning about them.")


_FINISHED_BY = re.compile(r"\(finished by ([^)]*)\)")


def finished_by(bug: BugFolder) -> str:
    """The libraries that finish the stage a training crash fails in (its message's "(finished by ...)"), in words."""
    found = _FINISHED_BY.search(str(bug.info.get("message") or bug.info.get("error_message") or ""))
    names = [name.strip() for name in found.group(1).split(",")] if found else []
    return " and ".join(LIBRARY_NAMES.get(name, name) for name in names if name)


def assigned_text(bug: BugFolder) -> str:
    """The sentence on trainable weights the model's training-mode call assigns (bug.json's ``assigned_in_call``,
    recorded by Keras on TensorFlow and torch), "" where it assigns none."""
    names = [str(name) for name in bug.info.get("assigned_in_call") or []]
    if not names:
        return ""
    plural = "s" if len(names) > 1 else ""
    return (f" The layer's training-mode call assigns its trainable weight{plural} {', '.join(f'`{n}`' for n in names)}"
            f" (after the forward pass the value differs from the one before): the gradient with respect to a weight "
            f"the forward pass overwrites depends on whether a backend differentiates through that assignment, so "
            f"Keras's backends part by the layer's design, not by rounding.")
