"""The oracle's maths and verdict rules, on hand-made execution results (pure numpy, no library)."""
from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import numpy as np
import pytest

from memo.backends.result import BackendResult, ExecutionResult, StageResult
from memo.kinds import VerdictKind
from memo.oracle import (Comparison, Thresholds, Verdict, agree, compare, d_mad, judge, mad, mismatch, nonfinite_mask,
                         outputs_agree)

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
    # the reference makes Inf itself: how special values propagate is judged by the special-value rule
    assert [(v.kind, v.backend, v.numeric_kind) for v in verdicts] == [("special", "mxnet", "nan")]
    assert "differ" in verdicts[0].message


def test_reference_finite_keeps_nan_verdicts() -> None:
    outputs = same_outputs(BASE.copy())
    outputs["mxnet"]["out"][0, 0] = np.nan  # the reference has no special value anywhere
    verdicts = judge(make_result(), outputs=outputs)
    assert [(v.kind, v.backend) for v in verdicts] == [("nan", "mxnet")]


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
    figures = verdicts[0].comparison
    assert figures.max_abs_diff == pytest.approx(0.05, rel=1e-3)
    assert figures.mismatched == BASE.size
    assert figures.dmad > 0.99


def test_d_mad_alone_never_makes_an_inconsistency_but_is_reported_with_one() -> None:
    outputs = same_outputs(BASE)
    outputs["onnx2pytorch"]["out"] = BASE + np.float32(0.01)
    loose = Thresholds(atol=1.0, rtol=0.0, dmad=0.9, mad_floor=1e-4)
    assert judge(make_result(), loose, outputs=outputs) == []  # no element outside tolerance: a repro could not confirm it
    verdicts = judge(make_result(), Thresholds(atol=1e-3, rtol=0.0), outputs=outputs)
    assert [(v.kind, v.backend) for v in verdicts] == [("inconsistency", "onnx2pytorch")]
    assert "D_MAD" in verdicts[0].message and "elements outside" in verdicts[0].message


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


def test_reference_blamed_when_only_keras_backends_ran_and_they_agree() -> None:
    # tf2onnx failed, so only keras-jax and keras-torch remain: agreeing with each other against TensorFlow
    # is one TensorFlow finding (it used to need two artifact kinds and filed two bugs against JAX and torch).
    names = [REF, "keras-jax", "keras-torch"]
    outputs = same_outputs(BASE + np.float32(0.2), names)
    outputs[REF]["out"] = BASE
    verdicts = judge(make_result(names=names), outputs=outputs)
    assert [(v.kind, v.backend) for v in verdicts] == [("inconsistency", REF)]
    assert ["keras-jax", "keras-torch"] in verdicts[0].attribution.agreement


def test_large_magnitude_outputs_with_relative_noise_agree() -> None:
    big = (BASE * np.float32(1e29)).astype(np.float32)
    rng = np.random.default_rng(3)
    outputs = {name: {"out": (big * (1 + rng.normal(0, 1e-7, big.shape))).astype(np.float32)} for name in CONSUMES}
    outputs["keras-jax"]["out"] = big.copy()  # a bit-exact peer: D_MAD is 1 for everyone else
    assert judge(make_result(), outputs=outputs) == []
    outputs["keras-torch"]["out"] = (big * np.float32(1.01)).astype(np.float32)
    assert [(v.kind, v.backend) for v in judge(make_result(), outputs=outputs)] == [("inconsistency", "keras-torch")]


def test_outputs_are_judged_one_by_one_and_the_verdict_names_the_output() -> None:
    small, large = BASE, (BASE * np.float32(1e6)).astype(np.float32)
    outputs = {name: {"small": small.copy(), "large": large.copy()} for name in CONSUMES}
    outputs["onnxruntime"]["small"] = small + np.float32(0.05)  # invisible next to the large output if pooled
    result = make_result()
    result.output_names = ["small", "large"]
    verdicts = judge(result, outputs=outputs)
    assert [(v.kind, v.backend) for v in verdicts] == [("inconsistency", "onnxruntime")]
    assert verdicts[0].comparison.output == 0 and verdicts[0].comparison.output_name == "small"
    assert "output 0 (small)" in verdicts[0].message


def test_half_precision_outputs_get_looser_tolerances() -> None:
    half = BASE.astype(np.float16)
    noisy = (half.astype(np.float32) * np.float32(1 + 3e-3)).astype(np.float16)  # a few float16 ulps
    assert outputs_agree(noisy, half, Thresholds())
    assert not outputs_agree(noisy.astype(np.float32) * np.float32(1.1), half.astype(np.float32), Thresholds())


