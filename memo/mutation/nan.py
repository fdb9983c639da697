"""MEMO's NaN operator: one layer's input is made to contain NaN or Inf, with standard layers only.

The injected sub-graph (every layer converts with tf2onnx):

* ``Rescaling(1e30)`` then ``Multiply([y, y])``: x^2 * 1e60 overflows float32 to +Inf wherever x != 0;
* for NaN, ``Subtract([inf, inf])``: Inf - Inf = NaN (zeros stay 0);
* extent ``positive``: the chain starts from ``ReLU(x)`` and is added back to x, so only the positive
  entries become NaN/Inf and the rest keep their values.

The lineage records ``{"action": "inject", "value": "nan"|"inf", ...}`` so the oracle and the report know
that NaN/Inf in this model is intended (identical NaNs in every library are not a bug).
"""
from __future__ import annotations

from memo.errors import MutationFailed
from memo.model.ir import ModelIR
from memo.mutation.base import MEMO, MutationOperator, register
from memo.mutation.editor import Editor

SCALE = 1e30
INJECTED_SCALE = 1e20  # a Rescaling at least this large feeding a square is the injection's overflow
VALUES = ("nan", "inf")
EXTENTS = ("all", "positive")


def inject(editor: Editor, target: str, source: str, value: str, extent: str) -> list[str]:
    """Feed ``target`` a NaN/Inf-carrying version of its input ``source``; returns the injected nodes."""
    first = len(editor.changes)
    base = editor.add("ReLU", {}, [source], role="inject_node") if extent == "positive" else source
    scaled = editor.add("Rescaling", {"scale": SCALE, "offset": 0.0}, [base], role="inject_node")
    special = editor.add("Multiply", {}, [scaled, scaled], call_style="list", role="inject_node")
    if value == "nan":
        special = editor.add("Subtract", {}, [special, special], call_style="list", role="inject_node")
    if extent == "positive":
        special = editor.add("Add", {}, [source, special], call_style="list", role="inject_node")
    nodes = [change["node"] for change in editor.changes[first:]]
    before = editor.info(source)
    editor.redirect(source, special, [target], outputs=False)
    editor.record("inject", value=value, extent=extent, target=target, input=source, nodes=nodes)
    editor.propagate({special: before})
    return nodes


@register
class NaNInjection(MutationOperator):
    name = "NaN"
    group = MEMO
    position = 7
    summary = "make one layer's input contain NaN or Inf"

    def apply(self, editor: Editor) -> None:
        edges = [(layer.name, src) for layer in editor.ir.body for src in dict.fromkeys(layer.inputs)
                 if editor.info(src).dtype == "float32" and not _injected(editor, src)]
        if not edges:
            raise MutationFailed("NaN: no layer of this model reads a float32 tensor")
        editor.rng.shuffle(edges)
        value, extent = editor.rng.choice(VALUES), editor.rng.choice(EXTENTS)
        for target, source in edges[:5]:
            if editor.attempt(inject, editor, target, source, value, extent):
                return
        raise MutationFailed("NaN: injection rejected by every tried layer")


def _injected(editor: Editor, node: str) -> bool:
    layer = editor.layer(node)
    return layer.class_name in ("Multiply", "Subtract") and len(set(layer.inputs)) == 1


def has_injection(ir: ModelIR) -> bool:
    """Whether ``ir`` holds a NaN/Inf-making sub-graph like the one :func:`inject` adds (pure, IR only).

    Matches ``Rescaling`` with ``|scale| >= 1e20`` feeding a ``Multiply`` of one tensor with itself, and any
    ``Multiply`` or ``Subtract`` whose inputs are all one tensor (``y * y`` overflows where y is huge;
    ``y - y`` is NaN where y is Inf): the injection's shape even after later mutations changed the scale.
    The oracle then judges numeric differences as special-value semantics (``judge(..., special_values=True)``).
    """
    for layer in ir.body:
        if layer.class_name in ("Multiply", "Subtract") and len(layer.inputs) >= 2 and len(set(layer.inputs)) == 1:
            return True
        if layer.class_name == "Rescaling" and _huge(layer.config.get("scale", 1.0)) and _feeds_square(ir, layer.name):
            return True
    return False


def _huge(scale: object) -> bool:
    values = scale if isinstance(scale, (list, tuple)) else [scale]
    try:
        return any(abs(float(value)) >= INJECTED_SCALE for value in values)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False


def _feeds_square(ir: ModelIR, name: str) -> bool:
    return any(layer.class_name == "Multiply" and layer.inputs and set(layer.inputs) == {name} for layer in ir.body)
