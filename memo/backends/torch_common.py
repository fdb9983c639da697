"""Running a converted ``torch.nn.Module`` (onnx2torch, onnx2pytorch) on numpy inputs.

torch is imported inside the functions below, which run in the worker only: the orchestrator imports
this module to read the specs and must never import a library under test.
"""
from __future__ import annotations

import sys
from typing import Any

import numpy as np

from memo.backends.cuda import device_banner, set_torch_precision
from memo.backends.training import (EVAL_STAGES, SGD_LEARNING_RATE, Stage, eval_record, floating_positions,
                                    projection_terms, select_stages)
from memo.backends.spec import DifferenceExample, DocumentedDifference, MessageMask, MessageRules, ModelInputs
from memo.text import TRACED_GRAPH_TAIL


def setup_torch() -> None:
    import torch

    torch.set_num_threads(1)


def eval_module(module: Any) -> Any:
    return module.eval()


def run_module(module: Any, inputs: ModelInputs) -> list[Any]:
    """Call ``module`` positionally in model-input order on the CPU; return its outputs as numpy arrays."""
    return run_module_on(module, inputs, "cpu")


def run_module_cuda(module: Any, inputs: ModelInputs) -> list[Any]:
    """:func:`run_module` with the inputs on the GPU (the module is there already: :func:`to_cuda`)."""
    return run_module_on(module, inputs, "cuda")


def run_module_on(module: Any, inputs: ModelInputs, device: str) -> list[Any]:
    import torch

    with torch.no_grad():
        outputs = module(*(torch.from_numpy(array).to(device) for array in inputs.values()))
    return [out.detach().cpu().numpy() for out in _output_list(outputs)]


def _output_list(outputs: Any) -> list[Any]:
    if isinstance(outputs, dict):
        return list(outputs.values())
    return list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]


class ForwardFails(NotImplementedError):
    """The converted module's forward pass fails without autograd too: the inference check's finding (the module's
    ``execute`` stage), not the training check's (status ``unsupported``: recorded, no verdict)."""


def train_module(module: Any, inputs: ModelInputs,
                 options: dict[str, Any]) -> tuple[list[Stage], dict[str, np.ndarray]]:
    """The training check of a converted ``torch.nn.Module`` (``BackendSpec.train``; docs/training.md): the module in
    eval mode (an inference graph: BatchNormalization folded, no dropout), its outputs with autograd on
    (``eval_forward``), then ``loss.backward()`` of the check's loss (:func:`memo.backends.training.projection_terms`)
    and the inputs' gradients (``eval_gradients``), followed by one ``torch.optim.SGD`` step of the module's
    parameters (a step that raises, an in-place update of a tensor autograd needs, is a finding; its result is not
    compared). A forward pass that fails with autograd on but runs under ``torch.no_grad`` is a training crash (an
    in-place operation on a leaf that requires grad); one that fails under both is :class:`ForwardFails`."""
    import torch

    arrays = [np.asarray(array) for array in inputs.values()]
    floating = floating_positions(arrays)
    done: dict[str, Any] = {}

    def forward() -> dict[str, np.ndarray]:
        tensors = [torch.from_numpy(np.array(a, copy=True)) for a in arrays]
        for position in floating:
            tensors[position].requires_grad_(True)
        try:
            outputs = _output_list(module.eval()(*tensors))
        except Exception as exc:
            try:
                with torch.no_grad():
                    module(*(torch.from_numpy(np.array(a, copy=True)) for a in arrays))
            except Exception:  # noqa: BLE001  (fails in inference too: not the training check's finding)
                raise ForwardFails(f"the forward pass fails without autograd too: {type(exc).__name__}: {exc}") \
                    from exc
            raise
        done["run"] = (tensors, outputs)
        return eval_record([y.detach().cpu().numpy() for y in outputs], None, arrays)

    def gradients() -> dict[str, np.ndarray]:
        if "run" not in done:  # asked for this stage alone (a bug's repro.py)
            forward()
        tensors, outputs = done["run"]
        loss = None
        terms = projection_terms([tuple(y.shape) for y in outputs], [str(y.dtype).replace("torch.", "")
                                                                     for y in outputs])
        for index, weights, divisor, widen in terms:
            y = outputs[index].float() if widen else outputs[index]
            term = (y * torch.from_numpy(weights).to(y.dtype)).sum() / divisor
            loss = term if loss is None else loss + term
        if loss.requires_grad:  # else nothing differentiable reaches it (an Embedding's integer indices; a converter
            loss.backward()     # that detached): every input's gradient is 0, as TensorFlow's None, judged by value
        record = eval_record(None, [None if tensors[p].grad is None else tensors[p].grad.numpy() for p in floating],
                             arrays)
        parameters = [p for p in module.parameters() if p.requires_grad and p.grad is not None]
        if parameters:
            torch.optim.SGD(parameters, lr=SGD_LEARNING_RATE).step()
        return record

    stages = select_stages([("eval_forward", forward), ("eval_gradients", gradients)],
                           {"stages": list(EVAL_STAGES), **options})
    return stages, {"stages": np.array([name for name, _ in stages], dtype=str),
                    "names": np.array([], dtype=str), "state_names": np.array([], dtype=str)}


