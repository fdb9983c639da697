"""Bug reduction: the smallest model that still shows a bug (same signature); seeds have their own reduction,
:mod:`memo.seed_reduction`, which keeps coverage instead.

1. cut the model at the localized layer (NaN / inconsistency) or keep one output of several;
2. layers the error names (a node name in the message or traceback): each alone, then the model up to it;
3. for failures, the shortest prefix that still fails (binary search over the topological order: the
   model cut at a node keeps only its ancestors), then the last node alone (fed by fresh inputs of the
   same shapes and dtypes); most bugs are one layer, and this finds it in a handful of runs;
4. delta debugging (ddmin) over the body nodes: a removed node's consumers read its first input
   instead (the edits of :mod:`memo.seed_reduction.edits`); Keras rejecting the result is a cheap "no";
   then each node that is left alone, last first, fed by fresh inputs of the shapes it had: removing the
   layers before a node changes what it reads, and a failure that needs its input shape (a MaxPooling2D
   'same' on 71x71x256 in m40's crash-keras-export-65a337de54, with a SeparableConv2D before it and an Add
   of a strided Conv2D after it) survives only when a fresh input of that shape replaces them;
5. parameters back toward their Keras defaults, a layer at a time, then a parameter at a time.

Each candidate is judged by ``check`` (re-execution plus signature comparison, see
:class:`memo.triage.Checker`); the whole search stops at ``deadline`` with the best model so far.

Steps 1-4 are the reduction; step 5 only polishes the layers that remain. A search the deadline cuts short in
steps 1-4 is a TIMEOUT (a later pass continues it from the model reached, skipping the steps it finished,
:attr:`ReductionOutcome.passes`, and without running again the candidates it found not showing the bug,
:attr:`ReductionOutcome.rejected`); one cut short in step 5 is DONE: its model is as small as the search makes it,
and the bug can be checked and filed (on n40, three bugs reduced to one layer waited as "timeout" for their
parameters, docs/benchmarks.md).

Every reduction records the reducer that made it (:data:`REDUCER_VERSION`, bug.json's ``reduction.reducer``): a bug
adopted from the bug database with an older reduction is reduced again from its adopted model
(:func:`reduces_further`; p40 adopted m40's crash-keras-export-65a337de54 at 4 layers, reduced before "each alone").
"""
from __future__ import annotations

import copy
import hashlib
import inspect
import json
import re
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Collection

from memo.bug_files import Reduction
from memo.bugdb.records import REDUCER_KEY, reducer_of
from memo.json_types import JsonObject
from memo.model.ir import Layer, LayerConfig, ModelIR
from memo.model.keras_runtime import keras_module
from memo.mutation.analysis import analyse
from memo.seed_reduction.edits import Edit, apply_edit

Check = Callable[[ModelIR], bool]
SKIPPED_PARAMETERS = frozenset({"name", "dtype", "trainable", "batch_input_shape", "batch_shape"})
REDUCER_VERSION = 2
"""The reducer's version, recorded with every reduction; bump it when a change may reduce a model further than the
reducer before it did (2: the "each alone" pass). 1 and unrecorded: older reducers."""
TRIED_AGAIN = "reduced_again"  # an adopted bug's reduction document: why its reduction again was given up
REJECTED_KEY = "rejected"  # an unfinished reduction's document: digests of the candidates that did not show the bug
REJECTED_KEPT = 400  # the most recent of them kept (a digest is 16 characters)


