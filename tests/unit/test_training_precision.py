"""The training check's tolerance scaled to the precision a model computes in, one verdict where the reference is
the odd one out, and the stages triage asks for (memo.training.judge, memo.training.truth): pure numpy."""
from __future__ import annotations

import numpy as np

from memo.training.judge import TrainingVerdict, judge_training, thresholds_for, worker_stages
from memo.training.truth import assess_verdict
from memo.truth import CONFIRMED, NOISE
from tests.unit.test_training_judge import JAX, REF, TORCH, arrays, ok_stages

FLOAT16_ULP_AT_1 = 2.0 ** -10  # float16's spacing just above 1
SGD_RATE = 0.1


def with_precision(compute: str, weights: str) -> dict[str, np.ndarray]:
    """The test arrays as a worker records them for a model computing in ``compute`` with weights of ``weights``,
    each weight's largest magnitude 1."""
    return {**arrays(), "compute_dtype": np.array(compute), "weight_dtypes": np.array([weights, weights]),
            "weight_scales": np.array([1.0, 1.0])}


def verdicts_with(base: dict[str, np.ndarray], jax_changes: dict[str, np.ndarray]) -> list[TrainingVerdict]:
    return judge_training({REF: ok_stages(), JAX: ok_stages()}, {REF: base, JAX: {**base, **jax_changes}},
                          REF).verdicts


def test_one_float16_step_of_a_weight_is_no_sgd_difference_but_a_real_one_is() -> None:
    half = with_precision("float16", "float16")
    one_ulp = {"sgd_0": half["sgd_0"] + np.float32(FLOAT16_ULP_AT_1 / SGD_RATE)}
    assert verdicts_with(half, one_ulp) == []  # training-inconsistency-keras-torch-8f5fa77d05 of campaign n40
    single = with_precision("float32", "float32")
    [verdict] = verdicts_with(single, one_ulp)  # a float32 weight rounds 8192 times finer: that is a difference
    assert (verdict.kind, verdict.stage, verdict.name) == ("training-inconsistency", "sgd", "dense/kernel")
    [verdict] = verdicts_with(half, {"sgd_0": half["sgd_0"] + np.float32(0.5)})
    assert verdict.stage == "sgd"


def test_an_update_names_the_float32_weight_that_differs_before_a_float16_one() -> None:
    mixed = {**with_precision("float32", "float32"), "weight_dtypes": np.array(["float16", "float32"])}
    both = {"sgd_0": mixed["sgd_0"] + np.float32(0.5), "sgd_1": mixed["sgd_1"] + np.float32(0.5)}
    [verdict] = verdicts_with(mixed, both)  # the float16 weight comes first in the model, the float32 one is named
    assert (verdict.stage, verdict.array) == ("sgd", "sgd_1")


def test_a_float16_layer_anywhere_loosens_the_gradients_to_float16_noise_only() -> None:
    half, single = with_precision("float16", "float32"), with_precision("float32", "float32")
    noisy = {"grad_0": half["grad_0"] * np.float32(1 + 4 * FLOAT16_ULP_AT_1)}
    assert verdicts_with(half, noisy) == []
    assert [v.stage for v in verdicts_with(single, noisy)] == ["gradients"]
    assert [v.stage for v in verdicts_with(half, {"grad_0": half["grad_0"] + np.float32(1.0)})] == ["gradients"]
    assert thresholds_for(half, "grad_0").atol == thresholds_for(half, "out_0").atol == 8 * FLOAT16_ULP_AT_1


def test_a_reference_the_others_agree_against_is_one_verdict_against_it() -> None:
    base = arrays()
    odd = {**base, "grad_1": base["grad_1"] + np.float32(0.5)}
    judgement = judge_training({REF: ok_stages(), JAX: ok_stages(), TORCH: ok_stages()},
                               {REF: odd, JAX: base, TORCH: base}, REF)
    assert [(v.kind, v.backend, v.stage, v.name) for v in judgement.verdicts] == [
        ("training-inconsistency", REF, "gradients", "dense/bias")]
    assert "keras-jax, keras-torch agree" in judgement.verdicts[0].message
    apart = {**base, "grad_1": base["grad_1"] - np.float32(0.5)}  # the other two differ from each other as well
    judgement = judge_training({REF: ok_stages(), JAX: ok_stages(), TORCH: ok_stages()},
                               {REF: odd, JAX: base, TORCH: apart}, REF)
    assert sorted(v.backend for v in judgement.verdicts) == [JAX, TORCH]


def test_triage_asks_the_workers_only_for_the_stages_its_finding_needs() -> None:
    assert worker_stages("gradients") == ["forward", "gradients"]
    assert worker_stages("state") == ["forward"]
    assert worker_stages("adam") == ["adam"] and worker_stages("sgd") == ["sgd"]
    assert worker_stages("prepare") == []


def test_float64_calls_a_float16_rounding_of_an_update_noise_and_a_real_difference_a_defect() -> None:
    half = with_precision("float16", "float16")
    wide = {key: value.astype(np.float64) if value.dtype.kind == "f" else value for key, value in half.items()}
    step = np.float32(FLOAT16_ULP_AT_1 / SGD_RATE)
    own = {REF: {**half, "sgd_0": half["sgd_0"] - step}, TORCH: {**half, "sgd_0": half["sgd_0"] + step}}
    verdict = TrainingVerdict("training-inconsistency", TORCH, "sgd", "", "sgd_0", "dense/kernel")
    assert assess_verdict(verdict, own, wide, [wide, wide], REF).decision == NOISE
    own[TORCH] = {**half, "sgd_0": half["sgd_0"] + np.float32(2.0)}
    truth = assess_verdict(verdict, own, wide, [wide, wide], REF)
    assert truth.decision == CONFIRMED and truth.blamed == "accused"


def test_the_float64_engine_shares_no_kernels_with_the_accused_backend() -> None:
    from memo.training.truth import ENGINE, ENGINE_JAX, engine_for

    assert engine_for("keras-torch") == ENGINE_JAX  # torch is judged by Keras on JAX (x64)
    assert engine_for("keras-jax") == ENGINE == engine_for("keras-tensorflow")
