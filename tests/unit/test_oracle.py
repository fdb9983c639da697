"""The oracle's maths and verdict rules, on hand-made execution results (pure numpy, no library)."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from memo.backends.result import BackendResult, ExecutionResult, StageResult
from memo.oracle import Thresholds, Verdict, agree, compare, d_mad, judge, mad, nonfinite_mask

REF = "keras-tensorflow"
CONSUMES = {REF: "keras", "keras-jax": "keras", "keras-torch": "keras", "onnxruntime": "onnx",
            "onnx2torch": "onnx", "onnx2pytorch": "onnx", "mxnet": "onnx-opset11"}
OK_STAGES = [StageResult("load", "ok", 0.1), StageResult("execute", "ok", 0.1)]


def make_result(failures: dict[str, StageResult] | None = None, names: list[str] | None = None) -> ExecutionResult:
    failures = failures or {}
    backends = {}
    for name in names or list(CONSUMES):
        stages = [failures[name]] if name in failures else list(OK_STAGES)
        backends[name] = BackendResult(name=name, consumes=CONSUMES.get(name, "keras"), stages=stages)
    return ExecutionResult(artifact_dir="/nowhere", reference=REF, output_names=["out"], backends=backends)


def same_outputs(array: np.ndarray, names: list[str] | None = None) -> dict[str, dict[str, np.ndarray]]:
    rng = np.random.default_rng(0)
    return {name: {"out": array + rng.normal(0, 1e-7, array.shape).astype(array.dtype)}
            for name in names or list(CONSUMES)}


BASE = np.random.default_rng(1).uniform(-1, 1, (2, 5)).astype(np.float32)


# ------------------------------------------------------------------ formulas
def test_mad_is_mean_absolute_deviation() -> None:
    assert mad(np.array([1.0, 2.0, 3.0]), np.array([1.0, 0.0, 6.0])) == pytest.approx(5 / 3)


def test_d_mad_follows_equation_6() -> None:
    o = np.array([1.0, -1.0, 2.0])
    y = o + np.array([0.3, 0.0, 0.0])  # delta 0.1
    y_prime = o + np.array([0.0, 0.9, 0.0])  # delta 0.3
    assert d_mad(o, y, y_prime) == pytest.approx(abs(0.1 - 0.3) / (0.1 + 0.3))


def test_d_mad_zero_cases() -> None:
    o = np.zeros(4)
    assert d_mad(o, o, o) == 0.0  # both identical to the reference: no division by zero
    assert d_mad(o, o + 1, o) == 1.0  # one exact, one off
    assert d_mad(np.zeros(0), np.zeros(0), np.zeros(0)) == 0.0  # empty outputs


def test_d_mad_uses_the_reference_so_a_sign_flip_is_caught() -> None:
    # Comparing mean absolute output sizes (without O) would call -O and O identical.
    o = np.array([0.5, -0.25, 1.0])
    assert d_mad(o, -o, o) == 1.0


def test_nonfinite_mask_codes_nan_and_signed_infinities() -> None:
    mask = nonfinite_mask(np.array([0.0, np.nan, np.inf, -np.inf], dtype=np.float32))
    assert mask.tolist() == [0, 1, 2, 3]
    assert nonfinite_mask(np.array([1, 2, 3])).tolist() == [0, 0, 0]


def test_agree_needs_same_shape_masks_and_values() -> None:
    t = Thresholds()
    assert agree([BASE], [BASE + 1e-6], t)
    assert not agree([BASE], [BASE[:1]], t)
    assert not agree([BASE], [BASE + 0.5], t)
    with_nan = BASE.copy()
    with_nan[0, 0] = np.nan
    assert not agree([BASE], [with_nan], t)
    assert agree([with_nan], [with_nan.copy()], t)


# ------------------------------------------------------------------ numeric verdicts
def test_agreeing_backends_give_no_verdict() -> None:
    assert judge(make_result(), outputs=same_outputs(BASE)) == []


def test_nan_where_reference_has_none() -> None:
    outputs = same_outputs(BASE)
    outputs["onnxruntime"]["out"][1, 2] = np.nan
    verdicts = judge(make_result(), outputs=outputs)
    assert [(v.kind, v.backend) for v in verdicts] == [("nan", "onnxruntime")]
    assert "where the reference has none" in verdicts[0].message


def test_differing_nonfinite_positions() -> None:
    base = BASE.copy()
    base[0, 0] = np.inf
    outputs = same_outputs(base)
    outputs["mxnet"]["out"][0, 0] = -np.inf  # same position, other sign
    verdicts = judge(make_result(), outputs=outputs)
    assert [(v.kind, v.backend) for v in verdicts] == [("nan", "mxnet")]
    assert "differ" in verdicts[0].message


def test_shape_mismatch_skips_numeric_checks() -> None:
    outputs = same_outputs(BASE)
    outputs["onnx2torch"]["out"] = BASE.reshape(5, 2)
    verdicts = judge(make_result(), outputs=outputs)
    assert [(v.kind, v.backend) for v in verdicts] == [("shape", "onnx2torch")]
    assert "(5, 2)" in verdicts[0].message


def test_missing_output_is_a_shape_verdict() -> None:
    outputs = same_outputs(BASE)
    outputs["keras-jax"] = {}
    assert [(v.kind, v.backend) for v in judge(make_result(), outputs=outputs)] == [("shape", "keras-jax")]


def test_elementwise_inconsistency_reports_metrics() -> None:
    outputs = same_outputs(BASE)
    outputs["keras-torch"]["out"] = BASE + np.float32(0.05)
    verdicts = judge(make_result(), outputs=outputs)
    assert [(v.kind, v.backend) for v in verdicts] == [("inconsistency", "keras-torch")]
    metrics = verdicts[0].metrics
    assert metrics["max_abs_diff"] == pytest.approx(0.05, rel=1e-3)
    assert metrics["mismatched"] == BASE.size
    assert metrics["dmad"] > 0.99


def test_d_mad_check_alone_flags_with_loose_elementwise_tolerance() -> None:
    outputs = same_outputs(BASE)
    outputs["onnx2pytorch"]["out"] = BASE + np.float32(0.01)
    loose = Thresholds(atol=1.0, rtol=0.0, dmad=0.9, mad_floor=1e-4)
    verdicts = judge(make_result(), loose, outputs=outputs)
    assert [(v.kind, v.backend) for v in verdicts] == [("inconsistency", "onnx2pytorch")]
    assert "D_MAD" in verdicts[0].message and "elements outside" not in verdicts[0].message


def test_mad_floor_ignores_float_noise_even_when_d_mad_is_large() -> None:
    outputs = {name: {"out": BASE.copy()} for name in CONSUMES}
    outputs["keras-jax"]["out"] = BASE + np.float32(1e-6)  # D_MAD 1.0 against exact peers, but only noise
    comparisons = compare({k: list(v.values()) for k, v in outputs.items()}, REF, Thresholds())
    assert comparisons["keras-jax"].dmad == 1.0
    assert judge(make_result(), outputs=outputs) == []


def test_reference_blamed_when_every_other_backend_agrees_elsewhere() -> None:
    outputs = same_outputs(BASE + np.float32(0.2))
    outputs[REF]["out"] = BASE
    verdicts = judge(make_result(), outputs=outputs)
    assert [(v.kind, v.backend) for v in verdicts] == [("inconsistency", REF)]


def test_converter_blamed_when_all_its_backends_differ_alike() -> None:
    outputs = same_outputs(BASE)
    for name in ("onnxruntime", "onnx2torch", "onnx2pytorch"):
        outputs[name]["out"] = BASE * np.float32(-1)
    verdicts = judge(make_result(), outputs=outputs)
    assert [(v.kind, v.backend, v.stage) for v in verdicts] == [("inconsistency", "tf2onnx", "convert")]


def test_converter_not_blamed_when_its_backends_disagree_with_each_other() -> None:
    outputs = same_outputs(BASE)
    outputs["onnxruntime"]["out"] = BASE + np.float32(0.3)
    outputs["onnx2torch"]["out"] = BASE - np.float32(0.3)
    outputs["onnx2pytorch"]["out"] = BASE * np.float32(2)
    verdicts = judge(make_result(), outputs=outputs)
    assert sorted(v.backend for v in verdicts) == ["onnx2pytorch", "onnx2torch", "onnxruntime"]


# ------------------------------------------------------------------ failures
def test_one_failing_backend_is_a_crash_with_its_stage() -> None:
    failure = StageResult("execute", "crash", 0.2, exc_type="WorkerDied", message="killed by signal 11", signal=11)
    verdicts = judge(make_result({"onnx2torch": failure}), outputs=same_outputs(BASE))
    assert [(v.kind, v.backend, v.stage) for v in verdicts] == [("crash", "onnx2torch", "execute")]
    assert verdicts[0].metrics["signal"] == 11


def test_exception_is_a_crash_hang_is_a_hang_unsupported_stays_apart() -> None:
    failures = {"keras-jax": StageResult("load", "error", exc_type="ValueError", message="bad"),
                "mxnet": StageResult("convert", "unsupported", exc_type="NotImplementedError", message="Tile"),
                "onnxruntime": StageResult("execute", "hang", exc_type="Timeout", message="no answer")}
    verdicts = judge(make_result(failures), outputs=same_outputs(BASE, [REF, "keras-torch"]))
    assert sorted((v.kind, v.backend, v.stage) for v in verdicts) == [
        ("crash", "keras-jax", "load"), ("hang", "onnxruntime", "execute"), ("unsupported", "mxnet", "convert")]


def test_skipped_backends_are_not_findings() -> None:
    skipped = StageResult("convert", "skipped", message="no onnx file: tf2onnx unsupported")
    names = [REF, "keras-jax", "onnxruntime"]
    verdicts = judge(make_result({"onnxruntime": skipped}, names), outputs=same_outputs(BASE, names[:2]))
    assert verdicts == []


def test_model_failing_everywhere_is_invalid() -> None:
    failures = {name: StageResult("load", "error", exc_type="ValueError", message="x") for name in CONSUMES}
    verdicts = judge(make_result(failures), outputs={})
    assert [(v.kind, v.backend) for v in verdicts] == [("invalid", "*")]


def test_reference_failure_leaves_only_the_crash() -> None:
    failure = StageResult("execute", "error", exc_type="InvalidArgumentError", message="x")
    outputs = same_outputs(BASE, [n for n in CONSUMES if n != REF])
    verdicts = judge(make_result({REF: failure}), outputs=outputs)
    assert [(v.kind, v.backend) for v in verdicts] == [("crash", REF)]


# ------------------------------------------------------------------ serialization and purity
def test_verdict_and_result_round_trip_through_json() -> None:
    failure = StageResult("execute", "crash", 1.5, "WorkerDied", "signal 6", "", 6, None, "Fatal Python error")
    result = make_result({"mxnet": failure})
    again = ExecutionResult.from_json(json.loads(json.dumps(result.to_json())))
    assert again == result
    assert again.backends["mxnet"].status == "crash" and again.backends["mxnet"].stage_reached == "execute"
    verdict = Verdict("nan", "onnxruntime", "execute", "m", {"mad": 0.5})
    assert Verdict.from_json(json.loads(json.dumps(verdict.to_json()))) == verdict


def test_oracle_imports_no_dl_library() -> None:
    code = ("import sys, memo.oracle; heavy = {'tensorflow', 'torch', 'jax', 'keras', 'onnx', 'onnxruntime'};"
            "print(sorted(heavy & {m.split('.')[0] for m in sys.modules}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
