"""Shared value spaces of the catalogue: Keras names of activations, initializers, regularizers and
constraints, the bucket schemes of numeric parameters, and small factories that make :class:`ParamSpace`
objects from them. Families combine these; a new layer API rarely needs a new space.
"""
from __future__ import annotations

import re
from typing import Any, Callable, Sequence

from memo.layers.spec import MODE, SHAPE, Bucket, ParamSpace

# ----------------------------------------------------------------------------- names
# Every activation Keras 3.15 resolves from a string (keras.activations.get) and can call with its defaults:
# "threshold" resolves but needs two more arguments, so a layer using it fails when it runs.
ACTIVATIONS = ("celu", "elu", "exponential", "gelu", "hard_shrink", "hard_sigmoid", "hard_silu",
               "hard_swish", "hard_tanh", "leaky_relu", "linear", "log_sigmoid", "log_softmax", "mish", "relu",
               "relu6", "selu", "sigmoid", "silu", "soft_shrink", "softmax", "softplus", "softsign",
               "sparse_plus", "sparse_sigmoid", "sparsemax", "squareplus", "swish", "tanh", "tanh_shrink")
# "glu" is not declared: it halves the last axis when it runs, but Keras's symbolic shape inference keeps
# the axis, so every layer after it is built for the wrong shape and the model fails on every backend.

# Built-in initializers as snake_case names. "stft" is left out: it only fits Conv1D kernels over one input
# channel, a shape a mutation cannot keep (see docs/layers.md).
INITIALIZERS = ("zeros", "ones", "constant", "random_normal", "random_uniform", "truncated_normal",
                "glorot_normal", "glorot_uniform", "he_normal", "he_uniform", "lecun_normal", "lecun_uniform",
                "orthogonal", "identity", "variance_scaling")
MATRIX_ONLY_INITIALIZERS = frozenset({"identity"})          # 2-D weights only
AT_LEAST_2D_INITIALIZERS = frozenset({"identity", "orthogonal"})  # not for vectors (biases, gammas)
MATRIX_INITIALIZERS = INITIALIZERS
# memo writes every artifact's weights through Keras on numpy, whose orthogonal initializer needs
# numpy.linalg, which refuses float16: a layer computing in float16 cannot have one.
NO_FLOAT16_INITIALIZERS = frozenset({"orthogonal"})
KERNEL_INITIALIZERS = tuple(n for n in INITIALIZERS if n not in MATRIX_ONLY_INITIALIZERS)
VECTOR_INITIALIZERS = tuple(n for n in INITIALIZERS if n not in AT_LEAST_2D_INITIALIZERS)

NONE = "none"  # declared stand-in for a None setting (canonical() reserves None for "outside the space")
REGULARIZERS = (NONE, "l1", "l2", "l1_l2")
REGULARIZER_CONFIG = (None, "l1", "l2", "l1l2")  # what Keras's regularizers.get accepts
CONSTRAINTS = (NONE, "max_norm", "non_neg", "unit_norm", "min_max_norm")
CONSTRAINT_CONFIG = (None, "max_norm", "non_neg", "unit_norm", "min_max_norm")
# channels_first is not declared: TensorFlow's CPU kernels for conv and pooling reject NCHW, and memo's
# reference backends run on CPU.
DATA_FORMATS = ("channels_last",)
BOOLS = (True, False)

# Alternative spellings Keras accepts or writes, mapped to the declared name.
_ALIASES = {"normal": "random_normal", "uniform": "random_uniform", "zero": "zeros", "one": "ones",
            "identity_initializer": "identity", "orthogonal_initializer": "orthogonal", "l1l2": "l1_l2",
            None: NONE}


def snake(name: str) -> str:
    """``GlorotUniform`` -> ``glorot_uniform``, ``L1L2`` -> ``l1_l2``, ``MaxNorm`` -> ``max_norm``."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def object_name(raw: Any) -> Any:
    """The declared name of a config value that is a name, None, or a serialized Keras object."""
    if isinstance(raw, dict):
        raw = raw.get("class_name")
        if raw is None:
            return None
        raw = snake(raw)
    elif isinstance(raw, str):
        raw = raw.lower()
    return _ALIASES.get(raw, raw)


def activation_name(raw: Any) -> Any:
    if raw is None:
        return "linear"
    if isinstance(raw, dict):  # a serialized activation function or layer
        inner = raw.get("config")
        return inner if isinstance(inner, str) else object_name(raw)
    return raw


def max_int(raw: Any) -> int | None:
    """Largest integer in a (possibly nested) int / list / tuple config value."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        return raw
    if isinstance(raw, float) and raw.is_integer():
        return int(raw)
    if isinstance(raw, (list, tuple)) and raw:
        items = [max_int(item) for item in raw]
        return None if any(i is None for i in items) else max(items)
    return None


def number(raw: Any) -> float | None:
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        return None
    return raw


