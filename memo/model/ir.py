"""memo's model IR: a small directed acyclic graph over Keras layer configurations.

Pure Python (no Keras import), so search, coverage, mutation and reduction can work on models
cheaply. A :class:`ModelIR` converts losslessly to and from the Keras 3 functional-model config
(``model.get_config()``), which is also what a Keras JSON architecture file holds.

Conventions
-----------
* Every node is one call of one layer producing one tensor; the node's name is the layer's name,
  and edges name the producing node. Input tensors are nodes of class ``InputLayer``.
* ``config`` is the layer's Keras config without its ``name`` (the name lives on the node).
* ``call_style`` says how the producers are passed to the layer: ``"single"`` (``layer(x)``),
  ``"list"`` (``layer([x, y])``, merge layers) or ``"positional"`` (``layer(x, y)``, e.g.
  MultiHeadAttention). ``call_kwargs`` holds the non-tensor keyword arguments of the call.
"""
from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any, Iterator

from memo.errors import InvalidModelError, ModelLoadError
from memo.json_types import JsonObject

IR_FORMAT = "memo-ir/1"
INPUT_CLASS = "InputLayer"
CALL_STYLES = ("single", "list", "positional")
Shape = tuple[int | None, ...]  # a tensor shape, batch dimension first (None)
LayerConfig = JsonObject  # a Keras layer's config (what get_config() returns): its keys depend on the class


def policy_name(config: LayerConfig) -> str:
    """The dtype a layer config computes in (float32 when unset)."""
    dtype = config.get("dtype") or "float32"
    if isinstance(dtype, dict):
        return str(dtype.get("config", {}).get("name", "float32"))
    return str(dtype)


def compute_dtype(config: LayerConfig) -> str:
    """The dtype a layer config computes (and outputs) in: a mixed policy's second half (mixed_float16: float16)."""
    policy = policy_name(config)
    return policy.split("_", 1)[1] if policy.startswith("mixed_") else policy


@dataclass
class Layer:
    """One node of the graph: a layer API, its settings, and the nodes that feed it."""

    name: str
    class_name: str
    config: LayerConfig = field(default_factory=dict)
    inputs: list[str] = field(default_factory=list)
    call_style: str = "single"
    call_kwargs: JsonObject = field(default_factory=dict)  # keyword arguments of the Keras call
    module: str = "keras.layers"

    @property
    def is_input(self) -> bool:
        return self.class_name == INPUT_CLASS

    def to_json(self) -> JsonObject:
        out: JsonObject = {"name": self.name, "class_name": self.class_name, "config": self.config,
                               "inputs": list(self.inputs)}
        if self.call_style != "single":
            out["call_style"] = self.call_style
        if self.call_kwargs:
            out["call_kwargs"] = self.call_kwargs
        if self.module != "keras.layers":
            out["module"] = self.module
        return out

    @classmethod
    def from_json(cls, data: JsonObject) -> "Layer":
        return cls(name=data["name"], class_name=data["class_name"], config=dict(data.get("config", {})),
                   inputs=list(data.get("inputs", [])), call_style=data.get("call_style", "single"),
                   call_kwargs=dict(data.get("call_kwargs", {})), module=data.get("module", "keras.layers"))


