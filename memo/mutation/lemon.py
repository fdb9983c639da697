"""LEMON-style operators, for MEMO's ablation (RQ4): coverage-blind, uniformly random edits.

LEMON mutates weights and existing structure; none of its operators looks at coverage. memo keeps six of
them so that ``benchmarks/bench_ablation.py`` can compare them with MEMO's operators under the same search:
weight shuffling (WS) and neuron effect block (NEB), recorded in ``ModelIR.weight_edits`` and applied when
the artifact's weights are generated; activation removal (AFRm) and replacement (AFRp); layer copy (LC) and
layer removal (LR) of a layer whose output shape equals its input shape.

WS and NEB record their edits (kinds "shuffle" and "block"); :mod:`memo.model.weight_edits` applies them, so
that writing an artifact needs no import of the operators.
"""
from __future__ import annotations

from typing import Any, Callable

from memo.errors import MutationFailed
from memo.mutation.base import LEMON, MutationOperator, register
from memo.mutation.editor import Editor

# The activations LEMON draws replacements from.
LEMON_ACTIVATIONS = ("relu", "sigmoid", "tanh", "elu", "selu", "softplus", "softsign", "exponential", "linear",
                     "hard_sigmoid")
UNIT_KEYS = ("units", "filters")


def _weighted_layers(editor: Editor) -> list[str]:
    return [layer.name for layer in editor.ir.body if any(isinstance(layer.config.get(k), int) for k in UNIT_KEYS)]


def _shape_preserving(editor: Editor) -> list[str]:
    """Single-input layers whose output has their input's shape and dtype."""
    return [layer.name for layer in editor.ir.body
            if len(layer.inputs) == 1 and editor.info(layer.inputs[0]) == editor.info(layer.name)]


def _weight_edit(editor: Editor, kind: str) -> None:
    layers = _weighted_layers(editor)
    if not layers:
        raise MutationFailed(f"LEMON: no layer with weights for {kind}")
    name = editor.rng.choice(layers)
    width = next(editor.layer(name).config[k] for k in UNIT_KEYS if isinstance(editor.layer(name).config.get(k), int))
    units = sorted(editor.rng.sample(range(width), max(1, width // 10)))
    edit = {"layer": name, "kind": kind, "units": units, "seed": editor.rng.randrange(2**31)}
    editor.ir.weight_edits.append(edit)
    editor.record("weights", node=name, **{k: v for k, v in edit.items() if k != "layer"})


@register
class WeightShuffling(MutationOperator):
    name = "LEMON-WS"
    group = LEMON
    position = 15
    summary = "LEMON: shuffle the incoming weights of some neurons of a layer"

    def apply(self, editor: Editor) -> None:
        _weight_edit(editor, "shuffle")


@register
class NeuronEffectBlock(MutationOperator):
    name = "LEMON-NEB"
    group = LEMON
    position = 16
    summary = "LEMON: zero the incoming weights of some neurons of a layer"

    def apply(self, editor: Editor) -> None:
        _weight_edit(editor, "block")


def _try_sites(editor: Editor, sites: list[str], edit: Callable[[str], Any], failure: str) -> None:
    """Try ``edit(site)`` on up to 8 uniformly shuffled sites (LEMON ignores coverage); roll back failures."""
    editor.rng.shuffle(sites)
    for site in sites[:8]:
        if editor.attempt(edit, site):
            return
    raise MutationFailed(failure)


def _with_activation(editor: Editor, choose_new: bool) -> None:
    sites = [layer.name for layer in editor.ir.body if isinstance(layer.config.get("activation"), str)
             and (choose_new or layer.config["activation"] != "linear")]

    def change(name: str) -> None:
        old = editor.layer(name).config["activation"]
        new = editor.rng.choice([a for a in LEMON_ACTIVATIONS if a != old]) if choose_new else "linear"
        editor.replace_config(name, {**editor.layer(name).config, "activation": new}, param="activation", old=old,
                              new=new)

    _try_sites(editor, sites, change, "LEMON: no layer with an activation to change")


@register
class ActivationRemoval(MutationOperator):
    name = "LEMON-AFRm"
    group = LEMON
    position = 17
    summary = "LEMON: remove a layer's activation (make it linear)"

    def apply(self, editor: Editor) -> None:
        _with_activation(editor, choose_new=False)


@register
class ActivationReplacement(MutationOperator):
    name = "LEMON-AFRp"
    group = LEMON
    position = 18
    summary = "LEMON: replace a layer's activation with another one"

    def apply(self, editor: Editor) -> None:
        _with_activation(editor, choose_new=True)


def _copy_after(editor: Editor, name: str) -> None:
    layer = editor.layer(name)
    readers = editor.consumers(name)
    copy = editor.add(layer.class_name, dict(layer.config), [name], call_style=layer.call_style, role="copy",
                      module=layer.module)
    editor.redirect(name, copy, readers)


@register
class LayerCopy(MutationOperator):
    name = "LEMON-LC"
    group = LEMON
    position = 19
    summary = "LEMON: duplicate a shape-preserving layer right after itself"

    def apply(self, editor: Editor) -> None:
        _try_sites(editor, _shape_preserving(editor), lambda name: _copy_after(editor, name),
                   "LEMON-LC: no shape-preserving layer to copy")


@register
class LemonLayerRemoval(MutationOperator):
    name = "LEMON-LR"
    group = LEMON
    position = 20
    summary = "LEMON: remove a shape-preserving layer"

    def apply(self, editor: Editor) -> None:
        _try_sites(editor, _shape_preserving(editor), lambda name: editor.remove(name, editor.layer(name).inputs[0]),
                   "LEMON-LR: no shape-preserving layer to remove")
