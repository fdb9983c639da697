"""Executable statements of the measured files, counted as coverage.py counts them.

A file's statements and its multi-line map come from coverage.py's own parser with its default exclusions, as
its reports do: a statement spanning lines 10-12 counts once, as line 10, whichever of its lines the tracer
saw. The total of a library (every statement of every measured file) is computed once per library version and
cached in the user's cache folder (``$XDG_CACHE_HOME/memo/library-coverage``, else ``~/.cache/...``), keyed by
the files' names, sizes and modification times.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from memo.library_coverage.measured import MeasuredCode, measured_files

TOTALS_FORMAT = 1  # bump when the way statements are counted changes


def cache_folder() -> Path:
    """Where library totals are cached (the XDG cache folder)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "memo" / "library-coverage"


@dataclass(frozen=True)
class FileStatements:
    """One file as coverage.py's parser reads it: its statements' first lines, and each other line of a multi-line
    statement mapped to its first line."""

    statements: frozenset[int]
    first_lines: dict[int, int]

    def executed(self, lines: Iterable[int]) -> set[int]:
        """The statements among the lines a tracer reported (each mapped to its statement's first line)."""
        return {self.first_lines.get(line, line) for line in lines} & self.statements


def parse_file(path: Path) -> FileStatements:
    """A file's statements (none for a file coverage.py cannot parse: it cannot be executed either)."""
    from coverage.config import DEFAULT_EXCLUDE
    from coverage.exceptions import CoverageException
    from coverage.misc import join_regex
    from coverage.parser import PythonParser

    parser = PythonParser(filename=str(path), exclude=join_regex(DEFAULT_EXCLUDE))
    try:
        parser.parse_source()
    except (CoverageException, SyntaxError, UnicodeDecodeError, OSError):
        return FileStatements(frozenset(), {})
    return FileStatements(frozenset(parser.statements), dict(parser.multiline_map))


@dataclass
class StatementIndex:
    """Parsed files of one process, each parsed once (a worker maps every model's lines through it)."""

    files: dict[Path, FileStatements] = field(default_factory=dict)

    def of(self, path: Path) -> FileStatements:
        if path not in self.files:
            self.files[path] = parse_file(path)
        return self.files[path]


def _totals_key(code: MeasuredCode, files: list[tuple[str, Path]]) -> str:
    import coverage

    digest = hashlib.sha256(json.dumps([TOTALS_FORMAT, coverage.__version__, code.library, code.folders,
                                        code.excluded]).encode())
    for relative, path in files:
        stat = path.stat()
        digest.update(f"{relative}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def library_total(code: MeasuredCode, root: Path, index: StatementIndex | None = None,
                  cache: Path | None = None) -> int:
    """The executable statements of every measured file of ``code`` under ``root`` (cached per library version:
    the same files, sizes and times give the cached count)."""
    files = list(measured_files(code, root))
    key = _totals_key(code, files)
    entry = (cache or cache_folder()) / f"{code.library}-{key[:20]}.json"
    try:
        return int(json.loads(entry.read_text())["total"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    index = index if index is not None else StatementIndex()
    total = sum(len(index.of(path).statements) for _, path in files)
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        temporary = entry.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps({"library": code.library, "root": str(root), "files": len(files),
                                         "total": total}))
        temporary.replace(entry)
    except OSError:  # a read-only cache folder costs the next run a recount, nothing else
        pass
    return total
