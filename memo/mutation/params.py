"""MEMO's layer-level operators: CShape and CMode change 1-5 layers' shape / mode parameters.

Candidate (layer, parameter, value) triples are ranked by coverage: a value the campaign has not seen for
that layer API first, then one this seed lacks, then any other value (a new combination of settings in
that layer, MEMO's fallback once a parameter's values are all covered). The catalogue's ``with_param``
produces a config that is valid for the layer's input shapes; a changed output shape flows downstream.
"""
from __future__ import annotations

from typing import Any, ClassVar

from memo.errors import MutationFailed
from memo.layers import get_spec
from memo.layers.spec import MODE, SHAPE
from memo.model.ir import LayerConfig
from memo.mutation.base import MEMO, MutationOperator, register
from memo.mutation.editor import Editor
from memo.mutation.preference import by_tier

MAX_TRIES = 40


def config_diff(old: LayerConfig, new: LayerConfig) -> dict[str, list[Any]]:
    """Keys whose values differ, as ``{key: [old, new]}`` (sorted keys)."""
    return {key: [old.get(key), new.get(key)] for key in sorted(set(old) | set(new)) if old.get(key) != new.get(key)}


class _ChangeParams(MutationOperator):
    kind: ClassVar[str] = ""

    def options(self, editor: Editor) -> list[tuple[str, str, Any]]:
        out = []
        for layer in editor.ir.body:
            spec = get_spec(layer.class_name)
            if spec is None:
                continue
            for space in spec.params:
                if space.kind != self.kind:
                    continue
                current = space.canonical(layer.config.get(space.name))
                out.extend((layer.name, space.name, value) for value in space.values if value != current)
        return out

    def apply(self, editor: Editor) -> None:
        wanted = editor.rng.randint(1, 5)
        classes = {layer.name: layer.class_name for layer in editor.ir.layers}
        ranked = by_tier(editor.rng, self.options(editor),
                         lambda o: editor.view.param_tier(classes[o[0]], o[1], o[2]))
        changed: set[str] = set()
        for node, param, value in ranked[:MAX_TRIES]:
            if len(changed) == wanted:
                break
            if node in changed:
                continue
            if editor.attempt(self.change, editor, node, param, value):
                changed.add(node)
        if not changed:
            raise MutationFailed(f"{self.name}: no {self.kind} parameter of this model can take a new value")

    @staticmethod
    def change(editor: Editor, node: str, param: str, value: Any) -> bool:
        layer = editor.layer(node)
        spec = get_spec(layer.class_name)
        shapes = [editor.info(src).shape for src in layer.inputs]
        sampled = spec.with_param(editor.rng, layer.config, param, value, shapes) if spec else None
        # settings the catalogue does not declare (dtype policy, stateful, return_state...) stay as they were
        config = None if sampled is None else {**layer.config, **sampled}
        if config is None or config == layer.config:
            raise MutationFailed(f"{layer.class_name}.{param} cannot be {value!r} here")
        editor.replace_config(node, config, param=param, value=value, diff=config_diff(layer.config, config))
        return True


@register
class ChangeShape(_ChangeParams):
    name = "CShape"
    group = MEMO
    position = 5
    summary = "set shape parameters of 1-5 layers to values not yet covered"
    kind = SHAPE


@register
class ChangeMode(_ChangeParams):
    name = "CMode"
    group = MEMO
    position = 6
    summary = "set mode parameters of 1-5 layers to values not yet covered"
    kind = MODE
