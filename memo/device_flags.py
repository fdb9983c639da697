"""The flags that say what the libraries are compared with and how GPU backends compute (``memo fuzz``, ``memo run``)."""
from __future__ import annotations

import argparse

from memo.backends.cuda import GPU_PRECISIONS, STRICT, TF32_TOLERANCE_FACTOR
from memo.errors import UsageError


def add_device_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--reference", metavar="BACKEND",
                        help="the backend every other one is compared with (default keras-tensorflow); e.g. "
                             "keras-torch on a machine without TensorFlow")
    parser.add_argument("--gpu-precision", choices=GPU_PRECISIONS, default=STRICT,
                        help="how GPU backends compute: strict float32 (default: TF32 off, highest matmul "
                             "precision) or tf32 (the libraries' fast modes, judged with a tolerance "
                             f"{TF32_TOLERANCE_FACTOR:.1f} times float32's)")


def check_device_arguments(args: argparse.Namespace) -> None:
    """A clear error for a reference that names no backend memo knows (whether it runs here is checked when the
    workers start)."""
    from memo.backends import BACKENDS

    if args.reference is not None and args.reference not in BACKENDS:
        raise UsageError(f"unknown reference backend {args.reference!r} (known: {', '.join(BACKENDS)})")
