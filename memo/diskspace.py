"""Sizes on disk and a full disk, for every part of memo that writes files (the campaign, the store,
triage, the report): parsing and printing sizes, bytes allocated under a folder, and whether an error
means a full disk or an exhausted quota. It imports only the standard library and memo.errors, so that
any module may import it.
"""
from __future__ import annotations

import errno
import os
import re
import sqlite3
from pathlib import Path
from typing import Any, Iterator

from memo.errors import UsageError

_UNITS = {"": 1, "B": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([KMGT]?)(?:I?B)?\s*$", re.IGNORECASE)
_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
_FULL_MARKERS = ("no space left on device", "disk quota exceeded", "database or disk is full",
                 "[errno 28]", "[errno 122]")
_SQLITE_FULL = 13


# ---------------------------------------------------------------------------- sizes
def parse_size(text: str) -> int:
    """Bytes from ``2G``, ``500M``, ``1.5GB``, ``64k`` or a plain byte count (binary units: 1G = 2**30)."""
    match = _SIZE.match(str(text))
    if not match:
        raise UsageError(f"--max-disk {text!r}: expected a size such as 2G, 500M or 0 (no budget)")
    number, unit = match.groups()
    return int(float(number) * _UNITS[unit.upper()])


def format_size(size: float) -> str:
    """``1.2 GB``, ``340 MB``, ``12 KB`` (binary units, like :func:`parse_size`)."""
    for unit, scale in (("GB", 2**30), ("MB", 2**20), ("KB", 2**10)):
        if abs(size) >= scale:
            value = size / scale
            return f"{value:.1f} {unit}" if value < 100 else f"{value:.0f} {unit}"
    return f"{int(size)} B"


def tree_bytes(path: Path) -> int:
    """Bytes allocated on disk under ``path`` (like ``du``; 0 if it does not exist). Files vanishing
    during the walk (triage and pipelines delete folders concurrently) are skipped."""
    path = Path(path)
    try:
        if not path.is_dir():
            return _allocated(path.stat()) if path.exists() else 0
    except OSError:
        return 0
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += _allocated(os.lstat(os.path.join(root, name)))
            except OSError:
                continue
    return total


def _allocated(stat: os.stat_result) -> int:
    blocks = getattr(stat, "st_blocks", None)
    return blocks * 512 if blocks is not None else stat.st_size


# ---------------------------------------------------------------------------- a full disk
def is_disk_full(exc: BaseException | None) -> bool:
    """Whether ``exc`` (or an exception it was raised from) means a full disk or an exhausted quota:
    ENOSPC / EDQUOT, SQLite's SQLITE_FULL, or a library that re-raised one as text."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in _FULL_ERRNOS:
            return True
        if isinstance(exc, sqlite3.Error) and getattr(exc, "sqlite_errorcode", None) == _SQLITE_FULL:
            return True
        if any(marker in str(exc).lower() for marker in _FULL_MARKERS):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def mentions_disk_full(document: Any) -> bool:
    """Whether any text in a JSON-like document (an execution result) reports a full disk: a worker that
    could not write its outputs or its ONNX file reports it as its own failure, which is no finding."""
    return any(marker in text.lower() for text in _strings(document) for marker in _FULL_MARKERS)


def _strings(document: Any) -> Iterator[str]:
    if isinstance(document, str):
        yield document
    elif isinstance(document, dict):
        for value in document.values():
            yield from _strings(value)
    elif isinstance(document, (list, tuple)):
        for value in document:
            yield from _strings(value)
