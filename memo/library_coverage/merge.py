"""A campaign's library coverage so far: the lines reached per library, what a model adds, the figures shown.

Pure Python. Thread-safe: the campaign's pipelines merge their models from several threads.
"""
from __future__ import annotations

import threading
from typing import Iterable, Mapping, TypedDict

from memo.library_coverage.tracer import FileLines


class LibraryFigures(TypedDict):
    """One library's line coverage as ``memo run --json`` and the JSON report print it."""

    covered: int
    total: int


# What one backend's run reached in one measured library: (library, its total statements, files reached).
Reached = tuple[str, int, Mapping[str, list[int]]]


class LibraryCoverage:
    """Every library line reached so far (per library, per file) and each library's total statements."""

    def __init__(self) -> None:
        self.totals: dict[str, int] = {}
        self.seen: dict[str, dict[str, set[int]]] = {}
        self._lock = threading.Lock()

    def add(self, reached: Iterable[Reached]) -> dict[str, FileLines]:
        """Merge one model's lines; returns those no earlier model reached (library -> file -> sorted lines; a
        library with none is absent)."""
        new: dict[str, FileLines] = {}
        with self._lock:
            for library, total, reached_files in reached:
                self.totals[library] = max(total, self.totals.get(library, 0))
                files = self.seen.setdefault(library, {})
                for name, lines in reached_files.items():
                    known = files.setdefault(name, set())
                    fresh = sorted(set(lines) - known)
                    if fresh:
                        known.update(fresh)
                        new.setdefault(library, {}).setdefault(name, []).extend(fresh)
        return new

    def restore(self, totals: Mapping[str, int], lines: Iterable[tuple[str, str, int]]) -> None:
        """Load what a stored campaign reached before (``lines``: (library, file, line) rows)."""
        with self._lock:
            self.totals.update(totals)
            for library, name, line in lines:
                self.seen.setdefault(library, {}).setdefault(name, set()).add(line)

    def covered(self, library: str) -> int:
        return sum(map(len, self.seen.get(library, {}).values()))

    def figures(self) -> dict[str, LibraryFigures]:
        """``{library: {"covered": N, "total": M}}``, libraries sorted by name."""
        with self._lock:
            names = sorted(set(self.totals) | set(self.seen))
            return {name: LibraryFigures(covered=self.covered(name), total=self.totals.get(name, 0)) for name in names}


def percent(figures: LibraryFigures) -> float:
    """Covered lines in per cent of the library's statements (0 for an empty library)."""
    return 100.0 * figures["covered"] / figures["total"] if figures["total"] else 0.0


def count_lines(files: Mapping[str, list[int]]) -> int:
    return sum(map(len, files.values()))
