"""Running a converted ``torch.nn.Module`` (onnx2torch, onnx2pytorch) on numpy inputs."""
from __future__ import annotations

from typing import Any


def setup_torch() -> None:
    import torch  # noqa: PLC0415

    torch.set_num_threads(1)


def eval_module(module: Any) -> Any:
    return module.eval()


def run_module(module: Any, inputs: dict[str, Any]) -> list[Any]:
    """Call ``module`` positionally in model-input order; return its outputs as numpy arrays."""
    import torch  # noqa: PLC0415

    with torch.no_grad():
        outputs = module(*(torch.from_numpy(array) for array in inputs.values()))
    if isinstance(outputs, dict):
        outputs = list(outputs.values())
    if not isinstance(outputs, (list, tuple)):
        outputs = [outputs]
    return [out.detach().cpu().numpy() for out in outputs]