@dataclass
class ReductionOutcome:
    ir: ModelIR
    original_layers: int
    runs: int = 0
    seconds: float = 0.0
    status: Reduction = Reduction.DONE  # DONE, or TIMEOUT
    steps: list[str] = field(default_factory=list)
    # the passes finished (this search or an earlier one): STRUCTURAL_PASSES, then "parameters" unless cut short
    passes: list[str] = field(default_factory=list)
    # digests (:func:`candidate_digest`) of the candidates found not showing the bug, by this search or an earlier
    # one of the same bug: long150d retried four training reductions 33 times in all, each from the model reached,
    # each running again the candidates the one before had rejected, until its time ran out where the last had
    rejected: list[str] = field(default_factory=list)

    def to_json(self) -> JsonObject:
        """The reduction document bug.json keeps (an unfinished one keeps its rejected candidates for the next)."""
        document: JsonObject = {
            "original_layers": self.original_layers, "reduced_layers": len(self.ir.body), "runs": self.runs,
            "seconds": round(self.seconds, 2), "status": self.status.value, "steps": self.steps,
            "passes": self.passes, REDUCER_KEY: REDUCER_VERSION}
        if self.status is Reduction.TIMEOUT and self.rejected:
            document[REJECTED_KEY] = self.rejected[-REJECTED_KEPT:]
        return document


def candidate_digest(ir: ModelIR | str) -> str:
    """A short digest of a candidate model (or of its IR's text): equal for the candidate a search builds again."""
    return hashlib.sha1((ir if isinstance(ir, str) else ir.dumps()).encode()).hexdigest()[:16]


def drop_unused_inputs(ir: ModelIR) -> ModelIR:
    """Remove inputs nothing reads (keeping at least one). In place."""
    consumers = ir.consumers()
    unused = [layer.name for layer in ir.input_layers if not consumers[layer.name]]
    if len(unused) == len(ir.input_layers):
        unused = unused[1:]
    ir.layers = [layer for layer in ir.layers if layer.name not in unused]
    return ir


def cut_at(ir: ModelIR, node: str) -> ModelIR:
    """The model that ends at ``node`` (its ancestors only)."""
    cut = ir.copy()
    cut.outputs = [node]
    return drop_unused_inputs(cut.prune())


def isolate(ir: ModelIR, node: str) -> ModelIR | None:
    """``node`` alone, each of its distinct inputs a fresh model input of the same shape and dtype (None
    when Keras cannot say what the inputs are)."""
    if ir.get(node).is_input:
        return None
    try:
        infos = analyse(ir)
    except Exception:  # a model Keras rejects has no shapes to copy
        return None
    fed = fed_alone(ir.get(node), infos)
    if fed is None:
        return None
    alone = ir.copy()
    alone.layers = list(fed)
    alone.outputs = [node]
    return alone


def fed_alone(layer: Layer, infos: dict[str, Any], rename: Callable[[str], str] = str) -> list[Layer] | None:
    """A copy of ``layer`` after one fresh ``InputLayer`` per distinct input, each of the shape and dtype the
    source gives it in ``infos`` (:func:`memo.mutation.analysis.analyse`) and named ``rename(source)``; None when
    ``infos`` does not know a source."""
    inputs: dict[str, Layer] = {}
    for source in dict.fromkeys(layer.inputs):
        info = infos.get(source)
        if info is None:
            return None
        inputs[source] = Layer(rename(source), "InputLayer", {"batch_shape": [None, *info.shape[1:]],
                                                              "dtype": info.dtype})
    own = copy.deepcopy(layer)
    own.inputs = [inputs[source].name for source in layer.inputs]
    return [*inputs.values(), own]


def mentioned_layers(ir: ModelIR, text: str) -> list[str]:
    """Body nodes named in an error message or traceback (``conv2d_3`` in ``model/conv2d_3_1/Conv2D``)."""
    return [layer.name for layer in ir.body
            if re.search(rf"(?<![\w]){re.escape(layer.name)}(?:_\d+)?(?![\w])", text)]


def without(ir: ModelIR, names: list[str]) -> ModelIR | None:
    """``ir`` with ``names`` removed, each node's consumers fed by its first input (None if ill-formed)."""
    layers = ir.by_name()
    edit = Edit("ddmin", frozenset(names), tuple((name, layers[name].inputs[0]) for name in names))
    candidate = apply_edit(ir, edit)
    return drop_unused_inputs(candidate) if candidate is not None else None


