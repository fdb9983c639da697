"""A bug's files as blobs: read from a bug folder (small ones first, up to a bound; the expected output last, kept
compressed or as a digest when it does not fit: :mod:`memo.bugdb.expected`) and written back to one."""
from __future__ import annotations

from pathlib import Path

from memo.bugdb.database import BugDatabase
from memo.bugdb.expected import DIGEST, EXPECTED_FILE, fit

MAX_BUG_BYTES = 4 * 2**20  # a reduced bug's files are KB (median 190 KB); 27 of p20+p30's 183 folders pass 4 MiB, by their expected output


def folder_files(folder: Path, max_bytes: int = MAX_BUG_BYTES) -> tuple[dict[str, bytes], list[str]]:
    """``({name: bytes}, [names left out])``: the folder's plain files, smallest first, while their sum stays
    within ``max_bytes``; the expected output comes last (the model and inputs it is computed from come first), and
    one that does not fit is kept compressed, or else as its digest (then named as left out)."""
    paths = sorted((p for p in Path(folder).iterdir() if p.is_file()),
                   key=lambda p: (p.name == EXPECTED_FILE, p.stat().st_size, p.name))
    files: dict[str, bytes] = {}
    left_out: list[str] = []
    total = 0
    for path in paths:
        size = path.stat().st_size
        if path.name == EXPECTED_FILE and total + size > max_bytes:
            how, name, data = fit(path.read_bytes(), max_bytes - total)
            files[name] = data
            total += len(data)
            if how == DIGEST:
                left_out.append(path.name)
            continue
        if total + size > max_bytes:
            left_out.append(path.name)
            continue
        files[path.name] = path.read_bytes()
        total += size
    return files, left_out


def export_bug_files(db: BugDatabase, bug_id: str, folder: Path) -> Path:
    """Write the database bug's files (``repro.py`` and what it reads) into ``folder``; returns it."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in db.files(bug_id).items():
        if Path(name).name != name:  # only plain names were stored; never write outside the folder
            continue
        (folder / name).write_bytes(data)
    return folder
