"""Placing new layers: choosing the input shape a layer API gets, and splicing a layer (or a small block)
in after an existing node, with its readers moved onto the new output (and the change propagated)."""
from __future__ import annotations

from typing import Callable, Hashable

from memo.coverage_realizable import is_identity
from memo.errors import InvalidModelError
from memo.layers import LayerSpec
from memo.mutation.adapt import balanced_shape, friendly_shape
from memo.mutation.analysis import TensorInfo, too_costly
from memo.mutation.editor import Editor
from memo.mutation.preference import SEEN

MAX_RANK = 6


def takes_indices(spec: LayerSpec) -> bool:
    """Layers that also take integer tensors read them as indices (Embedding): a float tensor would be
    cast to out-of-range indices, an input-domain error rather than a library bug."""
    return any("int" in dtype for dtype in spec.dtypes)


def copies_for(spec: LayerSpec) -> int:
    """How many times an inserted layer receives the site's tensor: once, or as often as its minimum
    arity asks (a merge layer gets x twice, attention gets query = value = x: self-attention)."""
    return max(1, spec.arity[0])


def input_for(spec: LayerSpec, info: TensorInfo, editor: Editor) -> TensorInfo | None:
    """The tensor ``spec`` should receive when inserted after a node producing ``info``.

    ``info`` itself when the layer accepts it; else the same elements rearranged to a rank the layer takes;
    else a small default shape of that rank (an adapter bridges the gap). None when nothing fits.
    """
    if info.dtype not in spec.dtypes or (info.is_float and takes_indices(spec)):
        return None
    copies = copies_for(spec)
    if spec.accepts([info.shape] * copies):
        return info
    ranks = sorted(r for r in spec.input_ranks if r <= MAX_RANK)
    editor.rng.shuffle(ranks)
    for rank in ranks:
        for shape in (balanced_shape(info, rank), friendly_shape(rank, info.dtype).shape):
            if shape is not None and spec.accepts([shape] * copies):
                return TensorInfo(shape, info.dtype)
    return None


def splice_after(editor: Editor, site: str, build: Callable[[str], str]) -> str:
    """Run ``build(site)`` (which adds nodes reading ``site`` and returns the last one); readers of ``site``
    and outputs naming it then read that node. Its new shape flows downstream (:meth:`Editor.propagate`)."""
    readers = editor.consumers(site)
    before = editor.info(site)
    node = build(site)
    editor.redirect(site, node, readers)
    editor.propagate({node: before})
    return node


def insert_layer(editor: Editor, spec: LayerSpec, site: str, *, fixed: tuple[str, Hashable] | None = None) -> str:
    """Insert one layer of API ``spec`` after ``site`` with a freshly sampled valid config (raises on failure);
    ``fixed`` = (parameter, coverage value) forces one setting."""
    target = input_for(spec, editor.info(site), editor)
    if target is None or too_costly(spec.name, [target.shape]):
        raise InvalidModelError(f"{spec.name} accepts no (affordable) input derived from {site}")
    copies = copies_for(spec)
    shapes = [target.shape] * copies
    config = spec.sample(editor.rng, shapes)
    if config is not None and fixed is not None:
        config = spec.with_param(editor.rng, config, fixed[0], fixed[1], shapes)
    if config is None:
        raise InvalidModelError(f"{spec.name}: no valid setting{f' with {fixed[0]}={fixed[1]!r}' if fixed else ''} "
                                f"for {target.shape}")

    def build(src: str) -> str:
        return editor.add(spec.name, config, [editor.adapt(src, target)] * copies, call_style=spec.call_style,
                          module=spec.module)

    return splice_after(editor, site, build)


def producer_class(editor: Editor, site: str) -> str | None:
    """The class a layer inserted after ``site`` pairs with: the site's, or, through inference identities
    (Dropout ...), that of the first layer upstream that computes (coverage counts the pair that runs at
    inference); None for a model input (its pairs are not counted)."""
    layer = editor.layer(site)
    while is_identity(layer.class_name) and len(layer.inputs) == 1:
        layer = editor.layer(layer.inputs[0])
    return None if layer.is_input else layer.class_name


def pair_gain(editor: Editor, site: str, class_name: str, claimed: frozenset[tuple[str, str]] = frozenset()) -> int:
    """How many uncovered headline pairs inserting ``class_name`` after ``site`` realizes: (site's class, it)
    and (it, reader's class) for each reader of ``site``, bar those in ``claimed`` (realized by this mutant
    already). Assumes no adapter lands in between (the caller prefers sites where none does)."""
    uncovered = editor.view.uncovered_pairs
    producer = producer_class(editor, site)
    wanted = {(producer, class_name)} if producer is not None else set()
    wanted.update((class_name, editor.layer(reader).class_name) for reader in editor.consumers(site))
    return len((wanted & uncovered) - claimed)


def best_pair_gain(editor: Editor, class_name: str, sites: list[str]) -> int:
    """The most uncovered pairs a ``class_name`` layer would realize at any of ``sites``."""
    return max((pair_gain(editor, site, class_name) for site in sites), default=0)


def site_tier(editor: Editor, site: str, class_name: str) -> tuple[int, int]:
    """How good a site is for a new ``class_name`` layer: most uncovered pairs realized first (both sides,
    :func:`pair_gain`), then how new the pair (site's class, ``class_name``) is; inputs rank last."""
    producer = producer_class(editor, site)
    if producer is None:
        return (-pair_gain(editor, site, class_name), SEEN)
    return (-pair_gain(editor, site, class_name), editor.view.pair_tier(producer, class_name))