@dataclass
class ModelIR:
    """A functional model: nodes in topological order and the names of the output nodes."""

    layers: list[Layer] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    name: str = "model"
    # Edits applied to the generated weights when the artifact is written (LEMON-style weight mutations):
    # [{"layer": name, "kind": "shuffle" | "block", ...}]. Empty for almost every model.
    weight_edits: list[dict[str, Any]] = field(default_factory=list)

    # ------------------------------------------------------------------ queries
    def __iter__(self) -> Iterator[Layer]:
        return iter(self.layers)

    def __len__(self) -> int:
        return len(self.layers)

    def by_name(self) -> dict[str, Layer]:
        return {layer.name: layer for layer in self.layers}

    def get(self, name: str) -> Layer:
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise KeyError(name)

    @property
    def input_layers(self) -> list[Layer]:
        return [layer for layer in self.layers if layer.is_input]

    @property
    def body(self) -> list[Layer]:
        """Every node except the inputs."""
        return [layer for layer in self.layers if not layer.is_input]

    def edges(self) -> list[tuple[str, str]]:
        """(producer, consumer) pairs, one per use; a node fed twice by the same producer appears twice."""
        return [(src, layer.name) for layer in self.layers for src in layer.inputs]

    def consumers(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {layer.name: [] for layer in self.layers}
        for src, dst in self.edges():
            out[src].append(dst)
        return out

    def copy(self) -> "ModelIR":
        return copy.deepcopy(self)

    def fresh_name(self, base: str) -> str:
        """A node name not used yet, derived from ``base`` (``conv2d`` -> ``conv2d_3``)."""
        taken = {layer.name for layer in self.layers}
        if base not in taken:
            return base
        i = 1
        while f"{base}_{i}" in taken:
            i += 1
        return f"{base}_{i}"

    # ------------------------------------------------------------------ checks
    def validate(self) -> None:
        """Raise :class:`InvalidModelError` unless the graph is a well-formed DAG in topological order."""
        seen: set[str] = set()
        for layer in self.layers:
            if layer.name in seen:
                raise InvalidModelError(f"duplicate layer name {layer.name!r}")
            if layer.call_style not in CALL_STYLES:
                raise InvalidModelError(f"layer {layer.name!r}: unknown call style {layer.call_style!r}")
            if layer.is_input and layer.inputs:
                raise InvalidModelError(f"input {layer.name!r} must not have inputs")
            if not layer.is_input and not layer.inputs:
                raise InvalidModelError(f"layer {layer.name!r} has no inputs")
            for src in layer.inputs:
                if src not in seen:
                    raise InvalidModelError(f"layer {layer.name!r} reads {src!r}, which is not defined before it")
            seen.add(layer.name)
        if not self.outputs:
            raise InvalidModelError("model has no outputs")
        for out in self.outputs:
            if out not in seen:
                raise InvalidModelError(f"output {out!r} is not a layer of the model")
        if not self.input_layers:
            raise InvalidModelError("model has no inputs")

    def prune(self) -> "ModelIR":
        """Drop nodes no output depends on (inputs are kept so the signature is stable). In place."""
        needed: set[str] = set(self.outputs)
        for layer in reversed(self.layers):
            if layer.name in needed:
                needed.update(layer.inputs)
        self.layers = [layer for layer in self.layers if layer.name in needed or layer.is_input]
        kept = {layer.name for layer in self.layers}
        self.weight_edits = [edit for edit in self.weight_edits if edit["layer"] in kept]
        return self

    def toposort(self) -> "ModelIR":
        """Reorder nodes topologically (stable: keeps the current order where it is already valid). In place."""
        placed: set[str] = set()
        pending = list(self.layers)
        ordered: list[Layer] = []
        while pending:
            progress = False
            rest = []
            for layer in pending:
                if all(src in placed for src in layer.inputs):
                    ordered.append(layer)
                    placed.add(layer.name)
                    progress = True
                else:
                    rest.append(layer)
            if not progress:
                raise InvalidModelError("model graph has a cycle or a dangling input: "
                                        + ", ".join(layer.name for layer in rest[:5]))
            pending = rest
        self.layers = ordered
        return self

    # ------------------------------------------------------------------ JSON
    def to_json(self) -> JsonObject:
        out = {"format": IR_FORMAT, "name": self.name, "layers": [layer.to_json() for layer in self.layers],
               "outputs": list(self.outputs)}
        if self.weight_edits:
            out["weight_edits"] = [dict(edit) for edit in self.weight_edits]
        return out

    def dumps(self) -> str:
        """Canonical JSON text: the same model always gives the same bytes."""
        return json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, data: JsonObject) -> "ModelIR":
        if data.get("format") != IR_FORMAT:
            raise ModelLoadError(f"not a memo IR document (format {data.get('format')!r})")
        ir = cls(layers=[Layer.from_json(item) for item in data["layers"]], outputs=list(data["outputs"]),
                 name=data.get("name", "model"), weight_edits=list(data.get("weight_edits", [])))
        ir.validate()
        return ir

    @classmethod
    def loads(cls, text: str) -> "ModelIR":
        return cls.from_json(json.loads(text))

    # ------------------------------------------------------------------ Keras functional config
    @classmethod
    def from_keras_config(cls, config: JsonObject) -> "ModelIR":
        """Read a Keras 3 functional (or Sequential) model config, as ``model.get_config()`` returns it."""
        if "layers" not in config:
            raise ModelLoadError("Keras config has no 'layers' list")
        if "input_layers" not in config:
            return _from_sequential_config(config)
        layers: list[Layer] = []
        for item in config["layers"]:
            name = item.get("name") or item["config"]["name"]
            nodes = item.get("inbound_nodes", [])
            if len(nodes) > 1:
                raise ModelLoadError(f"layer {name!r} is called {len(nodes)} times; shared layers are not supported")
            lconf = {k: v for k, v in item.get("config", {}).items() if k != "name"}
            class_name = item["class_name"]
            if class_name in ("Functional", "Sequential", "Model"):
                raise ModelLoadError(f"layer {name!r} is a nested model; flatten it before loading")
            layer = Layer(name=name, class_name=class_name, config=lconf, module=item.get("module") or "keras.layers")
            if nodes:
                _read_inbound_node(layer, nodes[0])
            layers.append(layer)
        outputs = [_history_name(ref) for ref in _as_ref_list(config["output_layers"])]
        ir = cls(layers=layers, outputs=outputs, name=config.get("name", "model"))
        ir.toposort()
        ir.validate()
        return ir

    def to_keras_config(self) -> JsonObject:
        """The Keras 3 functional config of this model (loadable with ``keras.Model.from_config``)."""
        items = []
        for layer in self.layers:
            conf = dict(layer.config)
            conf["name"] = layer.name
            item: JsonObject = {"module": layer.module, "class_name": layer.class_name, "config": conf,
                                    "registered_name": None, "name": layer.name, "inbound_nodes": []}
            if not layer.is_input:
                refs = [_tensor_ref(src) for src in layer.inputs]
                args: list[Any] = [refs] if layer.call_style == "list" else refs
                item["inbound_nodes"] = [{"args": args, "kwargs": dict(layer.call_kwargs)}]
            items.append(item)
        return {"name": self.name, "trainable": True, "layers": items,
                "input_layers": [[layer.name, 0, 0] for layer in self.input_layers],
                "output_layers": [[name, 0, 0] for name in self.outputs]}


