"""The optimizer catalogue of the training check (memo.backends.training_optimizers) and how the judge, triage and the
minimal script use the entry a check ran: pure, no library imported."""
from __future__ import annotations

from collections import Counter

import numpy as np

from memo.backends.training_optimizers import (CATALOGUE, OPTIMIZER_STAGE, choose_optimizer, constructor_text,
                                               optimizer_class, optimizer_entry)
from memo.kinds import StageStatus
from memo.oracle import Verdict
from memo.training.judge import judge_training, thresholds_for, worker_stages
from memo.triage.training_signature import training_parts

# the classes Keras on torch implements with its own torch._foreach kernels, and the generic ones
TORCH_OWN = {"SGD", "Adam", "AdamW", "Adamax", "Nadam", "RMSprop", "Adagrad", "Adadelta", "Lion"}
GENERIC = {"Ftrl", "Adafactor", "Lamb", "Muon"}


def test_the_catalogue_covers_every_optimizer_class_and_the_options_whose_code_differs() -> None:
    classes = {entry.class_name for entry in CATALOGUE.values()}
    assert TORCH_OWN | GENERIC <= classes
    options = {key for entry in CATALOGUE.values() for key in entry.config}
    assert {"momentum", "nesterov", "amsgrad", "centered", "weight_decay", "clipnorm", "clipvalue", "global_clipnorm",
            "use_ema", "gradient_accumulation_steps", "initial_accumulator_value"} <= options
    assert all(entry.steps == 3 and entry.learning_rate > 0 for entry in CATALOGUE.values())


def test_the_choice_is_a_pure_function_of_the_folder_name_and_covers_every_entry() -> None:
    names = [str(mutant_id) for mutant_id in range(1, 601)]
    chosen = [choose_optimizer(name) for name in names]
    assert chosen == [choose_optimizer(name) for name in names]  # the same entry on every rerun
    counts = Counter(chosen)
    assert set(counts) == set(CATALOGUE)  # a campaign's few hundred checked models cover them all
    assert max(counts.values()) < 3 * min(counts.values()), counts


def test_the_constructor_is_the_entry_and_an_unknown_name_says_what_is_known() -> None:
    assert constructor_text("nadam") == "keras.optimizers.Nadam(learning_rate=0.1)"
    assert constructor_text("sgd-nesterov") == "keras.optimizers.SGD(learning_rate=0.1, momentum=0.9, nesterov=True)"
    assert optimizer_class("adam-amsgrad") == "Adam" and optimizer_class("retired") == "retired"
    # a schedule is written as its own constructor, so the minimal script builds the same optimizer
    assert constructor_text("adam-exponential-decay") == (
        "keras.optimizers.Adam(learning_rate=keras.optimizers.schedules.ExponentialDecay(initial_learning_rate=0.1, "
        "decay_steps=1, decay_rate=0.5, staircase=True))")
    assert optimizer_entry("adam-exponential-decay").learning_rate == 0.1  # the judge's scale: the initial rate
    try:
        optimizer_entry("adamz")
    except KeyError as exc:
        assert "nadam" in str(exc)
    else:
        raise AssertionError("an unknown entry must fail")


def _stage(name: str, status: str = StageStatus.OK.value, message: str = "") -> object:
    from memo.backends.result import StageResult

    return StageResult(stage=name, status=status, exc_type="TypeError" if message else None, message=message)


def _record(update: np.ndarray, optimizer: str = "nadam") -> dict[str, np.ndarray]:
    return {"names": np.array(["low/kernel"]), "weight_dtypes": np.array(["bfloat16"]),
            "weight_scales": np.array([1.0]), "weights_finite": np.array([True]), "compute_dtype": np.array("bfloat16"),
            "optimizer": np.array(optimizer), "opt_0": update}


def test_a_nan_update_of_a_finite_weight_is_the_references_finding_and_a_crash_names_the_entry() -> None:
    """Nadam on a bfloat16 kernel (the probe's): NaN on TensorFlow (the reference) and JAX, a TypeError on torch.
    The NaN is one verdict against the reference naming JAX; torch's crash another; both name the entry."""
    stages = ["load", "prepare", OPTIMIZER_STAGE]
    ok = [_stage(name) for name in stages]
    nan = _record(np.full((5, 4), np.nan))
    arrays = {"keras-tensorflow": nan, "keras-jax": nan, "keras-torch": {k: v for k, v in nan.items() if k != "opt_0"}}
    crashed = [*ok[:2], _stage(OPTIMIZER_STAGE, StageStatus.ERROR.value, "_foreach_div() received (tuple, bfloat16)")]
    judgement = judge_training({"keras-tensorflow": ok, "keras-jax": ok, "keras-torch": crashed}, arrays,
                               "keras-tensorflow")
    found = {(v.kind, v.backend): v for v in judgement.verdicts}
    assert set(found) == {("training-nan", "keras-tensorflow"), ("training-crash", "keras-torch")}, found
    assert "(also on keras-jax)" in found["training-nan", "keras-tensorflow"].message
    assert judgement.optimizer == "nadam"
    for verdict in judgement.verdicts:
        assert verdict.stage == OPTIMIZER_STAGE and verdict.optimizer == "nadam"
        assert "[optimizer nadam: keras.optimizers.Nadam(learning_rate=0.1)]" in verdict.message
    # finite updates everywhere: no finding; a weight already non-finite before the step: none either
    finite = _record(np.ones((5, 4)))
    assert judge_training({name: ok for name in arrays}, {name: finite for name in arrays},
                          "keras-tensorflow").verdicts == []
    broken = {**nan, "weights_finite": np.array([False])}
    assert judge_training({name: ok for name in arrays}, {name: broken for name in arrays},
                          "keras-tensorflow").verdicts == []


