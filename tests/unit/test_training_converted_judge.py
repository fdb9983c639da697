"""Judging a converted torch module's training check (onnx2torch, onnx2pytorch): its inference-mode input gradients
against the reference's (memo.training.judge's inference-mode chain; pure numpy)."""
from __future__ import annotations

import numpy as np

from memo.backends.result import StageResult
from memo.backends.training import EVAL_STAGES, TRAINING_STAGES, projection, projection_terms
from memo.training.judge import TrainingVerdict, array_name, judge_training, worker_stages

REF, TORCH, CONVERTED = "keras-tensorflow", "keras-torch", "onnx2torch"


def stages(names: tuple[str, ...], **statuses: str) -> list[StageResult]:
    """``load``, ``prepare`` and the worker stages ``names``, each ok except those named (stage=status)."""
    return [StageResult(stage=name, status=statuses.get(name, "ok"), exc_type="RuntimeError" if name in statuses
                        else None, message=f"{name} failed" if name in statuses else "")
            for name in ("load", "prepare", *names)]


def keras_arrays(seed: int = 0) -> dict[str, np.ndarray]:
    """A Keras trainer's arrays with the inference-mode stages: one weight, one input."""
    rng = np.random.default_rng(seed)
    grad = rng.standard_normal((4, 3)).astype(np.float32)
    return {"names": np.array(["dense/kernel"]), "stages": np.array([*TRAINING_STAGES, *EVAL_STAGES]),
            "out_0": rng.standard_normal((2, 3)).astype(np.float32), "loss": np.array(0.7, dtype=np.float32),
            "grad_0": grad, "input_grad_0": rng.standard_normal((2, 4)).astype(np.float32),
            "sgd_0": -grad, "adam_0": np.sign(grad),
            "eval_out_0": rng.standard_normal((2, 3)).astype(np.float32),
            "eval_grad_0": rng.standard_normal((2, 4)).astype(np.float32)}


def converted_arrays(reference: dict[str, np.ndarray], **changed: np.ndarray) -> dict[str, np.ndarray]:
    """A converted module's arrays: the reference's inference-mode ones, with ``changed`` keys replaced."""
    own = {"names": np.array([], dtype=str), "stages": np.array(EVAL_STAGES),
           **{key: reference[key] for key in ("eval_out_0", "eval_grad_0")}}
    return {**own, **changed}


def judge(converted: dict[str, np.ndarray], **statuses: str) -> list[TrainingVerdict]:
    ref = keras_arrays()
    return judge_training({REF: stages((*TRAINING_STAGES, *EVAL_STAGES)), TORCH: stages((*TRAINING_STAGES,
                                                                                        *EVAL_STAGES)),
                           CONVERTED: stages(EVAL_STAGES, **statuses)},
                          {REF: ref, TORCH: keras_arrays(), CONVERTED: converted}, REF).verdicts


def test_an_agreeing_converted_module_has_no_verdict_and_is_not_asked_for_the_training_stages() -> None:
    assert judge(converted_arrays(keras_arrays())) == []


def test_a_wrong_input_gradient_is_a_training_inconsistency_at_eval_gradients() -> None:
    ref = keras_arrays()
    wrong = ref["eval_grad_0"].copy()
    wrong[1, 2] += 0.5
    [verdict] = judge(converted_arrays(ref, eval_grad_0=wrong))
    assert (verdict.kind, verdict.backend, verdict.stage, verdict.array) == \
        ("training-inconsistency", CONVERTED, "eval_gradients", "eval_grad_0")
    assert verdict.name == "input 0" and "1/8 elements" in verdict.message


def test_a_gradient_of_zeros_where_the_reference_has_one_is_a_finding_and_nan_is_training_nan() -> None:
    ref = keras_arrays()
    [zeros] = judge(converted_arrays(ref, eval_grad_0=np.zeros_like(ref["eval_grad_0"])))
    assert zeros.kind == "training-inconsistency" and "8/8 elements" in zeros.message
    nan = ref["eval_grad_0"].copy()
    nan[0, 0] = np.nan
    [verdict] = judge(converted_arrays(ref, eval_grad_0=nan))
    assert (verdict.kind, verdict.stage) == ("training-nan", "eval_gradients")


def test_a_forward_difference_is_left_to_the_inference_check() -> None:
    """The outputs differ (the converter's inference verdict): no training verdict, gradients not judged."""
    ref = keras_arrays()
    assert judge(converted_arrays(ref, eval_out_0=ref["eval_out_0"] + 1.0,
                                  eval_grad_0=ref["eval_grad_0"] + 1.0)) == []


def test_a_failing_backward_pass_is_a_training_crash_and_a_refused_forward_pass_is_not() -> None:
    ref = keras_arrays()
    [crash] = judge({k: v for k, v in converted_arrays(ref).items() if k != "eval_grad_0"}, eval_gradients="error")
    assert (crash.kind, crash.backend, crash.stage) == ("training-crash", CONVERTED, "eval_gradients")
    [refused] = judge({"stages": np.array(EVAL_STAGES)}, eval_forward="unsupported", eval_gradients="unsupported")
    assert refused.kind == "unsupported"


def test_a_keras_trainer_is_not_judged_in_inference_mode() -> None:
    """Keras on torch's inference-mode gradient differs: it is judged in training mode only (its own chains)."""
    ref = keras_arrays()
    other = {**ref, "eval_grad_0": ref["eval_grad_0"] + 1.0}
    verdicts = judge_training({REF: stages((*TRAINING_STAGES, *EVAL_STAGES)),
                               TORCH: stages((*TRAINING_STAGES, *EVAL_STAGES))}, {REF: ref, TORCH: other}, REF).verdicts
    assert verdicts == []


def test_the_inference_stages_names_and_worker_stages() -> None:
    assert worker_stages("eval_gradients") == ["eval_forward", "eval_gradients"]
    assert array_name(keras_arrays(), "eval_grad_0") == "input 0"


def test_every_worker_builds_the_same_loss_terms() -> None:
    """Keras's loss and a converted module's come from one function: the float16 output summed in float32, the
    integer output left out, each divided by its batch."""
    terms = projection_terms([(2, 3), (2,), (4, 5)], ["float32", "int32", "float16"])
    assert [(index, divisor, widen) for index, _, divisor, widen in terms] == [(0, 2.0, False), (2, 4.0, True)]
    assert np.array_equal(terms[1][1], projection((4, 5), 2))
