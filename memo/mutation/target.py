"""Target: the directed operator. It aims at one item the campaign has not covered and builds a mutant that
realizes it at a compatible site of the model, with the catalogue's samplers and adapters:

* a layer pair A -> B: B is inserted right after a layer of class A (sites where B takes A's output as it is
  come first, so that no adapter lands between them);
* a parameter value (L, p, v): a layer of class L gets p = v (``with_param`` keeps the rest valid), or, when
  the model has no L, a new L with p = v is inserted;
* a rare layer type (in few of the executed models: :meth:`memo.mutation.preference.CoverageView.rare_types`):
  it is inserted where its pair with the site's class is newest.

One mutant realizes one to three targets. MH still chooses the seed and the operator (MEMO's Eq. 1-4): Target
is one operator among the others, and
the search learns how often its mutants are diverse. Targets are drawn from the headline (inference-relevant)
items only, in a deterministic order for a given random generator.
"""
from __future__ import annotations

from typing import Any, Callable, Hashable

from memo.errors import InvalidModelError, MutationFailed
from memo.coverage import declared
from memo.coverage_realizable import headline_param
from memo.layers import CATALOGUE
from memo.mutation.base import MutationOperator, register
from memo.mutation.editor import Editor
from memo.mutation.insertion import copies_for, input_for, insert_layer, site_tier
from memo.mutation.params import _ChangeParams
from memo.mutation.preference import by_tier

MAX_TARGETS = 10  # targets tried for one mutant before giving up
MAX_REALIZED = 3  # targets one mutant realizes at most (1 to this many, drawn)

Action = Callable[[Editor], Any]


def _sites_by_class(editor: Editor) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for site in editor.sites(inputs=False):
        out.setdefault(editor.layer(site).class_name, []).append(site)
    return out


def _direct_sites(editor: Editor, sites: list[str], class_name: str) -> list[str]:
    """``sites`` where a new ``class_name`` layer reads the output as it is (no adapter), else all of them."""
    spec = CATALOGUE[class_name]
    direct = [s for s in sites if input_for(spec, editor.info(s), editor) == editor.info(s)]
    return direct or sites


def pair_targets(editor: Editor, sites: dict[str, list[str]]) -> list[tuple[str, str]]:
    """Uncovered reachable headline pairs (A, B) whose A is in this model."""
    return sorted(pair for pair in declared().headline().pairs - editor.view.campaign.pairs if pair[0] in sites)


def param_targets(editor: Editor) -> list[tuple[str, str, Hashable]]:
    """Uncovered headline parameter values (layer class, parameter, value) of the whole catalogue."""
    covered = editor.view.campaign.params
    return [item for name in sorted(CATALOGUE) for space in CATALOGUE[name].params for value in space.values
            if (item := (name, space.name, value)) not in covered and headline_param(item)]


def _realize_pair(editor: Editor, sites: list[str], consumer: str) -> None:
    site = editor.rng.choice(_direct_sites(editor, sites, consumer))
    insert_layer(editor, CATALOGUE[consumer], site)


def _realize_param(editor: Editor, sites: dict[str, list[str]], item: tuple[str, str, Hashable]) -> None:
    name, param, value = item
    if name in sites:
        _ChangeParams.change(editor, editor.rng.choice(sites[name]), param, value)
        return
    spec = CATALOGUE[name]
    site = editor.rng.choice(editor.sites())
    insert_layer(editor, spec, site, fixed=(param, value))


def _realize_type(editor: Editor, name: str) -> None:
    spec = CATALOGUE[name]
    ranked = by_tier(editor.rng, editor.sites(), lambda s: site_tier(editor, s, name))
    for site in ranked[:3]:
        if editor.info(site).dtype in spec.dtypes:
            insert_layer(editor, spec, site)
            return
    raise InvalidModelError(f"no site takes {name}")


def targets(editor: Editor) -> dict[str, list[Action]]:
    """Per target kind, the actions that would realize one uncovered item in this model."""
    sites = _sites_by_class(editor)
    kinds: dict[str, list[Action]] = {
        "pairs": [lambda e, s=sites[a], b=b: _realize_pair(e, s, b) for a, b in pair_targets(editor, sites)],
        "params": [lambda e, item=item: _realize_param(e, sites, item) for item in param_targets(editor)],
        "rare types": [lambda e, n=name: _realize_type(e, n) for name in sorted(editor.view.rare_types)],
    }
    return {kind: actions for kind, actions in kinds.items() if actions}


@register
class Target(MutationOperator):
    name = "Target"
    summary = "realize one uncovered layer pair or parameter value, or insert a rarely executed layer type"

    def apply(self, editor: Editor) -> None:
        wanted = editor.rng.randint(1, MAX_REALIZED)  # several targets per mutant: executions are the scarce part
        realized = 0
        for _ in range(MAX_TARGETS):
            if realized == wanted:
                return
            available = targets(editor)  # after each edit: the model, and so its compatible sites, changed
            if not available:
                break
            kind = editor.rng.choice(sorted(available))
            realized += bool(editor.attempt(editor.rng.choice(available[kind]), editor))
        if not realized:
            raise MutationFailed("Target: no uncovered item could be realized in this model")


__all__ = ["Target", "copies_for", "pair_targets", "param_targets", "targets"]
