"""The GPU backends on a real GPU, beside their CPU twins (skipped where the driver shows no NVIDIA GPU).

In strict precision (the default) every GPU backend agrees with Keras on torch on the CPU on models whose size
makes TF32 rounding visible; in tf32 mode the same models differ by more than float32 rounding (the switches
work) yet stay within the TF32 tolerance (no finding).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pytest

from memo.backends.cuda import gpu_unavailable
from memo.oracle import judge, load_outputs
from tests.conftest import one_layer_ir

pytestmark = [pytest.mark.integration, pytest.mark.gpu, pytest.mark.timeout(600),
              pytest.mark.skipif(gpu_unavailable() is not None, reason=f"no GPU: {gpu_unavailable()}")]

REFERENCE = "keras-torch"
GPU = ["keras-torch-cuda", "keras-jax-cuda", "onnx2torch-cuda", "torch-inductor-cuda"]
BACKENDS = [REFERENCE, "keras-jax", "onnx2torch", *GPU]
# Layers with long dot products (TF32 rounds each of 512 or 144 terms' inputs to 10 mantissa bits).
MODELS = {"dense": ("Dense", {"units": 64}, (512,)),
          "conv2d": ("Conv2D", {"filters": 16, "kernel_size": 3}, (16, 16, 16))}


def _executor(precision: str) -> Iterator[Any]:
    from memo.backends.executor import DifferentialExecutor

    with DifferentialExecutor(backends=BACKENDS, timeout_s=120, reference=REFERENCE, gpu_precision=precision) as shared:
        yield shared


@pytest.fixture(scope="module")
def strict_executor() -> Iterator[Any]:
    yield from _executor("strict")


@pytest.fixture(scope="module")
def tf32_executor() -> Iterator[Any]:
    yield from _executor("tf32")


def _run(executor: Any, name: str, root: Path) -> tuple[Any, dict[str, list[np.ndarray]]]:
    from memo.artifact import prepare_artifact

    artifact = prepare_artifact(one_layer_ir(*MODELS[name]), root / name, seed=0)
    result = executor.run(artifact)
    return result, load_outputs(result)


def _largest_difference(outputs: dict[str, list[np.ndarray]], name: str) -> float:
    return max(float(np.max(np.abs(a - b))) for a, b in zip(outputs[name], outputs[REFERENCE]))


@pytest.mark.parametrize("model", sorted(MODELS))
def test_strict_gpu_backends_run_and_agree_with_the_cpu(strict_executor: Any, model: str, tmp_path: Path) -> None:
    result, outputs = _run(strict_executor, model, tmp_path)
    for name in GPU:
        assert result.backends[name].status == "ok", (name, result.backends[name].failure)
        assert result.backends[name].precision == "strict"
    assert judge(result) == []


def test_tf32_mode_rounds_like_tf32_and_is_judged_with_its_tolerance(tf32_executor: Any, strict_executor: Any,
                                                                     tmp_path: Path) -> None:
    strict_result, strict_outputs = _run(strict_executor, "dense", tmp_path / "strict")
    fast_result, fast_outputs = _run(tf32_executor, "dense", tmp_path / "tf32")
    assert judge(fast_result) == []
    strict_error = max(_largest_difference(strict_outputs, name) for name in GPU)
    fast_error = max(_largest_difference(fast_outputs, name) for name in GPU)
    assert fast_error > 10 * strict_error, (fast_error, strict_error)  # the switch changes the kernels
