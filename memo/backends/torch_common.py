"""Running a converted ``torch.nn.Module`` (onnx2torch, onnx2pytorch) on numpy inputs.

torch is imported inside the functions below, which run in the worker only: the orchestrator imports
this module to read the specs and must never import a library under test.
"""
from __future__ import annotations

from typing import Any


def setup_torch() -> None:
    import torch

    torch.set_num_threads(1)


def eval_module(module: Any) -> Any:
    return module.eval()


def run_module(module: Any, inputs: dict[str, Any]) -> list[Any]:
    """Call ``module`` positionally in model-input order; return its outputs as numpy arrays."""
    import torch

    with torch.no_grad():
        outputs = module(*(torch.from_numpy(array) for array in inputs.values()))
    if isinstance(outputs, dict):
        outputs = list(outputs.values())
    if not isinstance(outputs, (list, tuple)):
        outputs = [outputs]
    return [out.detach().cpu().numpy() for out in outputs]
