"""Helpers every family uses: building an entry with sensible defaults, rank maps, and shape access."""
from __future__ import annotations

from typing import Any, Callable, Iterator, Mapping, Sequence

from memo.layers import values as v
from memo.layers.spec import ComputeRule, Draw, Impossible, LayerSpec, ParamSpace, Sampler, Shape
from memo.model.ir import LayerConfig

FLOAT_DTYPES = frozenset({"float32", "float16", "float64"})
UNKNOWN_DIM = 16  # how large a dimension of unknown size (None) is assumed to be when drawing settings


def same_rank(rank: int) -> frozenset[int]:
    return frozenset({rank})


def entry(name: str, family: str, ranks: Sequence[int], params: Sequence[ParamSpace], sampler: Sampler, *,
          rank_map: Callable[[int], frozenset[int]] = same_rank, dtypes: frozenset[str] = FLOAT_DTYPES,
          arity: tuple[int, int] = (1, 1), call_style: str = "single", compute: ComputeRule | None = None,
          **extra: Any) -> LayerSpec:
    """A catalogue entry; ``compute`` narrows the dtypes a config may compute in (``LayerSpec.computes_in``)
    beyond the rule every entry shares (:func:`initializers_compute_in`)."""
    def rule(config: Mapping[str, Any], dtype: str) -> bool:
        return initializers_compute_in(config, dtype) and (compute is None or compute(config, dtype))

    return LayerSpec(name=name, family=family, input_ranks=frozenset(ranks), dtypes=dtypes, arity=arity,
                     call_style=call_style, params=tuple(params), sampler=sampler, rank_map=rank_map,
                     compute_rule=rule, **extra)


def _initializers(config: Mapping[str, Any]) -> Iterator[Any]:
    """The declared names of every ``*_initializer`` in ``config``, a wrapped layer's included."""
    for key, value in config.items():
        if key.endswith("_initializer"):
            yield v.object_name(value)
        elif isinstance(value, Mapping):
            inner = value.get("config")
            if isinstance(inner, Mapping):
                yield from _initializers(inner)


def initializers_compute_in(config: Mapping[str, Any], dtype: str) -> bool:
    return dtype != "float16" or not any(name in v.NO_FLOAT16_INITIALIZERS for name in _initializers(config))


def float32_only(config: Mapping[str, Any], dtype: str) -> bool:
    """A compute rule: the layer computes in float32 only (other float inputs are cast by Keras)."""
    return dtype == "float32"


def size(dim: int | None) -> int:
    """A dimension's size for drawing settings (unknown sizes count as UNKNOWN_DIM)."""
    return UNKNOWN_DIM if dim is None else int(dim)


def spatial(shape: Shape, lead: int = 1) -> list[int]:
    """Sizes of the axes between the first ``lead`` axes and the channel axis (channels_last)."""
    return [size(d) for d in shape[lead:-1]]


def channels(shape: Shape) -> int:
    """The last axis, which must be known for layers that create weights over it."""
    if shape[-1] is None:
        raise Impossible("the channel axis has unknown size")
    return int(shape[-1])


def only(shapes: Sequence[Shape]) -> Shape:
    return shapes[0]


def divisors(n: int) -> list[int]:
    return [k for k in range(1, n + 1) if n % k == 0]


def draw_modes(draw: Draw, names: Sequence[str], config: LayerConfig) -> LayerConfig:
    """Draw each mode parameter of ``names`` (no shape constraint) into ``config``."""
    for name in names:
        config[name] = draw.choice(name)
    return config


def inner_class(raw: Any) -> Any:
    """The class name of a wrapped layer's serialized config (TimeDistributed, Bidirectional, ...).

    The declared values of a wrapper's ``layer`` parameter are class names; a sampler turns the chosen name
    into a full serialized config valid for the input shapes.
    """
    return raw.get("class_name") if isinstance(raw, dict) else raw


def draw_inner(draw: Draw, inner: LayerSpec, shapes: Sequence[Shape]) -> LayerConfig:
    """A serialized config of the wrapped layer ``inner`` valid for ``shapes`` (keeping the old one if it fits)."""
    kept = draw.keep.get("layer")
    keep = kept.get("config") if isinstance(kept, dict) and kept.get("class_name") == inner.name else None
    config = inner.sampler(Draw(draw.rng, inner, keep=keep), shapes)
    return {"module": inner.module, "class_name": inner.name, "config": config, "registered_name": None}
