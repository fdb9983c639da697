"""A converted file that fails ONNX's type check with "<input> has inconsistent type tensor(X)": two inputs bound to
one type variable differ. When the reduced model's culprit computes in another dtype than the layer feeding it, the
cast Keras puts at that boundary was lost on the way: one defect whatever operator first meets the uncast tensor
(long150e: Dense, ELU, Normalization, Rescaling, UpSampling2D and Attention behind an input of another dtype, six
"ready" entries for one tf2onnx fault). Without a dtype boundary the conflict is some operator's own, and no key is
given. "<input> typestr: T, has unsupported type" (an operator written in a dtype its schema lacks) gets no such key:
a model's opset-11 variant fails that way where its newest-opset conversion loses the cast, so the key would chain
the two defects into one entry (long150e's lost cast and tf2onnx's bfloat16 Conv).

Pure: no execution, no DL import.
"""
from __future__ import annotations

import re

from memo.model.ir import Layer, ModelIR, compute_dtype

_INCONSISTENT = re.compile(r"\bhas inconsistent type tensor\(\w+\)")

LOST_CAST = "inconsistent types at a dtype boundary"


def crosses_dtype(culprit: Layer, reduced: ModelIR) -> bool:
    """Whether ``culprit`` computes in another floating dtype than a layer that feeds it: Keras casts such an input
    (its autocast leaves integers alone, so an Embedding's int32 indices are no boundary)."""
    layers = reduced.by_name()
    own = compute_dtype(culprit.config)
    fed = {compute_dtype(layers[name].config) for name in culprit.inputs if name in layers}
    return own in _FLOATS and any(dtype in _FLOATS and dtype != own for dtype in fed)


_FLOATS = frozenset({"float16", "bfloat16", "float32", "float64"})


def type_check_cause(message: str, reduced: ModelIR, culprits: list[Layer]) -> dict[str, str] | None:
    """The root-cause fields of a lost cast in ``message`` (None when it is not an inconsistent type at a culprit
    computing in another dtype than its input)."""
    if _INCONSISTENT.search(message) and cast_into(reduced, culprits) is not None:
        return {"type_check": LOST_CAST}
    return None


def cast_into(reduced: ModelIR, culprits: list[Layer]) -> str | None:
    """The dtype a numeric finding's culprit casts its input into, where it crosses a floating dtype boundary (None
    where none does): a wrong cast shows through whatever layer computes after it. long150f: Keras on OpenVINO gave
    wrong values for 14 one-layer models of a bfloat16 layer behind a float16, float32 or float64 input (Dropout,
    ReLU, ZeroPadding2D as much as Conv2D), 14 ready entries for one cast."""
    return next((compute_dtype(layer.config) for layer in culprits if crosses_dtype(layer, reduced)), None)

