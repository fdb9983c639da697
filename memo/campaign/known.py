"""Known outcomes: a library that declined or failed on a feature of several models is not asked again on the next.

tf2onnx has no handler for a few TensorFlow ops that mutants keep producing (``Erfc`` from exact GELU,
``Expm1`` from CELU, ``StatefulPartitionedCall`` from the XLA function Keras uses for grouped and
channels-first 3-D convolutions), and each such model paid the whole trace, freeze and conversion to be
told so again; Keras's ONNX export fails on every model with a random augmentation layer (its torch trace
captures the layer's random generator), about 2.6 s each on a quarter of a campaign's models.
:class:`KnownOutcomes` learns from every stored execution which library declined or failed on which feature,
and in which layers; once a library has done so on :data:`KNOWN_AFTER` models, a later model with such a
layer skips that library (the executor's ``skip``: stage ``known``, a message starting :data:`KNOWN_PREFIX`
for a declined feature, :data:`KNOWN_FAILURE_PREFIX` for a failure already filed as a bug), and a converter's
consumers with it. A failure that aborts a stage hides whatever else that stage would have shown on the model,
so skipping it loses little; one model in :data:`RECHECK_EVERY` (chosen by its folder's name) runs anyway, so
that a rule that stopped holding is noticed. The price: another failure of that library on such a model
shows only when the model is rechecked. The reference library is never skipped.

A wrong skip hides a finding, so the prediction is conservative:

* only a failure that names where it happened counts: a graph node (the ``declined_nodes`` patterns the backends
  declare in their specs' ``messages``: tf2onnx's and TensorFlow's), when that node maps to exactly one layer of
  the model (its name scope under the model's); else a Keras layer class (their ``failing_classes``: Keras's
  "calling X.call()", a torch trace through a Keras layer's source file), standing for every layer of that class
  in the model;
* a rule is per (library, feature, culprit layer class): the layer parameter items (coverage values,
  :meth:`memo.layers.LayerSpec.coverage_values`) that its culprits share. A culprit joins the rule whose
  shared items it keeps most of, as long as no layer of a model the library ran without failing carries
  those items; otherwise it starts a rule of its own. So a rule generalizes only as far as the
  campaign's evidence allows (grouped convolutions with 2, 3-4 or 5+ groups stay three rules while a Conv2D
  with one group converted fine);
* a model the library ran without failing (a recheck, say) drops every rule one of its layers carries.

Pure Python over the IR and the stored results (no library is imported); the pipeline calls :meth:`skips`
from its threads and :meth:`learn` from the main thread (when generation takes an execution's outcome, at a
fixed iteration, so that the skips are the same however fast the libraries ran), hence the lock.
"""
from __future__ import annotations

import hashlib
import re
import threading
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Hashable, Iterable, NamedTuple

from memo.backends import declared_messages
from memo.backends.result import ExecutionResult, StageResult, stored_result
from memo.backends.spec import MessageRules
from memo.kinds import KNOWN_FAILURE_PREFIX, KNOWN_PREFIX, StageStatus
from memo.layers import CATALOGUE
from memo.model.ir import Layer, ModelIR
from memo.store import CampaignStore
from memo.text import without_ansi, without_traced_graph

KNOWN_AFTER = 3  # models a library must have declined a feature on before the next ones skip it
RECHECK_EVERY = 10  # one model in this many runs a known-unsupported library anyway
LEARNT_STATUSES = {StageStatus.UNSUPPORTED.value: KNOWN_PREFIX, StageStatus.ERROR.value: KNOWN_FAILURE_PREFIX}

_SCOPE_SUFFIX = re.compile(r"_\d+$")  # TensorFlow uniquifies name scopes: layer "conv1" traces as "conv1_1"

Item = tuple[str, Hashable]
LayerKey = tuple[str, frozenset[Item]]  # (class name, coverage parameter items)


def layer_key(layer: Layer) -> LayerKey:
    """A layer's class and its parameter coverage items: what a rule is learnt over and matched against."""
    spec = CATALOGUE.get(layer.class_name)
    return layer.class_name, frozenset(spec.coverage_values(layer.config)) if spec is not None else frozenset()


class NamingPatterns(NamedTuple):
    """How the registered libraries' messages name where they failed (their specs' ``messages``), compiled."""

    declined_nodes: tuple[re.Pattern[str], ...]  # an op type and a graph node: groups ``op``, ``node``
    failing_classes: tuple[re.Pattern[str], ...]  # a Keras layer class (``cls``) or its source file (``file``)