def length(raw: Any) -> int | None:
    return len(raw) if isinstance(raw, (list, tuple)) else None


def tuple_key(raw: Any) -> Any:
    """Lists and tuples -> a comma-joined string (a JSON-able, hashable key); other values unchanged."""
    if isinstance(raw, (list, tuple)):
        return ",".join(str(x) for x in raw)
    return raw


# ----------------------------------------------------------------------------- buckets
def buckets(*spec: tuple[str, float, float | None]) -> tuple[Bucket, ...]:
    return tuple(Bucket(label, lo, hi) for label, lo, hi in spec)


COUNT = buckets(("1", 1, 1), ("2-4", 2, 4), ("5-16", 5, 16), ("17-64", 17, 64), ("65+", 65, None))
KERNEL = buckets(("1", 1, 1), ("2-3", 2, 3), ("4-7", 4, 7), ("8+", 8, None))
STRIDE = buckets(("1", 1, 1), ("2", 2, 2), ("3-4", 3, 4), ("5+", 5, None))
DILATION = buckets(("1", 1, 1), ("2", 2, 2), ("3+", 3, None))
AMOUNT = buckets(("0", 0, 0), ("1", 1, 1), ("2-3", 2, 3), ("4+", 4, None))  # paddings, croppings
FACTOR = buckets(("1", 1, 1), ("2", 2, 2), ("3-4", 3, 4), ("5+", 5, None))  # upsampling, repeats, groups
RANK = buckets(("1", 1, 1), ("2", 2, 2), ("3", 3, 3), ("4", 4, 4))
RATE = buckets(("0", 0, 0), ("0-0.3", 0, 0.3), ("0.3-0.6", 0.3, 0.6), ("0.6-1", 0.6, 0.99))
SCALE = buckets(("0", 0, 0), ("0-0.1", 0, 0.1), ("0.1-1", 0.1, 1.0), ("1-10", 1.0, 10.0))
SIGNED = buckets(("<-1", -1e9, -1.0), ("-1-0", -1.0, 0.0), ("0-1", 0.0, 1.0), (">1", 1.0, 1e9))
EPSILON = buckets(("<=1e-5", 0, 1e-5), ("1e-5-1e-3", 1e-5, 1e-3), ("1e-3-0.1", 1e-3, 0.1))
MOMENTUM = buckets(("0-0.5", 0, 0.5), ("0.5-0.9", 0.5, 0.9), ("0.9-1", 0.9, 0.999))
EXTENT = buckets(("1", 1, 1), ("2-4", 2, 4), ("5-16", 5, 16), ("17-64", 17, 64), ("65+", 65, None))  # sizes


# ----------------------------------------------------------------------------- factories
def mode(name: str, values: Sequence, candidates: Sequence = (),
         normalize: Callable[[Any], Any] | None = None) -> ParamSpace:
    return ParamSpace(name, MODE, tuple(values), tuple(candidates),
                      normalize=normalize or (lambda raw: raw))


def shape(name: str, scheme: tuple[Bucket, ...], normalize: Callable[[Any], Any] = max_int) -> ParamSpace:
    return ParamSpace(name, SHAPE, (), buckets=scheme, normalize=normalize)


def activation(name: str = "activation") -> ParamSpace:
    return mode(name, ACTIVATIONS, normalize=activation_name)


# Keras 3.15 cannot deserialize the bare string "constant" inside a layer config (Constant.from_config
# reads a "value" key the string form lacks), so that initializer is written as a serialized object.
_INITIALIZER_CONFIG = {"constant": {"module": "keras.initializers", "class_name": "Constant",
                                    "config": {"value": 0.5}, "registered_name": None}}


def initializer(name: str, names: Sequence[str] = INITIALIZERS) -> ParamSpace:
    return mode(name, names, [_INITIALIZER_CONFIG.get(n, n) for n in names], normalize=object_name)


def regularizer(name: str) -> ParamSpace:
    return mode(name, REGULARIZERS, REGULARIZER_CONFIG, normalize=object_name)


def constraint(name: str) -> ParamSpace:
    return mode(name, CONSTRAINTS, CONSTRAINT_CONFIG, normalize=object_name)


def flag(name: str) -> ParamSpace:
    return mode(name, BOOLS, normalize=lambda raw: raw if isinstance(raw, bool) else None)


def data_format() -> ParamSpace:
    return mode("data_format", DATA_FORMATS)


def weight_params(prefix: str, initializers: Sequence[str], *, regularize: bool = True,
                  constrain: bool = True) -> list[ParamSpace]:
    """``{prefix}_initializer`` (+ ``_regularizer``, ``_constraint``) for one weight of a layer."""
    out = [initializer(f"{prefix}_initializer", initializers)]
    if regularize:
        out.append(regularizer(f"{prefix}_regularizer"))
    if constrain:
        out.append(constraint(f"{prefix}_constraint"))
    return out
