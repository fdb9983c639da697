"""onnx2torch: converts the ONNX model into a ``torch.fx`` module, run by PyTorch."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from memo.backends.spec import BackendSpec, ReproRecipe
from memo.backends.torch_common import eval_module, run_module, setup_torch
from memo.backends.versions import distribution_versions

DISTRIBUTIONS = ("onnx2torch", "torch", "onnx")


def _setup() -> dict[str, str]:
    import onnx2torch  # noqa: F401, PLC0415

    setup_torch()
    return distribution_versions(DISTRIBUTIONS)


def _convert(path: Path) -> Any:
    import onnx2torch  # noqa: PLC0415

    return onnx2torch.convert(str(path))


SPEC = BackendSpec(name="onnx2torch", consumes="onnx", convert=_convert, load=eval_module, run=run_module,
                   setup=_setup, distributions=DISTRIBUTIONS, repro=ReproRecipe())
