"""coverage.py's C tracer around one model's stages in a worker process (Python 3.11 has no sys.monitoring).

One :class:`LibraryTracer` per backend spec, restricted (include patterns) to its measured folders: the tracer
still sees every Python call, but traces lines only in those files. Started before a model's first stage and
stopped after its last; :meth:`LibraryTracer.stop` returns the statements reached, per measured library, with
file names relative to the package root, and forgets them (the next model starts empty).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from memo.library_coverage.measured import MeasuredCode, package_root
from memo.library_coverage.statements import StatementIndex, library_total

FileLines = dict[str, list[int]]  # file relative to the package root -> sorted statement lines reached

# Warnings coverage.py would print on every model of a worker whose library reached no measured line.
_QUIET = ["no-data-collected", "module-not-imported", "module-not-measured", "already-imported"]


@dataclass(frozen=True)
class Located:
    """A measured set where this interpreter has it installed."""

    code: MeasuredCode
    root: Path


class LibraryTracer:
    """Measures ``codes`` (those installed here) in this process; a code not installed is left out."""

    def __init__(self, codes: Sequence[MeasuredCode]) -> None:
        import coverage

        self.located = [Located(code, root) for code in codes if (root := package_root(code)) is not None]
        self.index = StatementIndex()
        include = [f"{item.root / folder}/*" for item in self.located for folder in item.code.folders]
        omit = [f"{item.root / folder}/*" for item in self.located for folder in item.code.excluded]
        self._coverage: Any = coverage.Coverage(data_file=None, config_file=False, branch=False, include=include,
                                                omit=omit or None)
        self._coverage.set_option("run:disable_warnings", _QUIET)

    @property
    def libraries(self) -> list[str]:
        return [item.code.library for item in self.located]

    def totals(self) -> dict[str, int]:
        """Each measured library's executable statements (cached per library version)."""
        return {item.code.library: library_total(item.code, item.root, self.index) for item in self.located}

    def start(self) -> None:
        self._coverage.erase()
        self._coverage.start()

    def stop(self) -> dict[str, FileLines]:
        """Stop tracing; the statements reached since :meth:`start`, per library (every measured library present,
        an empty one too)."""
        self._coverage.stop()
        data = self._coverage.get_data()
        reached: dict[str, FileLines] = {item.code.library: {} for item in self.located}
        for filename in data.measured_files():
            path = Path(filename)
            item = self._owner(path)
            if item is None:
                continue
            lines = self.index.of(path).executed(data.lines(filename) or ())
            if lines:
                reached[item.code.library][path.relative_to(item.root).as_posix()] = sorted(lines)
        self._coverage.erase()
        return reached

    def _owner(self, path: Path) -> Located | None:
        for item in self.located:
            if path.is_relative_to(item.root) and item.code.includes(path.relative_to(item.root).as_posix()):
                return item
        return None