def _chunks(items: list[str], n: int) -> list[list[str]]:
    size, extra = divmod(len(items), n)
    out, start = [], 0
    for i in range(n):
        end = start + size + (1 if i < extra else 0)
        if end > start:
            out.append(items[start:end])
        start = end
    return out


def _normalized(value: Any) -> Any:
    return json.loads(json.dumps(value, default=list))


def layer_defaults(class_name: str) -> LayerConfig:
    """JSON-representable defaults of a Keras layer's constructor (empty for unknown classes)."""
    keras = keras_module()  # numpy backend in the orchestrator
    cls = getattr(keras.layers, class_name, None)
    if cls is None:
        return {}
    out = {}
    for name, parameter in inspect.signature(cls.__init__).parameters.items():
        default = parameter.default
        if default is inspect.Parameter.empty or name in SKIPPED_PARAMETERS:
            continue
        try:
            out[name] = _normalized(default)
        except TypeError:
            continue
    return out


class _Search:
    def __init__(self, ir: ModelIR, check: Check, deadline: float, rejected: Collection[str] = ()) -> None:
        self.outcome = ReductionOutcome(ir=drop_unused_inputs(ir.copy().prune()), original_layers=len(ir.body),
                                        rejected=list(rejected))
        self.rejected = set(rejected)
        self.check = check
        self.deadline = deadline

    def out_of_time(self) -> bool:
        if time.monotonic() > self.deadline:
            self.outcome.status = Reduction.TIMEOUT
            return True
        return False

    def accept(self, candidate: ModelIR | None, step: str) -> bool:
        text = candidate.dumps() if candidate is not None else ""
        if candidate is None or self.out_of_time() or text == self.outcome.ir.dumps():
            return False
        digest = candidate_digest(text)
        if digest in self.rejected:  # an earlier search of this bug ran it: it did not show the bug
            return False
        self.outcome.runs += 1
        if not self.check(candidate):
            self.rejected.add(digest)
            self.outcome.rejected.append(digest)
            return False
        self.outcome.ir = candidate
        self.outcome.steps.append(step)
        return True

    def outputs(self, localized: str | None) -> None:
        ir = self.outcome.ir
        if localized and localized in ir.by_name() and ir.outputs != [localized]:
            if self.accept(cut_at(ir, localized), f"cut at {localized}"):
                return
        if len(ir.outputs) > 1:
            for name in list(ir.outputs):
                if self.accept(cut_at(ir, name), f"keep output {name}"):
                    return

    def hinted(self, hints: list[str]) -> None:
        """Try each layer the error names alone, then the model up to it."""
        for name in hints[:3]:
            ir = self.outcome.ir
            if name not in ir.by_name() or len(ir.body) <= 1:
                return
            if self.accept(isolate(ir, name), f"{name} alone"):
                return
            if ir.outputs != [name]:
                self.accept(cut_at(ir, name), f"cut at {name} (named in the error)")

    def prefix(self) -> None:
        """Binary search for the shortest topological prefix whose last node still shows the bug."""
        nodes = [layer.name for layer in self.outcome.ir.body]
        low, high = 0, len(nodes) - 1
        while low < high and not self.out_of_time():
            middle = (low + high) // 2
            ir = self.outcome.ir
            if nodes[middle] in ir.by_name() and self.accept(cut_at(ir, nodes[middle]), f"cut at {nodes[middle]}"):
                high = middle
            else:
                low = middle + 1

    def alone(self) -> None:
        """The output node by itself, when the model has one output."""
        ir = self.outcome.ir
        if len(ir.outputs) == 1 and len(ir.body) > 1:
            self.accept(isolate(ir, ir.outputs[0]), f"{ir.outputs[0]} alone")

    def ddmin(self) -> None:
        n = 2
        while len(self.outcome.ir.body) > 1 and not self.out_of_time():  # one layer: nothing to remove
            nodes = [layer.name for layer in self.outcome.ir.body]
            n = min(n, len(nodes))
            progress = False
            for chunk in _chunks(nodes, n):
                if self.accept(without(self.outcome.ir, chunk), f"remove {', '.join(chunk)}"):
                    n = max(n - 1, 2)
                    progress = True
                    break
            if not progress:
                if n >= len(nodes):
                    return
                n = min(len(nodes), 2 * n)

    def each_alone(self) -> None:
        """Each body node alone (:func:`isolate`), the last first, until one shows the bug."""
        for name in reversed([layer.name for layer in self.outcome.ir.body]):
            if len(self.outcome.ir.body) <= 1 or self.out_of_time():
                return
            if self.accept(isolate(self.outcome.ir, name), f"{name} alone"):
                return

    def parameters(self) -> None:
        for name in [layer.name for layer in self.outcome.ir.body]:
            layer = self.outcome.ir.get(name)
            wrapped = layer.config.get(WRAPPED)
            for inner in ((False, True) if _is_layer_config(wrapped) else (False,)):
                config = self.outcome.ir.get(name).config
                config = config[WRAPPED]["config"] if inner else config
                changes = changed_settings(str(wrapped["class_name"]) if inner else layer.class_name, config)
                where = f"{name}'s {wrapped['class_name']}" if inner else name
                if not changes or self.out_of_time():
                    continue
                if self.accept(self._with_config(name, changes, inner), f"{where}: defaults for {', '.join(changes)}"):
                    continue
                if len(changes) > 1:
                    for key, value in changes.items():
                        self.accept(self._with_config(name, {key: value}, inner), f"{where}: default {key}")

    def _with_config(self, name: str, changes: LayerConfig, inner: bool = False) -> ModelIR:
        """The model with ``changes`` to layer ``name``'s settings (``inner``: to those of the layer it wraps)."""
        candidate = self.outcome.ir.copy()
        config = candidate.get(name).config
        (config[WRAPPED]["config"] if inner else config).update(changes)
        return candidate


