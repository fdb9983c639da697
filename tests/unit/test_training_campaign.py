"""The training check in a campaign (``memo fuzz --train-share``): which models it runs on, how its findings are
stored and read back for the report; no library runs."""
from __future__ import annotations

from pathlib import Path

import pytest

from memo.defaults import DEFAULT_TRAIN_SHARE

from memo.backends.result import BackendResult, ExecutionResult, StageResult
from memo.campaign.config import Budget, CampaignConfig
from memo.errors import UsageError
from memo.report.markdown import _apart
from memo.store import CampaignStore, MutantRecord
from memo.training.check import TrainingCheck, stored_verdicts, train_if_chosen
from memo.training.selection import BY_NOVELTY, BY_SHARE, NOVELTY_CAP, TrainingSelection, train_chosen, training_keys
from memo.training.judge import Judgement, TrainingVerdict


def test_the_share_is_chosen_by_name_and_close_to_the_fraction() -> None:
    names = [str(i) for i in range(2000)]
    chosen = [name for name in names if train_chosen(name, 0.25)]
    assert 400 < len(chosen) < 600
    assert chosen == [name for name in names if train_chosen(name, 0.25)]  # the same models every time
    assert not any(train_chosen(name, 0.0) for name in names) and all(train_chosen(name, 1.0) for name in names)


def _model(*classes: str, dtype: str = "float32") -> "ModelIR":
    from memo.model.ir import Layer, ModelIR

    layers = [Layer(name="x", class_name="InputLayer", config={"batch_shape": [None, 3]})]
    for i, name in enumerate(classes):
        config = {} if dtype == "float32" else {"dtype": {"class_name": "DTypePolicy", "config": {"name": dtype}}}
        layers.append(Layer(name=f"l{i}", class_name=name, config=config, inputs=[layers[-1].name]))
    return ModelIR(layers=layers, outputs=[layers[-1].name])


def test_training_keys_are_layer_classes_and_classes_in_other_precisions() -> None:
    assert training_keys(_model("Dense", "ReLU")) == {"Dense", "ReLU"}
    assert training_keys(_model("Dense", dtype="mixed_bfloat16")) == {"Dense", "Dense@mixed_bfloat16"}


def test_novelty_trains_the_first_model_of_a_class_within_the_cap() -> None:
    names = [str(i) for i in range(400)]
    hashed = [name for name in names if train_chosen(name, 0.1)]
    selection = TrainingSelection(0.1)
    reasons = [selection.choose(name, _model("Dense")) for name in names]
    # a class seen before is not new: beyond the first model, only the hash share is checked
    assert [name for name, why in zip(names, reasons) if why == BY_SHARE] == hashed
    assert reasons.count(BY_NOVELTY) == (0 if names[0] in hashed else 1)
    # a rare class is trained the first time it shows, a rare precision of a known class too
    fresh = next(name for name in ("a", "b", "c", "d") if not train_chosen(name, 0.1))
    assert selection.choose(fresh, _model("SpectralNormalization")) == BY_NOVELTY
    assert selection.choose(fresh + "x" if not train_chosen(fresh + "x", 0.1) else fresh,
                            _model("Dense", dtype="mixed_float16")) == BY_NOVELTY
    assert selection.choose(fresh, _model("SpectralNormalization")) in ("", BY_SHARE)
    assert selection.by_novelty == reasons.count(BY_NOVELTY) + 2


def test_novelty_stops_at_the_cap_and_without_a_share_nothing_is_trained() -> None:
    selection = TrainingSelection(0.05)
    for i in range(300):  # every model brings a new class
        selection.choose(f"m{i}", _model(f"Class{i}"))
    assert selection.chosen <= NOVELTY_CAP * selection.submitted + 1
    assert selection.by_novelty > 0
    assert TrainingSelection(0.0).choose("m", _model("Dense")) == ""


