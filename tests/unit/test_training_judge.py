"""The training check's judging and its float64 truth (memo.training.judge, memo.training.truth): pure numpy."""
from __future__ import annotations

import numpy as np

from memo.backends.result import StageResult
from memo.kinds import BUG_KINDS, TRAINING_KINDS, VERDICT_KINDS
from memo.training.judge import array_name, judge_training, stage_keys
from memo.training.judge import TrainingVerdict
from memo.training.truth import assess_verdict
from memo.truth import CONFIRMED, ILL_CONDITIONED, NOISE, UNAVAILABLE

REF, JAX, TORCH = "keras-tensorflow", "keras-jax", "keras-torch"
WORKER_STAGES = ("load", "prepare", "forward", "gradients", "sgd", "adam")


def ok_stages(**statuses: str) -> list[StageResult]:
    """Every worker stage ok, except those named (stage=status)."""
    return [StageResult(stage=name, status=statuses.get(name, "ok"), exc_type="RuntimeError" if name in statuses
                        else None, message=f"{name} failed" if name in statuses else "") for name in WORKER_STAGES]


def arrays(seed: int = 0) -> dict[str, np.ndarray]:
    """A training check's arrays as a worker writes them: two weights, one input, BatchNormalization's state."""
    rng = np.random.default_rng(seed)
    data = {"names": np.array(["dense/kernel", "dense/bias"]), "state_names": np.array(["bn/moving_mean"]),
            "notes": np.array(["drop: Dropout.rate 0.5 -> 0"]),
            "out_0": rng.standard_normal((2, 3)), "loss": np.array(0.7), "state_0": rng.standard_normal(3),
            "grad_0": rng.standard_normal((4, 3)), "grad_1": rng.standard_normal(3),
            "input_grad_0": rng.standard_normal((2, 4))}
    data.update({f"sgd_{i}": -data[f"grad_{i}"] for i in range(2)})
    data.update({f"adam_{i}": np.sign(data[f"grad_{i}"]) for i in range(2)})
    return {key: value.astype(np.float32) if value.dtype.kind == "f" else value for key, value in data.items()}


def judge(**changed: dict[str, np.ndarray]) -> list[TrainingVerdict]:
    """The verdicts when JAX's arrays have ``changed`` keys (TensorFlow's and torch's are the same arrays)."""
    base = arrays()
    jax_arrays = {**base, **changed.get("jax", {})}
    return judge_training({REF: ok_stages(), JAX: ok_stages(), TORCH: ok_stages()},
                          {REF: base, JAX: jax_arrays, TORCH: base}, REF).verdicts


def test_training_kinds_are_verdict_kinds_not_yet_triaged() -> None:
    assert TRAINING_KINDS <= set(VERDICT_KINDS)
    assert not TRAINING_KINDS & BUG_KINDS


def test_agreeing_backends_make_no_verdict_and_notes_are_kept() -> None:
    base = arrays()
    noisy = {key: (value * (1 + 1e-6)).astype(value.dtype) if value.dtype.kind == "f" else value
             for key, value in base.items()}
    judgement = judge_training({REF: ok_stages(), JAX: ok_stages()}, {REF: base, JAX: noisy}, REF)
    assert judgement.verdicts == [] and judgement.left_out is None
    assert judgement.notes == ["drop: Dropout.rate 0.5 -> 0"]


def test_a_wrong_gradient_is_pinned_to_gradients_and_named_by_its_weight() -> None:
    grad = arrays()["grad_1"].copy()
    grad[0] += 0.5
    [verdict] = judge(jax={"grad_1": grad})
    assert (verdict.kind, verdict.backend, verdict.stage) == ("training-inconsistency", JAX, "gradients")
    assert verdict.array == "grad_1" and verdict.name == "dense/bias"
    assert verdict.figures["mismatched"] == 1


def test_a_forward_difference_is_one_verdict_at_forward_and_the_optimizer_is_judged_apart() -> None:
    base = arrays()
    out = base["out_0"] + 1.0
    grad = base["grad_0"] + 1.0
    adam = -base["adam_0"]
    verdicts = judge(jax={"out_0": out, "grad_0": grad, "adam_0": adam})
    assert [(v.kind, v.stage) for v in verdicts] == [("training-inconsistency", "forward"),
                                                      ("training-inconsistency", "adam")]


