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

So does the ``keras.RematScope`` mode a checked model is built under (:mod:`memo.backends.training_remat`): the
one (none, or each mode) under which most of the model's layer classes have not been trained yet, the model's hashed
mode where they tie. A remat defect lives in one class's call under one mode (every RNN layer under
``mode="activations"``, BatchNormalization's ``training`` flag under ``"full"`` on JAX), which the hash alone gave a
class's models one chance in eight of meeting; now the first three checked models holding a class meet the three.

Both rules spend a CPU budget (:attr:`TrainingSelection.budget`, ``memo fuzz --train-budget``): a model either rule
chooses is checked only while the checks' measured seconds stay within that share of the inference runs' seconds
(the pipelines' time: what models per hour are made of). A large seed model's check costs tens of seconds, a small
mutant's two or three: under the budget the keys a large model would have brought are left for the next, smaller
model holding them (they are marked trained only when a model is checked). Over the budget a chosen model is
counted (``over_budget``), not checked.

Pure logic, no library: the choice is made when the campaign submits a model, in generation order. The rules are
deterministic (the same ``--seed`` proposes the same models, completion order of the pipelines does not enter); the
budget reads measured seconds, so on another machine or load it may pass a different subset of them. Generation
never reads the check, so the mutants are the same.
"""
from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass, field

from memo.backends.training_optimizers import CATALOGUE, choose_optimizer
from memo.backends.training_remat import REMAT_MODES, choose_remat
from memo.model.ir import Layer, ModelIR, policy_name

BY_SHARE, BY_NOVELTY = "share", "novelty"  # why a model was checked (kept with its check's summary)
NOVELTY_CAP = 0.2  # at most this share of submitted models checked, hash-chosen ones included
# Seconds of checks the budget allows before any inference is measured (the first models: a campaign's seeds), and
# what a check still running counts for before any finished (then: the finished checks' mean).
BUDGET_ALLOWANCE_S = 20.0
PENDING_GUESS_S = 10.0


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
    budget: float = float("inf")  # the checks' seconds at most this share of the inference runs' seconds
    trained: set[str] = field(default_factory=set)
    stepped: set[tuple[str, tuple[str, ...]]] = field(default_factory=set)  # (entry, weight dtypes) stepped so far
    swept: set[tuple[str, ...]] = field(default_factory=set)  # weight dtype sets the optimizer sweep covered
    rematted: set[tuple[str, str]] = field(default_factory=set)  # (remat mode or "", layer class) checked so far
    submitted: int = 0
    chosen: int = 0
    by_novelty: int = 0
    over_budget: int = 0  # models a rule chose that the budget left unchecked
    inference_s: float = 0.0  # measured: the executed models' inference runs
    check_s: float = 0.0  # measured: the finished checks (float64 truth included)
    finished: int = 0  # checks measured
    pending: int = 0  # checks chosen, not measured yet
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)  # pipelines measure

    def within_budget(self) -> bool:
        """Whether one more check fits the budget: the finished checks' seconds, and those still running and this
        one at the finished checks' mean, within ``budget`` of the inference seconds (plus
        :data:`BUDGET_ALLOWANCE_S`)."""
        if self.budget == float("inf"):
            return True
        mean = self.check_s / self.finished if self.finished else PENDING_GUESS_S
        return self.check_s + (self.pending + 1) * mean <= self.budget * self.inference_s + BUDGET_ALLOWANCE_S

    def measured(self, inference_s: float, check_s: float | None, checks: int = 1) -> None:
        """Account one executed model: its inference run's seconds and, when it was checked, its check's (``None``:
        not checked; a chosen model whose check never ran, its inference failing, passes 0); ``checks``: how many
        chosen checks (the check, the optimizer sweep) those seconds paid for."""
        with self.lock:
            self.inference_s += max(0.0, inference_s)
            if check_s is not None:
                self.check_s += max(0.0, check_s)
                self.finished += checks
                self.pending = max(0, self.pending - checks)

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
        with self.lock:
            if not self.within_budget():
                self.over_budget += 1
                return ""
            self.pending += 1
        self.chosen += 1
        self.by_novelty += 0 if by_hash else 1
        self.trained |= keys
        return BY_SHARE if by_hash else BY_NOVELTY

    def figures(self) -> dict[str, float | int]:
        """What the budget spent and refused, for the campaign's store (the report's training section)."""
        with self.lock:
            return {"budget": self.budget, "inference_s": round(self.inference_s, 1), "check_s": round(self.check_s, 1),
                    "checked": self.finished, "over_budget": self.over_budget,
                    "swept": sorted(",".join(dtypes) for dtypes in self.swept)}

    def sweep(self, ir: ModelIR) -> bool:
        """Whether the model ``ir`` gets the optimizer sweep (:mod:`memo.training.sweep`): the first model of its
        set of weight dtypes; records the choice. Not refused by the budget: a sweep costs seconds on a small model,
        a campaign builds a handful of dtype sets, and it finds most of the check's defects per second (its seconds
        count with the checks', so the model checks after it make room)."""
        if self.share <= 0:
            return False
        dtypes = weight_dtypes(ir)
        with self.lock:
            if dtypes in self.swept:
                return False
            self.swept.add(dtypes)
            self.pending += 1
        return True

    def optimizer(self, name: str, ir: ModelIR) -> str:
        """The catalogue entry a checked model (folder ``name``, IR ``ir``) steps: the first in its order not yet
        stepped on weights of the same dtypes, else its hashed entry; records the choice."""
        dtypes = weight_dtypes(ir)
        order = optimizer_order(name)
        entry = next((entry for entry in order if (entry, dtypes) not in self.stepped), order[0])
        self.stepped.add((entry, dtypes))
        return entry

    def remat(self, name: str, ir: ModelIR) -> str | None:
        """The ``keras.RematScope`` mode a checked model (folder ``name``, IR ``ir``) is built under (None: without
        remat): the option under which most of its layer classes are new, its hashed one (:func:`choose_remat`)
        first among equals; records the choice."""
        classes = {layer.class_name for layer in ir.layers if not layer.is_input}
        hashed = choose_remat(name)
        options = [hashed] + [mode for mode in (None, *REMAT_MODES) if mode != hashed]
        with self.lock:
            best = max(options, key=lambda mode: len({cls for cls in classes
                                                      if (mode or "", cls) not in self.rematted}))
            self.rematted |= {(best or "", cls) for cls in classes}
        return best


__all__ = ["BUDGET_ALLOWANCE_S", "BY_NOVELTY", "BY_SHARE", "NOVELTY_CAP", "PENDING_GUESS_S", "TrainingSelection", "optimizer_order", "train_chosen",
           "training_keys", "variable_dtype", "weight_dtypes"]
