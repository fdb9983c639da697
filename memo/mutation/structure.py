"""MEMO's structure-level operators: NLA, LResh (insert layer APIs), LMerg (merge two tensors) and LConn
(connect two layers so that a new layer pair appears)."""
from __future__ import annotations

from typing import ClassVar

from memo.errors import InvalidModelError, MutationFailed
from memo.layers import CATALOGUE, MERGING, RESHAPING
from memo.mutation.analysis import TensorInfo, call_layer
from memo.mutation.base import MEMO, MutationOperator, register
from memo.mutation.editor import Editor
from memo.mutation.insertion import best_pair_gain, insert_layer, site_tier, splice_after
from memo.mutation.preference import by_tier

SITES_PER_API = 3        # sites tried for one layer API before moving to the next API
MAX_PAIR_TRIES = 12      # LConn / LMerg candidate pairs tried before giving up


class _InsertAPIs(MutationOperator):
    """Insert 1-5 layer APIs from ``pool()``: campaign-uncovered first, then ones this seed lacks."""

    pool_name: ClassVar[str] = ""

    def pool(self) -> list[str]:
        raise NotImplementedError

    def apply(self, editor: Editor) -> None:
        wanted = editor.rng.randint(1, 5)
        sites = editor.sites()
        # uncovered or rare types first; among equally new types, those realizing the most uncovered pairs
        apis = by_tier(editor.rng, self.pool(),
                       lambda n: (editor.view.type_tier(n), -best_pair_gain(editor, n, sites)))
        placed = 0
        for name in apis:
            if placed == wanted:
                break
            spec = CATALOGUE[name]
            for site in by_tier(editor.rng, list(sites), lambda s, n=name: site_tier(editor, s, n))[:SITES_PER_API]:
                if editor.attempt(insert_layer, editor, spec, site):
                    placed += 1
                    sites = editor.sites()
                    break
        if not placed:
            raise MutationFailed(f"{self.name}: no {self.pool_name} layer API fits anywhere in this model")


@register
class NewLayerAddition(_InsertAPIs):
    name = "NLA"
    group = MEMO
    position = 1
    summary = "insert 1-5 layer APIs, uncovered ones first"
    pool_name = "catalogue"

    def pool(self) -> list[str]:
        return sorted(CATALOGUE)


@register
class LayerReshaping(_InsertAPIs):
    name = "LResh"
    group = MEMO
    position = 2
    summary = "insert 1-5 reshaping layer APIs, uncovered ones first"
    pool_name = "reshaping"

    def pool(self) -> list[str]:
        return sorted(RESHAPING)


def merge_two(editor: Editor, merge: str, first: str, second: str) -> str:
    """Add merge layer ``merge`` over ``first`` and ``second`` (``second`` adapted to ``first``'s shape when the
    layer does not take the pair as it is); readers of the later of the two read the merge instead."""
    spec = CATALOGUE[merge]
    a, b = editor.info(first), editor.info(second)
    if not spec.accepts([a.shape, b.shape]):
        if first == second:
            raise InvalidModelError(f"{merge} does not take two copies of {a.shape}")
        second_node = editor.adapt(second, a)
        b = editor.info(second_node)
    else:
        second_node = second
    config = spec.sample(editor.rng, [a.shape, b.shape])
    if config is None:
        raise InvalidModelError(f"{merge}: no valid setting for {a.shape} and {b.shape}")
    later = max((first, second), key=editor.position)

    def build(_site: str) -> str:
        return editor.add(merge, config, [first, second_node], call_style=spec.call_style, module=spec.module)

    return splice_after(editor, later, build)


@register
class LayerMerging(MutationOperator):
    name = "LMerg"
    group = MEMO
    position = 3
    summary = "merge two tensors of compatible shape with a merging layer"

    def apply(self, editor: Editor) -> None:
        sites = editor.sites()
        if len(sites) < 2:
            raise MutationFailed("LMerg: the model has fewer than two float tensors")
        by_info: dict = {}
        for site in sites:
            by_info.setdefault(editor.info(site), []).append(site)
        same = [group for group in by_info.values() if len(group) >= 2]
        for merge in by_tier(editor.rng, sorted(MERGING), editor.view.type_tier):
            for _ in range(MAX_PAIR_TRIES // 3):
                group = editor.rng.choice(same) if same and editor.rng.random() < 0.8 else sites
                first, second = editor.rng.sample(group, 2)
                if editor.attempt(merge_two, editor, merge, first, second):
                    return
        raise MutationFailed("LMerg: no merging layer fits two tensors of this model")


def connect(editor: Editor, producer: str, reader: str) -> str:
    """Make ``reader`` take ``producer``'s output instead of its current (first compatible) input.

    The reader keeps its settings if they fit, else gets freshly sampled ones; nothing sits between the two,
    so the pair (producer class, reader class) really appears. An input left without readers becomes an
    extra model output, so no layer is lost.
    """
    layer = editor.layer(reader)
    spec = CATALOGUE.get(layer.class_name)
    info = editor.info(producer)
    slot = 0
    if len(layer.inputs) > 1:
        same = [i for i, src in enumerate(layer.inputs) if editor.info(src) == info]
        if not same:
            raise InvalidModelError(f"{reader}: no input of shape {info.shape}")
        slot = editor.rng.choice(same)
    replaced = layer.inputs[slot]
    before = editor.info(reader)
    new_inputs = [producer if i == slot else src for i, src in enumerate(layer.inputs)]
    editor.set_inputs(reader, new_inputs)
    try:
        editor.infos[reader] = _call(editor, reader)
    except InvalidModelError:
        if spec is None or len(layer.inputs) > 1:
            raise
        config = spec.sample(editor.rng, [info.shape])
        if config is None:
            raise
        editor.replace_config(reader, config, reason="refit to new input")
    if not editor.consumers(replaced) and replaced not in editor.ir.outputs and not editor.layer(replaced).is_input:
        editor.ir.outputs = [*editor.ir.outputs, replaced]
        editor.record("add_output", node=replaced)
    editor.propagate({reader: before})
    return reader


def _call(editor: Editor, name: str) -> TensorInfo:
    layer = editor.layer(name)
    return call_layer(layer, [editor.info(src) for src in layer.inputs])


@register
class LayerConnecting(MutationOperator):
    name = "LConn"
    group = MEMO
    position = 4
    summary = "connect two existing layers so that an uncovered layer pair appears"

    def apply(self, editor: Editor) -> None:
        order = {layer.name: i for i, layer in enumerate(editor.ir.layers)}
        producers = editor.sites(inputs=False)
        readers = [layer for layer in editor.ir.body if any(editor.info(s).is_float for s in layer.inputs)]
        candidates = [(p, r.name) for r in readers for p in producers
                      if order[p] < order[r.name] and p not in r.inputs]
        classes = {layer.name: layer.class_name for layer in editor.ir.layers}
        ranked = by_tier(editor.rng, candidates, lambda pr: editor.view.pair_tier(classes[pr[0]], classes[pr[1]]))
        for producer, reader in ranked[:MAX_PAIR_TRIES]:
            if editor.attempt(connect, editor, producer, reader):
                return
        raise MutationFailed("LConn: no two layers of this model can be connected")