def test_mismatch_counts_elements_outside_the_scaled_tolerance() -> None:
    o = np.full(10, 1e6, dtype=np.float64)
    y = o.copy()
    y[3] += 5e3  # 5e-3 relative: outside rtol 1e-3 + atol 1e-3 * 1e6
    count, max_abs, tolerance = mismatch(y, o, Thresholds())
    assert (count, max_abs, tolerance) == (1, 5e3, pytest.approx(1e3))
    assert not outputs_agree(y, o, Thresholds()) and outputs_agree(o, o, Thresholds())


def test_a_few_elements_just_past_the_tolerance_with_a_noise_level_mean_are_float_noise() -> None:
    """Seen in a campaign: 1 of 627,200 elements at 1.3 times the tolerance, mean deviation 7e-7."""
    o = np.random.default_rng(3).uniform(0, 2, 627_200).astype(np.float32)
    y = o + np.float32(5e-7)
    o[1234] = np.float32(0.3)
    y[1234] = np.float32(0.3 + 1.6e-3)  # past atol 1e-3 + rtol 1e-3 * 0.3, by a fifth
    assert mismatch(y, o, Thresholds())[0] == 0 and outputs_agree(y, o, Thresholds())
    assert mismatch(y, o, Thresholds(spike=1.0))[0] == 1, "without the spike allowance it is one element"
    far = y.copy()
    far[99] = o[99] + np.float32(0.5)  # far past the tolerance: a real difference, and the other one counts again
    assert mismatch(far, o, Thresholds())[0] == 2
    wide = o + np.float32(2e-4)  # the mean deviation above the floor: the element past the tolerance counts
    wide[1234] = np.float32(0.3 + 1.6e-3)
    assert mismatch(wide, o, Thresholds())[0] == 1
    outputs = same_outputs(o)
    outputs["keras-jax"]["out"] = y
    assert judge(make_result(), outputs=outputs) == []


def test_special_values_turn_numeric_findings_into_special() -> None:
    outputs = same_outputs(BASE)
    outputs["onnxruntime"]["out"][1, 2] = np.nan
    outputs["keras-torch"]["out"] = BASE + np.float32(0.05)
    verdicts = judge(make_result(), outputs=outputs, special_values=True)
    assert sorted((v.kind, v.backend) for v in verdicts) == [("special", "keras-torch"), ("special", "onnxruntime")]
    assert {v.numeric_kind for v in verdicts} == {"nan", "inconsistency"}


def test_kinds_are_plain_strings_in_json() -> None:
    verdict = Verdict(VerdictKind.CRASH, "keras-jax", "execute", "m")
    assert verdict.kind == "crash" and type(verdict.to_json()["kind"]) is str
    assert json.loads(json.dumps(verdict.to_json()))["kind"] == "crash"


# ------------------------------------------------------------------ failures
def test_one_failing_backend_is_a_crash_with_its_stage() -> None:
    failure = StageResult("execute", "crash", 0.2, exc_type="WorkerDied", message="killed by signal 11", signal=11)
    verdicts = judge(make_result({"onnx2torch": failure}), outputs=same_outputs(BASE))
    assert [(v.kind, v.backend, v.stage) for v in verdicts] == [("crash", "onnx2torch", "execute")]
    assert verdicts[0].failure.signal == 11


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


def test_model_failing_on_every_keras_backend_is_one_keras_crash_not_invalid() -> None:
    # Changed: this used to be one "invalid" verdict. The symbolic build accepted the model, so Keras failing
    # at run time everywhere is a Keras finding; the ONNX backends' own failures are still reported.
    failures = {name: StageResult("load", "error", exc_type="ValueError", message="x") for name in CONSUMES}
    verdicts = judge(make_result(failures), outputs={})
    assert verdicts[0].kind == "crash" and verdicts[0].backend == "keras" and verdicts[0].stage == "execute"
    assert "every Keras backend failed at run time: ValueError: x" in verdicts[0].message
    assert set(verdicts[0].involved()) == {REF, "keras-jax", "keras-torch"}
    assert sorted(v.backend for v in verdicts[1:]) == ["mxnet", "onnx2pytorch", "onnx2torch", "onnxruntime"]


