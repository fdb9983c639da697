"""The editing surface every operator works through.

An :class:`Editor` holds a copy of the parent model, the shape/dtype of every node (kept up to date after
each edit by symbolic per-layer calls), the random generator, the coverage view and the lineage being
written. Its primitives keep the graph valid by construction:

* :meth:`add` checks the new layer against the tensors it receives before it enters the graph;
* :meth:`adapt` inserts standard Keras layers that turn one shape into another;
* :meth:`propagate` lets a changed shape flow downstream as far as the layers there accept it, and
  adapts it back to the old shape right before the first layer that does not (or where a tensor would
  grow too large).
"""
from __future__ import annotations

import random
import re
from typing import Any, Callable, Iterable, Mapping

from memo.errors import InvalidModelError, MutationFailed
from memo.json_types import JsonObject
from memo.model.ir import Layer, LayerConfig, ModelIR
from memo.mutation import adapt as adaptation
from memo.mutation.analysis import TensorInfo, call_layer
from memo.mutation.preference import CoverageView

GROWTH_FLOOR = 1 << 18  # a propagated tensor may grow up to max(this, 2x its old size) per sample


def snake(class_name: str) -> str:
    """``Conv2DTranspose`` -> ``conv2d_transpose`` (Keras's own default-name style)."""
    return re.sub(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", class_name).lower()


def dtype_policy(name: str) -> JsonObject:
    """The serialized Keras dtype policy that makes a layer compute in ``name``."""
    return {"module": "keras", "class_name": "DTypePolicy", "config": {"name": name}, "registered_name": None}


class Editor:
    """A model under mutation (see module docstring)."""

    def __init__(self, ir: ModelIR, infos: Mapping[str, TensorInfo], rng: random.Random, view: CoverageView,
                 operator: str) -> None:
        self.ir = ir.copy()
        self.infos: dict[str, TensorInfo] = dict(infos)
        self.rng = rng
        self.view = view
        self.operator = operator
        self.changes: list[JsonObject] = []

    # ------------------------------------------------------------------ queries
    def layer(self, name: str) -> Layer:
        return self.ir.get(name)

    def info(self, name: str) -> TensorInfo:
        return self.infos[name]

    def position(self, name: str) -> int:
        for index, layer in enumerate(self.ir.layers):
            if layer.name == name:
                return index
        raise KeyError(name)

    def consumers(self, name: str) -> list[str]:
        """Nodes reading ``name``, in graph order, each once."""
        return [layer.name for layer in self.ir.layers if name in layer.inputs]

    def sites(self, *, floats_only: bool = True, inputs: bool = True) -> list[str]:
        """Nodes whose output an edit may read, in graph order."""
        return [layer.name for layer in self.ir.layers
                if (inputs or not layer.is_input) and (not floats_only or self.infos[layer.name].is_float)]

    def ancestors(self, name: str) -> set[str]:
        layers = self.ir.by_name()
        seen: set[str] = set()
        stack = list(layers[name].inputs)
        while stack:
            node = stack.pop()
            if node not in seen:
                seen.add(node)
                stack.extend(layers[node].inputs)
        return seen

    def record(self, action: str, **details: Any) -> None:
        self.changes.append({"action": action, **details})

    # ------------------------------------------------------------------ transactions
    def attempt(self, edit: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run ``edit``; if it fails (Keras rejects a layer, no adapter fits), undo everything it did.

        Returns the edit's result, or None after a rollback.
        """
        saved = (list(self.ir.layers), {layer.name: (layer.inputs, layer.config) for layer in self.ir.layers},
                 list(self.ir.outputs), dict(self.infos), len(self.changes))
        try:
            result = edit(*args, **kwargs)
        except (InvalidModelError, MutationFailed):
            layers, wiring, outputs, infos, n_changes = saved
            for layer in layers:
                layer.inputs, layer.config = wiring[layer.name]
            self.ir.layers, self.ir.outputs, self.infos = layers, outputs, infos
            del self.changes[n_changes:]
            return None
        return True if result is None else result

    # ------------------------------------------------------------------ edits
    def add(self, class_name: str, config: LayerConfig, inputs: list[str], *, call_style: str = "single",
            role: str = "insert", module: str = "keras.layers") -> str:
        """Insert a new node reading ``inputs``, right after the last of them; returns its name.

        Raises :class:`InvalidModelError` (nothing changed) when Keras rejects the layer for these inputs.
        """
        name = self.ir.fresh_name(snake(class_name))
        layer = Layer(name=name, class_name=class_name, config=dict(config), inputs=list(inputs),
                      call_style=call_style, module=module)
        info = call_layer(layer, [self.infos[src] for src in inputs])
        if info.known and info.elements > max(GROWTH_FLOOR, *(self.infos[s].elements * 2 for s in inputs)):
            raise InvalidModelError(f"{class_name} would produce {info.elements} elements per sample")
        at = max(self.position(src) for src in inputs) + 1
        self.ir.layers.insert(at, layer)
        self.infos[name] = info
        self.record(role, node=name, class_name=class_name, config=layer.config, inputs=list(inputs),
                    shape=list(info.shape))
        return name

    def adapt(self, src: str, target: TensorInfo) -> str:
        """A node with ``target``'s shape (and dtype) computed from ``src``: ``src`` itself when it already fits."""
        current = self.infos[src]
        node = src
        dtype = target.dtype if target.is_float else "float32"
        for class_name, config in adaptation.plan(current, target):
            if dtype != "float32":
                config = {**config, "dtype": dtype_policy(dtype)}
            node = self.add(class_name, config, [node], role="adapt")
        if self.infos[node].dtype != target.dtype:
            if not target.is_float:
                raise adaptation.AdaptationImpossible(f"cannot cast {src} to {target.dtype}")
            node = self.add("Activation", {"activation": "linear", "dtype": dtype_policy(target.dtype)}, [node],
                            role="adapt")
        if self.infos[node].shape != target.shape:
            raise adaptation.AdaptationImpossible(f"adapting {src} gave {self.infos[node].shape}, not {target.shape}")
        return node

    def redirect(self, old: str, new: str, consumers: Iterable[str] | None = None, *, outputs: bool = True) -> None:
        """Make ``consumers`` (default: every current reader of ``old`` except ``new``'s own chain) read ``new``."""
        targets = list(consumers) if consumers is not None else self.consumers(old)
        avoid = self.ancestors(new) | {new}
        layers = self.ir.by_name()
        for name in targets:
            if name in avoid:
                continue
            layer = layers[name]
            layer.inputs = [new if src == old else src for src in layer.inputs]
        if outputs:
            self.ir.outputs = [new if out == old else out for out in self.ir.outputs]

    def set_inputs(self, name: str, inputs: list[str]) -> None:
        layer = self.layer(name)
        self.record("rewire", node=name, old_inputs=list(layer.inputs), new_inputs=list(inputs))
        layer.inputs = list(inputs)

    def propagate(self, before: Mapping[str, TensorInfo], scope: Mapping[str, set[str]] | None = None) -> None:
        """Re-infer every node downstream of changed nodes (``before``: node -> its facts before the edit).

        ``scope`` limits, for a changed node, which readers saw the change (the others saw it as it is).
        A reader that rejects its new input, or whose output would grow too much, gets the changed input
        adapted back to what it was.
        """
        old_infos = dict(before)
        dirty = {name for name, old in before.items() if self.infos[name] != old}
        limits = dict(scope or {})
        adapted: dict[str, str] = {}
        for layer in list(self.ir.layers):
            changed = [src for src in dict.fromkeys(layer.inputs)
                       if src in dirty and (src not in limits or layer.name in limits[src])]
            if layer.is_input or not changed:
                continue
            old = self.infos[layer.name]
            try:
                new = call_layer(layer, [self.infos[src] for src in layer.inputs])
                if new.known and new.elements > max(GROWTH_FLOOR, 2 * old.elements):
                    raise InvalidModelError("tensor grows too much")
            except InvalidModelError:
                new = self.attempt(self._refit_by_reshape, layer, changed, old_infos, old)
                if new is None:
                    for src in changed:
                        if src not in adapted:
                            adapted[src] = self.adapt(src, old_infos[src])
                        layer.inputs = [adapted[src] if s == src else s for s in layer.inputs]
                    new = call_layer(layer, [self.infos[src] for src in layer.inputs])
            if new != old:
                dirty.add(layer.name)
                old_infos[layer.name] = old
                self.infos[layer.name] = new

    def _refit_by_reshape(self, layer: Layer, changed: list[str], old_infos: Mapping[str, TensorInfo],
                          old: TensorInfo) -> TensorInfo:
        """Cheapest repair for a single-input reader: one Reshape of the changed input to a balanced shape of
        the rank the reader had, keeping the element count (no padding, no Dense), so the change flows on."""
        if len(changed) != 1 or len(set(layer.inputs)) != 1:
            raise InvalidModelError("reshape refit needs a single-input reader")
        src = changed[0]
        shape = adaptation.balanced_shape(self.infos[src], old_infos[src].rank)
        if shape is None or shape == self.infos[src].shape:
            raise InvalidModelError("no balanced reshape")
        node = self.add("Reshape", {"target_shape": list(shape[1:])}, [src], role="adapt")
        layer.inputs = [node] * len(layer.inputs)
        new = call_layer(layer, [self.infos[node]] * len(layer.inputs))
        if new.known and new.elements > max(GROWTH_FLOOR, 2 * old.elements):
            raise InvalidModelError("tensor grows too much")
        return new

    def replace_config(self, name: str, config: LayerConfig, **details: Any) -> None:
        """Give node ``name`` a new config (checked against its inputs) and propagate its new output."""
        layer = self.layer(name)
        probe = Layer(name=name, class_name=layer.class_name, config=config, inputs=layer.inputs,
                      call_style=layer.call_style, call_kwargs=layer.call_kwargs, module=layer.module)
        info = call_layer(probe, [self.infos[src] for src in layer.inputs])
        old = self.infos[name]
        layer.config = config
        self.infos[name] = info
        self.record("set_param", node=name, class_name=layer.class_name, **details)
        self.propagate({name: old})

    def remove(self, name: str, replacement: str) -> None:
        """Drop node ``name``; its readers (and outputs) read ``replacement`` instead, adapted as needed."""
        old = self.infos[name]
        readers = set(self.consumers(name))
        self.redirect(name, replacement)
        self.ir.layers = [layer for layer in self.ir.layers if layer.name != name]
        del self.infos[name]
        self.record("remove", node=name, replacement=replacement)
        self.propagate({replacement: old}, scope={replacement: readers})

    # ------------------------------------------------------------------ result
    def finish(self) -> ModelIR:
        """The edited model: readers of nothing are dropped, order and well-formedness checked."""
        self.ir.outputs = list(dict.fromkeys(self.ir.outputs))
        self.ir.prune()
        self.ir.toposort()
        self.ir.validate()
        return self.ir
