"""The declarative description of one Keras layer API: what it accepts, which settings it has, and how to
draw settings that are valid for given input shapes.

A :class:`LayerSpec` is data plus one *sampler* function. The sampler follows Isra's idea: it decides the
settings in dependency order, and every draw is restricted to the values that are still valid for the
concrete input shapes, so a sampled configuration is valid by construction (no generate-and-retry).
All draws go through a :class:`Draw`, which also lets a caller force one parameter into one declared value
or bucket (:meth:`LayerSpec.with_param`) and keep the rest of an existing configuration where it is still
valid. Pure Python: nothing here imports Keras.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Mapping, Sequence

from memo.model.ir import LayerConfig, Shape  # Shape: batch dimension first (None)

RARE = 0.05  # chance that a fresh draw picks an open-ended bucket (keeps generated models small)

MODE = "mode"
SHAPE = "shape"


class Impossible(Exception):
    """Raised inside a sampler when no valid setting exists for the given shapes (or forced value)."""


@dataclass(frozen=True)
class Bucket:
    """A numeric range ``lo <= x <= hi`` (``hi`` None: open-ended) with the label coverage counts."""

    label: str
    lo: float
    hi: float | None

    def holds(self, x: float) -> bool:
        return x >= self.lo and (self.hi is None or x <= self.hi)


def _identity(raw: Any) -> Any:
    return raw


@dataclass(frozen=True)
class ParamSpace:
    """One coverage-relevant parameter of a layer API.

    ``values`` are what coverage counts: the candidate values of a mode parameter, or the bucket labels of a
    shape (numeric) parameter. ``candidates`` are the concrete config values aligned with ``values`` for a
    mode parameter (``"l1_l2"`` is written ``"l1l2"`` in a config); for a shape parameter they are empty.
    ``normalize`` turns a raw config value (possibly a serialized Keras object) into a value key (mode) or
    into the number that is bucketed (shape).
    """

    name: str
    kind: str
    values: tuple
    candidates: tuple = ()
    buckets: tuple[Bucket, ...] = ()
    normalize: Callable[[Any], Any] = field(default=_identity, compare=False, repr=False)

    def canonical(self, raw: Any) -> Hashable | None:
        """A config value -> one of ``values`` (a bucket label for shape params); None when outside the space."""
        try:
            key = self.normalize(raw)
        except (TypeError, ValueError, KeyError, AttributeError, IndexError):
            return None
        if self.kind == SHAPE:
            if key is None or isinstance(key, bool):
                return None
            for bucket in self.buckets:
                if bucket.holds(key):
                    return bucket.label
            return None
        try:
            return key if key in self._value_set else None  # type: ignore[attr-defined]
        except TypeError:  # unhashable raw value
            return None

    def __post_init__(self) -> None:
        if self.kind not in (MODE, SHAPE):
            raise ValueError(f"{self.name}: kind must be {MODE!r} or {SHAPE!r}")
        if self.kind == SHAPE:
            object.__setattr__(self, "values", tuple(b.label for b in self.buckets))
        if self.candidates and len(self.candidates) != len(self.values):
            raise ValueError(f"{self.name}: candidates must align with values")
        object.__setattr__(self, "_value_set", frozenset(self.values))

    def concrete(self, value: Hashable) -> Any:
        """The config value that stands for the declared mode value ``value``."""
        return self.candidates[self.values.index(value)] if self.candidates else value

    def bucket(self, label: str) -> Bucket:
        for bucket in self.buckets:
            if bucket.label == label:
                return bucket
        raise KeyError(f"{self.name}: no bucket {label!r}")

Sampler = Callable[["Draw", Sequence[Shape]], LayerConfig]
RankMap = Callable[[int], frozenset]
# (config, float dtype) -> whether a layer with this config may compute in that dtype (its dtype policy)
ComputeRule = Callable[[Mapping[str, Any], str], bool]
# (config, input shapes) -> why the reference cannot run a layer that Keras's symbolic call accepts, or None
RuntimeRule = Callable[[Mapping[str, Any], Sequence[Shape]], "str | None"]


@dataclass(frozen=True)
class LayerSpec:
    """One Keras layer API of the catalogue (see module docstring)."""

    name: str
    family: str
    input_ranks: frozenset[int]
    dtypes: frozenset[str]
    arity: tuple[int, int]
    call_style: str
    params: tuple[ParamSpace, ...]
    sampler: Sampler = field(compare=False, repr=False)
    rank_map: RankMap = field(compare=False, repr=False)
    output_dtype: str | None = None  # None: the layer computes in its float dtype policy
    module: str = "keras.layers"
    same_shapes: bool = False  # several inputs must have equal shapes (merge layers)
    input_maker: Callable[[random.Random, "LayerSpec"], list[Shape]] | None = field(
        default=None, compare=False, repr=False)
    # Which float dtypes of ``dtypes`` a config may also compute in (see computes_in); None: all of them
    compute_rule: ComputeRule | None = field(default=None, compare=False, repr=False)
    # What the reference refuses at run time although the symbolic call passes (checked for every layer a
    # mutation adds or re-feeds, memo.mutation.analysis.call_layer); samplers draw only settings it allows.
    runtime_rule: RuntimeRule | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_name", {p.name: p for p in self.params})

    # --------------------------------------------------------------- static description
    def param(self, name: str) -> ParamSpace:
        try:
            return self._by_name[name]  # type: ignore[attr-defined]
        except KeyError:
            raise KeyError(f"{self.name} declares no parameter {name!r}") from None

    def has_param(self, name: str) -> bool:
        return name in self._by_name  # type: ignore[attr-defined]

    def mode_params(self) -> tuple[ParamSpace, ...]:
        return tuple(p for p in self.params if p.kind == MODE)

    def shape_params(self) -> tuple[ParamSpace, ...]:
        return tuple(p for p in self.params if p.kind == SHAPE)

    def mode_candidates(self) -> dict[str, tuple]:
        """Every mode parameter -> its concrete candidate config values (aligned with ``values``)."""
        return {p.name: (p.candidates or p.values) for p in self.mode_params()}

    def computes_in(self, config: Mapping[str, Any], dtype: str) -> bool:
        """Whether a layer of this API with ``config`` may compute in ``dtype`` (its dtype policy: what the
        DType operator sets) and still run on the reference.

        ``dtypes`` says which tensors the layer accepts; with its default float32 policy Keras casts a float
        input, so every declared input dtype runs. Computing in float16 or float64 needs kernels of that dtype,
        which the reference lacks for some layers and settings (``compute_rule``).
        """
        if dtype not in self.dtypes or not dtype.startswith(("float", "bfloat")):
            return False
        return self.compute_rule is None or self.compute_rule(config, dtype)

    def refuses_at_run_time(self, config: Mapping[str, Any], input_shapes: Sequence[Shape]) -> str | None:
        """Why the reference cannot run this layer on these inputs although Keras's symbolic call accepts it
        (a rank the layer refuses at run time, or the entry's ``runtime_rule``); None when it can."""
        wrong = sorted({len(shape) for shape in input_shapes} - set(self.input_ranks))
        if wrong:
            return (f"takes inputs of rank {', '.join(map(str, sorted(self.input_ranks)))} at run time, "
                    f"not {', '.join(map(str, wrong))}")
        return self.runtime_rule(config, input_shapes) if self.runtime_rule is not None else None

    def output_ranks(self, in_rank: int) -> frozenset[int]:
        """Output ranks over all settings, for an input of rank ``in_rank`` (empty if not accepted)."""
        if in_rank not in self.input_ranks:
            return frozenset()
        return frozenset(self.rank_map(in_rank))

    def all_output_ranks(self) -> frozenset[int]:
        out: set[int] = set()
        for rank in self.input_ranks:
            out |= self.output_ranks(rank)
        return frozenset(out)

    # --------------------------------------------------------------- shapes
    def random_inputs(self, rng: random.Random) -> list[Shape]:
        """Random input shapes this layer accepts (small sizes): for tests and for building new subgraphs."""
        if self.input_maker is not None:
            return self.input_maker(rng, self)
        rank = rng.choice(sorted(self.input_ranks))
        shape = random_shape(rng, rank)
        return [shape] * self.arity[0]

    def accepts(self, input_shapes: Sequence[Shape]) -> bool:
        """True when some setting of this layer is valid for inputs of these shapes."""
        if not self._structurally_ok(input_shapes):
            return False
        return self.sample(random.Random(0), input_shapes) is not None

    def _structurally_ok(self, input_shapes: Sequence[Shape]) -> bool:
        low, high = self.arity
        if not low <= len(input_shapes) <= high:
            return False
        if any(len(shape) not in self.input_ranks for shape in input_shapes):
            return False
        if self.same_shapes and len({tuple(s) for s in input_shapes}) > 1:
            return False
        return True

    def sample(self, rng: random.Random, input_shapes: Sequence[Shape]) -> dict | None:
        """A full Keras config (no ``name``) valid for ``input_shapes``; None if none exists."""
        return self._run(Draw(rng, self), input_shapes)

    def with_param(self, rng: random.Random, config: dict, param: str, value: Hashable,
                   input_shapes: Sequence[Shape]) -> dict | None:
        """``config`` with ``param`` set to a concrete value of canonical class ``value``.

        Other settings keep their current values where these stay valid (if none of the kept combinations
        allows ``value``, the others are drawn afresh). None when ``value`` is not declared, or when no valid
        configuration has it for these shapes.
        """
        space = self.param(param)
        if value not in space.values:
            return None
        # First keep everything that stays valid; if an earlier-drawn kept setting rules the value out (odd
        # filters forbid "glu"), draw the other settings afresh around the forced value.
        for keep in (config, None):
            out = self._run(Draw(rng, self, fixed={param: value}, keep=keep), input_shapes)
            if out is not None and space.canonical(out.get(param)) == value:
                return out
        return None

    def _run(self, draw: "Draw", input_shapes: Sequence[Shape]) -> dict | None:
        if not self._structurally_ok(input_shapes):
            return None
        try:
            return self.sampler(draw, [tuple(s) for s in input_shapes])
        except Impossible:
            return None

    # --------------------------------------------------------------- coverage
    def coverage_values(self, config: Mapping[str, Any]) -> list[tuple[str, Hashable]]:
        """(param name, canonical value) for every declared parameter present in ``config`` and in its space."""
        out = []
        for space in self.params:
            if space.name in config:
                value = space.canonical(config[space.name])
                if value is not None:
                    out.append((space.name, value))
        return out


def random_shape(rng: random.Random, rank: int, low: int = 1, high: int = 10) -> Shape:
    """(None, d1, ..., channels): spatial sizes in [low, high], channels in [1, 8]."""
    return (None, *[rng.randint(low, high) for _ in range(rank - 2)], rng.randint(1, 8))[:rank] if rank > 1 \
        else (None,)


class Draw:
    """The random choices of one sampler run.

    ``fixed`` forces parameters into a declared value (mode) or bucket (shape); ``keep`` is an existing config
    whose values are reused when they are still valid. Every method raises :class:`Impossible` when the
    valid range is empty.
    """

    def __init__(self, rng: random.Random, spec: LayerSpec, fixed: Mapping[str, Hashable] | None = None,
                 keep: Mapping[str, Any] | None = None) -> None:
        self.rng = rng
        self.spec = spec
        self.fixed = dict(fixed or {})
        self.keep = dict(keep or {})

    # ------------------------------------------------------------ mode parameters
    def choice(self, name: str, allowed: Sequence[Hashable] | None = None) -> Any:
        """A concrete config value of mode parameter ``name`` whose declared value is in ``allowed``
        (default: all); a kept value is returned as it was written."""
        value, kept = self._mode(name, allowed)
        return kept if kept is not None else self.spec.param(name).concrete(value)

    def value(self, name: str, allowed: Sequence[Hashable] | None = None) -> Hashable:
        """Like :meth:`choice`, but the declared value itself (a wrapper's inner class name, say)."""
        return self._mode(name, allowed)[0]

    def _mode(self, name: str, allowed: Sequence[Hashable] | None) -> tuple[Hashable, Any]:
        space = self.spec.param(name)
        values = list(space.values if allowed is None else [v for v in space.values if v in allowed])
        if name in self.fixed:
            if self.fixed[name] not in values:
                raise Impossible(f"{name}={self.fixed[name]!r} is not valid here")
            return self.fixed[name], None
        if name in self.keep:
            current = space.canonical(self.keep[name])
            if current is not None and current in values:
                return current, self.keep[name]
        if not values:
            raise Impossible(f"no valid value for {name}")
        return self.rng.choice(values), None

    def flag(self, name: str) -> bool:
        return bool(self.choice(name))

    # ------------------------------------------------------------ shape parameters
    def _buckets(self, name: str, lo: float, hi: float) -> list[Bucket]:
        space = self.spec.param(name)
        buckets = [b for b in space.buckets if b.hi is None or b.hi >= lo]
        buckets = [b for b in buckets if b.lo <= hi]
        if name in self.fixed:
            buckets = [b for b in buckets if b.label == self.fixed[name]]
        if not buckets:
            raise Impossible(f"no valid value for {name} in [{lo}, {hi}]")
        return buckets

    def _bucket_choice(self, name: str, buckets: list[Bucket]) -> Bucket:
        """Uniform over buckets, except that a fresh draw rarely takes an open-ended (large) bucket."""
        if name not in self.fixed and len(buckets) > 1 and buckets[-1].hi is None and self.rng.random() > RARE:
            buckets = buckets[:-1]
        return self.rng.choice(buckets)

    def integer(self, name: str, lo: int, hi: int, cap: int = 64) -> int:
        """An integer in ``[lo, hi]`` for shape parameter ``name``: a bucket first (uniformly), then a value.

        ``cap`` bounds how far into an open-ended or wide bucket a fresh draw goes, so models stay small.
        """
        if lo > hi:
            raise Impossible(f"{name}: empty range [{lo}, {hi}]")
        buckets = self._buckets(name, lo, hi)
        if name not in self.fixed and name in self.keep:
            current = self.keep[name]
            current = current[0] if isinstance(current, (list, tuple)) and len(current) == 1 else current
            if isinstance(current, int) and not isinstance(current, bool) and lo <= current <= hi:
                return current
        bucket = self._bucket_choice(name, buckets)
        low = max(lo, int(bucket.lo))
        high = hi if bucket.hi is None else min(hi, int(bucket.hi))
        high = min(high, max(low, cap), low + cap)
        return self.rng.randint(low, high)

    def pick(self, name: str, options: Sequence[int]) -> int:
        """One of the valid integers ``options`` for shape parameter ``name`` (e.g. the divisors of a size)."""
        space = self.spec.param(name)
        by_label: dict[str, list[int]] = {}
        for option in options:
            label = space.canonical(option)
            if label is not None:
                by_label.setdefault(label, []).append(option)
        if name in self.fixed:
            by_label = {k: v for k, v in by_label.items() if k == self.fixed[name]}
        elif name in self.keep and self.keep[name] in options:
            return self.keep[name]
        if not by_label:
            raise Impossible(f"no valid value for {name}")
        bucket = self._bucket_choice(name, [b for b in space.buckets if b.label in by_label])
        return self.rng.choice(by_label[bucket.label])

    def real(self, name: str, lo: float, hi: float, digits: int = 3) -> float:
        """A float in ``[lo, hi]`` for shape parameter ``name``, bucket first."""
        buckets = self._buckets(name, lo, hi)
        if name not in self.fixed and name in self.keep:
            current = self.keep[name]
            if isinstance(current, (int, float)) and not isinstance(current, bool) and lo <= current <= hi:
                return current
        bucket = self.rng.choice(buckets)
        low = max(lo, bucket.lo)
        high = min(hi, bucket.hi if bucket.hi is not None else max(low, hi))
        space = self.spec.param(name)
        for _ in range(8):
            value = round(self.rng.uniform(low, high), digits)
            if space.canonical(value) == bucket.label:
                return value
        return round(low, digits) if space.canonical(round(low, digits)) == bucket.label else high

    def integers(self, name: str, highs: Sequence[int], lo: int = 1, cap: int = 8) -> tuple[int, ...]:
        """A tuple (one entry per dimension, entry i in ``[lo, highs[i]]``) whose maximum is bucketed.

        A forced bucket is met by putting one dimension in the bucket and the others at or below it.
        """
        if not highs or any(h < lo for h in highs):
            raise Impossible(f"{name}: empty range")
        buckets = self._buckets(name, lo, max(highs))
        if name not in self.fixed and name in self.keep:
            current = self.keep[name]
            if isinstance(current, int) and not isinstance(current, bool):
                current = (current,) * len(highs)
            if (isinstance(current, (list, tuple)) and len(current) == len(highs)
                    and all(isinstance(c, int) and lo <= c <= h for c, h in zip(current, highs))):
                return tuple(current)
        bucket = self._bucket_choice(name, buckets)
        b_lo = max(lo, int(bucket.lo))
        b_hi = max(highs) if bucket.hi is None else int(bucket.hi)
        lead_choices = [i for i, h in enumerate(highs) if h >= b_lo]
        lead = self.rng.choice(lead_choices)
        out = []
        for i, h in enumerate(highs):
            top = min(h, b_hi, max(b_lo, cap))
            if i == lead:
                out.append(self.rng.randint(b_lo, max(b_lo, top)))
            else:
                out.append(self.rng.randint(lo, max(lo, top)))
        return tuple(out)
