"""The training check's optimizer catalogue: Keras optimizer configurations stepped beside SGD and Adam.

Each checked model gets one entry (:func:`choose_optimizer`, a hash of its artifact folder's name, so a campaign
covers every entry and every rerun of a finding gets the same one), run as the worker stage ``optimizer``: the
entry's optimizer applies :data:`OPTIMIZER_STEPS` of the check's fixed gradients
(:func:`memo.backends.training.fixed_gradients`), its update recorded as ``(after - before) / lr``.

Why these: Keras on torch runs its own ``torch._foreach`` implementations of SGD, Adam, AdamW, Adamax, Nadam,
RMSprop, Adagrad, Adadelta and Lion (``keras/src/backend/torch/optimizers/``); TensorFlow and JAX run the generic
``update_step``; Ftrl, Adafactor, Lamb and Muon are generic on every backend. The options take the other code paths
of ``BaseOptimizer.apply``: momentum and nesterov, amsgrad, centered, weight decay, gradient clipping (``clipnorm``,
``clipvalue``, ``global_clipnorm``), ``use_ema``, ``gradient_accumulation_steps``, ``initial_accumulator_value``.

Stdlib at module level: the worker builds the optimizers (:func:`stage_optimizers`, importing Keras), the judge reads
an entry's learning rate and steps, the minimal script writes its constructor (:func:`constructor_text`).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from typing import Any, Iterable

OPTIMIZER_STAGE = "optimizer"
SGD_LEARNING_RATE = 0.1
ADAM_LEARNING_RATE = 0.1  # large enough that (after - before) / lr is not float32 cancellation of the weights
ADAM_STEPS = 2
# Each optimizer stage's array prefix in a worker's .npz (``opt_3``: the catalogue entry's update of weight 3)
UPDATE_PREFIXES: dict[str, str] = {"sgd": "sgd", "adam": "adam", OPTIMIZER_STAGE: "opt"}
Optimizer = tuple[str, Any, int, float]  # (stage, the Keras optimizer, steps, learning rate)
OPTIMIZER_STEPS = 3  # enough for momentum, moments, accumulation (applied at step 2) and EMA to matter
OPTIMIZER_LEARNING_RATE = 0.1


@dataclass(frozen=True)
class Schedule:
    """A learning-rate schedule as an entry's ``learning_rate``: ``keras.optimizers.schedules.<class_name>(**config)``.
    Its ``repr`` is that constructor, so :func:`constructor_text` writes it into a minimal script as it is."""

    class_name: str
    config: tuple[tuple[str, Any], ...]

    def __repr__(self) -> str:
        arguments = ", ".join(f"{key}={value!r}" for key, value in self.config)
        return f"keras.optimizers.schedules.{self.class_name}({arguments})"

    def build(self) -> Any:
        """The Keras schedule (worker only: imports Keras)."""
        import keras

        return getattr(keras.optimizers.schedules, self.class_name)(**dict(self.config))


@dataclass(frozen=True)
class OptimizerEntry:
    """One configuration: ``keras.optimizers.<class_name>(learning_rate=..., **config)``; with a :class:`Schedule`,
    ``learning_rate`` is the schedule's initial rate (the judge's scale of an update) and the schedule is the
    optimizer's."""

    class_name: str
    config: dict[str, Any] = field(default_factory=dict)
    learning_rate: float = OPTIMIZER_LEARNING_RATE
    steps: int = OPTIMIZER_STEPS
    schedule: Schedule | None = None

    def arguments(self) -> dict[str, Any]:
        return {"learning_rate": self.schedule or self.learning_rate, **self.config}