def naming_patterns() -> NamingPatterns:
    """The declined-node and failing-class patterns every registered backend declares, each once, in registry
    order (innermost first: Keras's own note on the failing call before the torch trace through its source)."""
    return _compiled(declared_messages())


@lru_cache(maxsize=4)
def _compiled(rules: tuple[MessageRules, ...]) -> NamingPatterns:
    def each(patterns: Iterable[str]) -> tuple[re.Pattern[str], ...]:
        return tuple(re.compile(pattern) for pattern in dict.fromkeys(patterns))
    return NamingPatterns(each(p for rule in rules for p in rule.declined_nodes),
                          each(p for rule in rules for p in rule.failing_classes))


def declined_nodes(message: str) -> list[tuple[str, str]]:
    """``(feature, node)`` for every node an "unsupported" message says its library declined."""
    return [(found.group("op"), found.group("node"))
            for pattern in naming_patterns().declined_nodes for found in pattern.finditer(message)]


def failing_class(ir: ModelIR, message: str) -> str | None:
    """The class of the model's layers a failure message says it happened in (a source file ``random_flip.py``
    names class RandomFlip), or None."""
    classes = {layer.class_name.lower(): layer.class_name for layer in ir.layers}
    for pattern in naming_patterns().failing_classes:
        for found in pattern.finditer(message):
            named = found.groupdict().get("cls") or found.group("file").replace("_", "")
            if named.lower() in classes:
                return classes[named.lower()]
    return None


def gist(failure: StageResult) -> str:
    """What a failure is, without what varies between models (numbers, a layer's own call note): its exception
    type and first telling line, short. Two failures with one gist count as one feature."""
    lines = [line.strip() for line in without_ansi(failure.message or "").splitlines()]
    telling = next((line for line in lines if line and not line.startswith("Exception encountered when calling")), "")
    telling = without_traced_graph(telling).split(" Please ")[0]
    return f"{failure.exc_type or failure.status}: {re.sub(r'[0-9]+', 'N', telling)[:100]}"


def culprits(ir: ModelIR, failure: StageResult) -> list[tuple[str, list[Layer]]]:
    """``(feature, layers)`` for what a failure names: the layer of each declined node (the node's op is the
    feature), else every layer of the class it happened in (its :func:`gist` is the feature)."""
    found = [(feature, [layer]) for feature, node in declined_nodes(failure.message or "")
             if (layer := culprit(ir, node)) is not None]
    if found:
        return found
    class_name = failing_class(ir, failure.message or "")
    if class_name is None:
        return []
    return [(gist(failure), [layer for layer in ir.layers if layer.class_name == class_name])]


def culprit(ir: ModelIR, node: str) -> Layer | None:
    """The model's layer a declined graph node belongs to, or None unless that is certain.

    A traced node is named ``model/layer/op...``; the layer's scope may carry TensorFlow's uniquifying
    suffix (``conv1_1``), so both ``conv1_1`` and ``conv1`` are candidates: two different candidates (layers
    ``dense`` and ``dense_1`` of different settings) identify nothing.
    """
    parts = node.split("/")
    if len(parts) < 3:  # no layer scope between the model's and the op
        return None
    layers = ir.by_name()
    scope = parts[1]
    candidates = [layers[name] for name in dict.fromkeys((scope, _SCOPE_SUFFIX.sub("", scope))) if name in layers]
    if not candidates or len({layer_key(layer) for layer in candidates}) != 1:
        return None
    return candidates[0]


def rechecked(model: str, every: int = RECHECK_EVERY) -> bool:
    """Whether ``model`` (its artifact folder's name) runs its known-unsupported libraries anyway: the same
    models every time, whichever process or order runs them."""
    if every <= 1:
        return True
    digest = hashlib.sha256(f"known/{model}".encode()).digest()
    return int.from_bytes(digest[:4], "big") % every == 0


@dataclass
class Rule:
    """Layers of one class that made ``library`` decline ``feature``: the items every culprit carried, and
    on how many models."""

    library: str
    feature: str
    class_name: str
    items: frozenset[Item]
    models: int = 0
    prefix: str = KNOWN_PREFIX  # KNOWN_FAILURE_PREFIX for a failure filed as a bug

    def matches(self, key: LayerKey) -> bool:
        return key[0] == self.class_name and self.items <= key[1]


