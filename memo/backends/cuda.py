"""Libraries under test on an NVIDIA GPU: whether one is visible, and the precision its kernels run in.

Stdlib only: the orchestrator reads this to decide which backends it can run, before any library is imported;
the worker-side functions import torch or JAX inside their bodies.

Precision. On a GPU the libraries' defaults are not float32: JAX's default matmul precision uses TF32 (10-bit
mantissa) on Ampere and later, and cuDNN's convolutions may pick TF32 kernels. Differences of 1e-3 to 4e-3 on
healthy models follow (docs/backends.md), which would be findings of nobody's bug. memo's GPU backends
therefore run in strict float32 by default: TF32 off in cuBLAS and cuDNN, JAX's highest matmul precision,
ONNX Runtime's ``use_tf32`` off. ``--gpu-precision tf32`` tests the fast modes instead, judged with a
tolerance derived from TF32's mantissa (:data:`TF32_TOLERANCE_FACTOR`).
"""
from __future__ import annotations

import functools
import os
import shutil
import subprocess
from pathlib import Path

DEVICE_CPU = "cpu"
DEVICE_CUDA = "cuda"
PRECISION_VARIABLE = "MEMO_GPU_PRECISION"  # read by the GPU workers (and repro scripts): "strict" or "tf32"
STRICT = "strict"
TF32 = "tf32"
GPU_PRECISIONS: tuple[str, ...] = (STRICT, TF32)

# TF32 keeps 10 of float32's 23 mantissa bits: its unit roundoff is 2**-11 where float32's is 2**-24. The oracle's
# float32 tolerance (1e-3 of the output's scale) stands for the rounding of a model's float32 arithmetic; a product
# whose inputs are rounded to TF32 carries up to 2**-11 relative error per term. In tf32 mode a GPU backend's
# tolerance is 16 TF32 roundoffs (7.8e-3) instead of 1e-3, this factor times the float32 one.
TF32_TOLERANCE_FACTOR = 16 * 2.0 ** -11 / 1e-3

_NVIDIA_GPUS = Path("/proc/driver/nvidia/gpus")


@functools.lru_cache(maxsize=1)
def gpu_unavailable() -> str | None:
    """Why no CUDA device can be used here (None: one is visible). Asks the driver, not a library."""
    hidden = os.environ.get("CUDA_VISIBLE_DEVICES")
    if hidden is not None and hidden.strip() in ("", "-1"):
        return f"CUDA_VISIBLE_DEVICES={hidden!r} hides every GPU"
    if _NVIDIA_GPUS.is_dir() and any(_NVIDIA_GPUS.iterdir()):
        return None
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return "no NVIDIA GPU: no driver (/proc/driver/nvidia) and no nvidia-smi"
    try:
        listed = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"nvidia-smi failed: {type(exc).__name__}"
    if listed.returncode != 0 or "GPU" not in listed.stdout:
        return f"nvidia-smi lists no GPU ({(listed.stderr or listed.stdout).strip()[:120] or 'no output'})"
    return None


def precision() -> str:
    """The precision a GPU worker runs in (its environment's :data:`PRECISION_VARIABLE`, default strict)."""
    chosen = os.environ.get(PRECISION_VARIABLE, STRICT)
    return chosen if chosen in GPU_PRECISIONS else STRICT


def set_torch_precision() -> None:
    """cuBLAS and cuDNN in strict float32 (or TF32 where the precision says so), in this process."""
    import torch

    fast = precision() == TF32
    torch.backends.cuda.matmul.allow_tf32 = fast
    torch.backends.cudnn.allow_tf32 = fast
    torch.set_float32_matmul_precision("high" if fast else "highest")


def set_jax_precision() -> None:
    """JAX's default matmul and convolution precision: highest (float32) or TF32, in this process."""
    import jax

    jax.config.update("jax_default_matmul_precision", "tensorfloat32" if precision() == TF32 else "highest")


@functools.lru_cache(maxsize=1)
def device_banner() -> str:
    """One line naming the GPU, its driver and the CUDA version torch was built with (for logs and scripts)."""
    import torch

    name = torch.cuda.get_device_name(0)
    driver = "unknown"
    smi = shutil.which("nvidia-smi")
    if smi:
        query = subprocess.run([smi, "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True,
                               text=True, timeout=20)
        driver = query.stdout.strip().splitlines()[0] if query.returncode == 0 and query.stdout.strip() else driver
    return f"device: {name}, driver {driver}, CUDA {torch.version.cuda}, precision {precision()}"
