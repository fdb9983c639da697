"""Edits the reducer tries: remove some nodes and feed their consumers from an earlier tensor.

An :class:`Edit` is pure data; :func:`apply_edit` turns it into a new :class:`ModelIR` (sharing the
untouched :class:`Layer` objects with the old one, so trying an edit on a 800-layer model is cheap)
and prunes what no output needs any more (the other branches of a bypassed merge, for instance).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Iterable

from memo.errors import InvalidModelError
from memo.model.ir import ModelIR


@dataclass(frozen=True)
class Edit:
    """Remove ``remove``; every use of ``old`` becomes a use of ``new`` (``rewire``); feed one input of one
    node from another, earlier node (``reinput``: (node, input index, new source)); drop merge inputs; set
    config values (``configs``: (node, key, value), the width repairs and value absorptions)."""

    kind: str
    remove: frozenset[str] = frozenset()
    rewire: tuple[tuple[str, str], ...] = ()
    drop_inputs: tuple[tuple[str, int], ...] = ()
    configs: tuple[tuple[str, str, Any], ...] = ()
    reinput: tuple[tuple[str, int, str], ...] = ()

    def names(self) -> set[str]:
        return (set(self.remove) | {n for pair in self.rewire for n in pair} | {n for n, _ in self.drop_inputs}
                | {n for n, _key, _value in self.configs} | {n for n, _i, _src in self.reinput}
                | {src for _n, _i, src in self.reinput})


def combine(edits: Iterable[Edit], kind: str) -> Edit:
    edits = list(edits)
    return Edit(kind, frozenset().union(*(e.remove for e in edits)),
                tuple(pair for e in edits for pair in e.rewire),
                tuple(item for e in edits for item in e.drop_inputs),
                tuple(item for e in edits for item in e.configs), tuple(item for e in edits for item in e.reinput))


def remove_span(entry: str, nodes: Iterable[str], kind: str) -> Edit:
    """Remove a single-entry single-exit subgraph; its last node's consumers read ``entry`` instead."""
    nodes = tuple(nodes)
    return Edit(kind, frozenset(nodes), ((nodes[-1], entry),))


def _resolver(rewire: tuple[tuple[str, str], ...]):
    mapping = dict(rewire)

    def resolve(name: str) -> str:
        seen = set()
        while name in mapping and name not in seen:
            seen.add(name)
            name = mapping[name]
        return name

    return resolve


def apply_edit(ir: ModelIR, edit: Edit) -> ModelIR | None:
    """The model after ``edit``, pruned; ``None`` when the edit does not fit this model any more."""
    layers = ir.by_name()
    if not edit.names() <= layers.keys():
        return None
    resolve = _resolver(edit.rewire)
    dropped: dict[str, set[int]] = {}
    for name, index in edit.drop_inputs:
        dropped.setdefault(name, set()).add(index)
    sources: dict[str, dict[int, str]] = {}
    for name, index, src in edit.reinput:
        sources.setdefault(name, {})[index] = src
    settings: dict[str, dict[str, Any]] = {}
    for name, key, value in edit.configs:
        settings.setdefault(name, {})[key] = value
    new_layers = []
    for layer in ir.layers:
        if layer.name in edit.remove:
            continue
        if layer.name in settings:
            layer = dataclasses.replace(layer, config={**layer.config, **settings[layer.name]})
        fed, gone = sources.get(layer.name, {}), dropped.get(layer.name, ())
        inputs = [resolve(fed.get(i, src)) for i, src in enumerate(layer.inputs) if i not in gone]
        if inputs != layer.inputs:
            if any(src in edit.remove for src in inputs) or (not layer.is_input and not inputs):
                return None
            if layer.call_style == "list" and len(inputs) < 2:
                return None  # a merge of one tensor builds in Keras but is not a model anyone writes
            if layer.call_style == "single" and len(inputs) != 1:
                return None
            layer = dataclasses.replace(layer, inputs=inputs)
        new_layers.append(layer)
    outputs = [resolve(name) for name in ir.outputs]
    if any(name in edit.remove or layers[name].is_input for name in outputs):
        return None
    candidate = ModelIR(layers=new_layers, outputs=outputs, name=ir.name).prune()
    try:
        candidate.validate()
    except InvalidModelError:
        return None
    return candidate
