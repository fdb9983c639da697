"""A reduced model's IR as Keras code: the model built with ``keras.layers``, its settings as keyword arguments.

Only what differs from a layer's defaults is written; initializers, regularizers and constraints never change an
inference result (the weights are seeded or attached), so they are left out, except in a training script
(``training``): a regularizer adds to the loss, a constraint acts after each optimizer step, ``trainable`` decides what
is stepped (t51's reader found a Conv1D training script without its ``activity_regularizer``, which the bug needed).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memo.filing.pycode import call, identifier, literal
from memo.model.ir import Layer, ModelIR, input_dtype, input_shape
from memo.triage.bug_reduction import layer_defaults

# Settings that cannot change what a model computes at inference, or that the code states otherwise.
INERT_SUFFIXES = ("_initializer", "_regularizer", "_constraint")
DROPPED_KEYS = frozenset({"name", "trainable", "activity_regularizer", "build_config", "dtype"})
TRAINING_KEYS = frozenset({"trainable", "activity_regularizer"})  # dropped at inference, kept in a training script
TRAINING_SUFFIXES = ("_regularizer", "_constraint")
FLOAT32 = "float32"
SERIALIZED_KEYS = frozenset({"class_name", "config"})


@dataclass(frozen=True)
class KerasModelCode:
    """Lines that build ``model`` (and the input variables' names, in the model's input order)."""

    lines: list[str]
    inputs: list[str]


def dtype_name(value: Any) -> str:
    """A config's dtype (a string or a serialized DTypePolicy) as a policy name."""
    if isinstance(value, dict):
        return str((value.get("config") or {}).get("name", FLOAT32))
    return str(value or FLOAT32)


def _is_serialized(value: Any) -> bool:
    return isinstance(value, dict) and SERIALIZED_KEYS <= value.keys()


def _object(value: dict[str, Any], training: bool = False) -> str:
    """A serialized Keras object (a wrapped layer, a policy, a regularizer) as its constructor call."""
    module = str(value.get("module") or "keras.layers")
    class_name = str(value["class_name"])
    return call(f"{module}.{class_name}", [], settings(class_name, value.get("config") or {}, module, training))


def _value(value: Any, training: bool = False) -> str:
    return _object(value, training) if _is_serialized(value) else literal(value)


def _kept(key: str, training: bool) -> bool:
    """Whether a config key is written (defaults aside): not inert, or, in a training script, acting in training."""
    if training and (key in TRAINING_KEYS or key.endswith(TRAINING_SUFFIXES)):
        return True
    return key not in DROPPED_KEYS and not key.endswith(INERT_SUFFIXES)


def settings(class_name: str, config: dict[str, Any], module: str = "keras.layers",
             training: bool = False) -> dict[str, str]:
    """The rendered keyword arguments of a layer: its config less defaults and inert settings (``training``: the
    settings acting in training kept)."""
    defaults = layer_defaults(class_name) if module == "keras.layers" else {}
    out: dict[str, str] = {}
    for key, value in config.items():
        if not _kept(key, training) or (key in defaults and defaults[key] == value):
            continue
        out[key] = _value(value, training)
    policy = dtype_name(config.get("dtype"))
    if policy != FLOAT32:
        out["dtype"] = literal(policy)
    return out


def keras_model_code(ir: ModelIR, named: frozenset[str] = frozenset(), training: bool = False) -> KerasModelCode:
    """The lines building ``model`` from ``ir``; layers in ``named`` keep their names (attached weights find
    their layer by name); ``training``: the settings acting in training written too."""
    taken: set[str] = set()
    variables: dict[str, str] = {}
    lines: list[str] = []
    for layer in ir.layers:
        variables[layer.name] = identifier(layer.name, taken)
        lines.append(f"{variables[layer.name]} = {_layer_call(layer, variables, layer.name in named, training)}")
    ins = [variables[layer.name] for layer in ir.input_layers]
    outs = [variables[name] for name in ir.outputs]
    lines.append(f"model = keras.Model({_one_or_list(ins)}, {_one_or_list(outs)})")
    return KerasModelCode(lines, ins)


def _layer_call(layer: Layer, variables: dict[str, str], named: bool, training: bool = False) -> str:
    if layer.is_input:
        shape = input_shape(layer)
        kwargs = {"shape": literal(tuple(shape[1:]))} if shape[0] is None else {"batch_shape": literal(tuple(shape))}
        if input_dtype(layer) != FLOAT32:
            kwargs["dtype"] = literal(input_dtype(layer))
        kwargs["name"] = literal(layer.name)
        return call("keras.Input", [], kwargs)
    kwargs = settings(layer.class_name, layer.config, layer.module, training)
    if named:
        kwargs["name"] = literal(layer.name)
    constructor = call(f"{layer.module}.{layer.class_name}", [], kwargs)
    sources = [variables[name] for name in layer.inputs]
    arguments = f"[{', '.join(sources)}]" if layer.call_style == "list" else ", ".join(sources)
    extra = "".join(f", {key}={_value(value)}" for key, value in layer.call_kwargs.items())
    return f"{constructor}({arguments}{extra})"


def _one_or_list(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"[{', '.join(names)}]"