# ---------------------------------------------------------------------- helpers for the Keras format
def _tensor_ref(name: str) -> JsonObject:
    return {"class_name": "__keras_tensor__", "config": {"keras_history": [name, 0, 0]}}


def _is_tensor_ref(obj: Any) -> bool:
    return isinstance(obj, dict) and obj.get("class_name") == "__keras_tensor__"


def _history_name(ref: Any) -> str:
    """The producing layer of a ``keras_history``-style reference ``[name, node_index, tensor_index]``."""
    if _is_tensor_ref(ref):
        ref = ref["config"]["keras_history"]
    name, _node, tensor = ref[0], ref[1], ref[2]
    if tensor != 0:
        raise ModelLoadError(f"layer {name!r}: using output {tensor} of a multi-output layer is not supported")
    return name


def _as_ref_list(refs: Any) -> list[Any]:
    # Keras writes a single output either as [name, 0, 0] or as [[name, 0, 0]].
    if refs and isinstance(refs[0], str):
        return [refs]
    return list(refs)


def _read_inbound_node(layer: Layer, node: Any) -> None:
    if isinstance(node, list):  # legacy (Keras 2 / tf.keras) format: [[name, node, tensor, kwargs], ...]
        layer.inputs = [_history_name(entry[:3]) for entry in node]
        layer.call_style = "list" if len(node) > 1 else "single"
        if node and len(node[0]) > 3 and node[0][3]:
            layer.call_kwargs = dict(node[0][3])
        return
    args = node.get("args", [])
    kwargs = node.get("kwargs", {}) or {}
    if len(args) == 1 and isinstance(args[0], list):
        layer.inputs = [_history_name(ref) for ref in args[0]]
        layer.call_style = "list"
    else:
        layer.inputs = [_history_name(ref) for ref in args if _is_tensor_ref(ref)]
        layer.call_style = "single" if len(layer.inputs) == 1 else "positional"
    tensor_kwargs = [key for key, value in kwargs.items() if _contains_tensor(value)]
    if tensor_kwargs:
        raise ModelLoadError(f"layer {layer.name!r} takes tensors as keyword arguments ({', '.join(tensor_kwargs)}),"
                             " which memo does not support")
    layer.call_kwargs = dict(kwargs)


