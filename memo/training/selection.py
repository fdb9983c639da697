"""Which executed models a campaign gives the training check: a share chosen by a hash of the model's folder, plus
every model that brings the check something it has not trained yet in this campaign.

Training bugs live in one layer's training code (SpectralNormalization's power iteration, a pooling layer's
gradient) or in one precision's optimizer kernels (Nadam in bfloat16): a check drawn by hash alone trains a layer
class seen once with the share's chance, so a rare class is most often never trained. The novelty rule trains the
first model of each layer class, and of each class in each non-float32 dtype policy, as long as the checked models
stay within :data:`NOVELTY_CAP` of those submitted (the check costs about as much CPU as the inference run).

The optimizer catalogue's entry a checked model steps (:mod:`memo.backends.training_optimizers`) follows the same
idea: the first entry not yet stepped on a model whose weights have the same set of dtypes (float32 only; float32
and float16; ...), in an order that starts at the model's hashed entry; the hashed entry once all were. An optimizer
kernel fails in one precision (Nadam in bfloat16, a global norm over float16 and float32 gradients), so a precision
a campaign builds rarely meets every entry of the catalogue instead of one in twenty.

Pure logic, no library: the choice is made when the campaign submits a model, in generation order, so the same
``--seed`` trains the same models (completion order of the pipelines does not enter).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from memo.backends.training_optimizers import CATALOGUE, choose_optimizer
from memo.model.ir import Layer, ModelIR, policy_name

BY_SHARE, BY_NOVELTY = "share", "novelty"  # why a model was checked (kept with its check's summary)
NOVELTY_CAP = 0.2  # at most this share of submitted models checked, hash-chosen ones included


def train_chosen(name: str, share: float) -> bool:
    """Whether the model in artifact folder ``name`` is in the check's ``share`` (by a hash of the name: the same
    models whichever pipeline, order or resume runs them)."""
    digest = int.from_bytes(hashlib.sha256(name.encode()).digest()[:4], "big")
    return share > 0 and digest < share * 2**32


def training_keys(ir: ModelIR) -> frozenset[str]:
    """What a model brings the training check: its layer classes, and each class with a dtype policy other than
    float32 (``Dense@mixed_bfloat16``)."""
    keys: set[str] = set()
    for layer in ir.layers:
        if layer.is_input:
            continue
        keys.add(layer.class_name)
        policy = policy_name(layer.config)
        if policy != "float32":
            keys.add(f"{layer.class_name}@{policy}")
    return frozenset(keys)


def variable_dtype(layer: Layer) -> str:
    """The dtype of a layer's weights by its policy (a mixed policy keeps float32 variables)."""
    policy = policy_name(layer.config)
    return "float32" if policy.startswith("mixed_") else policy


def weight_dtypes(ir: ModelIR) -> tuple[str, ...]:
    """The dtypes a model's weights can have, by its layers' policies."""
    return tuple(sorted({variable_dtype(layer) for layer in ir.layers if not layer.is_input}))


def optimizer_order(name: str) -> list[str]:
    """The catalogue's entries in the order model ``name`` tries them: from its hashed entry on, wrapping."""
    names = sorted(CATALOGUE)
    first = names.index(choose_optimizer(name))
    return names[first:] + names[:first]


@dataclass
class TrainingSelection:
    """The campaign's choice of models for the training check (``share``: by hash; also the first model of each
    training key not trained yet, within :data:`NOVELTY_CAP`), and what it trained: the keys and the counts."""

    share: float
    trained: set[str] = field(default_factory=set)
    stepped: set[tuple[str, tuple[str, ...]]] = field(default_factory=set)  # (entry, weight dtypes) stepped so far
    submitted: int = 0
    chosen: int = 0
    by_novelty: int = 0

    def choose(self, name: str, ir: ModelIR) -> str:
        """Why the model in artifact folder ``name`` (its IR ``ir``) gets the check: :data:`BY_SHARE`,
        :data:`BY_NOVELTY`, or ``""`` (it does not); records the choice."""
        self.submitted += 1
        if self.share <= 0:
            return ""
        keys = training_keys(ir)
        new = keys - self.trained
        by_hash = train_chosen(name, self.share)
        room = self.chosen < NOVELTY_CAP * self.submitted  # from the first model on: the seeds are the largest
        if not by_hash and not (new and room):
            return ""
        self.chosen += 1
        self.by_novelty += 0 if by_hash else 1
        self.trained |= keys
        return BY_SHARE if by_hash else BY_NOVELTY

    def optimizer(self, name: str, ir: ModelIR) -> str:
        """The catalogue entry a checked model (folder ``name``, IR ``ir``) steps: the first in its order not yet
        stepped on weights of the same dtypes, else its hashed entry; records the choice."""
        dtypes = weight_dtypes(ir)
        order = optimizer_order(name)
        entry = next((entry for entry in order if (entry, dtypes) not in self.stepped), order[0])
        self.stepped.add((entry, dtypes))
        return entry


__all__ = ["BY_NOVELTY", "BY_SHARE", "NOVELTY_CAP", "TrainingSelection", "optimizer_order", "train_chosen",
           "training_keys", "variable_dtype", "weight_dtypes"]
