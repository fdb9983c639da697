"""The training check of converted torch modules in the real workers (docs/training.md, "Converted models"):
onnx2torch's and onnx2pytorch's modules of tf2onnx's ONNX file, their inputs' gradients in inference mode against
TensorFlow's, judged by float64.

onnx2pytorch re-implements ONNX Selu as ``gamma * (clamp(x, min=0) + clamp(alpha * expm1(x), max=0))``
(onnx2pytorch/operations/selu.py): for x above about 88, ``expm1(x)`` is inf in float32; the forward pass clamps it to
0, but the backward pass multiplies clamp's zero gradient by ``exp(x) = inf``: NaN where the gradient is ``gamma``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from memo.model.ir import Layer, ModelIR

TRAINERS = ["keras-tensorflow", "onnx2torch", "onnx2pytorch"]


def selu_model() -> ModelIR:
    return ModelIR(layers=[
        Layer(name="x", class_name="InputLayer", config={"batch_shape": [None, 6], "dtype": "float32"}),
        Layer(name="selu", class_name="Activation", config={"activation": "selu"}, inputs=["x"])],
        outputs=["selu"], name="train_converted_selu")


def check(executor: Any, root: Path, scale: float) -> Any:
    from memo.artifact import prepare_artifact
    from memo.training.check import run_training_check

    artifact = prepare_artifact(selu_model(), root, seed=3)
    x = np.linspace(-3.0, 3.0, 12, dtype=np.float32).reshape(2, 6) * np.float32(scale)
    np.savez(artifact.inputs_path, x=x)
    ran = executor.run(artifact, ["onnx2torch", "onnx2pytorch"])  # tf2onnx writes the ONNX file they convert
    assert {name: result.status for name, result in ran.backends.items()} == {
        "tf2onnx": "ok", "onnx2torch": "ok", "onnx2pytorch": "ok"}
    return run_training_check(executor, artifact, root / "train", TRAINERS)


def test_onnx2pytorch_selu_has_a_nan_gradient_above_88_that_float64_confirms(executor: Any, tmp_path: Path) -> None:
    result = check(executor, tmp_path / "large", 40.0)  # inputs from -120 to 120
    for name in ("onnx2torch", "onnx2pytorch"):  # the converted modules run the inference-mode stages only
        assert [(s.stage, s.status) for s in result.results[name].stages] == [
            ("load", "ok"), ("prepare", "ok"), ("eval_forward", "ok"), ("eval_gradients", "ok")], name
    [verdict] = result.judgement.verdicts
    assert (verdict.kind, verdict.backend, verdict.stage, verdict.name) == (
        "training-nan", "onnx2pytorch", "eval_gradients", "input 0")
    assert verdict.truth is not None and verdict.truth.decision == "confirmed", verdict.truth


def test_converted_modules_agree_where_selu_is_in_range(executor: Any, tmp_path: Path) -> None:
    result = check(executor, tmp_path / "small", 1.0)
    assert result.judgement.verdicts == [] and result.judgement.left_out is None


def test_the_selu_gradient_bug_is_triaged_to_a_reproducing_onnx2pytorch_bug(tmp_path: Path) -> None:
    """From the stored verdict: reduced to the Rescaling (large inputs) and the Selu (candidates converted by tf2onnx and onnx2pytorch on the
    way), confirmed by float64, filed against onnx2pytorch's tracker, its repro.py converting model.onnx in a fresh
    process."""
    import subprocess
    import sys

    from memo.artifact import prepare_artifact
    from memo.backends.executor import DifferentialExecutor
    from memo.bug_files import read_bug_file
    from memo.oracle import judge
    from memo.store import CampaignStore, MutantRecord
    from memo.training.check import run_training_check, stored_verdicts
    from memo.triage import triage_campaign

    backends = ["keras-tensorflow", "onnx2pytorch"]
    store = CampaignStore(tmp_path / "campaign", create=True)
    store.set_meta("campaign_name", "converted-triage")
    store.set_meta("config", {"seed": 3, "backends": backends, "timeout_s": 60.0, "search": "mh"})
    store.set_meta("started", 0.0)
    ir = ModelIR(layers=[*selu_model().layers[:1],
                         Layer(name="rescale", class_name="Rescaling", config={"scale": 1000.0, "offset": 0.0},
                               inputs=["x"]),
                         Layer(name="selu", class_name="Activation", config={"activation": "selu"},
                               inputs=["rescale"]),
                         Layer(name="last", class_name="Activation", config={"activation": "linear"},
                               inputs=["selu"])], outputs=["last"], name="converted_selu_triage")
    with DifferentialExecutor(backends=backends, timeout_s=60.0) as executor:
        mutant_id = store.add_mutant(MutantRecord(0, ir.name, "NLA", "seed", ir.name, {}, ir.dumps(), True,
                                                  diverse=True))
        artifact = prepare_artifact(ir, (tmp_path / "artifacts" / str(mutant_id)).resolve(), seed=3)
        result = executor.run(artifact)
        store.add_execution(mutant_id, result.to_json(), result.seconds, str(artifact.directory))
        for verdict in judge(result):
            store.add_verdict(mutant_id, verdict)
        check = run_training_check(executor, artifact, artifact.directory / "training", truth=False)
        for verdict in stored_verdicts(check):
            store.add_verdict(mutant_id, verdict)
        summary = triage_campaign(store, executor=executor, time_budget_s=300.0)
    bugs = [bug for bug in store.triage.load_bugs() if bug.kind.startswith("training-")]
    assert summary.errors == [] and len(bugs) == 1, [(bug.kind, bug.library, bug.parts) for bug in bugs]
    bug = bugs[0]
    assert bug.parts == {"kind": "training-nan", "library": "onnx2pytorch", "stage": "eval_gradients",
                         "layer": "input"}
    assert (bug.original_layers, bug.reduced_layers) == (3, 2), bug.reduction  # Rescaling and the Selu
    folder = Path(str(bug.bug_dir))
    data = read_bug_file(folder)
    assert data["truth"]["decision"] == "confirmed", data["truth"]
    assert bug.reproduces is True
    done = subprocess.run([sys.executable, "repro.py"], cwd=folder, capture_output=True, text=True, timeout=300,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(folder)})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "training-nan onnx2pytorch at eval_gradients" in done.stdout
