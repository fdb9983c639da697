"""Beyond MEMO, after GraphFuzz: layer removal (its NBR) and edge removal (its EGR).

Both prefer edits that put an uncovered layer pair in the model (the layer before the removed node or
edge meets the layer after it). Shapes that no longer match are adapted back (Editor.propagate).
"""
from __future__ import annotations

from memo.errors import MutationFailed
from memo.layers import get_spec
from memo.mutation.analysis import call_layer
from memo.mutation.base import MutationOperator, register
from memo.mutation.editor import Editor
from memo.mutation.preference import SEEN, by_tier

MAX_TRIES = 8


def _pair_tier(editor: Editor, producer: str, reader: str) -> int:
    layer = editor.layer(producer)
    return SEEN if layer.is_input else editor.view.pair_tier(layer.class_name, editor.layer(reader).class_name)


@register
class LayerRemoval(MutationOperator):
    name = "LRemove"
    position = 8
    summary = "remove a layer; its readers take its (first float) input, adapted where needed"

    def apply(self, editor: Editor) -> None:
        if len(editor.ir.body) < 2:
            raise MutationFailed("LRemove: the model has a single layer")
        options = []
        for layer in editor.ir.body:
            floats = [src for src in layer.inputs if editor.info(src).is_float]
            if floats:
                readers = editor.consumers(layer.name) or [layer.name]
                options.append((layer.name, floats[0], min(_pair_tier(editor, floats[0], r) for r in readers)))
        for node, replacement, _tier in by_tier(editor.rng, options, lambda o: o[2])[:MAX_TRIES]:
            if editor.attempt(editor.remove, node, replacement):
                return
        raise MutationFailed("LRemove: no layer of this model can be removed")


def remove_edge(editor: Editor, producer: str, reader: str) -> None:
    """Cut one ``producer -> reader`` edge (see :class:`EdgeRemoval`)."""
    layer = editor.layer(reader)
    spec = get_spec(layer.class_name)
    low = max(2, spec.arity[0]) if spec is not None and len(layer.inputs) > 1 else 1
    if len(layer.inputs) > low:
        inputs = list(layer.inputs)
        inputs.remove(producer)
        before = editor.info(reader)
        editor.set_inputs(reader, inputs)
        editor.infos[reader] = call_layer(layer, [editor.info(src) for src in inputs])
        editor.propagate({reader: before})
    elif len(layer.inputs) > 1:
        others = [src for src in layer.inputs if src != producer] or [producer]
        editor.remove(reader, others[0])
    else:
        grand = editor.layer(producer).inputs
        if not grand:
            raise MutationFailed(f"{producer} is an input; nothing to bypass to")
        before = editor.info(producer)
        editor.set_inputs(reader, [grand[0]])
        editor.propagate({grand[0]: before}, scope={grand[0]: {reader}})


@register
class EdgeRemoval(MutationOperator):
    name = "ERemove"
    position = 9
    summary = "remove an edge: drop a merge input, or let a layer skip its producer"

    def apply(self, editor: Editor) -> None:
        options = []
        for layer in editor.ir.body:
            for src in dict.fromkeys(layer.inputs):
                if len(layer.inputs) > 1:
                    new_source = next(s for s in layer.inputs if s != src) if len(set(layer.inputs)) > 1 else src
                else:
                    grand = editor.layer(src).inputs
                    if not grand:
                        continue
                    new_source = grand[0]
                options.append((src, layer.name, _pair_tier(editor, new_source, layer.name)))
        for producer, reader, _tier in by_tier(editor.rng, options, lambda o: o[2])[:MAX_TRIES]:
            if editor.attempt(remove_edge, editor, producer, reader):
                return
        raise MutationFailed("ERemove: no edge of this model can be removed")
