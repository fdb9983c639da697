"""ONNX Runtime (CPU execution provider) on tf2onnx's default-opset conversion (``onnxruntime``) and on
Keras's own ONNX export (``onnxruntime-keras-export``).

onnxruntime is imported inside the functions below, which run in the worker only: the orchestrator
imports this module to read the spec and must never import a library under test.
"""
from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any

from memo.backends import trackers
from memo.backends.idioms import engine_idiom
from memo.backends.cuda import TF32, device_banner, precision
from memo.backends.keras_common import BICUBIC_KERNEL
from memo.backends.spec import BackendSpec, MessageRules, ModelInputs, ReproRecipe, UnsupportedPhrase, Upstream
from memo.backends.versions import distribution_versions

DISTRIBUTIONS = ("onnxruntime", "onnx")


def _setup() -> dict[str, str]:
    import onnxruntime  # noqa: F401

    return distribution_versions(DISTRIBUTIONS)


def _load(path: Path) -> Any:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def _run(session: Any, inputs: ModelInputs) -> list[Any]:
    """Feed the inputs by name when the graph's inputs are named after the model's (both converters name
    them so), else by position; an exporter may drop an input the outputs do not depend on."""
    args = session.get_inputs()
    if all(arg.name in inputs for arg in args):
        feed = {arg.name: inputs[arg.name] for arg in args}
    else:
        feed = {arg.name: array for arg, array in zip(args, inputs.values())}
    return session.run(None, feed)


# ONNX Runtime's NOT_IMPLEMENTED status (its own exception class, not a NotImplementedError): no kernel
# for an op, opset version or type.
UNSUPPORTED = (
    UnsupportedPhrase(r"NOT_IMPLEMENTED : Could not find an implementation for", exc_types=("NotImplemented",),
                      example="[ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : Could not find an implementation for "
                              "ConvInteger(10) node with name 'conv'"),
    # its Resize kernel states the cubic mode's limit itself (upsamplebase.h ScalesValidation): tf2onnx's NHWC
    # bicubic resize meets it (t52's reader: a documented limitation, not a bug)
    UnsupportedPhrase(r"'Cubic' mode only supports", exc_types=("Fail",),
                      example="[ONNXRuntimeError] : 1 : FAIL : Non-zero status code returned while running Resize "
                              "node. Name:'Resize__17137' Status Message: upsamplebase.h:579 ScalesValidation "
                              "'Cubic' mode only supports: * 2-D inputs ('Bicubic') or * 4-D inputs with the "
                              "corresponding outermost 2 scale values being 1"),
)

# It names the op it has no kernel for, with its opset, before the node: "implementation for Conv(11) node with name".
# A kernel's failure names its node: "Non-zero status code returned while running Reshape node. Name:'model/x/Reshape'".
MESSAGES = MessageRules(declined_features=(r"\bimplementation for ([A-Za-z]\w*)\(\d+\) node",),
                        failing_nodes=(r"while running (?P<op>[A-Za-z]\w*) node\. Name:'(?P<node>[^']*)'",))

UPSTREAM = Upstream("active", "https://github.com/microsoft/onnxruntime/issues",
                    "Microsoft releases ONNX Runtime regularly (1.31.1 installed)", trackers.ONNXRUNTIME)

SPEC = BackendSpec(name="onnxruntime", consumes="onnx", load=_load, run=_run, setup=_setup,
                   distributions=DISTRIBUTIONS, unsupported_patterns=UNSUPPORTED, repro=ReproRecipe(),
                   engine="onnxruntime", upstream=UPSTREAM, messages=MESSAGES, idiom=engine_idiom("onnxruntime", (
                       'session = onnxruntime.InferenceSession(model.SerializeToString(), '
                       'providers=["CPUExecutionProvider"])',
                       "actual = session.run(None, feed)")))
# The same runtime on Keras's own export (keras_export_converter: Keras on torch, torch.onnx). That file's
# bicubic Resize says cubic_coeff_a=-0.75 (PyTorch's kernel, what Keras on torch computes), and ONNX Runtime
# follows it: a difference from TensorFlow's a = -0.5 there is by design (keras_common.BICUBIC_KERNEL).
SPEC_KERAS_EXPORT = dataclasses.replace(SPEC, name="onnxruntime-keras-export", consumes="keras-onnx",
                                        documented_differences=(BICUBIC_KERNEL,), computes_with="keras-torch")


def _setup_cuda() -> dict[str, str]:
    import onnxruntime

    if "CUDAExecutionProvider" not in onnxruntime.get_available_providers():
        raise RuntimeError(f"ONNX Runtime has no CUDA execution provider here (providers: "
                           f"{', '.join(onnxruntime.get_available_providers())}): install onnxruntime-gpu")
    return distribution_versions(CUDA_DISTRIBUTIONS)


def _load_cuda(path: Path) -> Any:
    """A session on the CUDA execution provider alone (no silent fall-back to the CPU's kernels), TF32 off unless
    the GPU precision is tf32."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.inter_op_num_threads = 1
    cuda_options = {"device_id": 0, "use_tf32": 1 if precision() == TF32 else 0}
    session = onnxruntime.InferenceSession(str(path), options, providers=[("CUDAExecutionProvider", cuda_options)])
    if session.get_providers()[0] != "CUDAExecutionProvider":
        raise RuntimeError(f"ONNX Runtime did not use the CUDA provider (got {session.get_providers()})")
    print(device_banner(), file=sys.stderr, flush=True)
    return session


CUDA_DISTRIBUTIONS = ("onnxruntime-gpu", "onnx")
# ONNX Runtime's CUDA execution provider on tf2onnx's file: available where onnxruntime-gpu is installed and a GPU
# is visible; judged against the reference and against ``onnxruntime`` (its CPU provider) on the same file.
SPEC_CUDA = dataclasses.replace(SPEC, name="onnxruntime-cuda", load=_load_cuda, setup=_setup_cuda,
                                distributions=CUDA_DISTRIBUTIONS, engine="onnxruntime-cuda", device="cuda",
                                cpu_twin="onnxruntime", idiom=None)
