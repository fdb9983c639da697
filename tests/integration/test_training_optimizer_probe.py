"""Reduction of an optimizer stage's bug by the precision probe (memo.triage.precision_probe), on the real workers:
Keras's Muon on float64 variables fails on TensorFlow (``Mul`` of a double variable by a float learning-rate
adjustment, keras/src/optimizers/muon.py ``lr_adjust``) where Keras on torch steps them. The finding's model holds
float64 layers among others; the probe's model (one layer per weight dtype) shows the bug in one run and the bug's
folder keeps a model of at most two layers."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from memo.bug_files import read_bug_file
from memo.model.ir import Layer, ModelIR
from memo.store import CampaignStore, MutantRecord

BACKENDS = ["keras-tensorflow", "keras-torch"]
SEED = 5


def float64_model() -> ModelIR:
    return ModelIR([Layer("x", "InputLayer", {"batch_shape": [None, 6], "dtype": "float32"}),
                    Layer("first", "Dense", {"units": 6, "activation": "tanh", "dtype": "float64"}, ["x"]),
                    Layer("act", "Activation", {"activation": "tanh", "dtype": "float64"}, ["first"]),
                    Layer("second", "Dense", {"units": 5, "dtype": "float64"}, ["act"]),
                    Layer("norm", "LayerNormalization", {"dtype": "float64"}, ["second"]),
                    Layer("last", "Dense", {"units": 3, "dtype": "float64"}, ["norm"])], ["last"], "muon_float64")


def executed(executor: Any, tmp_path: Path, name: str) -> tuple[CampaignStore, int, Any]:
    """A campaign store holding the float64 model as its executed mutant: (store, mutant id, its artifact)."""
    from memo.artifact import prepare_artifact

    store = CampaignStore(tmp_path / "campaign", create=True)
    store.set_meta("campaign_name", name)
    store.set_meta("config", {"seed": SEED, "backends": BACKENDS, "timeout_s": 60.0, "search": "mh"})
    store.set_meta("started", 0.0)
    ir = float64_model()
    mutant_id = store.add_mutant(MutantRecord(0, ir.name, "NLA", "seed", ir.name, {}, ir.dumps(), True, diverse=True))
    artifact = prepare_artifact(ir, (tmp_path / "artifacts" / str(mutant_id)).resolve(), seed=SEED)
    result = executor.run(artifact)
    store.add_execution(mutant_id, result.to_json(), result.seconds, str(artifact.directory))
    return store, mutant_id, artifact


def test_muon_on_float64_variables_is_reduced_by_the_precision_probe(tmp_path: Path) -> None:
    from memo.backends.executor import DifferentialExecutor
    from memo.training.check import run_training_check, stored_verdicts
    from memo.triage import triage_campaign

    with DifferentialExecutor(backends=BACKENDS, timeout_s=60.0) as executor:
        store, mutant_id, artifact = executed(executor, tmp_path, "optimizer-probe")
        check = run_training_check(executor, artifact, artifact.directory / "training", truth=False,
                                   optimizer="muon")
        found: list[Any] = stored_verdicts(check)
        assert [(v.kind, v.backend, v.stage) for v in found] == [
            ("training-crash", "keras-tensorflow", "optimizer")], [(v.kind, v.backend, v.message) for v in found]
        for verdict in found:
            store.add_verdict(mutant_id, verdict)
        triage_campaign(store, executor=executor, time_budget_s=300.0)
    [bug] = [bug for bug in store.triage.load_bugs() if bug.kind.startswith("training-")]
    data = read_bug_file(Path(str(bug.bug_dir)))
    steps = data["reduction"]["steps"]
    assert steps[0].startswith("precision probe (") and steps[0].endswith("shows the bug"), steps
    reduced = ModelIR.loads((Path(str(bug.bug_dir)) / "ir.json").read_text())
    assert [layer.name for layer in reduced.body] == ["dense_float64"]  # the smallest probe: 27 weights
    assert bug.reduced_layers == 1 and bug.original_layers == 5, data["reduction"]
    assert bug.reproduces, data


def test_the_optimizer_sweep_finds_it_on_the_probe_and_triage_starts_from_the_probe(tmp_path: Path) -> None:
    from memo.backends.executor import DifferentialExecutor
    from memo.training.sweep import MODEL_IR_KEY, sweep_optimizers
    from memo.triage import triage_campaign
    from memo.triage.precision_probe import precision_probe

    probe = precision_probe(float64_model())
    assert probe is not None and len(probe.body) == 1
    with DifferentialExecutor(backends=BACKENDS, timeout_s=60.0) as executor:
        store, mutant_id, _ = executed(executor, tmp_path, "optimizer-sweep")
        sweep = sweep_optimizers(executor, [probe], tmp_path / "sweep", SEED, entries=["sgd-nesterov", "muon"])
        assert (sweep.sets, sweep.error) == ([{"dtypes": ["float64"], "entries": 2, "verdicts": 1}], "")
        [verdict] = sweep.verdicts  # Muon's crash on TensorFlow; SGD with Nesterov steps float64 alike
        assert (verdict.kind, verdict.backend, verdict.stage) == ("training-crash", "keras-tensorflow", "optimizer")
        assert verdict.extra["training"]["optimizer"] == "muon"
        assert verdict.extra["training"][MODEL_IR_KEY] == probe.dumps()
        store.add_verdict(mutant_id, verdict)
        triage_campaign(store, executor=executor, time_budget_s=300.0)
    [bug] = [bug for bug in store.triage.load_bugs() if bug.kind.startswith("training-")]
    data = read_bug_file(Path(str(bug.bug_dir)))
    assert data["reduction"]["steps"][0].startswith("optimizer sweep: found on the model's precision probe")
    assert (bug.original_layers, bug.reduced_layers) == (5, 1) and bug.reproduces, data["reduction"]


def test_a_bug_of_two_precisions_keeps_one_dense_per_dtype_and_is_done(tmp_path: Path) -> None:
    """Adam(global_clipnorm) fails on TensorFlow only where float16 and float32 variables step together: the Dense
    probe of both shows it, neither Dense alone does, so the two-Dense probe is the finished reduction (q48 left it
    "unfinished" when the pass had no time to try cutting it)."""
    from memo.backends.executor import DifferentialExecutor
    from memo.training.check import run_training_check, stored_verdicts
    from memo.training.selection import weight_dtypes
    from memo.triage import triage_campaign

    ir = ModelIR([Layer("x", "InputLayer", {"batch_shape": [None, 6], "dtype": "float32"}),
                  Layer("low", "Dense", {"units": 5, "activation": "tanh", "dtype": "float16"}, ["x"]),
                  Layer("act", "Activation", {"activation": "relu"}, ["low"]),
                  Layer("last", "Dense", {"units": 3}, ["act"])], ["last"], "clipnorm_mixed")
    with DifferentialExecutor(backends=BACKENDS, timeout_s=60.0) as executor:
        from memo.artifact import prepare_artifact

        store = CampaignStore(tmp_path / "campaign", create=True)
        store.set_meta("campaign_name", "clipnorm")
        store.set_meta("config", {"seed": SEED, "backends": BACKENDS, "timeout_s": 60.0, "search": "mh"})
        store.set_meta("started", 0.0)
        mutant_id = store.add_mutant(MutantRecord(0, ir.name, "DType", "seed", ir.name, {}, ir.dumps(), True,
                                                  diverse=True))
        artifact = prepare_artifact(ir, (tmp_path / "artifacts" / str(mutant_id)).resolve(), seed=SEED)
        store.add_execution(mutant_id, executor.run(artifact).to_json(), 1.0, str(artifact.directory))
        check = run_training_check(executor, artifact, artifact.directory / "training", truth=False,
                                   optimizer="adam-global-clipnorm")
        # (Keras on torch's first-variable scalars show as an inconsistency beside it: another bug)
        found = [v for v in stored_verdicts(check) if v.kind == "training-crash"]
        assert [v.backend for v in found] == ["keras-tensorflow"], found
        store.add_verdict(mutant_id, found[0])
        triage_campaign(store, executor=executor, time_budget_s=300.0)
    [bug] = [bug for bug in store.triage.load_bugs() if bug.kind.startswith("training-")]
    data = read_bug_file(Path(str(bug.bug_dir)))
    reduced = ModelIR.loads((Path(str(bug.bug_dir)) / "ir.json").read_text())
    assert weight_dtypes(reduced) == ("float16", "float32") and len(reduced.body) == 2, data["reduction"]
    assert data["reduction"]["status"] == "done" and "one dtype alone does not" in data["reduction"]["steps"][1]
    assert bug.reproduces, data
