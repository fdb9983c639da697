"""CLI subcommands. Each module here defines ``register(subparsers)``; the CLI discovers them all.

A command's handler is stored as ``func`` on its parser and returns the process exit status.
"""
from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType


def command_modules() -> list[ModuleType]:
    """Every subcommand module, sorted by name (so ``--help`` lists them stably)."""
    return [importlib.import_module(f"{__name__}.{info.name}")
            for info in sorted(pkgutil.iter_modules(__path__), key=lambda info: info.name)
            if not info.name.startswith("_")]
