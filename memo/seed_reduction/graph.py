"""Graph analysis for block-aware reduction: cut nodes, blocks (segments between cuts), signatures.

A *cut node* is a node every path from the inputs to the outputs passes through (a dominator that is
also a post-dominator). In a topologically ordered DAG whose nodes all lead to an output, a node is a
cut exactly when no edge jumps over its position, which a single sweep over the edges finds.

The stretch of nodes after one cut up to and including the next cut is a *segment*: a residual block
ends at its merge, an inception block at its concatenation, and in a plain chain every layer is a
segment of its own. A *span* is a run of consecutive segments; it has one entry tensor (the cut before
it) and one exit tensor (its last node), so removing it means feeding the exit's consumers with the
entry. Spans with the same structural signature are the repeated blocks of the model.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Hashable

from memo.model.ir import Layer, ModelIR


@dataclass(frozen=True)
class Span:
    """Consecutive segments: nodes strictly after ``entry`` up to and including ``exit``."""

    entry: str
    exit: str
    nodes: tuple[str, ...]
    signature: Hashable


def cut_nodes(ir: ModelIR) -> list[str]:
    """Names of the cut nodes, in topological order (the graph is expected to be pruned)."""
    n = len(ir.layers)
    position = {layer.name: i + 1 for i, layer in enumerate(ir.layers)}  # 0: virtual source, n+1: sink
    diff = [0] * (n + 3)

    def cover(a: int, b: int) -> None:  # positions strictly between a and b are jumped over
        if b - a > 1:
            diff[a + 1] += 1
            diff[b] -= 1

    for layer in ir.layers:
        if layer.is_input:
            cover(0, position[layer.name])
        for src in layer.inputs:
            cover(position[src], position[layer.name])
    for out in ir.outputs:
        cover(position[out], n + 1)
    cuts, running = [], 0
    for i, layer in enumerate(ir.layers, start=1):
        running += diff[i]
        if running == 0:
            cuts.append(layer.name)
    return cuts


def segments(ir: ModelIR) -> list[tuple[str, list[str]]]:
    """(entry cut, nodes up to and including the next cut) for every segment after the first cut."""
    cuts = cut_nodes(ir)
    order = [layer.name for layer in ir.layers]
    index = {name: i for i, name in enumerate(order)}
    return [(entry, order[index[entry] + 1:index[exit_] + 1]) for entry, exit_ in zip(cuts, cuts[1:])]


def layer_signature(layer: Layer) -> tuple[str, str, str, str]:
    """What makes two layers interchangeable: class, full config, call style and call arguments."""
    return (layer.class_name, json.dumps(layer.config, sort_keys=True, default=str), layer.call_style,
            json.dumps(layer.call_kwargs, sort_keys=True, default=str))


def span_signature(layers: dict[str, Layer], entry: str, nodes: list[str]) -> Hashable:
    """Structural signature of a subgraph: layer signatures plus its wiring, relative to its own nodes."""
    local = {name: i for i, name in enumerate(nodes)}
    local[entry] = -1
    return tuple((layer_signature(layers[name]), tuple(local.get(src, -2) for src in layers[name].inputs))
                 for name in nodes)


def spans(ir: ModelIR, max_segments: int) -> list[Span]:
    """Every run of 1..max_segments consecutive segments, with its signature."""
    segs = segments(ir)
    layers = ir.by_name()
    out = []
    for start in range(len(segs)):
        nodes: list[str] = []
        for length in range(1, max_segments + 1):
            if start + length > len(segs):
                break
            nodes = nodes + segs[start + length - 1][1]
            entry = segs[start][0]
            out.append(Span(entry, nodes[-1], tuple(nodes), span_signature(layers, entry, nodes)))
    return out


def repeated_groups(candidates: list[Span]) -> list[list[Span]]:
    """Spans grouped by signature, keeping groups with two or more non-overlapping members.

    Within a group the members are kept in model order and overlapping ones (a periodic chain matches
    itself shifted) are dropped greedily, so that removing all but one member at once is well formed.
    """
    groups: dict[Hashable, list[Span]] = {}
    for span in candidates:
        groups.setdefault(span.signature, []).append(span)
    out = []
    for members in groups.values():
        chosen: list[Span] = []
        used: set[str] = set()
        for span in members:
            if used.isdisjoint(span.nodes):
                chosen.append(span)
                used.update(span.nodes)
        if len(chosen) >= 2:
            out.append(chosen)
    out.sort(key=lambda group: -sum(len(span.nodes) for span in group[1:]))
    return out


def chain_windows(ir: ModelIR, max_length: int) -> list[tuple[str, ...]]:
    """Runs of 1..max_length single-input layers, each (but the last) feeding only the next one."""
    consumers = ir.consumers()
    layers = ir.by_name()
    out = []
    for layer in ir.layers:
        if layer.is_input or len(layer.inputs) != 1:
            continue
        window = [layer.name]
        out.append(tuple(window))
        while len(window) < max_length:
            nxt = consumers[window[-1]]
            if len(nxt) != 1 or layers[nxt[0]].inputs != [window[-1]]:
                break
            window.append(nxt[0])
            out.append(tuple(window))
    return out