# name -> entry. Names are stable: they key the choice, the findings' dedup keys and the report's counts.
CATALOGUE: dict[str, OptimizerEntry] = {
    "sgd-nesterov": OptimizerEntry("SGD", {"momentum": 0.9, "nesterov": True}),
    "sgd-momentum-decay": OptimizerEntry("SGD", {"momentum": 0.9, "weight_decay": 0.01}),
    "sgd-clipvalue": OptimizerEntry("SGD", {"clipvalue": 0.8}),
    "adam-amsgrad": OptimizerEntry("Adam", {"amsgrad": True}),
    "adam-accumulate": OptimizerEntry("Adam", {"gradient_accumulation_steps": 2}),
    "adam-ema": OptimizerEntry("Adam", {"use_ema": True, "ema_momentum": 0.5, "ema_overwrite_frequency": 2}),
    "adam-global-clipnorm": OptimizerEntry("Adam", {"global_clipnorm": 1.0}),
    "adamw": OptimizerEntry("AdamW", {"weight_decay": 0.04}),
    "adamw-amsgrad-clipnorm": OptimizerEntry("AdamW", {"amsgrad": True, "clipnorm": 1.0}),
    "adamax": OptimizerEntry("Adamax"),
    "nadam": OptimizerEntry("Nadam"),
    "rmsprop": OptimizerEntry("RMSprop"),
    "rmsprop-centered-momentum": OptimizerEntry("RMSprop", {"centered": True, "momentum": 0.9}),
    "adagrad": OptimizerEntry("Adagrad", {"initial_accumulator_value": 0.5}),
    "adadelta": OptimizerEntry("Adadelta", {"epsilon": 0.001}, learning_rate=1.0),
    "lion": OptimizerEntry("Lion"),
    "ftrl": OptimizerEntry("Ftrl", {"l1_regularization_strength": 0.01, "l2_regularization_strength": 0.01,
                                    "initial_accumulator_value": 0.5}),
    "adafactor": OptimizerEntry("Adafactor"),
    "lamb": OptimizerEntry("Lamb"),
    "muon": OptimizerEntry("Muon"),
    # learning-rate schedules (``_get_current_learning_rate`` evaluates them on the iteration count each step), the
    # options the classes above do not take: loss_scale_factor, l2 shrinkage, Adafactor's fixed step and clipping
    "sgd-cosine-warmup": OptimizerEntry("SGD", {"momentum": 0.5}, schedule=Schedule("CosineDecay", (
        ("initial_learning_rate", 0.1), ("decay_steps", 4), ("warmup_target", 0.2), ("warmup_steps", 2)))),
    "adam-exponential-decay": OptimizerEntry("Adam", schedule=Schedule("ExponentialDecay", (
        ("initial_learning_rate", 0.1), ("decay_steps", 1), ("decay_rate", 0.5), ("staircase", True)))),
    "lion-weight-decay": OptimizerEntry("Lion", {"weight_decay": 0.05}),
    "adam-loss-scale-factor": OptimizerEntry("Adam", {"loss_scale_factor": 128.0}),
    "ftrl-shrinkage": OptimizerEntry("Ftrl", {"l2_shrinkage_regularization_strength": 0.05, "beta": 0.5,
                                              "learning_rate_power": -0.3}),
    "adafactor-clip": OptimizerEntry("Adafactor", {"clip_threshold": 0.5, "beta_2_decay": -0.5,
                                                   "relative_step": False}),
}


# A triage-reduced configuration (:mod:`memo.triage.optimizer_reduction`): a catalogue entry with some of its settings
# dropped, ``adam-ema-without-use_ema,ema_momentum``; the plain classes the catalogue names no entry for (``adam``,
# ``sgd``; ``adamw-plain`` where the class's name is a configured entry's). Neither is chosen for a model
# (:func:`choose_optimizer` hashes over CATALOGUE alone): only triage names them.
WITHOUT = "-without-"
SCHEDULE_SETTING = "schedule"  # an entry's learning-rate schedule, dropped as a setting (its initial rate stays)
PLAIN: dict[str, OptimizerEntry] = {
    class_name.lower() + ("-plain" if class_name.lower() in CATALOGUE else ""): OptimizerEntry(class_name)
    for class_name in sorted({entry.class_name for entry in CATALOGUE.values()})
    if OptimizerEntry(class_name) not in CATALOGUE.values()}


def settings(entry: OptimizerEntry) -> tuple[str, ...]:
    """The entry's non-default settings a reduction may drop, in its own order: its config keys, then its schedule."""
    return (*entry.config, *((SCHEDULE_SETTING,) if entry.schedule is not None else ()))


def _without(entry: OptimizerEntry, dropped: Iterable[str]) -> OptimizerEntry:
    gone = set(dropped)
    return replace(entry, config={key: value for key, value in entry.config.items() if key not in gone},
                   schedule=None if SCHEDULE_SETTING in gone else entry.schedule)


def _root(name: str) -> tuple[str, tuple[str, ...]]:
    """(catalogue or plain name, settings dropped from it) of entry ``name``."""
    base, _, dropped = name.partition(WITHOUT)
    return base, tuple(dropped.split(",")) if dropped else ()


def known_entry(name: str) -> OptimizerEntry | None:
    """The entry ``name`` names: a catalogue entry, a plain class (:data:`PLAIN`), or a catalogue entry without some
    of its settings (:data:`WITHOUT`); None for an unknown name."""
    if name in CATALOGUE or name in PLAIN:
        return CATALOGUE.get(name) or PLAIN[name]
    base, dropped = _root(name)
    entry = CATALOGUE.get(base)
    if entry is None or not dropped or not set(dropped) <= set(settings(entry)):
        return None
    return _without(entry, dropped)