def setup_torch_cuda() -> None:
    """:func:`setup_torch`, and a clear failure where torch sees no GPU (a CPU-only build, a hidden device)."""
    import torch

    setup_torch()
    if not torch.cuda.is_available():
        raise RuntimeError(f"torch {torch.__version__} sees no CUDA device (built for CUDA {torch.version.cuda})")


def to_cuda(module: Any) -> Any:
    """The module in eval mode on the GPU, with the precision the run asks for (strict float32 by default)."""
    set_torch_precision()
    print(device_banner(), file=sys.stderr, flush=True)
    return module.eval().to("cuda")


# Both ONNX-to-torch converters run an ONNX Resize with torch's interpolate, which has no equivalent of the
# attributes that fix the sampling (coordinate_transformation_mode, nearest_mode, cubic_coeff_a,
# exclude_outside): they ignore them and warn at conversion (onnx2torch/node_converters/resize.py: "For others
# modes, the results might differ significantly!"; onnx2pytorch/operations/resize.py: "Pytorch's interpolate
# uses no {key}. Result might differ."). A known limitation they state, not a bug to file.
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


# How torch's failures read, for every library that runs torch (BackendSpec.messages).
TORCH_MASKS: tuple[MessageMask, ...] = (
    # a tensor printed into the message ("Tensor: (1,.,.) = 0.74 -0.45 ... [ torch.FloatTensor{1,2,2} ]"): its values,
    # shape and layout vary between occurrences of one bug (torch.jit's "Cannot insert a Tensor that requires grad
    # as a constant" split into nine bugs in a 45-minute campaign)
    MessageMask(r"\bTensor:\s.*?(?:\[ torch\.\w+\{[\d,]*\} \]|$)", "Tensor: VALUES",
                example="Cannot insert a Tensor that requires grad as a constant. Consider making it a parameter or "
                        "input, or detaching the gradient Tensor: (1,.,.) = 0.7412 -0.4519 "
                        "[ torch.FloatTensor{1,2,1} ]"),
    # torch.onnx's export errors end by quoting the traced graph around the failing value (memo.text): which
    # value, its shape and scope differ from model to model for one bug; the head of the message names it
    MessageMask(TRACED_GRAPH_TAIL.pattern, " [Caused by a value of the traced graph]", stage="shapes",
                example="onnx memory_format support is not implemented [Caused by the value 'kernel.NAME defined in "
                        "(%kernel.NAME : Half(SHAPE) = onnx::Transpose"),
    # TorchScript IR values (%inputs.27, %x.3): numbered per trace
    MessageMask(r"%[A-Za-z_]\w*\.\d+\b", "%NAME", stage="shapes",
                example="Failed to export a node '%inputs.27 : int[] = prim::ListConstruct(%x.3)' because it is not "
                        "constant."),
    # a TorchScript list's elements: one per spatial dimension (a 1-D and a 2-D pooling's padding fail alike)
    MessageMask(r"prim::ListConstruct\([^)]*\)", "prim::ListConstruct(...)", stage="shapes",
                example="(in list node %N : int[] = prim::ListConstruct(%N, %N), scope: keras.src.export"),
)
# torch.onnx names the aten operator it declines in lower case: "operator 'aten::rms_norm'",
# "operator adaptive_max_pool2d"
TORCH_DECLINED_FEATURES: tuple[str, ...] = (r"\boperator 'aten::(\w+)'", r"\bONNX export of operator ([a-z]\w*)")
TORCH_MESSAGES = MessageRules(masks=TORCH_MASKS, declined_features=TORCH_DECLINED_FEATURES)
