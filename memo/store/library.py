"""Library coverage's tables (``library_lines``, ``library_totals``), reached as ``store.library``; see
:mod:`memo.store.schema`. A line is stored once, with the model that reached it first."""
from __future__ import annotations

import sqlite3
from typing import Iterator, Mapping

from memo.store.records import LibraryCount, LibraryModule


class LibraryTables:
    """Reads and writes of library coverage on the campaign store's connection (its transactions apply)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def add(self, mutant_id: int, *, seed: bool, created: float, totals: Mapping[str, int],
            new: Mapping[str, Mapping[str, list[int]]]) -> None:
        """Record the lines ``mutant_id`` reached first (library -> file -> lines) and the libraries' totals."""
        self._db.executemany("INSERT INTO library_totals(library, total) VALUES (?, ?) ON CONFLICT(library)"
                             " DO UPDATE SET total = max(total, excluded.total)", sorted(totals.items()))
        self._db.executemany(
            "INSERT OR IGNORE INTO library_lines(library, file, line, mutant_id, seed, created)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            ((library, name, line, mutant_id, int(seed), created)
             for library, files in new.items() for name, lines in files.items() for line in lines))

    def totals(self) -> dict[str, int]:
        return dict(self._db.execute("SELECT library, total FROM library_totals ORDER BY library"))

    def lines(self) -> Iterator[tuple[str, str, int]]:
        """Every line reached, as (library, file, line): what a resumed campaign starts from."""
        yield from self._db.execute("SELECT library, file, line FROM library_lines")

    def counts(self) -> list[LibraryCount]:
        """Per library (every one with a total or a line, by name): lines reached, by the seeds, and the total."""
        reached = {row[0]: (row[1], row[2]) for row in self._db.execute(
            "SELECT library, COUNT(*), COALESCE(SUM(seed), 0) FROM library_lines GROUP BY library")}
        totals = self.totals()
        return [LibraryCount(name, *reached.get(name, (0, 0)), totals.get(name, 0))
                for name in sorted(set(reached) | set(totals))]

    def top_modules(self, limit: int = 10) -> list[LibraryModule]:
        """The modules where mutants (not the seeds) reached the most lines first, most first."""
        return [LibraryModule(*row) for row in self._db.execute(
            "SELECT library, file, COUNT(*) AS n FROM library_lines WHERE seed = 0 GROUP BY library, file"
            " ORDER BY n DESC, library, file LIMIT ?", (limit,))]

    def first_reached(self, *, seeds: bool = True) -> list[tuple[str, float]]:
        """(library, when) of every line (without ``seeds``: of those mutants reached first), in the order they were
        first reached (the curves' points)."""
        where = "" if seeds else " WHERE seed = 0"
        return list(self._db.execute(f"SELECT library, created FROM library_lines{where} ORDER BY created, rowid"))
