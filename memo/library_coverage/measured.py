"""Which package folders measure a library (stdlib only: backend specs, in every worker environment, declare it).

Folders are relative to the package root, the ``site-packages`` folder that holds the library's top-level package
(``keras/src`` is ``<site-packages>/keras/src``), so a campaign's files read the same on every machine.
"""
from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

# Keras's backends, each a folder of keras/src/backend/: Keras on one backend is measured without the others'.
KERAS_BACKENDS: tuple[str, ...] = ("tensorflow", "jax", "torch", "openvino", "numpy")
# A library's own tests, shipped inside its package (keras/src has 277 ``*_test.py`` files, a third of its
# statements), are not its code: memo never runs them, and counting them would shrink every percentage.
TEST_FOLDERS = frozenset({"tests", "testing"})


def is_test_module(relative: str) -> bool:
    """Whether a file (relative, with "/") is a test module: ``*_test.py``, ``test_*.py`` or in a tests folder."""
    *folders, name = relative.split("/")
    return name.endswith("_test.py") or name.startswith("test_") or bool(TEST_FOLDERS & set(folders))


@dataclass(frozen=True)
class MeasuredCode:
    """The Python code of one library as memo measures it: ``library`` names the measured set ("tf2onnx",
    "keras-tensorflow"), ``folders`` the package folders measured and ``excluded`` folders inside them that are
    not (both relative to the package root, with "/")."""

    library: str
    folders: tuple[str, ...]
    excluded: tuple[str, ...] = ()

    def includes(self, relative: str) -> bool:
        """Whether a ``.py`` file (relative to the package root, with "/") is measured (never a test module)."""
        inside = any(relative.startswith(folder.rstrip("/") + "/") for folder in self.folders)
        return (inside and not any(relative.startswith(folder.rstrip("/") + "/") for folder in self.excluded)
                and not is_test_module(relative))


def keras_code(backend: str) -> MeasuredCode:
    """Keras on ``backend``: keras/src without the other backends' folders, named ``keras-<backend>``."""
    others = tuple(f"keras/src/backend/{other}" for other in KERAS_BACKENDS if other != backend)
    return MeasuredCode(f"keras-{backend}", ("keras/src",), others)


def package_root(code: MeasuredCode) -> Path | None:
    """The folder holding ``code``'s top-level package where this interpreter would import it from (None when it is
    not installed); finding it imports nothing. The folder's real path: coverage.py names the files it traced by
    theirs, so a virtual environment reached through a symbolic link counted no line before."""
    top = code.folders[0].split("/")[0]
    try:
        found = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None
    locations = list(found.submodule_search_locations or []) if found is not None else []
    return Path(locations[0]).parent.resolve() if locations else None


def measured_files(code: MeasuredCode, root: Path) -> Iterator[tuple[str, Path]]:
    """Every measured ``.py`` file as (path relative to ``root`` with "/", absolute path), sorted."""
    for folder in code.folders:
        base = root / folder
        for path in sorted(base.rglob("*.py")) if base.is_dir() else ():
            relative = path.relative_to(root).as_posix()
            if code.includes(relative):
                yield relative, path