def test_the_budget_refuses_checks_past_its_share_of_the_inference_seconds() -> None:
    selection = TrainingSelection(1.0, budget=0.1)  # the hash share chooses every model
    assert selection.choose("a", _model("Dense")) == BY_SHARE  # the allowance pays for the first checks
    selection.measured(5.0, 30.0)  # 30 s of check against 5 s of inference: 30 > 0.1 * 5 + allowance
    assert selection.choose("b", _model("Dense")) == "" and selection.over_budget == 1
    for _ in range(100):
        selection.measured(5.0, None)  # 505 s of inference: room for 50.5 + 20 s
    assert selection.choose("c", _model("Dense")) == BY_SHARE  # 30 s spent, this one at the mean: 60 s
    assert selection.choose("d", _model("Dense")) == ""  # with c pending: 90 s, past 70.5 s
    selection.measured(5.0, 2.0)  # c cost 2 s
    assert selection.choose("e", _model("Dense")) == BY_SHARE
    assert selection.figures() == {"budget": 0.1, "inference_s": 510.0, "check_s": 32.0, "checked": 2,
                                   "over_budget": 2, "swept": []}


def test_the_optimizer_sweep_takes_the_first_model_of_each_weight_dtype_set() -> None:
    selection = TrainingSelection(0.1, budget=0.1)
    assert selection.sweep(_model("Dense")) and not selection.sweep(_model("Conv2D"))  # float32 swept once
    assert selection.sweep(_model("Dense", dtype="float16"))  # a new set: float16 variables
    assert selection.pending == 2 and selection.figures()["swept"] == ["float16", "float32"]
    selection.measured(1.0, 200.0, checks=2)  # the two sweeps cost far past the budget: no room for a check
    assert selection.pending == 0 and not selection.within_budget()
    assert selection.sweep(_model("Dense", dtype="float64"))  # a sweep is bounded by the dtype sets, not refused
    assert not TrainingSelection(0.0).sweep(_model("Dense"))  # no training check: no sweep


def test_each_class_meets_every_remat_option_before_the_hash_decides() -> None:
    from memo.backends.training_remat import REMAT_MODES, choose_remat

    selection = TrainingSelection(0.1)
    names = [str(i) for i in range(40)]
    modes = [selection.remat(name, _model("LSTM", "Dense")) for name in names]
    assert modes[0] == choose_remat(names[0])  # all options new: the model's hashed one
    assert set(modes[:3]) == {None, *REMAT_MODES}  # the next two take the options the classes have not met
    assert modes[3:] == [choose_remat(name) for name in names[3:]]  # every option met: the hash again
    # a class new to every option beside known ones: the option that is new to the most classes
    first = selection.remat("fresh", _model("LSTM", "GRU", "Dense"))
    assert first == choose_remat("fresh")
    for name in names:  # GRU was met under that option only: not that one again, whatever the hash says
        assert selection.remat(name, _model("GRU", "SimpleRNN")) != first
        selection.rematted -= {(mode or "", "SimpleRNN") for mode in (None, *REMAT_MODES)}
        selection.rematted -= {(mode or "", "GRU") for mode in (None, *REMAT_MODES) if mode != first}
    assert TrainingSelection(0.1).remat("x", _model("LSTM")) == TrainingSelection(0.1).remat("x", _model("LSTM"))


def test_a_class_the_budget_refused_is_trained_with_its_next_model() -> None:
    names = [name for name in (f"n{i}" for i in range(50)) if not train_chosen(name, 0.01)]
    selection = TrainingSelection(0.01, budget=0.1)
    selection.measured(0.0, 100.0)  # the budget is spent
    assert selection.choose(names[0], _model("SpectralNormalization")) == ""
    for _ in range(20):
        selection.measured(100.0, None)  # room for 200 + 20 s: the 100 spent and one more at the mean
    assert selection.choose(names[1], _model("SpectralNormalization")) == BY_NOVELTY


