"""Localization: the first layer whose output differs between the faulty library and the good one.

The probe model (every node an output, see :mod:`memo.triage.probe`) runs on both; nodes are walked in
topological order and the first one whose output disagrees is named. For NaN findings "disagrees" means
a different non-finite mask; otherwise the oracle's element-wise agreement test (same shapes, same
non-finite positions, ``|Y - O| <= atol + rtol |O|``).

The culprit is then re-checked alone (:func:`recheck_alone`): the one layer, fed the very arrays it received
in the good library's run, on the accused library and the good one. A layer that is wrong alone is the
bug. A layer that is right alone is innocent on its own: the wrong result needs its neighbours compiled
into the same graph (Keras-OpenVINO's Dot is right alone and wrong after a RandomZoom, an identity at
inference), so the localization names what is wrong together: the culprit with its predecessors when that
pair is wrong, else the culprit with everything it depends on, or when it reads only the model's inputs the
whole graph (``alone``: "wrong" | "right"; ``together``: layer names).
"""
from __future__ import annotations

import copy
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TypedDict

import numpy as np

from memo.model.ir import Layer, ModelIR
from memo.oracle import Thresholds, agree, mad, nonfinite_mask
from memo.triage.probe import Roles, Run, probe_ir, read_inputs, run_model
from memo.backends.executor import ExecutionAbandoned, Executor
from memo.json_types import JsonObject


# One node of the probe model as the walk saw it ("status": "ok", "differs" or "missing"; "mad": None when the
# outputs cannot be compared element-wise); stored in the localization's details.
NodeCheck = TypedDict("NodeCheck", {"name": str, "class": str, "status": str, "mad": float | None}, total=False)


@dataclass
class Localization:
    layer: str | None
    layer_class: str | None
    reason: str = ""
    nodes: list[NodeCheck] = field(default_factory=list)
    alone: str | None = None  # the culprit run on its own: "wrong" or "right" (None: not re-checked)
    together: list[str] = field(default_factory=list)  # when right alone: the layers that are wrong together

    def to_json(self) -> JsonObject:
        return asdict(self)


def _differs(kind: str, faulty: np.ndarray, good: np.ndarray, thresholds: Thresholds) -> bool:
    if kind == "nan":
        return np.shape(faulty) != np.shape(good) or not np.array_equal(nonfinite_mask(faulty), nonfinite_mask(good))
    return not agree([faulty], [good], thresholds)


def _node_mad(faulty: np.ndarray, good: np.ndarray) -> float | None:
    if np.shape(faulty) != np.shape(good) or not np.issubdtype(np.asarray(faulty).dtype, np.number):
        return None
    a, b = np.asarray(faulty, np.float64), np.asarray(good, np.float64)
    finite = np.isfinite(a) & np.isfinite(b)
    return mad(a[finite], b[finite]) if finite.any() else None


def first_divergence(ir: ModelIR, kind: str, faulty: dict[str, np.ndarray], good: dict[str, np.ndarray],
                     thresholds: Thresholds = Thresholds()) -> Localization:
    """Walk the body in topological order; the first node whose outputs differ is the culprit (pure)."""
    nodes: list[NodeCheck] = []
    for layer in ir.body:
        if layer.name not in faulty or layer.name not in good:
            nodes.append({"name": layer.name, "class": layer.class_name, "status": "missing"})
            continue
        a, b = faulty[layer.name], good[layer.name]
        differs = _differs(kind, a, b, thresholds)
        nodes.append({"name": layer.name, "class": layer.class_name, "status": "differs" if differs else "ok",
                      "mad": _node_mad(a, b)})
        if differs:
            return Localization(layer.name, layer.class_name, "first node whose output differs", nodes)
    return Localization(None, None, "no node of the probe model differs", nodes)


def subgraph(ir: ModelIR, names: list[str], target: str,
             arrays: dict[str, np.ndarray]) -> tuple[ModelIR, dict[str, np.ndarray]] | None:
    """The body nodes ``names`` of ``ir`` as a model of their own with output ``target``: each node they read
    from outside becomes an input of the same name, fed ``arrays[name]`` (returned as the feeds). The layers
    keep their names, so they get the same weights. None when an outside value is not in ``arrays``."""
    chosen = [layer for layer in ir.body if layer.name in names]
    outside = list(dict.fromkeys(name for layer in chosen for name in layer.inputs if name not in names))
    if any(name not in arrays for name in outside):
        return None
    feeds = {name: np.asarray(arrays[name]) for name in outside}
    inputs = [Layer(name, "InputLayer", {"batch_shape": [None, *array.shape[1:]], "dtype": str(array.dtype)})
              for name, array in feeds.items()]
    kept = set(names)
    model = ModelIR([*inputs, *(copy.deepcopy(layer) for layer in chosen)], [target],
                    f"{ir.name}-{target}", weight_edits=[dict(e) for e in ir.weight_edits if e.get("layer") in kept])
    return model, feeds


