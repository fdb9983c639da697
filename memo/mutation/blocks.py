"""Beyond MEMO: the same tensor fed to both inputs of a merge layer (GraphFuzz's multiple-edge coverage;
GraphFuzz and Isra found real bugs this way), and small multi-layer blocks that converters and inference
engines fuse (conv + bias + batch-norm + activation, dense + activation, a residual unit, a multi-branch
concat). Each block is one entry of BLOCKS: a function that adds its layers after a node."""
from __future__ import annotations

from typing import Callable

from memo.errors import InvalidModelError, MutationFailed
from memo.layers import MERGING
from memo.mutation.base import MutationOperator, register
from memo.mutation.editor import Editor
from memo.mutation.insertion import site_tier, splice_after
from memo.mutation.preference import by_tier
from memo.mutation.structure import merge_two

FUSED_ACTIVATIONS = ("relu", "relu6", "sigmoid", "tanh", "leaky_relu", "hard_sigmoid", "swish", "gelu")
CONV_BY_RANK = {3: "Conv1D", 4: "Conv2D", 5: "Conv3D"}
POOL_BY_RANK = {3: "MaxPooling1D", 4: "MaxPooling2D", 5: "MaxPooling3D"}
MAX_FILTERS = 64


@register
class SameInput(MutationOperator):
    name = "SameInput"
    position = 12
    summary = "feed one tensor to both inputs of a merging layer"

    def apply(self, editor: Editor) -> None:
        sites = editor.sites()
        for merge in by_tier(editor.rng, sorted(MERGING), editor.view.type_tier):
            for site in by_tier(editor.rng, list(sites), lambda s, m=merge: site_tier(editor, s, m))[:3]:
                if editor.attempt(merge_two, editor, merge, site, site):
                    return
        raise MutationFailed("SameInput: no merging layer takes two copies of a tensor of this model")


def _filters(editor: Editor, site: str) -> int:
    channels = editor.info(site).shape[-1] or 16
    return editor.rng.choice(sorted({min(channels, MAX_FILTERS), 8, 16, 32}))


def _conv(editor: Editor, src: str, filters: int, kernel: int, *, bias: bool = True, activation: str = "linear") -> str:
    rank = editor.info(src).rank
    return editor.add(CONV_BY_RANK[rank], {"filters": filters, "kernel_size": kernel, "padding": "same",
                                           "use_bias": bias, "activation": activation}, [src])


def conv_bn_act(editor: Editor, site: str) -> str:
    conv = _conv(editor, site, _filters(editor, site), editor.rng.choice((1, 3)))
    norm = editor.add("BatchNormalization", {}, [conv])
    return editor.add("Activation", {"activation": editor.rng.choice(FUSED_ACTIVATIONS)}, [norm])


def conv_act(editor: Editor, site: str) -> str:
    """Convolution with its activation folded in (the pattern converters emit as one fused op)."""
    return _conv(editor, site, _filters(editor, site), 3, activation=editor.rng.choice(FUSED_ACTIVATIONS))


def dense_act(editor: Editor, site: str) -> str:
    dense = editor.add("Dense", {"units": _filters(editor, site)}, [site])
    return editor.add("Activation", {"activation": editor.rng.choice(FUSED_ACTIVATIONS)}, [dense])


def residual(editor: Editor, site: str) -> str:
    channels = editor.info(site).shape[-1]
    if channels is None or channels > MAX_FILTERS * 4:
        raise InvalidModelError("residual block needs a known, moderate channel count")
    conv = _conv(editor, site, channels, 3, bias=False)
    norm = editor.add("BatchNormalization", {}, [conv])
    total = editor.add("Add", {}, [site, norm], call_style="list")
    return editor.add("ReLU", {}, [total])


def branches(editor: Editor, site: str) -> str:
    rank = editor.info(site).rank
    one = _conv(editor, site, _filters(editor, site), 1, activation="relu")
    three = _conv(editor, site, _filters(editor, site), 3, activation="relu")
    pool = editor.add(POOL_BY_RANK[rank], {"pool_size": 3, "strides": 1, "padding": "same"}, [site])
    return editor.add("Concatenate", {"axis": -1}, [one, three, pool], call_style="list")


Block = Callable[[Editor, str], str]
# name -> (builder, input ranks it works on)
BLOCKS: dict[str, tuple[Block, frozenset[int]]] = {
    "conv_bn_act": (conv_bn_act, frozenset(CONV_BY_RANK)),
    "conv_act": (conv_act, frozenset(CONV_BY_RANK)),
    "dense_act": (dense_act, frozenset({2, 3, 4, 5})),
    "residual": (residual, frozenset(CONV_BY_RANK)),
    "branches": (branches, frozenset(CONV_BY_RANK)),
}


def insert_block(editor: Editor, block: str, site: str) -> str:
    builder, _ranks = BLOCKS[block]
    editor.record("block", block=block, after=site)
    return splice_after(editor, site, lambda src: builder(editor, src))


@register
class FusableBlock(MutationOperator):
    name = "Block"
    position = 13
    summary = "insert a small block converters fuse (conv+bn+act, dense+act, residual, multi-branch concat)"

    def apply(self, editor: Editor) -> None:
        sites = [s for s in editor.sites() if editor.info(s).dtype == "float32" and editor.info(s).known]
        options = [(block, site) for block in sorted(BLOCKS) for site in sites
                   if editor.info(site).rank in BLOCKS[block][1]]
        editor.rng.shuffle(options)
        for block, site in options[:6]:
            if editor.attempt(insert_block, editor, block, site):
                return
        raise MutationFailed("Block: no fusable block fits this model")