def test_no_check_where_the_reference_did_not_run_or_the_executor_cannot_train(tmp_path: Path) -> None:
    from memo.artifact import Artifact

    artifact = Artifact(tmp_path, tmp_path / "model.keras", tmp_path / "inputs.npz", tmp_path / "model.ir.json")
    failed = ExecutionResult(artifact_dir=str(tmp_path), reference="keras-tensorflow")
    failed.backends["keras-tensorflow"] = BackendResult(name="keras-tensorflow", consumes="keras",
                                                        stages=[StageResult("execute", "error")])
    assert train_if_chosen(object(), artifact, failed, BY_SHARE) is None
    ran = ExecutionResult(artifact_dir=str(tmp_path), reference="keras-tensorflow")
    ran.backends["keras-tensorflow"] = BackendResult(name="keras-tensorflow", consumes="keras",
                                                     stages=[StageResult("execute", "ok")])
    assert train_if_chosen(object(), artifact, ran, BY_SHARE) is None  # a cluster's executor has no training check


def test_a_check_that_fails_in_memo_is_left_out_not_raised(tmp_path: Path) -> None:
    from memo.artifact import Artifact
    from memo.backends.executor import DifferentialExecutor
    from memo.training.check import CHECK_FAILED

    class Broken(DifferentialExecutor):
        def __init__(self) -> None:  # no workers: its check fails inside memo
            pass

    artifact = Artifact(tmp_path, tmp_path / "model.keras", tmp_path / "inputs.npz", tmp_path / "model.ir.json")
    ran = ExecutionResult(artifact_dir=str(tmp_path), reference="keras-tensorflow")
    ran.backends["keras-tensorflow"] = BackendResult(name="keras-tensorflow", consumes="keras",
                                                     stages=[StageResult("execute", "ok")])
    check = train_if_chosen(Broken(), artifact, ran, BY_SHARE)
    assert check is not None and (check.judgement.left_out or "").startswith(CHECK_FAILED)


def test_the_share_is_a_fraction() -> None:
    with pytest.raises(UsageError, match="--train-share"):
        CampaignConfig(name="c", seed=0, budget=Budget(seconds=1.0), train_share=1.5)
    stored = CampaignConfig(name="c", seed=0, budget=Budget(seconds=1.0)).to_json()
    assert CampaignConfig.from_json(stored).train_share == DEFAULT_TRAIN_SHARE == 0.1  # on by default
    del stored["train_share"]  # a campaign stored before the check existed resumes without it
    assert CampaignConfig.from_json(stored).train_share == 0.0


def test_findings_are_stored_as_verdicts_and_reported(tmp_path: Path) -> None:
    check = TrainingCheck(reference="keras-tensorflow", judgement=Judgement(verdicts=[
        TrainingVerdict("training-inconsistency", "keras-jax", "gradients", "gradients: conv/kernel: 3/27 elements",
                        "grad_0", "conv/kernel", {"mismatched": 3}),
        TrainingVerdict("unsupported", "keras-torch", "prepare", "prepare unsupported: ...")]))
    [verdict] = stored_verdicts(check)
    assert (verdict.kind, verdict.backend, verdict.stage) == ("training-inconsistency", "keras-jax", "gradients")
    assert verdict.extra["training"] == {"array": "grad_0", "name": "conv/kernel", "figures": {"mismatched": 3}}
    assert stored_verdicts(None) == []
    with CampaignStore(tmp_path / "c", create=True) as store:
        with store.transaction():
            mutant = store.add_mutant(MutantRecord(iteration=0, slot="s", operator="NLA", parent="p", seed="s",
                                                   lineage={}, ir_json="{}", valid=True, diverse=True, delta={},
                                                   gen_seconds=0.0))
            store.add_verdict(mutant, verdict)
            store.add_verdict(mutant, verdict)
        assert store.training_groups() == [{"kind": "training-inconsistency", "library": "keras-jax",
                                            "stage": "gradients", "count": 2, "example": verdict.message}]
        assert store.verdicts(("training-inconsistency",))[0].verdict.extra["training"]["name"] == "conv/kernel"
    lines = _apart({"training": [{"kind": "training-nan", "library": "keras-torch", "stage": "adam", "count": 1,
                                  "example": "x"}]})
    assert "| training-nan | keras-torch | adam | 1 |" in lines


