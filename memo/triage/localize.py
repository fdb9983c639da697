"""Localization: the first layer whose output differs between the faulty library and the good one.

The probe model (every node an output, see :mod:`memo.triage.probe`) runs on both; nodes are walked in
topological order and the first one whose output disagrees is named. For NaN findings "disagrees" means
a different non-finite mask; otherwise the oracle's element-wise agreement test (same shapes, same
non-finite positions, ``|Y - O| <= atol + rtol |O|``).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from memo.model.ir import ModelIR
from memo.oracle import Thresholds, agree, mad, nonfinite_mask
from memo.triage.probe import Roles, Run, probe_ir, run_model
from memo.backends.executor import Executor


@dataclass
class Localization:
    layer: str | None
    layer_class: str | None
    reason: str = ""
    nodes: list[dict[str, Any]] = field(default_factory=list)  # per node: name, class, status, mad

    def to_json(self) -> dict[str, Any]:
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
    nodes: list[dict[str, Any]] = []
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


def localize(executor: Executor, ir: ModelIR, kind: str, roles: Roles, directory: Path, *, seed: int,
             inputs: dict[str, np.ndarray] | None) -> tuple[Localization, Run]:
    """Run the probe of ``ir`` and localize; the run is returned too (reduction reuses its verdicts)."""
    run = run_model(executor, probe_ir(ir), directory, seed=seed, inputs=inputs, backends=roles.backends)
    if run.error:
        return Localization(None, None, f"probe model invalid: {run.error}"), run
    missing = [name for name in (roles.faulty, roles.good) if name not in run.outputs]
    if missing:
        return Localization(None, None, f"no outputs from {', '.join(missing)} on the probe model"), run
    return first_divergence(ir, kind, run.outputs[roles.faulty], run.outputs[roles.good]), run
