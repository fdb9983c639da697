"""Installed versions of distributions, read from package metadata (no import of the packages).

A backend may live in another virtual environment (MXNet): its versions are read by running that
interpreter on this module (``python -m memo.backends.versions NAME...`` prints them as JSON).
"""
from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Iterable, Sequence

MISSING = "missing"


def distribution_versions(names: Iterable[str]) -> dict[str, str]:
    """``{name: version}`` for each installed distribution; missing ones map to ``"missing"``."""
    out: dict[str, str] = {}
    for name in names:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = MISSING
    return out


def versions_in(python: str | None, names: Sequence[str]) -> tuple[dict[str, str], str | None]:
    """Versions of ``names`` as seen by interpreter ``python`` (None: this one), and why the backend
    cannot run there (None when everything is installed)."""
    if python is None:
        versions = distribution_versions(names)
    elif not Path(python).exists():
        return {name: MISSING for name in names}, f"interpreter {python} not found"
    else:
        root = str(Path(__file__).resolve().parents[2])
        env = {**os.environ, "PYTHONPATH": root}
        try:
            done = subprocess.run([python, "-m", "memo.backends.versions", *names], capture_output=True, text=True,
                                  env=env, timeout=60, check=True)
            versions = json.loads(done.stdout)
        except (OSError, subprocess.SubprocessError, json.JSONDecodeError) as exc:
            return {name: MISSING for name in names}, f"interpreter {python} failed: {type(exc).__name__}"
    missing = [name for name, version in versions.items() if version == MISSING]
    return versions, (f"not installed: {', '.join(missing)}" if missing else None)


if __name__ == "__main__":
    print(json.dumps(distribution_versions(sys.argv[1:])))