def test_state_and_loss_are_stages_of_their_own() -> None:
    assert [v.stage for v in judge(jax={"loss": np.array(3.0, dtype=np.float32)})] == ["loss"]
    state = arrays()["state_0"] + 0.1
    assert [v.stage for v in judge(jax={"state_0": state})] == ["state"]


def test_nan_where_the_reference_has_none_is_training_nan() -> None:
    grad = arrays()["input_grad_0"].copy()
    grad[0, 0] = np.nan
    [verdict] = judge(jax={"input_grad_0": grad})
    assert (verdict.kind, verdict.stage, verdict.name) == ("training-nan", "gradients", "input 0")


def test_a_shape_difference_is_an_inconsistency() -> None:
    [verdict] = judge(jax={"sgd_0": np.zeros((3, 4), dtype=np.float32)})
    assert verdict.kind == "training-inconsistency" and verdict.stage == "sgd" and "shape" in verdict.message


def test_a_stage_failing_where_the_reference_ran_is_a_training_crash() -> None:
    base = arrays()
    judgement = judge_training({REF: ok_stages(), JAX: ok_stages(gradients="error", sgd="crash")},
                               {REF: base, JAX: base}, REF)
    assert [(v.kind, v.stage) for v in judgement.verdicts] == [("training-crash", "gradients"),
                                                                ("training-crash", "sgd")]
    assert "RuntimeError: gradients failed" in judgement.verdicts[0].message


def test_a_stage_the_reference_failed_is_not_judged() -> None:
    base = arrays()
    wrong = {**base, "grad_0": base["grad_0"] + 1}
    judgement = judge_training({REF: ok_stages(gradients="error"), JAX: ok_stages()}, {REF: base, JAX: wrong}, REF)
    assert [(v.backend, v.stage) for v in judgement.verdicts] == [(REF, "gradients")]  # none against JAX's arrays


def test_a_model_the_reference_leaves_out_is_not_judged() -> None:
    stages = ok_stages(prepare="unsupported")
    judgement = judge_training({REF: stages, JAX: ok_stages()}, {REF: {}, JAX: arrays()}, REF)
    assert judgement.verdicts == [] and "prepare unsupported" in (judgement.left_out or "")


def test_a_backend_that_declines_is_unsupported_and_a_skipped_one_says_nothing() -> None:
    base = arrays()
    skipped = [StageResult(stage="start", status="skipped", message="unavailable: no jax")]
    judgement = judge_training({REF: ok_stages(), JAX: ok_stages(prepare="unsupported"), TORCH: skipped},
                               {REF: base, JAX: {}, TORCH: {}}, REF)
    assert [(v.kind, v.backend, v.stage) for v in judgement.verdicts] == [("unsupported", JAX, "prepare")]


def test_stage_keys_are_ordered_by_index_weights_before_inputs() -> None:
    keys = {f"grad_{i}": np.zeros(1) for i in (10, 2, 1)} | {"input_grad_0": np.zeros(1), "out_0": np.zeros(1)}
    assert stage_keys(keys, "gradients") == ["grad_1", "grad_2", "grad_10", "input_grad_0"]
    assert array_name(arrays(), "adam_0") == "dense/kernel" and array_name(arrays(), "out_0") == "output 0"


def _truth_case(moved_by: float, torch_error: float) -> tuple[TrainingVerdict, dict[str, dict[str, np.ndarray]],
                                                               dict[str, np.ndarray], list[dict[str, np.ndarray]]]:
    wide = {key: value.astype(np.float64) if value.dtype.kind == "f" else value for key, value in arrays().items()}
    moved = {**wide, "grad_0": wide["grad_0"] + moved_by}
    own = {REF: arrays(), JAX: arrays(), TORCH: {**arrays(), "grad_0": arrays()["grad_0"] + np.float32(torch_error)}}
    return TrainingVerdict("training-inconsistency", TORCH, "gradients", ""), own, wide, [moved, moved]


