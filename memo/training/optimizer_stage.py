"""The optimizer stages' bookkeeping in the judge (pure): each update's learning rate and steps, and the catalogue
entry a check ran (:mod:`memo.backends.training_optimizers`) named on its verdicts."""
from __future__ import annotations

from typing import Mapping, Protocol, Sequence

import numpy as np

from memo.backends.training_optimizers import (ADAM_LEARNING_RATE, ADAM_STEPS, OPTIMIZER_STAGE, SGD_LEARNING_RATE,
                                               UPDATE_PREFIXES, constructor_text, known_entry)


class Named(Protocol):
    """What :func:`name_optimizer` sets on a verdict (:class:`memo.training.judge.TrainingVerdict`)."""

    stage: str
    message: str
    optimizer: str | None


# Per optimizer array prefix: (learning rate, steps): its update is (after - before) / lr, after that many roundings
# (``opt``: the catalogue entry's, read from the record's ``optimizer``: :func:`update_steps`)
UPDATES: dict[str, tuple[float, int]] = {"sgd": (SGD_LEARNING_RATE, 1), "adam": (ADAM_LEARNING_RATE, ADAM_STEPS)}
OPTIMIZER_PREFIX = UPDATE_PREFIXES[OPTIMIZER_STAGE]


def optimizer_name(arrays: Mapping[str, np.ndarray]) -> str | None:
    """The catalogue entry a worker's record names (``optimizer``), None without one."""
    name = arrays.get("optimizer")
    return str(np.asarray(name)) if name is not None else None


def update_steps(reference: Mapping[str, np.ndarray], prefix: str) -> tuple[float, int] | None:
    """(learning rate, steps) of the optimizer whose updates have array prefix ``prefix`` (None: not an update): SGD's
    and Adam's, or the catalogue entry the record names (``optimizer``)."""
    if prefix in UPDATES:
        return UPDATES[prefix]
    if prefix != OPTIMIZER_PREFIX:
        return None
    entry = known_entry(optimizer_name(reference) or "")
    return (entry.learning_rate, entry.steps) if entry is not None else None


def optimizer_label(name: str) -> str:
    """How a verdict's message names catalogue entry ``name``: ``[optimizer nadam: keras.optimizers.Nadam(...)]``."""
    return f"[optimizer {name}: {constructor_text(name)}]" if known_entry(name) else f"[optimizer {name}]"


def name_optimizer(verdicts: Sequence[Named], name: str | None) -> None:
    """The check's catalogue entry ``name`` on each verdict (its metrics), and in the message of each at stage
    ``optimizer`` (a Nadam defect and a Lion defect are two root causes)."""
    if name is None:
        return
    label = optimizer_label(name)
    for verdict in verdicts:
        verdict.optimizer = name
        if verdict.stage == OPTIMIZER_STAGE and label not in verdict.message:
            verdict.message += f" {label}"