def test_keras_backend_failing_differently_keeps_its_own_crash_and_signals_stay_per_backend() -> None:
    failures = {REF: StageResult("execute", "error", exc_type="ValueError", message="rank"),
                "keras-jax": StageResult("execute", "error", exc_type="ValueError", message="rank"),
                "keras-torch": StageResult("execute", "error", exc_type="RuntimeError", message="size"),
                "mxnet": StageResult("execute", "crash", exc_type="WorkerDied", message="signal 11", signal=11)}
    names = [REF, "keras-jax", "keras-torch", "mxnet"]
    verdicts = judge(make_result(failures, names), outputs={})
    assert sorted((v.kind, v.backend) for v in verdicts) == [("crash", "keras"), ("crash", "keras-torch"),
                                                              ("crash", "mxnet")]


def test_signal_death_of_every_keras_backend_is_per_backend() -> None:
    failures = {name: StageResult("execute", "crash", exc_type="WorkerDied", message="signal 8", signal=8)
                for name in (REF, "keras-jax", "keras-torch")}
    verdicts = judge(make_result(failures, [REF, "keras-jax", "keras-torch"]), outputs={})
    assert sorted(v.backend for v in verdicts) == ["keras-jax", "keras-tensorflow", "keras-torch"]


def test_no_backend_result_at_all_is_invalid() -> None:
    empty = ExecutionResult(artifact_dir="/nowhere", reference=REF, output_names=["out"], backends={})
    assert [(v.kind, v.backend) for v in judge(empty)] == [("invalid", "*")]
    skipped = make_result({name: StageResult("start", "skipped", message="unavailable") for name in CONSUMES})
    assert [v.kind for v in judge(skipped, outputs={})] == ["invalid"]


def test_trace_failure_of_both_conversions_is_one_tf_function_verdict() -> None:
    trace = StageResult("trace", "error", exc_type="ValueError", message="Negative dimension size caused by ...")
    skipped = StageResult("convert", "skipped", message="no onnx file: tf2onnx error")
    result = make_result({name: skipped for name in ("onnxruntime", "onnx2torch", "onnx2pytorch", "mxnet")})
    for converter, produces in (("tf2onnx", "onnx"), ("tf2onnx-opset11", "onnx-opset11")):
        result.backends[converter] = BackendResult(converter, "keras", role="converter", stages=[trace])
    verdicts = judge(result, outputs=same_outputs(BASE, [REF, "keras-jax", "keras-torch"]))
    assert [(v.kind, v.backend, v.stage) for v in verdicts] == [("crash", REF, "tf-function")]
    assert verdicts[0].converters == ["tf2onnx", "tf2onnx-opset11"]


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
    verdict = Verdict("nan", "onnxruntime", "execute", "m", comparison=Comparison("onnxruntime", mad=0.5))
    assert Verdict.from_json(json.loads(json.dumps(verdict.to_json()))) == verdict