def test_the_dedup_key_names_the_entrys_class_only_at_the_optimizer_stage() -> None:
    def parts(stage: str, optimizer: str) -> dict[str, object]:
        verdict = Verdict("training-inconsistency", "keras-torch", stage, "m",
                          extra={"training": {"name": "low/kernel", "optimizer": optimizer}})
        return training_parts(verdict, None)

    assert parts(OPTIMIZER_STAGE, "nadam")["optimizer"] == "Nadam"
    assert parts(OPTIMIZER_STAGE, "nadam") != parts(OPTIMIZER_STAGE, "lion")  # two root causes
    assert parts(OPTIMIZER_STAGE, "adam-amsgrad") == parts(OPTIMIZER_STAGE, "adam-ema")  # one class
    assert "optimizer" not in parts("gradients", "nadam")  # a gradient bug is no optimizer's
    assert worker_stages(OPTIMIZER_STAGE) == [OPTIMIZER_STAGE]


def test_the_update_tolerance_counts_the_entrys_steps_and_learning_rate() -> None:
    """Rounding a float16 weight at each step: ``8 eps * steps * max |w| / lr``: three steps of Nadam at 0.1,
    three of Adadelta at 1.0."""
    def atol(optimizer: str) -> float:
        record = {"weight_dtypes": np.array(["float16"]), "weight_scales": np.array([2.0]),
                  "optimizer": np.array(optimizer), "opt_0": np.ones(3)}
        return thresholds_for(record, "opt_0").atol

    eps = 8 * 2.0 ** -10
    assert np.isclose(atol("nadam"), eps * 3 * 2.0 / 0.1)
    assert np.isclose(atol("adadelta"), eps * 3 * 2.0 / 1.0)
    assert atol("nadam") > thresholds_for({"weight_dtypes": np.array(["float16"]), "weight_scales": np.array([2.0]),
                                           "adam_0": np.ones(3)}, "adam_0").atol  # Adam's two steps


def test_the_report_counts_the_optimizer_configurations_the_checks_stepped(tmp_path: object) -> None:
    from pathlib import Path

    from memo.model.ir import Layer, ModelIR
    from memo.report.training import training_coverage, training_optimizers
    from memo.store import CampaignStore, MutantRecord

    store = CampaignStore(Path(str(tmp_path)), create=True)
    ir = ModelIR(layers=[Layer(name="x", class_name="InputLayer", config={"batch_shape": [None, 3]})], outputs=["x"])
    checks = [{"optimizer": "nadam", "left_out": None, "verdicts": 2}, {"optimizer": "nadam", "left_out": None},
              {"optimizer": "lion", "left_out": "the reference did not prepare the model"}, None]
    for iteration, check in enumerate(checks):
        mutant = store.add_mutant(MutantRecord(iteration, "s", "NLA", "seed:s", "s", {}, ir.dumps(), True,
                                               diverse=True))
        result = {"reference": "keras-tensorflow", "backends": {}, **({"training": check} if check else {})}
        store.add_execution(mutant, result, 1.0, None)
        if iteration == 0:
            for stage in (OPTIMIZER_STAGE, "gradients"):  # only the optimizer stage's finding is the entry's
                store.add_verdict(mutant, Verdict("training-nan", "keras-tensorflow", stage, "m",
                                                  extra={"training": {"optimizer": "nadam"}}))
    assert training_coverage(store) == {"models": 3, "left_out": 1, "by_share": 3, "by_novelty": 0, "types": 0,
                                        "pairs": 0, "params": 0,  # the models hold no layer but their input
                                        "over_budget": 0, "budget": None, "check_s": None, "inference_s": None,
                                        "swept": []}  # no budget figures stored, no sweep
    assert training_optimizers(store) == [
        {"optimizer": "nadam", "constructor": "keras.optimizers.Nadam(learning_rate=0.1)", "models": 2,
         "left_out": 0, "findings": 1},
        {"optimizer": "lion", "constructor": "keras.optimizers.Lion(learning_rate=0.1)", "models": 1, "left_out": 1,
         "findings": 0}]
