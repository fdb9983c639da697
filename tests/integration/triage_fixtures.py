"""Shared by the triage/report integration tests: a campaign store holding real findings.

The models below expose real, current bugs of MXNet 1.9.1 (the last release) through memo's ONNX
path: AveragePooling1D with "same" padding gives different numbers than Keras (the padded zeros are
averaged in), and a causal Conv1D after a Permute/Reshape fails to bind in its Pad operator. Each is
wrapped in extra layers so that reduction has something to remove.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from memo.model.ir import Layer, ModelIR
from memo.store import CampaignStore, MutantRecord, VerdictRecord

BACKENDS = ["keras-tensorflow", "mxnet"]
SEED = 3


def chain(name: str, shape: tuple[int, ...], specs: list[tuple[str, dict[str, Any]]]) -> ModelIR:
    layers = [Layer("input", "InputLayer", {"batch_shape": [None, *shape], "dtype": "float32"})]
    previous = "input"
    for index, (class_name, config) in enumerate(specs):
        node = f"{class_name.lower()}_{index}"
        layers.append(Layer(node, class_name, config, [previous]))
        previous = node
    return ModelIR(layers, [previous], name)


def inconsistent_model(units: int = 4) -> ModelIR:
    """MXNet's AveragePooling1D(padding="same") disagrees with Keras; Dense/ReLU/Flatten are noise."""
    return chain("avgpool", (9, 3), [("Dense", {"units": units}), ("ReLU", {}),
                                     ("AveragePooling1D", {"pool_size": 3, "strides": 2, "padding": "same"}),
                                     ("Activation", {"activation": "tanh"}), ("Flatten", {}), ("Dense", {"units": 2})])


def crashing_model() -> ModelIR:
    """MXNet cannot bind the Pad of a causal Conv1D here; the leading Dense layers are noise."""
    return chain("causal", (3, 4, 5), [("Dense", {"units": 5}), ("Permute", {"dims": [3, 1, 2]}),
                                       ("Reshape", {"target_shape": [12, 5]}),
                                       ("Conv1D", {"filters": 2, "kernel_size": 3, "strides": 2, "padding": "causal"}),
                                       ("Flatten", {})])


def record_campaign(directory: Path, artifacts: Path, executor: Any, models: list[ModelIR],
                    name: str = "triage-test") -> CampaignStore:
    """Run ``models`` through the real executor and oracle and store them as a campaign would."""
    from memo.artifact import prepare_artifact
    from memo.oracle import judge

    store = CampaignStore(directory, create=True)
    store.set_meta("campaign_name", name)
    store.set_meta("config", {"seed": SEED, "backends": BACKENDS, "timeout_s": 60.0, "search": "mh"})
    store.set_meta("started", 0.0)
    for iteration, ir in enumerate(models):
        mutant_id = store.add_mutant(MutantRecord(iteration, ir.name, "NLA", "seed", ir.name, {}, ir.dumps(), True,
                                                  diverse=True))
        artifact = prepare_artifact(ir, (artifacts / str(mutant_id)).resolve(), seed=SEED)
        result = executor.run(artifact)
        # stored as the campaign stores it: relative to the directory it runs in
        store.add_execution(mutant_id, result.to_json(), result.seconds, str(artifacts / str(mutant_id)))
        for verdict in judge(result):
            store.add_verdict(VerdictRecord(mutant_id, verdict.kind, verdict.backend, verdict.stage, verdict.message,
                                            dict(verdict.metrics)))
    store.add_coverage_point(1.0, len(models), len(models), len(models),
                             {"types": (6, 60), "pairs": (8, 3600), "params": (20, 900)})
    return store