def test_memo_run_prints_and_serializes_a_check(capsys: pytest.CaptureFixture[str]) -> None:
    from memo.commands.run import print_training
    from memo.truth import Truth

    verdict = TrainingVerdict("training-inconsistency", "keras-jax", "gradients", "gradients: dense/kernel: 60/60",
                              "grad_0", "dense/kernel", truth=Truth(decision="confirmed", reason="accused 277",
                                                                   errors={"keras-jax": 277.0}))
    check = TrainingCheck(reference="keras-tensorflow", results={
        "keras-jax": BackendResult(name="keras-jax", consumes="keras", stages=[StageResult("load", "ok"),
                                                                              StageResult("gradients", "ok")])},
        judgement=Judgement(verdicts=[verdict], notes=["drop: Dropout.rate 0.5 -> 0"]))
    print_training(check)
    out = capsys.readouterr().out
    assert "training-inconsistency keras-jax at gradients" in out and "float64 truth: confirmed" in out
    assert "made deterministic: drop: Dropout.rate 0.5 -> 0" in out
    data = check.to_json()
    assert data["verdicts"][0]["truth"]["decision"] == "confirmed"  # type: ignore[index]
    assert data["stages"]["keras-jax"][1]["stage"] == "gradients"  # type: ignore[index]
    import json

    json.dumps(data)


def test_each_weight_precision_meets_every_optimizer_entry_before_any_repeats() -> None:
    from memo.backends.training_optimizers import CATALOGUE, choose_optimizer
    from memo.training.selection import optimizer_order, weight_dtypes

    assert weight_dtypes(_model("Dense", dtype="mixed_float16")) == ("float32",)
    assert weight_dtypes(_model("Dense", dtype="float16")) == ("float16",)
    assert optimizer_order("m7")[0] == choose_optimizer("m7") and sorted(optimizer_order("m7")) == sorted(CATALOGUE)
    selection = TrainingSelection(0.1)
    float32 = [selection.optimizer(f"a{i}", _model("Dense")) for i in range(len(CATALOGUE))]
    assert sorted(float32) == sorted(CATALOGUE)  # every entry once on float32 weights
    half = selection.optimizer("b0", _model("Dense", dtype="float16"))
    assert half == choose_optimizer("b0")  # another precision starts over at the model's own entry
    assert selection.optimizer("a99", _model("Dense")) == choose_optimizer("a99")  # all stepped: the hashed one


def test_the_first_sweep_adds_the_standard_precisions_and_later_models_only_their_own_new_set() -> None:
    from types import SimpleNamespace

    from memo.campaign.pipeline import Pipeline
    from memo.model.ir import Layer, ModelIR
    from memo.training.selection import weight_dtypes
    from memo.triage.precision_probe import STANDARD_PRECISIONS

    def chain(dtype: str) -> ModelIR:
        return ModelIR([Layer("x", "InputLayer", {"batch_shape": [None, 6], "dtype": "float32"}),
                        Layer("a", "Dense", {"units": 4}, ["x"]), Layer("b", "ReLU", {}, ["a"]),
                        Layer("c", "Dense", {"units": 2, "dtype": dtype}, ["b"])], ["c"])

    owner = SimpleNamespace(training=TrainingSelection(0.1, budget=0.1))
    first = Pipeline._sweep_probes(owner, chain("float32"))  # type: ignore[arg-type]
    assert [weight_dtypes(probe) for probe in first] == [("float32",), *[s for s in STANDARD_PRECISIONS
                                                                         if s != ("float32",)]]
    assert all(layer.class_name == "Dense" for probe in first[1:] for layer in probe.body)
    assert Pipeline._sweep_probes(owner, chain("float16")) == []  # float16 + float32 was swept with the first
    odd = chain("float16")
    odd.get("a").config["dtype"] = "bfloat16"  # bfloat16, float16 and the ReLU's float32: not a standard set
    [probe] = Pipeline._sweep_probes(owner, odd)  # type: ignore[arg-type]
    assert weight_dtypes(probe) == ("bfloat16", "float16", "float32") and len(probe.body) == 3
