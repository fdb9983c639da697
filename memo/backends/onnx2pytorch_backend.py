"""onnx2pytorch: converts the ONNX model into a ``torch.nn.Module``, run by PyTorch.

onnx and onnx2pytorch are imported inside the functions below, which run in the worker only: the
orchestrator imports this module to read the spec and must never import a library under test.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from memo.library_coverage.measured import MeasuredCode
from memo.backends import trackers
from memo.backends.idioms import ONNX, ONNX_IMPORTS, TORCH_COLLECT, TORCH_MODULE, Idiom
from memo.backends.spec import BackendSpec, ReproRecipe, Upstream
from memo.backends.torch_common import (TORCH_INTERPOLATE_RESIZE, TORCH_MESSAGES, eval_module, run_module, setup_torch,
                                        train_module)
from memo.backends.versions import distribution_versions

DISTRIBUTIONS = ("onnx2pytorch", "torch", "onnx")


def _setup() -> dict[str, str]:
    import onnx2pytorch  # noqa: F401

    setup_torch()
    return distribution_versions(DISTRIBUTIONS)


def _convert(path: Path) -> Any:
    import onnx
    import onnx2pytorch

    # experimental=True: without it onnx2pytorch refuses batch sizes other than 1.
    return onnx2pytorch.ConvertModel(onnx.load(str(path)), experimental=True)


# Release facts: conda-forge lists 0.5.0 (Sep 2024), 0.5.1 (Nov 2024), 0.5.2 and 0.5.3 (Nov 2025); 0.6.0 is
# installed (requires Python >= 3.11). One maintainer: bugs may wait, but releases do come.
UPSTREAM = Upstream("active", "https://github.com/Talmaj/onnx2pytorch/issues",
                    "released 0.5.x in 2024-2025 and 0.6.0 since (installed); a one-maintainer project",
                    trackers.ONNX2PYTORCH)
# A bug's minimal script: the module as the worker converts it (experimental=True allows batches above 1), eager.
IDIOM = Idiom(ONNX, (*ONNX_IMPORTS, "from importlib.metadata import version", "import torch",
                     "from onnx2pytorch import ConvertModel"),
              '"onnx2pytorch", version("onnx2pytorch"), "torch", torch.__version__, "onnx", onnx.__version__',
              ("module = ConvertModel(model, experimental=True).eval()", *TORCH_MODULE), collect=TORCH_COLLECT)

SPEC = BackendSpec(name="onnx2pytorch", consumes="onnx", convert=_convert, load=eval_module, run=run_module,
                   setup=_setup, distributions=DISTRIBUTIONS, repro=ReproRecipe(), upstream=UPSTREAM,
                   messages=TORCH_MESSAGES, library_code=(MeasuredCode("onnx2pytorch", ("onnx2pytorch",)),),
                   documented_differences=(TORCH_INTERPOLATE_RESIZE,), idiom=IDIOM, train=train_module)
