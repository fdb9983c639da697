"""GPU backends without a GPU: how they are declared, selected, refused, and judged (pure: no library, no GPU)."""
from __future__ import annotations

import argparse

import numpy as np
import pytest

import memo.backends as registry
import memo.backends.cuda as cuda
import memo.backends.executor as executor_module
from memo.backends import (DEFAULT_BACKENDS, GPU_BACKENDS, STAND_IN_PRODUCERS, default_backends, load_spec,
                           producer_of)
from memo.backends.executor import choose_reference, producer_member, registered_member
from memo.backends.result import BackendResult, ExecutionResult, StageResult
from memo.devices import judge_by_twins, library_count, same_on_both_devices, tolerance_for
from memo.device_flags import add_device_arguments, check_device_arguments
from memo.errors import UsageError
from memo.oracle import Thresholds, judge

OK = [StageResult("load", "ok", 0.1), StageResult("execute", "ok", 0.1)]
REF = "keras-torch"


@pytest.fixture
def no_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cuda, "gpu_unavailable", lambda: "no NVIDIA GPU (test)")
    monkeypatch.setattr(executor_module, "gpu_unavailable", lambda: "no NVIDIA GPU (test)")


@pytest.fixture
def a_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cuda, "gpu_unavailable", lambda: None)
    monkeypatch.setattr(executor_module, "gpu_unavailable", lambda: None)


# ------------------------------------------------------------------ declaration and selection
def test_every_gpu_backend_runs_on_cuda_and_names_a_registered_cpu_twin() -> None:
    for name in GPU_BACKENDS:
        spec = load_spec(name)
        assert spec.device == "cuda", name
        assert spec.cpu_twin in registry.BACKENDS and load_spec(spec.cpu_twin).device == "cpu", name
    assert all(load_spec(name).device == "cpu" and load_spec(name).cpu_twin is None for name in DEFAULT_BACKENDS)


