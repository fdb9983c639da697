"""Shared by the triage/report integration tests: a campaign store holding real findings.

The models below expose real, current bugs of MXNet 1.9.1 (the last release) through memo's ONNX
path: AveragePooling1D with "same" padding gives different numbers than Keras, and the importer raises
KeyError on the Tensordot that tf2onnx writes for a Dense layer on a 3-D tensor. Each is wrapped in
extra layers so that reduction has something to remove.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from memo.model.ir import Layer, ModelIR
from memo.store import CampaignStore, MutantRecord

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


def inconsistent_model(activation: str = "sigmoid") -> ModelIR:
    """MXNet's AveragePooling1D(padding="same") disagrees with Keras; the other layers are noise.

    (No Dense on a 3-D tensor here: MXNet's importer currently fails on tf2onnx's Tensordot nodes, a
    different bug that would hide this one.)"""
    return chain("avgpool", (9, 3), [("ReLU", {}), ("Activation", {"activation": activation}),
                                     ("AveragePooling1D", {"pool_size": 3, "strides": 2, "padding": "same"}),
                                     ("Activation", {"activation": "tanh"}), ("Flatten", {}), ("Dense", {"units": 2})])


def crashing_model() -> ModelIR:
    """MXNet's ONNX importer fails (KeyError) on the Tensordot tf2onnx writes for a Dense on a 3-D tensor;
    the other layers are noise."""
    return chain("dense3d", (5, 4), [("ReLU", {}), ("Activation", {"activation": "sigmoid"}), ("Dense", {"units": 3}),
                                     ("Activation", {"activation": "tanh"}), ("Flatten", {}), ("Dense", {"units": 2})])


def record_campaign(directory: Path, artifacts: Path, executor: Any, models: list[ModelIR],
                    name: str = "triage-test", backends: list[str] = BACKENDS) -> CampaignStore:
    """Run ``models`` through the real executor and oracle and store them as a campaign would."""
    from memo.artifact import prepare_artifact
    from memo.oracle import judge

    store = CampaignStore(directory, create=True)
    store.set_meta("campaign_name", name)
    store.set_meta("config", {"seed": SEED, "backends": backends, "timeout_s": 60.0, "search": "mh"})
    store.set_meta("started", 0.0)
    for iteration, ir in enumerate(models):
        mutant_id = store.add_mutant(MutantRecord(iteration, ir.name, "NLA", "seed", ir.name, {}, ir.dumps(), True,
                                                  diverse=True))
        artifact = prepare_artifact(ir, (artifacts / str(mutant_id)).resolve(), seed=SEED)
        result = executor.run(artifact)
        # stored as the campaign stores it: relative to the directory it runs in
        store.add_execution(mutant_id, result.to_json(), result.seconds, str(artifacts / str(mutant_id)))
        for verdict in judge(result):
            store.add_verdict(mutant_id, verdict)
    store.add_coverage_point(1.0, len(models), len(models), len(models),
                             {"types": (6, 60), "pairs": (8, 3600), "params": (20, 900)})
    return store


def materialize_bug(root: Path, ir: Any, artifact: Any, bug: dict, faulty: str) -> tuple[Path, dict]:
    """Write ``bug``'s folder (model, files, repro.py) under ``root`` from an executed artifact, with ``faulty``
    compared against keras-tensorflow; returns the folder and its bug.json data."""
    from memo.triage.materialize import materialize
    from memo.triage.probe import Roles

    folder = root / bug["id"]
    data = materialize(folder, artifact.directory, ir, bug, Roles(faulty, "keras-tensorflow", ()), {})
    assert (folder / "repro.py").exists(), data.get("repro_missing")
    return folder, data
