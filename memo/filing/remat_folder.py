"""What a training bug's folder says of ``keras.RematScope``: the mode its layers were built with, the script's
control without it, and the layers whose base-Layer setting makes the difference."""
from __future__ import annotations

from memo.backends.training_remat import recorded_remat
from memo.filing.folder import BugFolder
from memo.filing.training_idiom import remat_control
from memo.kinds import TRAINING_KINDS
from memo.triage.training_signature import held_settings


def folder_remat(folder: BugFolder) -> str | None:
    """The ``keras.RematScope`` mode a training bug's layers were built with (None: none, or not a training bug)."""
    return recorded_remat(folder.info.get("training")) if folder.kind in TRAINING_KINDS else None


def folder_remat_control(folder: BugFolder) -> str | None:
    """The remat mode a training bug's script checks against the same model without it
    (:func:`memo.filing.training_idiom.remat_control`; None: its script checks against the reference's arrays)."""
    return remat_control(folder.kind, str(folder.info.get("stage", "")), folder.info.get("training")) \
        if folder.kind in TRAINING_KINDS else None


WITHOUT_REMAT = "the same model without remat"
"""Whom a remat-controlled training bug's arrays are compared with, in its title."""


def remat_holders(folder: BugFolder) -> list[str]:
    """A remat training bug's layers holding a base-Layer setting, with it ("Dense(activity_regularizer)", a wrapped
    one too: its text says which wrapper): the cause, before any weight a wrapper assigns in its call; [] without
    remat."""
    ir = folder.ir() if folder_remat(folder) else None
    return list(dict.fromkeys(f"{name}({setting})" for name, setting, _ in (held_settings(ir) if ir else [])))


def assigned_cause(folder: BugFolder) -> list[str]:
    """The trainable weights the model's training-mode call assigns (bug.json's ``assigned_in_call``) as the bug's
    cause: none where a base-Layer setting under remat is it instead (:func:`remat_holders`; t69: the Dense that a
    SpectralNormalization wraps had an activity_regularizer, and the text argued the wrapper's kernel assignment)."""
    names = [str(name) for name in folder.info.get("assigned_in_call") or []]
    return names if names and not remat_holders(folder) else []