WRAPPED = "layer"  # a wrapper's setting holding the layer it wraps (SpectralNormalization, Bidirectional, ...)


def _is_layer_config(value: object) -> bool:
    return isinstance(value, dict) and isinstance(value.get("class_name"), str) \
        and isinstance(value.get("config"), dict)


def changed_settings(class_name: str, config: LayerConfig) -> LayerConfig:
    """The settings of a ``class_name`` layer's ``config`` that differ from its constructor's defaults, each mapped
    to its default: plain values, and objects (a regularizer, a constraint) whose default is None; a wrapped layer
    and the initializers are left (a wrapper's parameters pass takes the one; an initializer acts on the weights,
    which the model's weights replace)."""
    defaults = layer_defaults(class_name)
    return {key: defaults[key] for key, value in config.items()
            if key in defaults and key != WRAPPED and _normalized(value) != defaults[key]
            and (not isinstance(value, dict) or defaults[key] is None)}


STRUCTURAL_PASSES = ("outputs", "hinted", "prefix", "alone", "ddmin", "each alone")
"""The passes that make the model smaller, in order; a search that finished them all is DONE."""


def finished_passes(bug_file: JsonObject | None) -> list[str]:
    """The structural passes an earlier, unfinished reduction recorded in its ``bug.json`` (none without one)."""
    reduction = (bug_file or {}).get("reduction")
    passes = reduction.get("passes") if isinstance(reduction, dict) else None
    return [name for name in passes if name in STRUCTURAL_PASSES] if isinstance(passes, list) else []


def rejected_candidates(bug_file: JsonObject | None) -> list[str]:
    """The candidate digests an earlier, unfinished reduction recorded in its ``bug.json`` as not showing the bug."""
    reduction = (bug_file or {}).get("reduction")
    rejected = reduction.get(REJECTED_KEY) if isinstance(reduction, dict) else None
    return [str(digest) for digest in rejected] if isinstance(rejected, list) else []