def derived_name(name: str, dropped: Iterable[str]) -> str:
    """The name of entry ``name`` without settings ``dropped``: the catalogue's or :data:`PLAIN`'s name where one is
    the same configuration (``adam-accumulate`` without ``gradient_accumulation_steps`` is ``adam``;
    ``rmsprop-centered-momentum`` without both is ``rmsprop``), else ``<catalogue entry>-without-<settings>``, the
    settings in the entry's order: one name per configuration, whichever order a reduction dropped them in."""
    base, already = _root(name)
    root = optimizer_entry(base)
    gone = {*already, *dropped}
    keys = tuple(key for key in settings(root) if key in gone)
    entry = _without(root, keys)
    same = next((known for known, candidate in (*sorted(CATALOGUE.items()), *sorted(PLAIN.items()))
                 if candidate == entry), None)
    return same or (f"{base}{WITHOUT}{','.join(keys)}" if keys else base)


def simpler_forms(name: str) -> list[str]:
    """The configurations simpler than entry ``name`` that a reduction tries, in order: the plain class (every
    setting dropped), then each setting dropped alone, in the entry's order; none for an entry without settings."""
    keys = settings(optimizer_entry(name))
    forms = [derived_name(name, keys), *(derived_name(name, (key,)) for key in keys)] if keys else []
    return [form for form in dict.fromkeys(forms) if form != name]


def choose_optimizer(name: str) -> str:
    """The catalogue entry of the model in artifact folder ``name`` (a hash of the name, independent of
    :func:`memo.training.selection.train_chosen`'s: the same entry whichever pipeline, order or resume runs it)."""
    digest = int.from_bytes(hashlib.sha256(f"optimizer:{name}".encode()).digest()[:4], "big")
    names = sorted(CATALOGUE)
    return names[digest % len(names)]


def optimizer_entry(name: str) -> OptimizerEntry:
    """The entry ``name`` (:func:`known_entry`); a ``KeyError`` naming the catalogue for an unknown one."""
    entry = known_entry(name)
    if entry is None:
        raise KeyError(f"unknown optimizer configuration {name!r} (known: {', '.join(sorted(CATALOGUE))})")
    return entry


def recorded_optimizer(record: object) -> str | None:
    """The entry a training record names (``optimizer`` of a verdict's ``training`` metrics, of bug.json's
    ``training``, of a check's summary); None for a record without one (or no record)."""
    value = record.get("optimizer") if isinstance(record, dict) else None
    return str(value) if value else None


def optimizer_class(name: str) -> str:
    """The Keras class of entry ``name`` (a bug's dedup key names it: a Nadam defect and a Lion defect are two root
    causes; a reduced configuration has its entry's class); ``name`` itself for an entry the catalogue no longer
    holds."""
    entry = known_entry(name)
    return entry.class_name if entry is not None else name


def constructor_text(name: str) -> str:
    """The entry's constructor as Python source: ``keras.optimizers.Nadam(learning_rate=0.1)``."""
    entry = optimizer_entry(name)
    arguments = ", ".join(f"{key}={value!r}" for key, value in entry.arguments().items())
    return f"keras.optimizers.{entry.class_name}({arguments})"


def build_optimizer(name: str) -> Any:
    """The entry's Keras optimizer (worker only: imports Keras)."""
    import keras

    entry = optimizer_entry(name)
    arguments = {key: value.build() if isinstance(value, Schedule) else value
                 for key, value in entry.arguments().items()}
    return getattr(keras.optimizers, entry.class_name)(**arguments)


def stage_optimizers(chosen: str | None) -> list[Optimizer]:
    """The worker's optimizer stages: SGD (one step), Adam (two), and the catalogue entry ``chosen`` (none when
    None); worker only."""
    import keras

    optimizers: list[Optimizer] = [
        ("sgd", keras.optimizers.SGD(learning_rate=SGD_LEARNING_RATE), 1, SGD_LEARNING_RATE),
        ("adam", keras.optimizers.Adam(learning_rate=ADAM_LEARNING_RATE), ADAM_STEPS, ADAM_LEARNING_RATE)]
    if chosen:
        entry = optimizer_entry(chosen)
        optimizers.append((OPTIMIZER_STAGE, build_optimizer(chosen), entry.steps, entry.learning_rate))
    return optimizers
