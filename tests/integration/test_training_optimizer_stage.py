"""The optimizer catalogue's stage in the real warm workers (docs/training.md, "The optimizer catalogue"): Nadam on a
bfloat16 Dense kernel makes NaN on Keras's TensorFlow and JAX backends and crashes Keras on torch
(``torch_nadam.py``: ``torch._foreach_div`` of a numpy bfloat16 scalar), defects the SGD and Adam stages cannot see;
the same model in float32 trains alike everywhere."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from memo.model.ir import Layer, ModelIR

TRAINERS = ["keras-tensorflow", "keras-jax", "keras-torch"]


def dense(dtype: str) -> ModelIR:
    return ModelIR(layers=[
        Layer(name="x", class_name="InputLayer", config={"batch_shape": [None, 5], "dtype": "float32"}),
        Layer(name="low", class_name="Dense", config={"units": 4, "activation": "tanh", "dtype": dtype},
              inputs=["x"])], outputs=["low"], name=f"nadam_{dtype}")


def test_nadam_on_a_bfloat16_variable_is_nan_on_tensorflow_and_jax_and_a_crash_on_torch(
        executor: Any, tmp_path: Path) -> None:
    from memo.artifact import prepare_artifact
    from memo.training.check import run_training_check, stored_verdicts
    from memo.triage.training_signature import training_parts

    artifact = prepare_artifact(dense("bfloat16"), tmp_path / "bf16", seed=3)
    check = run_training_check(executor, artifact, tmp_path / "train", TRAINERS, optimizer="nadam")
    assert check.judgement.optimizer == "nadam"
    found = {(v.kind, v.backend, v.stage): v for v in check.judgement.verdicts}
    assert set(found) == {("training-nan", "keras-tensorflow", "optimizer"),
                          ("training-crash", "keras-torch", "optimizer")}, check.judgement.verdicts
    nan = found["training-nan", "keras-tensorflow", "optimizer"]
    assert nan.name == "low/kernel" and "(also on keras-jax)" in nan.message, nan.message
    assert nan.truth is not None and nan.truth.decision == "confirmed", nan.truth  # float64's update is finite
    crash = found["training-crash", "keras-torch", "optimizer"]
    assert "TypeError" in crash.message and "_foreach_div" in crash.message, crash.message
    for verdict in check.judgement.verdicts:  # named in the message, recorded in the metrics, keyed by its class
        assert "[optimizer nadam: keras.optimizers.Nadam(learning_rate=0.1)]" in verdict.message
    for stored in stored_verdicts(check):
        assert stored.extra["training"]["optimizer"] == "nadam"
        assert training_parts(stored, dense("bfloat16"))["optimizer"] == "Nadam"

    # each bug's folder as triage writes it: its repro.py constructs the same optimizer and shows the bug again
    from memo.training.judge import read_arrays
    from memo.triage.rerun import rerun_script
    from memo.triage.training_bug import TrainingRun, write_folder
    from memo.triage.training_signature import crash_exception

    run = TrainingRun(artifact, {name: read_arrays(r.outputs_path) for name, r in check.results.items()})
    for verdict in (nan, crash):
        folder = tmp_path / f"bug-{verdict.kind}"
        data = write_folder(folder, dense("bfloat16"), run, {
            "id": f"b-{verdict.kind}", "kind": verdict.kind, "library": verdict.backend, "stage": verdict.stage,
            "reference": check.reference, "training": verdict.to_json(),
            "exception": crash_exception(verdict.message)[0] if verdict is crash else ""})
        assert "OPTIMIZER = 'nadam'" in (folder / "repro.py").read_text()
        rerun = rerun_script(folder, data, timeout_s=240)
        assert rerun.reproduces, rerun.output[-2000:]

    control = prepare_artifact(dense("float32"), tmp_path / "f32", seed=3)
    agreed = run_training_check(executor, control, tmp_path / "train32", TRAINERS, optimizer="nadam")
    assert agreed.judgement.verdicts == [], agreed.judgement.verdicts
    assert all(any(s.stage == "optimizer" and s.status == "ok" for s in r.stages) for r in agreed.results.values())
