"""``memo backends``: every backend, the library versions it runs, and whether it can run here."""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

GPU_PRECISION_NOTE = ("strict float32 by default (TF32 off in cuBLAS, cuDNN and ONNX Runtime, JAX's highest matmul "
                      "precision); --gpu-precision tf32 tests the fast modes with a wider tolerance")

# The handlers below import the rest of memo when they run: the CLI imports every command module to
# build its parser, and `memo --help` must not pay for the campaign, triage, Keras or rich.


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("backends", help="list backends, their library versions and availability")
    parser.add_argument("--backend-plugin", action="append", default=[], type=Path, metavar="PATH",
                        help="also list this plugin; repeatable")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(func=handle)


def describe(plugins: list[Path]) -> list[dict[str, Any]]:
    """One row per registered backend, converter and plugin (reads package metadata; imports no library)."""
    from memo.backends import BACKENDS, CONVERTERS, GPU_BACKENDS, REFERENCE, default_backends, producers
    from memo.backends.cuda import DEVICE_CPU
    from memo.backends.executor import registered_member
    from memo.backends.plugins import read_plugin

    rows = []
    defaults = default_backends()
    default_kinds = {registered_member(name).consumes for name in defaults}
    for name in [*BACKENDS, *CONVERTERS]:
        member = registered_member(name)
        # a converter that writes what a default backend reads (not one that only stands in for another)
        default = name in defaults or (member.produces in default_kinds and producers().get(member.produces) == name)
        rows.append({"name": name, "role": member.role, "consumes": member.consumes, "produces": member.produces,
                     "default": default, "reference": name == REFERENCE, "device": member.device,
                     "precision": "" if member.device == DEVICE_CPU else GPU_PRECISION_NOTE,
                     "gpu_default": name in GPU_BACKENDS,
                     "versions": member.versions, "available": member.unavailable is None,
                     "why_not": member.unavailable})
    for info in map(read_plugin, plugins):
        rows.append({"name": info.name, "role": "plugin", "consumes": info.consumes, "produces": None,
                     "default": False, "reference": False, "device": "cpu", "precision": "", "gpu_default": False,
                     "versions": {}, "available": True, "why_not": None, "path": str(info.path)})
    return rows


def handle(args: argparse.Namespace) -> int:
    rows = describe(args.backend_plugin)
    if args.json:
        print(json.dumps({"backends": rows}, indent=1))
        return 0
    from rich.console import Console
    from rich.table import Table

    table = Table(title="memo backends")
    for column in ("name", "role", "consumes", "device", "runs", "versions", "available"):
        table.add_column(column)
    for row in rows:
        versions = ", ".join(f"{k} {v}" for k, v in row["versions"].items())
        role = row["role"] + (" (reference)" if row["reference"] else "")
        runs = "by default" if row["default"] else "by default on a GPU" if row["gpu_default"] else "with --backends"
        table.add_row(row["name"], role, row["consumes"], row["device"], runs, versions,
                      "yes" if row["available"] else f"no: {row['why_not']}")
    console = Console(width=max(Console().width, 120))
    console.print(table)
    console.print(f"GPU backends: {GPU_PRECISION_NOTE}")
    return 0