def test_float64_confirms_the_backend_far_from_it() -> None:
    verdict, own, wide, moved = _truth_case(0.0, 0.5)
    truth = assess_verdict(verdict, own, wide, moved, REF)
    assert truth.decision == CONFIRMED and truth.blamed == "accused"
    assert truth.errors[TORCH] > 100 and truth.errors[REF] < 1
    # torch is judged by Keras on JAX (x64), which shares none of its kernels
    assert "Keras on JAX (x64)" in truth.method and "training stage gradients" in truth.method
    assert "kernels too" not in truth.reason
    jax_verdict = TrainingVerdict("training-inconsistency", JAX, "gradients", "")
    jax_own = {**own, JAX: own[TORCH], TORCH: arrays()}
    assert "Keras on torch" in assess_verdict(jax_verdict, jax_own, wide, moved, REF).method


def test_a_gradient_that_moves_under_a_few_ulps_is_ill_conditioned() -> None:
    verdict, own, wide, moved = _truth_case(0.05, 0.5)
    truth = assess_verdict(verdict, own, wide, moved, REF)
    assert truth.decision == ILL_CONDITIONED and truth.condition is not None and truth.condition > 1


def test_within_float_noise_of_float64_is_noise_and_no_truth_is_unavailable() -> None:
    verdict, own, wide, moved = _truth_case(0.0, 1e-6)
    assert assess_verdict(verdict, own, wide, moved, REF).decision == NOISE
    assert assess_verdict(verdict, own, "float64-torch failed at prepare", [], REF).decision == UNAVAILABLE


def test_layers_random_in_training_are_made_deterministic_or_leave_the_model_out() -> None:
    """memo.backends.training.neutralize on stand-ins for Keras layers (it reads class names and attributes only)."""
    import pytest

    from memo.backends.training import RandomInTraining, neutralize

    def layer(class_name: str, name: str, **attributes: object) -> object:
        return type(class_name, (), {"name": name, **attributes})()

    dropout, noise = layer("Dropout", "drop", rate=0.5, _seed_generators=[1]), layer("GaussianNoise", "g", stddev=0.2)
    cell = layer("LSTMCell", "lstm_cell", dropout=0.1, recurrent_dropout=0.0, _seed_generators=[1])
    model = type("Model", (), {"_flatten_layers": lambda self, **_: [dropout, noise, cell]})()
    assert neutralize(model) == ["drop: Dropout.rate 0.5 -> 0", "g: GaussianNoise.stddev 0.2 -> 0",
                                 "lstm_cell: LSTMCell.dropout 0.1 -> 0"]
    assert dropout.rate == noise.stddev == cell.dropout == 0.0  # type: ignore[attr-defined]
    seen: list[object] = []
    flip = layer("RandomFlip", "flip", _seed_generators=[1],
                 call=lambda self, x, training=None: seen.append(training) or x)
    model = type("Model", (), {"_flatten_layers": lambda self, **_: [flip]})()
    assert neutralize(model) == ["flip: RandomFlip runs as in inference"]
    assert flip.call("x", training=True) == "x" and seen == [False]  # type: ignore[attr-defined]
    odd = layer("Shuffle", "shuffle", _seed_generators=[1], call=lambda self, x: x)  # no training argument
    model = type("Model", (), {"_flatten_layers": lambda self, **_: [odd]})()
    with pytest.raises(RandomInTraining, match=r"shuffle \(Shuffle\) random in training"):
        neutralize(model)


def test_the_reference_failing_where_another_backend_finished_is_its_training_crash() -> None:
    base = arrays()
    judgement = judge_training({REF: ok_stages(gradients="crash"), JAX: ok_stages(),
                                TORCH: ok_stages(gradients="error")}, {REF: base, JAX: base, TORCH: base}, REF)
    assert [(v.kind, v.backend, v.stage) for v in judgement.verdicts] == [("training-crash", REF, "gradients")]
    assert "(finished by keras-jax)" in judgement.verdicts[0].message
    judgement = judge_training({REF: ok_stages(prepare="error"), JAX: ok_stages()}, {REF: {}, JAX: base}, REF)
    assert judgement.left_out and [(v.backend, v.stage) for v in judgement.verdicts] == [(REF, "prepare")]
    declined = judge_training({REF: ok_stages(prepare="unsupported"), JAX: ok_stages()}, {REF: {}, JAX: base}, REF)
    assert declined.verdicts == []
