"""The newest-code environment: where the development builds of the libraries under test are installed, and how
their distributions are named there.

``scripts/setup.sh`` builds ``.venv-next`` beside memo's own ``.venv``: ``keras-nightly``, ``tf-nightly-cpu`` and
``onnx-weekly`` (the development builds the package index serves) and the newest releases of every other library
under test. Triage reruns a reduced bug's ``repro.py`` there, unchanged, before it calls the bug ready to file: a
bug the development builds no longer show is already fixed upstream (docs/recheck.md, "The newest code").

Stdlib only: the commands, the campaign's configuration, triage and the bug database all ask it.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

from memo.errors import UsageError

NEXT_ENV_DIR = Path(__file__).resolve().parents[1] / ".venv-next"
NEXT_PYTHON_ENV = "MEMO_NEXT_PYTHON"  # the interpreter of another newest-code environment (a local build)
OFF = "none"  # ``--next-python none``: no recheck on the newest code

# A release's distribution name -> the development build that installs the same import package. A bug's script names
# the release (``Needs: pip install keras tensorflow-cpu``); in the newest-code environment the build provides it.
DEV_BUILDS: Mapping[str, str] = {"keras": "keras-nightly", "tensorflow-cpu": "tf-nightly-cpu",
                                 "tensorflow": "tf-nightly-cpu", "onnx": "onnx-weekly"}

# Distributions only the newest code needs for a library: keras-nightly loads its OpenVINO backend from the
# keras-openvino package (a pluggable backend) where the Keras release carries it inside; a report names its version.
NEXT_ONLY: Mapping[str, tuple[str, ...]] = {"keras-openvino": ("keras-openvino",)}
# The distributions that are development builds or come with them: a rerun that had one ran on the development builds.
BUILD_DISTRIBUTIONS = frozenset(DEV_BUILDS.values()) | {name for names in NEXT_ONLY.values() for name in names}

# The check's results, as triage stores them with the bug (``BugRow.newest["result"]``).
STILL_REPRODUCES, FIXED_UPSTREAM, CANNOT_RUN, NOT_APPLICABLE = "reproduces", "fixed", "error", "not applicable"


def is_off(value: str | None) -> bool:
    """Whether ``value`` switches the newest-code check off (``--next-python none``)."""
    return value is not None and value.strip().lower() == OFF


def next_python(explicit: str | None = None) -> str | None:
    """The newest-code environment's interpreter: ``explicit`` (``--next-python PATH``; ``none`` switches the check
    off), else ``$MEMO_NEXT_PYTHON``, else ``.venv-next/bin/python`` where the set-up built it; None when there is
    none. A path given that is no interpreter is a :class:`UsageError` (one line, exit 2)."""
    chosen = explicit if explicit is not None else os.environ.get(NEXT_PYTHON_ENV) or None
    if chosen is not None:
        if is_off(chosen):
            return None
        path = Path(chosen).expanduser()
        if not path.is_file() or not os.access(path, os.X_OK):
            source = "--next-python" if explicit is not None else f"${NEXT_PYTHON_ENV}"
            raise UsageError(f"{source} {chosen}: no Python interpreter there (give a virtual environment's "
                             f"bin/python, or 'none')")
        return str(path.absolute())
    default = NEXT_ENV_DIR / "bin" / "python"
    return str(default) if default.is_file() else None


def installed_as(name: str, versions: Mapping[str, str]) -> tuple[str, str] | None:
    """``(distribution, version)`` of the release ``name`` as an environment has it: the release itself, else its
    development build (``keras`` -> ``("keras-nightly", "3.16.0.dev2026102704")``); None when neither is in
    ``versions`` (what :func:`memo.bugdb.recheck.installed_versions` read)."""
    for candidate in (name, DEV_BUILDS.get(name)):
        if candidate and candidate in versions:
            return candidate, versions[candidate]
    return None


def build_text(names: tuple[str, ...] | list[str], versions: Mapping[str, str], missing: str) -> str:
    """The builds an environment has of ``names``, as a report names them: ``keras-nightly 3.16.0.dev2026102704,
    jax 0.10.2`` (``missing`` versions left out); "" when it has none."""
    found = [installed_as(name, versions) for name in names]
    return ", ".join(f"{dist} {version}" for dist, version in dict.fromkeys(f for f in found if f)
                     if version != missing)
