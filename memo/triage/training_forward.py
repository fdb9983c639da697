"""A gradient difference whose cause is a layer's forward pass: the training-mode forward pass checked layer by layer
before a gradient is blamed (pure, no execution; docs/training.md, "Triage").

A gradient, a loss or a state after the training call is computed from every layer's output, not only the model's:
a layer whose forward output differs by more than the tolerance inside the model makes the gradients of every weight
before it differ, while the model's outputs after it (a convolution, a log-softmax, a float16 crop) may still agree
within theirs. Localizing such a finding by backward order blames a weight the backward pass computes right from a
wrong activation (campaign long150: Keras on torch's ``AveragePooling1D(padding="same", pool_size=4)`` differs at
the borders by 0.9, memo's report blamed the ``Conv1D`` before it). So triage first trains the *forward probe*
(:func:`forward_probe`: every body node an output, stage ``forward`` alone) on the reference and the accused backend,
and the first layer in topological order whose training-mode output differs while its inputs agree
(:func:`first_forward_difference`, by the training judge's own tolerance) is the finding's layer: the bug is that
layer's forward difference (:func:`forward_parts`), cut to that layer (:func:`culprit_cuts`). Only where every
layer's output agrees does backward order localize it (:func:`memo.triage.training_signature.first_in_backward_order`).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from memo.json_types import JsonObject
from memo.kinds import VerdictKind
from memo.model.ir import ModelIR
from memo.training.judge import Arrays, compare_array
from memo.triage.localize import subgraph

FORWARD_STAGE = "forward"
# The judged stages computed from every layer's training-mode output (the optimizer stages step fixed gradients: a
# forward difference cannot reach them)
AFTER_FORWARD = frozenset({"loss", "state", "gradients"})
OK, DIFFERS, MISSING = "ok", "differs", "missing"


@dataclass
class ForwardDifference:
    """The first layer whose training-mode output differs from the reference's while its inputs agree: its name and
    class, the judge's verdict on its output (``kind``, ``message``, ``figures``), and each node as the walk saw it."""

    layer: str
    layer_class: str
    kind: str
    message: str
    figures: dict[str, Any] = field(default_factory=dict)
    nodes: list[JsonObject] = field(default_factory=list)

    def to_json(self) -> JsonObject:
        return asdict(self)


def forward_probe(ir: ModelIR) -> ModelIR:
    """``ir`` with every body node an output, in topological order: its forward stage records node ``i``'s
    training-mode output as ``out_i``."""
    probe = ir.copy()
    try:
        probe.toposort()
    except Exception:  # noqa: BLE001  (a malformed graph: its own order)
        pass
    probe.outputs = [layer.name for layer in probe.body]
    return probe


def node_outputs(probe: ModelIR, arrays: Arrays) -> dict[str, np.ndarray]:
    """A backend's forward arrays of :func:`forward_probe` by node name."""
    return {layer.name: np.asarray(arrays[f"out_{index}"]) for index, layer in enumerate(probe.body)
            if f"out_{index}" in arrays}


def first_forward_difference(probe: ModelIR, backend: str, faulty: Arrays,
                             reference: Arrays) -> ForwardDifference | None:
    """The first node of ``probe`` (:func:`forward_probe`) in topological order whose training-mode output on
    ``backend`` (``faulty``, its worker's arrays) differs from the reference's by the training judge's criterion
    (:func:`memo.training.judge.compare_array`: scale-aware, at the precision the model computes in) while every
    node it reads agrees (the model's inputs are the same arrays); None when none does. A node whose input was not
    compared is not blamed: its difference may come from that input."""
    status: dict[str, str] = {layer.name: OK for layer in probe.input_layers}
    nodes: list[JsonObject] = []
    for index, layer in enumerate(probe.body):
        key = f"out_{index}"
        verdict = compare_array(backend, FORWARD_STAGE, faulty, reference, key) \
            if key in faulty and key in reference else None
        status[layer.name] = MISSING if key not in faulty or key not in reference else DIFFERS if verdict else OK
        nodes.append({"name": layer.name, "class": layer.class_name, "status": status[layer.name]})
        if verdict is None or any(status.get(name) != OK for name in layer.inputs):
            continue
        message = verdict.message.replace(f"output {index}", f"output of {layer.name} ({layer.class_name})", 1)
        return ForwardDifference(layer.name, layer.class_name, verdict.kind, message, dict(verdict.figures), nodes)
    return None


def forward_parts(parts: JsonObject, found: ForwardDifference) -> JsonObject:
    """The signature of ``found`` as a training verdict of the forward stage on a model whose output is that layer
    (:func:`memo.triage.training_signature.training_parts`): one key with every other finding of that layer's
    forward defect on that backend."""
    kind = found.kind if found.kind in (VerdictKind.TRAINING_NAN.value, VerdictKind.TRAINING_INCONSISTENCY.value) \
        else VerdictKind.TRAINING_INCONSISTENCY.value
    return {"kind": kind, "library": parts.get("library"), "stage": FORWARD_STAGE, "layer": found.layer_class}


def culprit_cuts(ir: ModelIR, layer: str,
                 arrays: dict[str, np.ndarray]) -> list[tuple[ModelIR, dict[str, np.ndarray] | None]]:
    """Models showing ``layer``'s forward difference, smallest first, each with the inputs it is fed (None: the
    model's own): the layer alone fed what it received in the reference's run (``arrays``: the model's inputs and
    each node's output by name), then the layer with everything it depends on."""
    cuts: list[tuple[ModelIR, dict[str, np.ndarray] | None]] = []
    alone = subgraph(ir, [layer], layer, arrays)
    if alone is not None and not all(ir.get(name).is_input for name in ir.get(layer).inputs):
        cuts.append(alone)
    upstream = ir.copy()
    upstream.outputs = [layer]
    cuts.append((upstream.prune(), None))
    return cuts


def forward_located(found: ForwardDifference, backward: JsonObject) -> JsonObject:
    """bug.json's ``localization`` of a forward difference: ``found``'s layer, why, and what backward order would
    have blamed (``backward``: the gradient localization's record)."""
    return {"layer": found.layer, "layer_class": found.layer_class,
            "reason": "the first layer whose training-mode forward output differs while its inputs agree",
            "forward": found.to_json(), "differing": [found.layer], "alone": None, "together": [],
            "backward_order": {key: backward.get(key) for key in ("layer", "layer_class", "differing")}}


def forward_record(record: JsonObject, found: ForwardDifference) -> JsonObject:
    """The training record of a bug cut to ``found``'s layer (its verdict's, whose array is ``output 0``), named by
    the layer: a title says "training-mode output average_pooling1d"."""
    return {**record, "name": found.layer}


def forward_message(message: str, found: ForwardDifference) -> str:
    """The cut's verdict message (``forward: output 0: ...``) naming ``found``'s layer instead of ``output 0``."""
    return message.replace("output 0", f"output of {found.layer} ({found.layer_class})", 1)