def _contains_tensor(value: Any) -> bool:
    if _is_tensor_ref(value):
        return True
    if isinstance(value, (list, tuple)):
        return any(_contains_tensor(v) for v in value)
    return False


def _from_sequential_config(config: JsonObject) -> ModelIR:
    layers: list[Layer] = []
    items = list(config["layers"])
    if not items:
        raise ModelLoadError("Sequential model has no layers")
    if items[0]["class_name"] != INPUT_CLASS:
        first = items[0].get("config", {})
        shape = first.get("batch_shape") or first.get("batch_input_shape")
        if shape is None and first.get("input_shape") is not None:
            shape = [None, *first["input_shape"]]
        if shape is None:
            build = items[0].get("build_config", {}).get("input_shape")
            shape = build
        if shape is None:
            raise ModelLoadError("Sequential model does not declare its input shape")
        layers.append(Layer(name="input_layer", class_name=INPUT_CLASS,
                            config={"batch_shape": list(shape), "dtype": "float32"}))
    prev = None
    for item in items:
        conf = {k: v for k, v in item.get("config", {}).items() if k != "name"}
        for key in ("batch_input_shape", "input_shape"):
            if item["class_name"] != INPUT_CLASS:
                conf.pop(key, None)
        name = item.get("config", {}).get("name") or item.get("name")
        layer = Layer(name=name, class_name=item["class_name"], config=conf,
                      module=item.get("module") or "keras.layers")
        if layer.is_input:
            if "batch_shape" not in layer.config and "batch_input_shape" in layer.config:
                layer.config["batch_shape"] = layer.config.pop("batch_input_shape")
        else:
            layer.inputs = [prev if prev is not None else layers[0].name]
        layers.append(layer)
        prev = layer.name
    ir = ModelIR(layers=layers, outputs=[layers[-1].name], name=config.get("name", "sequential"))
    ir.validate()
    return ir


def input_shape(layer: Layer) -> Shape:
    """The batch shape declared by an ``InputLayer`` node (first entry is the batch dimension)."""
    conf = layer.config
    shape = conf.get("batch_shape") or conf.get("batch_input_shape")
    if shape is None and conf.get("shape") is not None:
        shape = [None, *conf["shape"]]
    if shape is None:
        raise InvalidModelError(f"input {layer.name!r} declares no shape")
    return tuple(shape)


def input_dtype(layer: Layer) -> str:
    dtype = layer.config.get("dtype", "float32")
    if isinstance(dtype, dict):  # a DTypePolicy
        dtype = dtype.get("config", {}).get("name", "float32")
    return str(dtype)