def reduces_further(reduction: object) -> bool:
    """Whether the bug an adopted ``reduction`` document describes (:data:`Reduction.KNOWN`) is to be reduced again
    from its adopted model: it was reduced by an older reducer, or by an unrecorded one to more than one layer, and
    no reduction again was given up (:data:`TRIED_AGAIN`)."""
    if Reduction.of(reduction) is not Reduction.KNOWN or not isinstance(reduction, dict) or reduction.get(TRIED_AGAIN):
        return False
    version = reducer_of(reduction)
    layers = reduction.get("reduced_layers")
    return version < REDUCER_VERSION if version is not None else isinstance(layers, int) and layers > 1


def turn_budget_s(base_s: float, previous: JsonObject | None) -> float:
    """A reduction's seconds this turn: ``base_s``, and for one continued (``previous``: its bug.json, unfinished) as
    many as its earlier turns had together, so that each turn doubles its total and a long reduction pays its turns'
    fixed costs (the runs before and after it) a few times, not once per ``base_s``: long150e's 25 partly reduced
    bugs got 45 s a turn each, about one turn in 20 minutes, and few finished."""
    earlier = _cut_record(previous)
    return max(base_s, float(earlier.get("seconds") or 0.0)) if earlier is not None else base_s


def _cut_record(previous: JsonObject | None) -> JsonObject | None:
    """The reduction record of ``previous`` (a bug.json) when that reduction was cut (it goes on); None otherwise."""
    earlier = (previous or {}).get("reduction")
    return earlier if isinstance(earlier, dict) and Reduction.of(earlier) is Reduction.TIMEOUT else None


def reduce_bug(ir: ModelIR, check: Check, *, budget_s: float, localized: str | None = None,
               hints: list[str] | None = None, numeric: bool = False,
               previous: JsonObject | None = None) -> ReductionOutcome:
    """Reduce ``ir`` while ``check`` holds (``check(ir)`` itself is assumed true). Never raises for a
    candidate; returns the smallest model found when the budget runs out. ``hints``: nodes the error
    names; ``numeric``: a NaN/inconsistency bug (cut at ``localized`` instead of a prefix search);
    ``previous``: the bug.json of an earlier, unfinished search of this bug (its model is ``ir``): the structural
    passes it finished are not redone, the candidates it rejected not run again."""
    started = time.monotonic()
    search = _Search(ir, check, started + budget_s, rejected_candidates(previous))
    finished = finished_passes(previous)
    search.outcome.passes = [name for name in STRUCTURAL_PASSES if name in finished]
    earlier = _cut_record(previous)  # what the searches before this one did: its record goes on
    if earlier is not None:
        search.outcome.steps = [str(step) for step in earlier.get("steps") or []]
        search.outcome.runs = int(earlier.get("runs") or 0)
        started -= float(earlier.get("seconds") or 0.0)
    steps: dict[str, Callable[[], None]] = {
        "outputs": lambda: search.outputs(localized), "hinted": lambda: search.hinted(hints or []),
        "prefix": (lambda: None) if numeric else search.prefix, "alone": search.alone, "ddmin": search.ddmin,
        "each alone": search.each_alone}
    for name in STRUCTURAL_PASSES:
        if name in search.outcome.passes:
            continue
        steps[name]()
        if search.outcome.status is Reduction.TIMEOUT:
            break
        search.outcome.passes.append(name)
    if search.outcome.status is not Reduction.TIMEOUT:
        search.parameters()
        if search.outcome.status is Reduction.TIMEOUT:  # the polish was cut short: the reduction is over
            search.outcome.status = Reduction.DONE
        else:
            search.outcome.passes.append("parameters")
    search.outcome.seconds = time.monotonic() - started
    return search.outcome