def test_oracle_imports_no_dl_library() -> None:
    code = ("import sys, memo.oracle; heavy = {'tensorflow', 'torch', 'jax', 'keras', 'onnx', 'onnxruntime'};"
            "print(sorted(heavy & {m.split('.')[0] for m in sys.modules}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_numeric_criterion_imports_only_numpy_and_the_standard_library() -> None:
    # repro scripts inline it verbatim: a memo import there would pull memo into every script
    import ast
    import inspect

    from memo.oracle import criterion

    tree = ast.parse(inspect.getsource(criterion))
    modules = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    modules |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert modules == {"__future__", "dataclasses", "numpy"}


def test_has_injection_detects_the_nan_operators_subgraph() -> None:
    from memo.model.ir import Layer, ModelIR
    from memo.mutation.nan import has_injection

    def model(*body: Layer) -> ModelIR:
        return ModelIR(layers=[Layer("x", "InputLayer", {"batch_shape": [None, 4], "dtype": "float32"}), *body],
                       outputs=[body[-1].name])

    scaled = Layer("s", "Rescaling", {"scale": 1e30, "offset": 0.0}, ["x"])
    assert has_injection(model(scaled, Layer("m", "Multiply", {}, ["s", "s"], call_style="list")))
    assert has_injection(model(Layer("d", "Subtract", {}, ["x", "x"], call_style="list")))
    assert not has_injection(model(Layer("d", "Dense", {"units": 2}, ["x"]),
                                   Layer("m", "Multiply", {}, ["x", "d"], call_style="list")))
    assert not has_injection(model(Layer("s", "Rescaling", {"scale": 2.0, "offset": 0.0}, ["x"])))


def test_conversion_blamed_when_the_same_engine_agrees_on_another_converters_file() -> None:
    # ONNX Runtime runs both tf2onnx's file and Keras's own export: right on one, wrong on the other, the
    # export is at fault, not ONNX Runtime.
    names = [REF, "keras-jax", "onnxruntime", "onnxruntime-keras-export"]
    outputs = same_outputs(BASE, names)
    outputs["onnxruntime-keras-export"]["out"] = BASE + np.float32(0.5)
    result = make_result(names=names)
    result.backends["onnxruntime-keras-export"].consumes = "keras-onnx"
    verdicts = judge(result, outputs=outputs)
    assert [(v.kind, v.backend, v.stage) for v in verdicts] == [("inconsistency", "keras-export", "convert")]
    assert verdicts[0].attribution.same_engine == "onnxruntime"


def test_engine_blamed_when_it_is_wrong_on_every_file() -> None:
    names = [REF, "keras-jax", "onnxruntime", "onnx2torch", "onnxruntime-keras-export"]
    outputs = same_outputs(BASE, names)
    for name in ("onnxruntime", "onnxruntime-keras-export"):
        outputs[name]["out"] = BASE + np.float32(0.5)
    result = make_result(names=names)
    result.backends["onnxruntime-keras-export"].consumes = "keras-onnx"
    verdicts = judge(result, outputs=outputs)
    assert sorted((v.kind, v.backend) for v in verdicts) == [("inconsistency", "onnxruntime"),
                                                              ("inconsistency", "onnxruntime-keras-export")]


def test_a_keras_converter_failing_as_keras_does_is_not_a_second_finding() -> None:
    # Keras's ONNX export calls the model on torch first: when keras-torch fails on the model, the export fails
    # with the same exception, which is the same bug.
    failure = StageResult("execute", "error", 0.1, exc_type="ValueError", message="bad broadcast (3,) vs (4,)")
    names = [REF, "keras-jax", "keras-torch"]
    result = make_result({"keras-torch": failure}, names=names)
    result.backends["keras-export"] = BackendResult(
        "keras-export", "keras", role="converter",
        stages=[StageResult("load", "ok", 0.1), StageResult("convert", "error", 0.1, exc_type="ValueError",
                                                           message="bad broadcast (3,) vs (4,)")])
    outputs = same_outputs(BASE, [REF, "keras-jax"])
    verdicts = judge(result, outputs=outputs)
    assert [(v.kind, v.backend) for v in verdicts] == [("crash", "keras-torch")]
    assert verdicts[0].also_in == ["keras-export"]
    result.backends["keras-export"].stages[1].message = "another failure"
    assert sorted(v.backend for v in judge(result, outputs=outputs)) == ["keras-export", "keras-torch"]


def test_the_same_exception_on_the_same_file_at_the_same_stage_is_one_finding() -> None:
    # torch.compile converts with onnx2torch first: onnx2torch's failure is not torch.compile's too
    failure = StageResult("convert", "error", 0.1, exc_type="KeyError", message="'Gather' with int64 axes")
    names = [REF, "keras-jax", "onnx2torch", "torch-compile"]
    result = make_result({"onnx2torch": failure, "torch-compile": dataclasses.replace(failure)}, names=names)
    result.backends["torch-compile"].consumes = "onnx"
    verdicts = judge(result, outputs=same_outputs(BASE, [REF, "keras-jax"]))
    assert [(v.kind, v.backend) for v in verdicts] == [("crash", "onnx2torch")]
    assert verdicts[0].also_in == ["torch-compile"]


def test_one_converter_failing_alike_at_two_opsets_is_one_finding_of_the_default_opset() -> None:
    # tf2onnx at opset 11 runs tf2onnx's code: the same exception on the same model is one tf2onnx defect
    names = [REF, "keras-jax"]
    result = make_result({}, names=names)
    for name in ("tf2onnx", "tf2onnx-opset11"):
        result.backends[name] = BackendResult(
            name, "keras", role="converter",
            stages=[StageResult("load", "ok", 0.1), StageResult("convert", "error", 0.1, exc_type="ValueError",
                                                               message="max() arg is an empty sequence")])
    outputs = same_outputs(BASE, names)
    verdicts = judge(result, outputs=outputs)
    assert [(v.kind, v.backend, v.also_in) for v in verdicts] == [("crash", "tf2onnx", ["tf2onnx-opset11"])]
    result.backends["tf2onnx-opset11"].stages[1].message = "Opset (11) must be >= 13"
    assert sorted(v.backend for v in judge(result, outputs=outputs)) == ["tf2onnx", "tf2onnx-opset11"]
