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