def _ancestors(ir: ModelIR, name: str) -> list[str]:
    """``name`` and every body node it depends on, in topological order."""
    layers = ir.by_name()
    wanted, stack = set(), [name]
    while stack:
        node = stack.pop()
        if node not in wanted and not layers[node].is_input:
            wanted.add(node)
            stack.extend(layers[node].inputs)
    return [layer.name for layer in ir.body if layer.name in wanted]


def _wrong_as(executor: Executor, part: tuple[ModelIR, dict[str, np.ndarray]] | None, kind: str, roles: Roles,
              directory: Path, seed: int) -> bool | None:
    """Whether the faulty library's output of ``part`` (a model and its feeds) differs from the good one's;
    None when it could not be run as fed (an invalid model, a library without outputs, other inputs)."""
    if part is None:
        return None
    model, feeds = part
    run = run_model(executor, model, directory, seed=seed, inputs=feeds, backends=roles.backends)
    if run.artifact is None or any(name not in run.outputs for name in (roles.faulty, roles.good)):
        return None
    used = read_inputs(run.artifact.inputs_path)
    if any(not np.array_equal(used.get(name), array, equal_nan=True) for name, array in feeds.items()):
        return None  # the generated inputs were not replaced (another batch size): not the inputs it received
    target = model.outputs[0]
    return _differs(kind, run.outputs[roles.faulty][target], run.outputs[roles.good][target], Thresholds())


def recheck_alone(executor: Executor, ir: ModelIR, kind: str, roles: Roles, found: Localization, run: Run,
                  directory: Path, *, seed: int) -> Localization:
    """Run ``found``'s culprit alone, then (when it is right alone) with its predecessors; sets ``alone`` and
    ``together`` (see the module docstring). ``run``: the probe run that localized it."""
    if found.layer is None or run.artifact is None or roles.good not in run.outputs:
        return found
    arrays = {**read_inputs(run.artifact.inputs_path), **run.outputs[roles.good]}
    culprit = ir.get(found.layer)
    alone = _wrong_as(executor, subgraph(ir, [culprit.name], culprit.name, arrays), kind, roles,
                      directory / "alone", seed)
    if alone is None:
        return found
    found.alone = "wrong" if alone else "right"
    if not alone:
        pair = [name for name in culprit.inputs if not ir.get(name).is_input] + [culprit.name]
        wrong = len(pair) > 1 and _wrong_as(executor, subgraph(ir, pair, culprit.name, arrays), kind, roles,
                                            directory / "pair", seed)
        upstream = _ancestors(ir, culprit.name)
        # nothing upstream to blame: the rest of the graph compiled with it makes it wrong
        found.together = pair if wrong else upstream if len(upstream) > 1 else [layer.name for layer in ir.body]
    return found


def localize(executor: Executor, ir: ModelIR, kind: str, roles: Roles, directory: Path, *, seed: int,
             inputs: dict[str, np.ndarray] | None, recheck: bool = True) -> tuple[Localization, Run]:
    """Run the probe of ``ir`` and localize; the run is returned too (reduction reuses its verdicts).
    ``recheck``: re-check the culprit alone (:func:`recheck_alone`; reduction's candidates skip it)."""
    run = run_model(executor, probe_ir(ir), directory, seed=seed, inputs=inputs, backends=roles.backends)
    if run.error:
        return Localization(None, None, f"probe model invalid: {run.error}"), run
    missing = [name for name in (roles.faulty, roles.good) if name not in run.outputs]
    if missing:
        return Localization(None, None, f"no outputs from {', '.join(missing)} on the probe model"), run
    found = first_divergence(ir, kind, run.outputs[roles.faulty], run.outputs[roles.good])
    if recheck:
        try:
            recheck_alone(executor, ir, kind, roles, found, run, directory / "recheck", seed=seed)
        except ExecutionAbandoned:
            raise
        except Exception as exc:  # the localization stands without its re-check
            found.reason += f"; not re-checked alone: {type(exc).__name__}: {exc}"
    return found, run