class KnownOutcomes:
    """What the campaign knows each library declines (see the module docstring)."""

    def __init__(self, threshold: int = KNOWN_AFTER, recheck_every: int = RECHECK_EVERY) -> None:
        self.threshold = max(1, threshold)
        self.recheck_every = recheck_every
        self._rules: dict[tuple[str, str, str], list[Rule]] = {}  # (library, feature, class) -> rules
        # (library, class) -> items of layers in models the library ran without declining anything
        self._handled: dict[tuple[str, str], set[frozenset[Item]]] = {}
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ predict
    def rules(self) -> list[Rule]:
        """Every rule, established or not (a copy)."""
        with self._lock:
            return [replace(rule) for rules in self._rules.values() for rule in rules]

    def skips(self, ir: ModelIR, model: str) -> dict[str, str]:
        """``{library: why}`` for the libraries known to decline a feature of ``ir``; empty for a model that
        is rechecked (``model``: its artifact folder's name)."""
        if rechecked(model, self.recheck_every):
            return {}
        keys = [(layer, layer_key(layer)) for layer in ir.layers]
        skips: dict[str, str] = {}
        with self._lock:
            for rule in (rule for rules in self._rules.values() for rule in rules if rule.models >= self.threshold):
                layer = next((layer for layer, key in keys if rule.matches(key)), None)
                if layer is not None and rule.library not in skips:
                    skips[rule.library] = self._why(rule, layer)
        return skips

    def _why(self, rule: Rule, layer: Layer) -> str:
        models = f"{rule.models} model{'s' * (rule.models != 1)}"
        verb = "declined" if rule.prefix == KNOWN_PREFIX else "failed with"
        return (f"{rule.prefix}: {rule.library} {verb} {rule.feature} in {rule.class_name} layers like "
                f"{layer.name!r} on {models} (one model in {self.recheck_every} runs it anyway)")

    # ------------------------------------------------------------------ learn
    def learn(self, ir: ModelIR, result: ExecutionResult) -> None:
        """Learn from one judged execution: what each library declined or failed on (and where), what it ran.
        The reference library is never learnt: it is never skipped."""
        keys = [layer_key(layer) for layer in ir.layers]
        with self._lock:
            for entry in result.backends.values():
                failure = entry.failure
                if entry.name == result.reference:
                    continue
                if failure is None and entry.stages:
                    self._handled_all(entry.name, keys)
                elif failure is not None and str(failure.status) in LEARNT_STATUSES:
                    self._declined(entry.name, ir, failure)

    def rebuild(self, store: CampaignStore) -> int:
        """Learn every execution ``store`` holds, in mutant order (a resumed campaign); returns how many."""
        count = 0
        for ir_json, row in store.executed_models():
            result = stored_result(row.result)
            if result is not None:  # not memo's own failure to prepare the artifact
                self.learn(ModelIR.loads(ir_json), result)
                count += 1
        return count

    def _declined(self, library: str, ir: ModelIR, failure: StageResult) -> None:
        """Count one model for every rule the failure's culprit layers join (once per rule); several layers of
        one class stand together, with the items they share."""
        counted: set[int] = set()
        prefix = LEARNT_STATUSES[str(failure.status)]
        for feature, layers in culprits(ir, failure):
            keys = [layer_key(layer) for layer in layers]
            class_name, items = keys[0][0], frozenset.intersection(*(key[1] for key in keys))
            rule = self._join(library, feature, class_name, items, prefix)
            if rule is not None and id(rule) not in counted:
                counted.add(id(rule))
                rule.models += 1

    def _join(self, library: str, feature: str, class_name: str, items: frozenset[Item],
              prefix: str = KNOWN_PREFIX) -> Rule | None:
        """The rule a culprit with ``items`` joins: the one whose shared items it keeps most of without covering
        a layer the library handled; else a new rule of its own. None when a layer with these very items was
        handled elsewhere: then its settings alone do not decide, and nothing is learnt."""
        handled = self._handled.get((library, class_name), set())
        if any(items <= seen for seen in handled):
            return None
        rules = self._rules.setdefault((library, feature, class_name), [])
        best: tuple[Rule, frozenset[Item]] | None = None
        for rule in rules:
            shared = rule.items & items
            if any(shared <= seen for seen in handled):
                continue
            if best is None or len(shared) > len(best[1]):
                best = (rule, shared)
        if best is None:
            rule = Rule(library, feature, class_name, items, prefix=prefix)
            rules.append(rule)
            return rule
        best[0].items = best[1]
        return best[0]

    def _handled_all(self, library: str, keys: list[LayerKey]) -> None:
        """``library`` ran a model without declining anything: none of its layers makes it decline."""
        for class_name, items in keys:
            self._handled.setdefault((library, class_name), set()).add(items)
            for (owner, _, cls), rules in self._rules.items():
                if owner == library and cls == class_name:
                    rules[:] = [rule for rule in rules if not rule.items <= items]
