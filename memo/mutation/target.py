"""Target: the directed operator. It aims at items the campaign has not covered and builds a mutant that
realizes them at compatible sites of the model, with the catalogue's samplers and adapters:

* layer pairs: a layer of class B goes right after a layer of class A where (A, B) is uncovered. Candidate
  (site, B) placements are scored by every uncovered pair they realize: (A, B) and (B, X) for each reader
  X of the site (:func:`memo.mutation.insertion.pair_gain`), and placements where B reads A's output as it
  is (no adapter in between, which would break the pair) come first. Since the new layer is itself a site,
  successive targets chain: A -> B -> C ...;
* a parameter value (L, p, v): a layer of class L gets p = v (``with_param`` keeps the rest valid), or, when
  the model has no L, a new L with p = v is inserted where it realizes the most uncovered pairs;
* a rare layer type (in few of the executed models: :meth:`memo.mutation.preference.CoverageView.rare_types`):
  it is inserted where it realizes the most uncovered pairs; a layer reading integer indices (Embedding) gets
  a new integer model input instead (:func:`add_index_branch`).

The kind of each target is drawn in proportion to how much of its criterion is still uncovered, so effort
follows what is left; rare types keep at least :data:`RARE_TYPE_WEIGHT` while there are any (one rare type
among 85 would otherwise almost never be drawn). One mutant realizes two to :data:`MAX_REALIZED` targets
(executions are the scarce part; generation is cheap), none twice, while the mutant stays within
:data:`MAX_TARGET_LAYERS` layers (or grows by :data:`MIN_GROWTH`). Beside them, up to
:data:`IDENTITIES_ADDED` inference-identity layer types that few executed models contain (Dropout, Random*
augmentation ...) are added: alone they cannot make a mutant diverse, yet converters and exporters must still
handle them. MH still chooses the seed <model, operator> (MEMO's Eq. 1-4); the campaign's directed share
(``memo fuzz --directed``, half by default) hands the chosen model to Target instead of the chosen operator.
Targets are drawn from the headline (inference-relevant) items only, bar those the reference kept refusing
(:meth:`memo.coverage.CoverageTracker.given_up`), in a deterministic order for a given random generator.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Hashable

from memo.coverage import declared, model_pairs
from memo.coverage_realizable import headline_param
from memo.errors import InvalidModelError, MutationFailed
from memo.layers import CATALOGUE
from memo.mutation.base import MutationOperator, register
from memo.mutation.editor import Editor
from memo.model.ir import INPUT_CLASS, Layer
from memo.mutation.analysis import TensorInfo
from memo.mutation.insertion import (copies_for, input_for, insert_layer, pair_gain, producer_class, site_tier,
                                     takes_indices)
from memo.mutation.structure import merge_two
from memo.mutation.params import _ChangeParams
from memo.mutation.preference import by_tier

MAX_TARGETS = 12  # targets tried for one mutant before giving up
MAX_REALIZED = 6  # targets one mutant realizes at most (2 to this many, drawn)
PAIR_CANDIDATES = 96  # (site, layer class) placements scored per pair target (a sample of all of them)
PLACEMENTS_TRIED = 4  # best-scored placements tried before the next target
INDEX_LENGTHS = (4, 8, 16)  # lengths of a new integer input feeding an embedding
IDENTITIES_ADDED = 2  # rarely executed inference-identity layer types added beside the targets (distinct)
# Size of a Target mutant (layers before its identities are added): it stops realizing targets once the model
# has this many layers, and may always grow by MIN_GROWTH. Every library's cost grows with the model, and Target
# chains rare, often costly layers (recurrent, attention, 3-D), so its unbounded mutants are the slowest to run
# (docs/benchmarks.md).
MAX_TARGET_LAYERS = 30
MIN_GROWTH = 4
# Least weight of the "rare types" target kind while any headline type is rare. Its natural weight (the rare
# share of the types, e.g. 3 of 85) makes a rare type about 1 target in 30, which leaves rare types rare in the
# executed mutants (docs/benchmarks.md).
RARE_TYPE_WEIGHT = 0.3

Action = Callable[[Editor], Any]
PairItem = tuple[str, str]
ParamItem = tuple[str, str, Hashable]


@dataclass
class Claimed:
    """What this mutant realized so far (the campaign's coverage does not know it yet)."""

    pairs: set[PairItem] = field(default_factory=set)
    params: set[ParamItem] = field(default_factory=set)
    types: set[str] = field(default_factory=set)


def _sites_by_class(editor: Editor) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for site in editor.sites(inputs=False):
        out.setdefault(editor.layer(site).class_name, []).append(site)
    return out


def _is_direct(editor: Editor, site: str, class_name: str) -> bool:
    """Whether a new ``class_name`` layer after ``site`` reads its output as it is (no adapter)."""
    return input_for(CATALOGUE[class_name], editor.info(site), editor) == editor.info(site)


def pair_targets(editor: Editor, sites: dict[str, list[str]]) -> list[PairItem]:
    """Uncovered reachable headline pairs (A, B) whose A is in this model."""
    return sorted(pair for pair in editor.view.uncovered_pairs if pair[0] in sites)


def param_targets(editor: Editor) -> list[ParamItem]:
    """Uncovered headline parameter values (layer class, parameter, value) of the whole catalogue, bar those given
    up (:meth:`memo.coverage.CoverageTracker.given_up`)."""
    covered = editor.view.campaign.params | editor.view.given_up.params
    return [item for name in sorted(CATALOGUE) for space in CATALOGUE[name].params for value in space.values
            if (item := (name, space.name, value)) not in covered and headline_param(item)]


def pair_placements(editor: Editor, claimed: Claimed) -> list[tuple[str, str]]:
    """(site, layer class) placements that realize an uncovered pair, best first: a sample of
    :data:`PAIR_CANDIDATES` ranked by :func:`pair_gain` (shuffled within equal gains)."""
    consumers: dict[str, list[str]] = {}
    for producer, consumer in sorted(editor.view.uncovered_pairs - claimed.pairs):
        consumers.setdefault(producer, []).append(consumer)
    options = [(site, consumer) for site in editor.sites(inputs=False)
               for consumer in consumers.get(producer_class(editor, site) or "", ())]
    if len(options) > PAIR_CANDIDATES:
        options = editor.rng.sample(options, PAIR_CANDIDATES)
    frozen = frozenset(claimed.pairs)
    return by_tier(editor.rng, options, lambda option: -pair_gain(editor, option[0], option[1], frozen))


def _insert_claiming(editor: Editor, claimed: Claimed, class_name: str, site: str,
                     fixed: tuple[str, Hashable] | None = None, *, pair_wanted: bool = False) -> None:
    """Insert a ``class_name`` layer after ``site`` and claim the pairs the model gained, measured on the model:
    an adapter the insertion needed (a Reshape before the new layer, or before a reader that rejects its
    output) stands between the layers a placement meant to pair. ``pair_wanted``: the edit must realize an
    uncovered pair this mutant has not claimed yet, or it is undone (raises)."""
    before = model_pairs(editor.ir)
    insert_layer(editor, CATALOGUE[class_name], site, fixed=fixed)
    gained = model_pairs(editor.ir) - before
    if pair_wanted and not (gained & editor.view.uncovered_pairs) - claimed.pairs:
        raise InvalidModelError(f"{class_name} after {site}: an adapter stands in between, no uncovered pair")
    claimed.pairs |= gained
    claimed.types.add(class_name)


def _realize_pair(editor: Editor, claimed: Claimed) -> bool:
    ranked = pair_placements(editor, claimed)[:PLACEMENTS_TRIED]
    ranked.sort(key=lambda option: not _is_direct(editor, *option))  # stable: gain order kept within each
    for site, consumer in ranked:
        if editor.attempt(_insert_claiming, editor, claimed, consumer, site, pair_wanted=True):
            return True
    return False


def _best_sites(editor: Editor, class_name: str) -> list[str]:
    spec = CATALOGUE[class_name]
    sites = [s for s in editor.sites() if editor.info(s).dtype in spec.dtypes]
    return by_tier(editor.rng, sites, lambda s: site_tier(editor, s, class_name))[:3]


def _realize_param(editor: Editor, claimed: Claimed, item: ParamItem) -> bool:
    name, param, value = item
    present = _sites_by_class(editor).get(name)
    if present:
        done = editor.attempt(_ChangeParams.change, editor, editor.rng.choice(present), param, value)
    else:
        done = any(editor.attempt(_insert_claiming, editor, claimed, name, site, (param, value))
                   for site in _best_sites(editor, name))
    if done:
        claimed.params.add(item)
    return bool(done)


def add_index_branch(editor: Editor, name: str) -> str:
    """A layer that reads integer indices (Embedding) cannot follow a float tensor: it gets a new int32 model
    input of its own (memo's inputs stay below its vocabulary size), and its output is added to a float
    tensor of the model (adapted to that tensor's shape), so that it reaches the model's output."""
    spec = CATALOGUE[name]
    length = editor.rng.choice(INDEX_LENGTHS)
    node = editor.ir.fresh_name("indices")
    shape = (None, length)
    position = max(i for i, layer in enumerate(editor.ir.layers) if layer.is_input) + 1
    editor.ir.layers.insert(position, Layer(name=node, class_name=INPUT_CLASS,
                                            config={"batch_shape": list(shape), "dtype": "int32"}))
    editor.infos[node] = TensorInfo(shape, "int32")
    editor.record("add_input", node=node, dtype="int32", shape=list(shape))
    config = spec.sample(editor.rng, [shape])
    if config is None:
        raise InvalidModelError(f"{name}: no valid setting for {shape}")
    looked_up = editor.add(name, config, [node], call_style=spec.call_style, module=spec.module)
    sites = editor.sites(inputs=False)
    sites.remove(looked_up)
    if not sites:
        raise InvalidModelError("no float tensor to add the looked-up vectors to")
    return merge_two(editor, "Add", editor.rng.choice(sites), looked_up)


def _realize_type(editor: Editor, claimed: Claimed, name: str) -> bool:
    if takes_indices(CATALOGUE[name]):
        done = editor.attempt(add_index_branch, editor, name)
        claimed.types.add(name)
        return bool(done)
    return any(editor.attempt(_insert_claiming, editor, claimed, name, site) for site in _best_sites(editor, name))


def targets(editor: Editor, claimed: Claimed | None = None) -> dict[str, tuple[float, list[Action]]]:
    """Per target kind: its weight (the uncovered share of its criterion) and the actions that would realize
    one uncovered item in this model (each returns whether it did)."""
    claimed = claimed if claimed is not None else Claimed()
    space = declared().headline()
    params = [item for item in param_targets(editor) if item not in claimed.params]
    rare = sorted(editor.view.rare_types - claimed.types)
    uncovered = editor.view.uncovered_pairs - claimed.pairs
    kinds: dict[str, tuple[float, list[Action]]] = {
        "pairs": (len(uncovered) / max(1, len(space.pairs)),
                  [lambda e: _realize_pair(e, claimed)] if pair_targets(editor, _sites_by_class(editor)) else []),
        "params": (len(params) / max(1, len(space.params)),
                   [lambda e, item=item: _realize_param(e, claimed, item) for item in params]),
        "rare types": (max(RARE_TYPE_WEIGHT, len(rare) / max(1, len(space.types))),
                       [lambda e, n=name: _realize_type(e, claimed, n) for name in rare]),
    }
    return {kind: (weight, actions) for kind, (weight, actions) in kinds.items() if actions and weight > 0}


def _add_rare_identities(editor: Editor) -> None:
    """Insert up to :data:`IDENTITIES_ADDED` distinct rarely executed identity types, each at a random site of
    a dtype it takes (the first of three tried sites that keeps the model valid)."""
    names = sorted(editor.view.rare_identities)
    editor.rng.shuffle(names)
    for name in names[:IDENTITIES_ADDED]:
        spec = CATALOGUE[name]
        sites = [s for s in editor.sites(inputs=False) if editor.info(s).dtype in spec.dtypes]
        editor.rng.shuffle(sites)
        any(editor.attempt(insert_layer, editor, spec, site) for site in sites[:3])


@register
class Target(MutationOperator):
    name = "Target"
    position = 14
    summary = "realize uncovered layer pairs and parameter values, and insert rarely executed layer types"

    def apply(self, editor: Editor) -> None:
        wanted = editor.rng.randint(2, MAX_REALIZED)
        claimed = Claimed()
        realized = 0
        size_limit = max(MAX_TARGET_LAYERS, len(editor.ir.layers) + MIN_GROWTH)
        for _ in range(MAX_TARGETS):
            if realized == wanted or len(editor.ir.layers) >= size_limit:
                break
            available = targets(editor, claimed)  # after each edit: the model, and so its sites, changed
            if not available:
                break
            kinds = sorted(available)
            kind = editor.rng.choices(kinds, weights=[available[k][0] for k in kinds])[0]
            realized += bool(editor.rng.choice(available[kind][1])(editor))
        if not realized:
            raise MutationFailed("Target: no uncovered item could be realized in this model")
        _add_rare_identities(editor)


__all__ = ["Claimed", "Target", "copies_for", "pair_placements", "pair_targets", "param_targets", "targets"]
