"""Installed versions of distributions, read from package metadata (no import of the packages)."""
from __future__ import annotations

import importlib.metadata
from typing import Iterable


def distribution_versions(names: Iterable[str]) -> dict[str, str]:
    """``{name: version}`` for each installed distribution; missing ones map to ``"missing"``."""
    out: dict[str, str] = {}
    for name in names:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = "missing"
    return out
