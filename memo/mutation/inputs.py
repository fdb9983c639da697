"""Beyond MEMO: tensor-shape mutation of a model input (GraphFuzz's TSM) and dtype mutation.

TSM resizes the non-batch dims of one float input and lets the new shape flow through the model as far as
the layers accept it (adapting back before the first that does not). DType makes one layer (or input)
compute in float16, float64 or bfloat16 where the catalogue says the layer API accepts that dtype.
"""
from __future__ import annotations

from memo.coverage import size_label
from memo.errors import MutationFailed
from memo.layers import get_spec
from memo.mutation.base import MutationOperator, register
from memo.mutation.analysis import TensorInfo, policy_name
from memo.mutation.editor import Editor, dtype_policy
from memo.mutation.preference import SEEN, by_tier

SCALES = (0.5, 0.75, 1.25, 1.5, 2.0)
MAX_INPUT_ELEMENTS = 1 << 18
FLOAT_DTYPES = ("float16", "float64", "bfloat16")
INPUT_DTYPES = ("float16", "float64")  # model inputs travel as .npz arrays, which cannot hold bfloat16
# The dtype whose catalogue rule stands for another's: no catalogue entry declares bfloat16 (a layer's declared dtypes
# are its inputs', and model inputs cannot be bfloat16), and a layer API that computes in float16 computes in
# bfloat16 on Keras's TensorFlow, JAX and torch backends (checked on 20 common APIs, 2026-11-27) but where an
# initializer has no bfloat16 kernel (orthogonal's QR: the recurrent layers), which the symbolic call's weight
# creation rejects. bfloat16 weights are what mixed-precision training steps (the training check's optimizers).
COMPUTE_PROXY = {"bfloat16": "float16"}


def candidate_shape(editor: Editor, old: TensorInfo) -> TensorInfo:
    """``old`` with its spatial / sequence dims (sometimes the channels too) scaled by random factors."""
    dims = list(old.shape[1:])
    axes = list(range(len(dims) - 1)) or [0]          # spatial / sequence axes; a vector's only axis
    if editor.rng.random() < 0.3:
        axes = list(range(len(dims)))                  # sometimes the channels too
    for axis in axes:
        dims[axis] = max(1, int(round(dims[axis] * editor.rng.choice(SCALES))))
    if dims == list(old.shape[1:]):
        dims[axes[0]] += 1
    return TensorInfo((old.shape[0], *dims), old.dtype)


def resize_input(editor: Editor, node: str, new: TensorInfo) -> None:
    layer = editor.layer(node)
    old = editor.info(node)
    if new.elements > MAX_INPUT_ELEMENTS:
        raise MutationFailed(f"input {node}: {new.shape} is too large")
    config = {key: value for key, value in layer.config.items() if key not in ("batch_input_shape", "shape")}
    config["batch_shape"] = list(new.shape)
    layer.config = config
    editor.infos[node] = new
    editor.record("resize_input", node=node, old_shape=list(old.shape), new_shape=list(new.shape))
    editor.propagate({node: old})


@register
class TensorShapeMutation(MutationOperator):
    name = "TSM"
    position = 10
    summary = "resize a model input; the new shape flows through the model where layers accept it"
    targets = ("shapes", "input_ranks")

    def apply(self, editor: Editor) -> None:
        inputs = [layer.name for layer in editor.ir.input_layers
                  if editor.info(layer.name).is_float and editor.info(layer.name).known]
        editor.rng.shuffle(inputs)
        for node in inputs:
            readers = [editor.layer(r).class_name for r in editor.consumers(node)]

            def tier(info: TensorInfo, readers: list[str] = readers) -> int:  # new (reader, input size) first
                return min((editor.view.tier("shapes", (r, size_label(info.shape))) for r in readers), default=SEEN)

            candidates = [candidate_shape(editor, editor.info(node)) for _ in range(4)]
            for shape in by_tier(editor.rng, candidates, tier)[:3]:
                if editor.attempt(resize_input, editor, node, shape):
                    return
        raise MutationFailed("TSM: no float input of known shape can be resized")


def set_dtype(editor: Editor, node: str, dtype: str) -> None:
    layer = editor.layer(node)
    old_dtype = policy_name(layer.config)
    if layer.is_input:
        old = editor.info(node)
        layer.config = {**layer.config, "dtype": dtype}
        editor.infos[node] = TensorInfo(old.shape, dtype)
        editor.record("set_dtype", node=node, old=old.dtype, new=dtype)
        editor.propagate({node: old})
        return
    editor.replace_config(node, {**layer.config, "dtype": dtype_policy(dtype)}, param="dtype",
                          diff={"dtype": [old_dtype, dtype]})


@register
class DTypeMutation(MutationOperator):
    name = "DType"
    position = 11
    summary = "make one layer or input compute in float16, float64 or bfloat16 where the layer API allows it"
    targets = ("dtypes",)

    def apply(self, editor: Editor) -> None:
        options = []
        for layer in editor.ir.layers:
            if layer.is_input:
                if not editor.info(layer.name).is_float:
                    continue
                allowed, current = INPUT_DTYPES, editor.info(layer.name).dtype
            else:
                spec = get_spec(layer.class_name)
                if spec is None:
                    continue
                allowed = tuple(d for d in FLOAT_DTYPES if spec.computes_in(layer.config, COMPUTE_PROXY.get(d, d)))
                current = policy_name(layer.config)
            options.extend((layer.name, dtype) for dtype in allowed if dtype != current)
        classes = {layer.name: layer.class_name for layer in editor.ir.layers}

        def tier(option: tuple[str, str]) -> int:  # new (reader API, input dtype) coverage first
            readers = editor.consumers(option[0])
            return min((editor.view.tier("dtypes", (classes[r], option[1])) for r in readers), default=SEEN)

        for node, dtype in by_tier(editor.rng, options, tier)[:8]:
            if editor.attempt(set_dtype, editor, node, dtype):
                return
        raise MutationFailed("DType: no layer of this model accepts another float dtype")
