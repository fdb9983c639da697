"""Shape adaptation with real Keras layers: a plan of layers that turns one tensor shape into another.

Used wherever an edit would hand a layer a tensor of the wrong shape. Only standard, ONNX-convertible
layers are used (Reshape, ZeroPadding/Cropping 1-3D, Dense), so mutants stay convertible with tf2onnx.
The plan is pure data (class name + config per step); :class:`~memo.mutation.editor.Editor` turns it
into nodes. Rules, first that fits:

1. same element count: one ``Reshape``;
2. the element count divides by the target's non-channel dims: ``Reshape`` to them, ``Dense`` the channels;
3. otherwise reshape to the target rank (merging leading dims, or inserting size-1 dims), zero-pad or crop
   the spatial dims, and ``Dense`` the last dim.
"""
from __future__ import annotations

import math
from typing import Any

from memo.errors import MutationFailed
from memo.model.ir import LayerConfig
from memo.mutation.analysis import Shape, TensorInfo

Step = tuple[str, LayerConfig]

MAX_DENSE_WEIGHTS = 1 << 22      # an adapter Dense larger than this is refused (keeps mutants fast)
MAX_ELEMENTS = 1 << 20           # per-sample elements an adapter may produce
_PAD = {2: "ZeroPadding1D", 3: "ZeroPadding2D", 4: "ZeroPadding3D"}   # by number of non-batch dims
_CROP = {2: "Cropping1D", 3: "Cropping2D", 4: "Cropping3D"}


class AdaptationImpossible(MutationFailed):
    """No small adapter made of standard layers turns this shape into that one."""


def _known(dims: Shape) -> bool:
    return all(d is not None for d in dims)


def _dense(units: int, in_units: int | None) -> Step:
    if in_units is None or in_units * units > MAX_DENSE_WEIGHTS:
        raise AdaptationImpossible(f"adapter Dense {in_units}->{units} is too large or unknown")
    return ("Dense", {"units": int(units)})


def _reshape(dims: Shape) -> Step:
    if math.prod(dims) > MAX_ELEMENTS:
        raise AdaptationImpossible(f"adapter reshape to {dims} is too large")
    return ("Reshape", {"target_shape": [int(d) for d in dims]})


def rerank(dims: Shape, rank: int) -> Shape:
    """``dims`` (non-batch) reshaped to ``rank - 1`` non-batch dims with the same element count."""
    want = rank - 1
    if len(dims) > want:
        cut = len(dims) - want + 1
        return (math.prod(dims[:cut]), *dims[cut:])
    if len(dims) < want:
        return (*dims[:-1], *([1] * (want - len(dims))), dims[-1])
    return tuple(dims)


def _pad_crop(cur: Shape, target: Shape) -> list[Step]:
    """Zero-pad / crop the spatial dims (all but the last) of ``cur`` to those of ``target`` (same rank)."""
    diffs = [t - c for c, t in zip(cur[:-1], target[:-1])]
    if not any(diffs):
        return []
    if len(cur) not in _PAD:
        raise AdaptationImpossible(f"no padding layer for rank {len(cur) + 1}")
    pads = [[max(d, 0) // 2, max(d, 0) - max(d, 0) // 2] for d in diffs]
    crops = [[max(-d, 0) // 2, max(-d, 0) - max(-d, 0) // 2] for d in diffs]
    steps: list[Step] = []
    for table, key, amounts in ((_CROP, "cropping", crops), (_PAD, "padding", pads)):
        if any(a or b for a, b in amounts):
            value: Any = amounts[0] if len(cur) == 2 else amounts
            conf: LayerConfig = {key: value}
            if len(cur) > 2:
                conf["data_format"] = "channels_last"
            steps.append((table[len(cur)], conf))
    return steps


def plan(src: TensorInfo, dst: TensorInfo) -> list[Step]:
    """Layers turning a ``src`` tensor into one with ``dst``'s shape (dtype is the caller's business)."""
    a, b = tuple(src.shape[1:]), tuple(dst.shape[1:])
    if a == b:
        return []
    if not _known(a) or not _known(b):
        return _plan_unknown(a, b)
    if math.prod(b) > MAX_ELEMENTS:
        raise AdaptationImpossible(f"target shape {b} is too large")
    if math.prod(a) == math.prod(b):
        return [_reshape(b)]
    if len(b) >= 2 and math.prod(a) % math.prod(b[:-1]) == 0:
        channels = math.prod(a) // math.prod(b[:-1])
        return [_reshape((*b[:-1], channels)), _dense(b[-1], channels)]
    steps: list[Step] = []
    cur = a
    if len(a) != len(b):
        cur = rerank(a, len(b) + 1)
        steps.append(_reshape(cur))
    steps.extend(_pad_crop(cur, b))
    if cur[-1] != b[-1]:
        steps.append(_dense(b[-1], cur[-1]))
    return steps


def _plan_unknown(a: Shape, b: Shape) -> list[Step]:
    """With unknown (None) dims only the channel axis can be adapted: a Dense on the last dim."""
    if len(a) == len(b) and a[:-1] == b[:-1] and b[-1] is not None:
        return [_dense(b[-1], a[-1])]
    raise AdaptationImpossible(f"cannot adapt {a} to {b}: unknown dimensions")


def balanced_shape(src: TensorInfo, rank: int) -> Shape | None:
    """A batch shape of ``rank`` with ``src``'s element count, spread as evenly as the factors allow.

    The last (channel) dim takes what is left after the spatial dims are made as square as possible.
    None when ``src`` has unknown dims.
    """
    if not src.known:
        return None
    total = src.elements
    dims = rank - 1
    if dims == 1:
        return (None, total)
    factors = _prime_factors(total)
    spatial = [1] * (dims - 1)
    channels = 1
    for f in sorted(factors, reverse=True):
        smallest = min(range(len(spatial)), key=lambda i: spatial[i])
        if spatial[smallest] * f <= max(1, round(total ** (1.0 / dims))) * 2:
            spatial[smallest] *= f
        else:
            channels *= f
    return (None, *sorted(spatial, reverse=True), channels)


def _prime_factors(n: int) -> list[int]:
    out, p = [], 2
    while p * p <= n:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    if n > 1:
        out.append(n)
    return out


def friendly_shape(rank: int, dtype: str = "float32") -> TensorInfo:
    """A small, well-factored shape of ``rank`` that most layers of that rank accept."""
    dims = {2: (16,), 3: (8, 8), 4: (8, 8, 4), 5: (4, 4, 4, 4), 6: (2, 2, 2, 2, 4)}.get(rank)
    if dims is None:
        raise AdaptationImpossible(f"no default shape of rank {rank}")
    return TensorInfo((None, *dims), dtype)
