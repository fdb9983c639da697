"""Running a converted ``torch.nn.Module`` (onnx2torch, onnx2pytorch) on numpy inputs.

torch is imported inside the functions below, which run in the worker only: the orchestrator imports
this module to read the specs and must never import a library under test.
"""
from __future__ import annotations

from typing import Any

from memo.backends.spec import DifferenceExample, DocumentedDifference, ModelInputs


def setup_torch() -> None:
    import torch

    torch.set_num_threads(1)


def eval_module(module: Any) -> Any:
    return module.eval()


def run_module(module: Any, inputs: ModelInputs) -> list[Any]:
    """Call ``module`` positionally in model-input order; return its outputs as numpy arrays."""
    import torch

    with torch.no_grad():
        outputs = module(*(torch.from_numpy(array) for array in inputs.values()))
    if isinstance(outputs, dict):
        outputs = list(outputs.values())
    if not isinstance(outputs, (list, tuple)):
        outputs = [outputs]
    return [out.detach().cpu().numpy() for out in outputs]


# Both ONNX-to-torch converters run an ONNX Resize with torch's interpolate, which has no equivalent of the
# attributes that fix the sampling (coordinate_transformation_mode, nearest_mode, cubic_coeff_a,
# exclude_outside): they ignore them and warn at conversion (onnx2torch/node_converters/resize.py: "For others
# modes, the results might differ significantly!"; onnx2pytorch/operations/resize.py: "Pytorch's interpolate
# uses no {key}. Result might differ."). A known limitation they state, not a bug to file (p30: 3 entries).
TORCH_INTERPOLATE_RESIZE = DocumentedDifference(
    behaviour="ONNX Resize runs as torch's interpolate, ignoring the attributes torch has no equivalent for "
              "(coordinate_transformation_mode, nearest_mode, cubic_coeff_a, exclude_outside); the converter "
              "warns that the results might differ",
    source="the converter's own warning at conversion (onnx2torch node_converters/resize.py, onnx2pytorch "
           "operations/resize.py)",
    quote="For others modes, the results might differ significantly!",
    kinds=("inconsistency",), layer_classes=("Resizing", "UpSampling2D"),
    example=DifferenceExample("inconsistency", (("Resizing", {"height": 17, "width": 1, "interpolation": "nearest"}),),
                              0, "782/782 elements outside atol=0.001*scale rtol=0.001 (scale 1, max |diff| 1.96)"))