def test_cpu_backends_are_pinned_to_the_cpu_and_gpu_ones_to_the_gpu() -> None:
    assert load_spec("keras-torch").env["KERAS_TORCH_DEVICE"] == "cpu"
    assert load_spec("keras-torch-cuda").env["KERAS_TORCH_DEVICE"] == "cuda"
    assert load_spec("keras-jax").env["JAX_PLATFORMS"] == "cpu"
    gpu_jax = load_spec("keras-jax-cuda").env
    assert gpu_jax["JAX_PLATFORMS"] == "cuda" and gpu_jax["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"
    assert "XLA_FLAGS" not in gpu_jax  # the CPU's -O0 code generation is not the GPU's
    assert load_spec("float64-jax").env["JAX_PLATFORMS"] == "cpu"


def test_without_a_gpu_the_default_set_is_the_cpu_one(no_gpu: None) -> None:
    assert default_backends() == DEFAULT_BACKENDS


def test_with_a_gpu_the_gpu_backends_join_the_default_set(a_gpu: None) -> None:
    assert default_backends() == DEFAULT_BACKENDS + GPU_BACKENDS


def test_a_gpu_backend_is_unavailable_without_a_gpu_with_the_reason(no_gpu: None) -> None:
    member = registered_member("keras-torch-cuda")
    assert member.device == "cuda" and member.unavailable == "no NVIDIA GPU (test)"
    assert registered_member("keras-torch").unavailable is None


def test_hidden_devices_are_no_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    cuda.gpu_unavailable.cache_clear()
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    try:
        assert "hides every GPU" in (cuda.gpu_unavailable() or "")
    finally:
        cuda.gpu_unavailable.cache_clear()


# ------------------------------------------------------------------ the reference and the ONNX producer
def _members(unavailable: dict[str, str]) -> dict[str, executor_module.Member]:
    members = {name: registered_member(name) for name in ("keras-tensorflow", "keras-torch", "keras-jax")}
    for name, why in unavailable.items():
        members[name].unavailable = why
    return members


def test_the_reference_is_tensorflow_by_default_and_another_on_request() -> None:
    assert choose_reference(_members({}), None) == "keras-tensorflow"
    assert choose_reference(_members({}), "keras-jax") == "keras-jax"


def test_a_reference_that_cannot_run_here_is_one_clear_error_naming_another() -> None:
    with pytest.raises(UsageError, match=r"reference 'keras-tensorflow' cannot run here .*--reference \(e.g. "
                                         r"keras-torch\)"):
        choose_reference(_members({"keras-tensorflow": "not installed: tensorflow-cpu"}), None)
    with pytest.raises(UsageError, match="not one of the selected backends"):
        choose_reference(_members({}), "onnxruntime")


def test_an_unknown_reference_flag_is_refused() -> None:
    parser = argparse.ArgumentParser()
    add_device_arguments(parser)
    with pytest.raises(UsageError, match="unknown reference backend 'tensorflow'"):
        check_device_arguments(parser.parse_args(["--reference", "tensorflow"]))
    with pytest.raises(SystemExit):
        parser.parse_args(["--gpu-precision", "fp16"])


def test_keras_export_writes_the_onnx_file_where_tf2onnx_cannot_run(monkeypatch: pytest.MonkeyPatch) -> None:
    real = executor_module.versions_in

    def without_tensorflow(python: str | None, names: tuple[str, ...]) -> tuple[dict[str, str], str | None]:
        versions, why = real(python, names)
        return (versions, "not installed: tensorflow-cpu") if "tf2onnx" in names else (versions, why)

    monkeypatch.setattr(executor_module, "versions_in", without_tensorflow)
    member = producer_member("onnx")
    assert member.name == STAND_IN_PRODUCERS["onnx"][0] and member.produces == "onnx" and member.unavailable is None
    assert producer_of("onnx", {"keras-torch", member.name}) == member.name
    assert producer_of("onnx", {"tf2onnx", "onnx2torch"}) == "tf2onnx"


def test_with_tensorflow_tf2onnx_writes_the_onnx_file() -> None:
    assert producer_member("onnx").name == "tf2onnx"


# ------------------------------------------------------------------ judging a GPU backend
def test_tf32_widens_only_a_tf32_result_tolerance() -> None:
    base = Thresholds()
    assert tolerance_for(base, "strict") is base and tolerance_for(base, "") is base
    wide = tolerance_for(base, "tf32")
    assert wide.atol == pytest.approx(base.atol * cuda.TF32_TOLERANCE_FACTOR)
    assert wide.atol == pytest.approx(16 * 2.0 ** -11)


def test_a_library_and_its_cpu_twin_count_once() -> None:
    assert library_count(["keras-torch", "keras-torch-cuda"]) == 1
    assert library_count(["keras-torch-cuda", "keras-jax-cuda"]) == 2


def test_twin_rules_on_flags() -> None:
    flagged = {"keras-torch-cuda": "m1", "onnx2torch-cuda": "m2", "keras-jax-cuda": "m3"}
    kept, twins = judge_by_twins({**flagged, "onnx2torch": "m0"}, {*flagged, "onnx2torch"}, lambda name: True)
    assert "onnx2torch-cuda" not in kept  # the library is wrong on the CPU too: the CPU backend's finding
    assert kept["keras-torch-cuda"].startswith("on CUDA only (keras-torch")
    assert kept["onnx2torch"] == "m0" and twins == {"keras-torch-cuda": "keras-torch", "keras-jax-cuda": "keras-jax"}
    kept, _ = judge_by_twins({"keras-jax-cuda": "nan"}, {"keras-jax-cuda", "keras-jax"}, lambda name: True)
    assert kept == {}  # keras-jax's other kind of flag (its NaN) is the finding


def test_a_gpu_failure_as_on_the_cpu_is_the_cpu_backends_finding() -> None:
    message = "RuntimeError: Given normalized_shape=[4], expected input with shape [*, 4], but got input of size[2, 3]"
    backends = {name: BackendResult(name=name, consumes="keras",
                                    stages=[StageResult("load", "ok", 0.1),
                                            StageResult("execute", "crash", 0.1, "RuntimeError", message)])
                for name in ("keras-torch", "keras-torch-cuda")}
    backends["keras-jax"] = BackendResult(name="keras-jax", consumes="keras", stages=list(OK))
    result = ExecutionResult(artifact_dir="/nowhere", reference="keras-jax", output_names=["out"], backends=backends)
    verdicts = judge(result, outputs={"keras-jax": {"out": np.zeros(2, np.float32)}})
    assert [(v.kind, v.backend) for v in verdicts] == [("crash", "keras-torch")]
    assert verdicts[0].also_in == ["keras-torch-cuda"]
    assert same_on_both_devices("expected device cuda:0 got cuda", "expected device cpu got cpu")


def _result(precision: str) -> ExecutionResult:
    backends = {name: BackendResult(name=name, consumes="keras", stages=list(OK),
                                    precision=precision if name.endswith("-cuda") else "")
                for name in (REF, "keras-jax", "keras-torch-cuda")}
    return ExecutionResult(artifact_dir="/nowhere", reference=REF, output_names=["out"], backends=backends)


def _outputs(gpu_error: float) -> dict[str, dict[str, np.ndarray]]:
    base = np.random.default_rng(3).uniform(-1, 1, (2, 64)).astype(np.float32)
    off = base.copy()
    off[0, :8] += gpu_error  # a few elements off, as TF32 rounding of a product leaves them
    return {REF: {"out": base}, "keras-jax": {"out": base.copy()}, "keras-torch-cuda": {"out": off}}


def test_a_difference_within_tf32_rounding_is_a_finding_in_strict_mode_only() -> None:
    strict = judge(_result("strict"), outputs=_outputs(3e-3))
    assert [(v.kind, v.backend) for v in strict] == [("inconsistency", "keras-torch-cuda")]
    assert strict[0].message.startswith("on CUDA only (keras-torch")  # the twin is the reference here
    assert strict[0].metrics()["cpu_twin"] == "keras-torch"
    assert judge(_result("tf32"), outputs=_outputs(3e-3)) == []
    assert [v.backend for v in judge(_result("tf32"), outputs=_outputs(0.05))] == ["keras-torch-cuda"]


def test_a_cpu_result_reads_as_before_gpu_backends_existed() -> None:
    data = BackendResult(name="keras-jax", consumes="keras", stages=list(OK)).to_json()
    assert "precision" not in data
    assert BackendResult.from_json(_result("tf32").backends["keras-torch-cuda"].to_json()).precision == "tf32"
