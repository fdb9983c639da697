"""onnx2torch: converts the ONNX model into a ``torch.fx`` module, run by PyTorch.

onnx2torch is imported inside the functions below, which run in the worker only: the orchestrator
imports this module to read the spec and must never import a library under test.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from memo.library_coverage.measured import MeasuredCode
from memo.backends import trackers
from memo.backends.idioms import onnx2torch_idiom
from memo.backends.spec import BackendSpec, ReproRecipe, Upstream
from memo.backends.torch_common import (TORCH_INTERPOLATE_RESIZE, TORCH_MESSAGES, eval_module, run_module,
                                        run_module_cuda, setup_torch, setup_torch_cuda, to_cuda,
                                        train_module)
from memo.backends.versions import distribution_versions

DISTRIBUTIONS = ("onnx2torch", "torch", "onnx")


def _setup() -> dict[str, str]:
    import onnx2torch  # noqa: F401

    setup_torch()
    return distribution_versions(DISTRIBUTIONS)


def _setup_cuda() -> dict[str, str]:
    import onnx2torch  # noqa: F401

    setup_torch_cuda()
    return distribution_versions(DISTRIBUTIONS)


def _convert(path: Path) -> Any:
    import onnx2torch

    return onnx2torch.convert(str(path))


# Release facts: 1.5.15 (installed) is the newest on conda-forge, published Aug 2024.
UPSTREAM = Upstream("maintenance", "https://github.com/ENOT-AutoDL/onnx2torch/issues",
                    "no release since 1.5.15 (Aug 2024)", trackers.ONNX2TORCH)

SPEC = BackendSpec(name="onnx2torch", consumes="onnx", convert=_convert, load=eval_module, run=run_module,
                   setup=_setup, distributions=DISTRIBUTIONS, repro=ReproRecipe(), upstream=UPSTREAM,
                   messages=TORCH_MESSAGES, library_code=(MeasuredCode("onnx2torch", ("onnx2torch",)),),
                   documented_differences=(TORCH_INTERPOLATE_RESIZE,), idiom=onnx2torch_idiom(), train=train_module)
# onnx2torch's module run eagerly on the GPU (cuBLAS, cuDNN and torch's own CUDA kernels); judged against the
# reference and against the same module on the CPU (``onnx2torch``).
SPEC_CUDA = dataclasses.replace(SPEC, name="onnx2torch-cuda", load=to_cuda, run=run_module_cuda, setup=_setup_cuda,
                                device="cuda", cpu_twin="onnx2torch", idiom=None, train=None)
