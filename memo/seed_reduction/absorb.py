"""Coverage fixes for an edit that lost coverage items: value absorption and pair re-homing.

*Value absorption*: when an edit removes the only layer that carries a parameter value, move that value
onto a kept layer of the same class whose own value for that parameter some other layer carries too.
Without this, every distinct (class, parameter, value) of the seed pins down one layer: a convolution
that alone has ``strides=2`` cannot go even though another convolution, whose ``strides=1`` a third
one also has, could take that stride. The removed carrier's raw config value is copied (nothing is
re-serialized).

*Pair re-homing*: when an edit removes the only edge of a layer pair (A, B), a kept B layer whose input
pair another edge also makes takes that input from an earlier A layer instead.

A plan only proposes changes; whether the model still builds, keeps its weight and compute limits and has
exactly its coverage is decided by the reducer's usual acceptance check.
"""
from __future__ import annotations

from collections import Counter
from typing import Any, Hashable

from memo.layers import CATALOGUE
from memo.model.ir import Layer, ModelIR

ParamItem = tuple[str, str, Hashable]  # (layer API, parameter, canonical value): one coverage "params" item
Setting = tuple[str, str, Any]         # (node, config key, raw value): an Edit's config change


def layer_params(layer: Layer) -> list[ParamItem]:
    """The coverage ``params`` items one layer carries (empty for a class outside the catalogue)."""
    spec = CATALOGUE.get(layer.class_name)
    if spec is None:
        return []
    return [(spec.name, param, value) for param, value in spec.coverage_values(layer.config)]


def _source_value(before: ModelIR, kept: set[str], item: ParamItem) -> Any | None:
    """The raw config value of ``item`` on a layer the edit removed (first in model order)."""
    for layer in before.layers:
        if layer.name not in kept and item in layer_params(layer):
            return layer.config[item[1]]
    return None


def _hosts(candidate: ModelIR, item: ParamItem, carriers: Counter) -> list[str]:
    """Kept layers of ``item``'s class that can give up their own value of ``item``'s parameter."""
    api, param, _value = item
    out = []
    for layer in candidate.layers:
        spec = CATALOGUE.get(layer.class_name)
        if spec is None or spec.name != api or not spec.has_param(param):
            continue
        own = spec.param(param).canonical(layer.config[param]) if param in layer.config else None
        if own != item[2] and (own is None or carriers[(api, param, own)] >= 2):
            out.append(layer.name)
    return out


def _kth_choices(options: list[list[Any]], max_plans: int) -> list[tuple[Any, ...]]:
    """Plan ``k`` takes the ``k``-th choice (wrapping around) of every option list; duplicate plans and plans
    that change one thing twice (same node and key or input) are dropped."""
    plans: list[tuple[Any, ...]] = []
    for k in range(min(max_plans, max(map(len, options), default=0))):
        plan = tuple(choices[k % len(choices)] for choices in options)
        if len({change[:2] for change in plan}) == len(plan) and plan not in plans:
            plans.append(plan)
    return plans


def absorption_plans(before: ModelIR, candidate: ModelIR, missing: set[ParamItem],
                     max_plans: int) -> list[tuple[Setting, ...]]:
    """Up to ``max_plans`` alternative sets of config changes that put every ``missing`` item back.

    Plan ``k`` gives each item its ``k``-th eligible host (model order), so the items a removed layer
    carried together tend to move together onto one host. Empty when some item has no host or no source
    value.
    """
    kept = {layer.name for layer in candidate.layers}
    carriers = Counter(item for layer in candidate.layers for item in layer_params(layer))
    options = []
    for item in sorted(missing, key=repr):
        raw = _source_value(before, kept, item)
        hosts = _hosts(candidate, item, carriers)
        if raw is None or not hosts:
            return []
        options.append([(host, item[1], raw) for host in hosts])
    return _kth_choices(options, max_plans)


PairItem = tuple[str, str]       # (producer class, consumer class): one coverage "pairs" item
Reinput = tuple[str, int, str]   # (node, input index, new source): an Edit's ``reinput``


def pair_plans(candidate: ModelIR, missing: set[PairItem], max_plans: int) -> list[tuple[Reinput, ...]]:
    """Up to ``max_plans`` alternative rewirings that bring every ``missing`` layer pair back.

    A pair (A, B) comes back when some kept B layer takes one input from an earlier kept A layer instead,
    provided the pair that input made before is made by another edge as well. The options of a pair are
    ordered nearest first: the new source close to the old one in model order, likelier the same shape
    (ordering by equal shapes first makes no difference on the ten seeds).
    """
    layers = candidate.by_name()
    position = {layer.name: i for i, layer in enumerate(candidate.layers)}
    edge_count = Counter((layers[src].class_name, layer.class_name) for layer in candidate.layers
                         for src in layer.inputs)
    options = []
    for producer, consumer in sorted(missing):
        found = [(abs(position[source.name] - position[src]), (layer.name, index, source.name))
                 for layer in candidate.layers if layer.class_name == consumer
                 for index, src in enumerate(layer.inputs) if edge_count[(layers[src].class_name, consumer)] >= 2
                 for source in candidate.layers[:position[layer.name]]
                 if source.class_name == producer and source.name != src]
        if not found:
            return []
        options.append([reinput for _distance, reinput in sorted(found)])
    return _kth_choices(options, max_plans)
