"""Tensor facts (shape and dtype of every node's output) for mutation, obtained from Keras symbolically.

Two levels, both on Keras's numpy backend and both cached (a seed is mutated many times, and the same
layer call recurs while a change is propagated):

* :func:`analyse` builds a whole model once and reads every node's output;
* :func:`call_layer` calls one layer on symbolic inputs: about a millisecond, and it raises exactly where
  the full build would, so an edit can be checked node by node before the final build.
"""
from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Hashable, Sequence

from memo.errors import InvalidModelError, one_line
from memo.json_types import JsonObject
from memo.layers import CATALOGUE, family_members
from memo.model.build import build_keras_model
from memo.model.ir import Layer, LayerConfig, ModelIR, Shape, input_dtype, input_shape, policy_name
from memo.model.keras_runtime import deserialize_layer, keras_module, weights_deferred

_ANALYSIS_CACHE_SIZE = 512
_CALL_CACHE_SIZE = 8192


@dataclass(frozen=True)
class TensorInfo:
    """What a node produces: its shape (batch dimension first, None) and dtype; and how many weight values
    the layer producing it holds (not part of equality: consumers see only shape and dtype)."""

    shape: Shape
    dtype: str
    weights: int = field(default=0, compare=False)

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def known(self) -> bool:
        """True when every non-batch dimension is a number."""
        return all(d is not None for d in self.shape[1:])

    @property
    def elements(self) -> int:
        """Elements per sample (unknown dimensions count as 1)."""
        total = 1
        for d in self.shape[1:]:
            total *= d or 1
        return total

    @property
    def is_float(self) -> bool:
        return "float" in self.dtype

    def to_json(self) -> JsonObject:
        return {"shape": list(self.shape), "dtype": self.dtype}


class _LRU:
    def __init__(self, size: int) -> None:
        self.size = size
        self.data: OrderedDict[Hashable, Any] = OrderedDict()

    def get(self, key: Hashable) -> Any:
        if key in self.data:
            self.data.move_to_end(key)
            return self.data[key]
        return None

    def put(self, key: Hashable, value: Any) -> None:
        self.data[key] = value
        self.data.move_to_end(key)
        while len(self.data) > self.size:
            self.data.popitem(last=False)


_analyses = _LRU(_ANALYSIS_CACHE_SIZE)
_calls = _LRU(_CALL_CACHE_SIZE)


def _digest(ir: ModelIR) -> str:
    return hashlib.sha1(ir.dumps().encode()).hexdigest()


def _info_of(tensor: Any, layer: Any) -> TensorInfo:
    return TensorInfo(tuple(None if d is None else int(d) for d in tensor.shape), str(tensor.dtype),
                      int(layer.count_params()))


def weight_count(infos: dict[str, TensorInfo]) -> int:
    """Weight values of a whole model, from its nodes' facts."""
    return sum(info.weights for info in infos.values())


# Layers whose cost grows with the square of the sequence: every query position meets every key position.
_QUADRATIC_IN_SEQUENCE = frozenset({"Attention", "AdditiveAttention", "MultiHeadAttention", "GroupQueryAttention"})


def compute_cost(ir: ModelIR, infos: dict[str, TensorInfo]) -> int:
    """Estimated multiply-adds per sample for one inference of ``ir``, from its nodes' facts.

    Deterministic and cheap (shapes and weight counts only), so generation can use it where wall time would
    make a campaign depend on the machine's load. Every node costs its output elements; a layer with weights
    applies them once per position (output elements over the last axis, or input elements over theirs when
    larger: a recurrent layer that returns only its last state still runs every step); attention layers add
    one product per query and key position.
    """
    total = 0
    for layer in ir.layers:
        info = infos.get(layer.name)
        if info is None:
            continue
        total += info.elements
        inputs = [infos[name] for name in layer.inputs if name in infos]
        if info.weights:
            positions = max([_positions(info), *(_positions(i) for i in inputs)])
            total += info.weights * positions
        if layer.class_name in _QUADRATIC_IN_SEQUENCE and info.rank >= 3:
            total += info.elements * (info.shape[-2] or 1)
    return total


