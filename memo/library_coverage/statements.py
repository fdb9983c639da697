"""Executable statements of the measured files, counted as coverage.py counts them.

A file's statements and its multi-line map come from coverage.py's own parser with its default exclusions, as
its reports do: a statement spanning lines 10-12 counts once, as line 10, whichever of its lines the tracer
saw. Every measured file of a library is parsed once per library version and its statements cached in the user's
cache folder (``$XDG_CACHE_HOME/memo/library-coverage``, else ``~/.cache/...``), keyed by the files' names, sizes
and modification times: the library's total, and what a worker maps each model's lines through.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from memo.library_coverage.measured import MeasuredCode, measured_files

STATEMENTS_FORMAT = 2  # bump when the way statements are counted (or cached) changes


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


def _library_key(code: MeasuredCode, files: list[tuple[str, Path]]) -> str:
    import coverage

    digest = hashlib.sha256(json.dumps([STATEMENTS_FORMAT, coverage.__version__, code.library, code.folders,
                                        code.excluded]).encode())
    for relative, path in files:
        stat = path.stat()
        digest.update(f"{relative}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def _encode(parsed: FileStatements) -> list[list[int]]:
    return [sorted(parsed.statements), [n for pair in sorted(parsed.first_lines.items()) for n in pair]]


def _decode(data: list[list[int]]) -> FileStatements:
    statements, pairs = data
    return FileStatements(frozenset(statements), dict(zip(pairs[::2], pairs[1::2])))


def library_total(code: MeasuredCode, root: Path, index: StatementIndex | None = None,
                  cache: Path | None = None) -> int:
    """The executable statements of every measured file of ``code`` under ``root``. Every file's statements are
    cached per library version (the same files, sizes and times read them back) and put into ``index``, so that a
    worker maps a model's lines without parsing a file on a model's time."""
    files = list(measured_files(code, root))
    entry = (cache or cache_folder()) / f"{code.library}-{_library_key(code, files)[:20]}.json"
    index = index if index is not None else StatementIndex()
    try:
        stored = json.loads(entry.read_text())["files"]
        parsed = {path: _decode(stored[relative]) for relative, path in files}
    except (OSError, ValueError, KeyError, TypeError):
        parsed = {path: index.of(path) for _, path in files}
        try:
            entry.parent.mkdir(parents=True, exist_ok=True)
            temporary = entry.with_suffix(f".{os.getpid()}.tmp")
            temporary.write_text(json.dumps({"library": code.library, "root": str(root), "files": {
                relative: _encode(parsed[path]) for relative, path in files}}))
            temporary.replace(entry)
        except OSError:  # a read-only cache folder costs the next worker a recount, nothing else
            pass
    index.files.update(parsed)
    return sum(len(item.statements) for item in parsed.values())