# Layers that step through their input's time axis one position at a time. Keras on torch runs the steps as a
# Python loop, which torch.onnx's trace (keras-export) and the libraries that import its ONNX file unroll; Keras
# on JAX and TensorFlow's graph hold a loop. A model with one of them costs the libraries about three times a
# model without (docs/benchmarks.md).
RECURRENT_CLASSES = family_members("recurrent") - {"Bidirectional", "TimeDistributed"}  # without the wrappers


def recurrent_layers(ir: ModelIR) -> int:
    """Recurrent layers of ``ir``: a Bidirectional wrapper counts two (it runs its layer forwards and backwards)."""
    count = 0
    for layer in ir.layers:
        if layer.class_name in RECURRENT_CLASSES:
            count += 1
        elif layer.class_name == "Bidirectional":
            count += 2
    return count


def _positions(info: TensorInfo) -> int:
    """How many vectors along the last axis a tensor holds (per sample)."""
    last = info.shape[-1] if info.rank > 1 else None
    return max(1, info.elements // (last or 1))


def analyse(ir: ModelIR) -> dict[str, TensorInfo]:
    """Build ``ir`` once (cached by its canonical JSON) and return every node's output facts.

    Raises :class:`InvalidModelError` when Keras rejects the model.
    """
    key = _digest(ir)
    cached = _analyses.get(key)
    if cached is not None:
        return dict(cached)
    with weights_deferred():
        model = build_keras_model(ir)
    infos = {layer.name: _info_of(layer.output, layer) for layer in model.layers}
    _analyses.put(key, infos)
    return dict(infos)


def verify(ir: ModelIR, parent: ModelIR, parent_infos: dict[str, TensorInfo]) -> dict[str, TensorInfo]:
    """Every node's facts for ``ir``, a mutant of ``parent`` (whose facts come from a Keras build).

    Equivalent to building ``ir`` (a functional build is one layer call per node, and a Keras layer call
    depends only on the layer's settings and its input specs), but it calls only the layers that differ
    from the parent or receive different inputs; the rest keep the parent's facts. Raises
    :class:`InvalidModelError` like a build. The result is remembered, so the mutant can be mutated in turn.
    """
    ir.validate()
    before = parent.by_name()
    infos: dict[str, TensorInfo] = {}
    for layer in ir.layers:
        if layer.is_input:
            infos[layer.name] = TensorInfo(tuple(input_shape(layer)), input_dtype(layer))
            continue
        received = [infos[src] for src in layer.inputs]
        old = before.get(layer.name)
        if old is not None and _same_call(old, layer) and [parent_infos[s] for s in old.inputs] == received:
            infos[layer.name] = parent_infos[layer.name]
        else:
            infos[layer.name] = call_layer(layer, received)
    remember(ir, infos)
    return infos


def _same_call(a: Layer, b: Layer) -> bool:
    return (a.class_name, a.module, a.config, a.call_style, a.call_kwargs) == \
        (b.class_name, b.module, b.config, b.call_style, b.call_kwargs)


def remember(ir: ModelIR, infos: dict[str, TensorInfo]) -> None:
    """Record facts already known for ``ir`` (a validated mutant), so mutating it later needs no build."""
    _analyses.put(_digest(ir), dict(infos))


MAX_ATTENTION_SCORES = 1 << 22  # query length^2 x features one attention layer may compute
# Steps one recurrent layer may run over. Keras's export to ONNX (a TorchScript trace) and Keras on OpenVINO unroll
# the time loop whatever `unroll` says, so a few hundred steps (a feature map flattened into a sequence) take them
# to the timeout (docs/mutation.md); the seeds' recurrent layers run 25-60 steps.
MAX_RECURRENT_STEPS = 64
_LOOPS_OVER_TIME = frozenset({"LSTM", "GRU", "SimpleRNN", "Bidirectional", "ConvLSTM1D", "ConvLSTM2D", "ConvLSTM3D"})


def too_costly(class_name: str, shapes: Sequence[Shape]) -> str | None:
    """Why a layer of ``class_name`` on inputs of these shapes would make a model too costly for the libraries
    under test (None when it would not): the cost of a recurrent layer grows with its steps in the unrolling
    libraries, and attention's with the square of the sequence."""
    if not shapes or any(d is None for d in shapes[0][1:]):
        return None
    shape = shapes[0]
    if class_name in _LOOPS_OVER_TIME and len(shape) >= 3 and shape[1] > MAX_RECURRENT_STEPS:
        return f"would run {shape[1]} steps (at most {MAX_RECURRENT_STEPS}: the libraries unroll them)"
    if class_name in _QUADRATIC_IN_SEQUENCE and len(shape) >= 3:
        length = 1
        for d in shape[1:-1]:
            length *= d
        if length * length * shape[-1] > MAX_ATTENTION_SCORES:
            return f"would compute {length}^2 x {shape[-1]} attention scores (at most {MAX_ATTENTION_SCORES})"
    return None


def call_layer(layer: Layer, inputs: Sequence[TensorInfo]) -> TensorInfo:
    """Call ``layer`` (its class and config; its own inputs are ignored) on symbolic ``inputs``.

    Raises :class:`InvalidModelError` when Keras rejects the layer for these inputs, when it would be too costly
    to run (:func:`too_costly`), or when the catalogue says the reference refuses it at run time
    (:meth:`memo.layers.LayerSpec.refuses_at_run_time`: Keras's symbolic call lets RandomTranslation take a
    rank-2 tensor, and RMSNormalization a scale over an inner axis, that the run on TensorFlow then refuses).
    """
    spec = CATALOGUE.get(layer.class_name)
    if spec is not None:
        shapes = [info.shape for info in inputs]
        refusal = spec.refuses_at_run_time(layer.config, shapes) or too_costly(layer.class_name, shapes)
        if refusal:
            raise InvalidModelError(f"{layer.class_name} {refusal}")
    key = (layer.module, layer.class_name, json.dumps(layer.config, sort_keys=True, default=str),
           layer.call_style, json.dumps(layer.call_kwargs, sort_keys=True, default=str), tuple(inputs))
    cached = _calls.get(key)
    if isinstance(cached, str):  # a rejection is cached as its message (an exception would pin its frames)
        raise InvalidModelError(cached)
    if cached is not None:
        return cached
    try:
        result = _symbolic_call(layer, inputs)
    except InvalidModelError as exc:
        _calls.put(key, str(exc))
        raise
    _calls.put(key, result)
    return result


def _symbolic_call(layer: Layer, inputs: Sequence[TensorInfo]) -> TensorInfo:
    if policy_name(layer.config) != "float32":
        # initializers can fail for other dtypes (orthogonal in float16: numpy's linalg refuses it), and
        # the artifact writer initializes every weight: check that here too
        return _symbolic_call_in_scope(layer, inputs)
    with weights_deferred():
        return _symbolic_call_in_scope(layer, inputs)


def _symbolic_call_in_scope(layer: Layer, inputs: Sequence[TensorInfo]) -> TensorInfo:
    keras = keras_module()
    try:
        obj = deserialize_layer(keras, Layer(name="probe", class_name=layer.class_name,
                                              config=layer.config, module=layer.module))
        args = [keras.KerasTensor(info.shape, dtype=info.dtype) for info in inputs]
        out = obj(args, **layer.call_kwargs) if layer.call_style == "list" else obj(*args, **layer.call_kwargs)
    except Exception as exc:  # Keras raises ValueError, TypeError, KeyError ... for invalid settings
        raise InvalidModelError(f"{layer.class_name}: {one_line(exc)}") from exc
    if isinstance(out, (list, tuple)):
        raise InvalidModelError(f"{layer.class_name} returns several tensors")
    return _info_of(out, obj)
