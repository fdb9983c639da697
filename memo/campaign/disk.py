"""Disk use of a campaign: which executed artifacts stay on disk, the ``--max-disk`` budget, a full disk.

Every artifact under ``mutants/NAME/`` is regenerable: the store holds each mutant's IR, and weights and
inputs come from the campaign seed (:func:`memo.artifact.ensure_artifact` rebuilds one). So a campaign
keeps a full artifact only for the first :data:`KEEP_PER_SIGNATURE` occurrences of each bug signature
(what triage reads), slims those to the files their findings involve, and deletes the rest as soon as
the execution is stored. :class:`DiskBudget` keeps a running byte count of what stays (re-walked now and
then, since triage releases artifacts too) and, over the budget, deletes the least useful artifacts
first; only when nothing is left to delete does the campaign stop (:data:`STOP_DISK_BUDGET`).
"""
from __future__ import annotations

import errno
import os
import re
import shutil
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

from memo.campaign.config import DEFAULT_MAX_DISK, KEEP_PER_SIGNATURE
from memo.errors import UsageError
from memo.store import CampaignStore

REWALK_EVERY_S = 60.0         # the running count misses what triage releases and in-flight artifacts
STOP_DISK_FULL = "disk full"
STOP_DISK_BUDGET = "disk budget reached"
DISK_STOPS = frozenset({STOP_DISK_FULL, STOP_DISK_BUDGET})
EXIT_DISK = 3                 # distinct from 2 (usage errors) and 130 (interrupted)

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


# ---------------------------------------------------------------------------- free space and a full disk
def existing_ancestor(path: Path) -> Path:
    """``path`` or its nearest existing parent (a campaign's folders may not exist yet)."""
    path = Path(path).resolve()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def mount_point(path: Path) -> Path:
    path = existing_ancestor(path)
    while not os.path.ismount(path) and path != path.parent:
        path = path.parent
    return path


def free_bytes(path: Path) -> int:
    return shutil.disk_usage(existing_ancestor(path)).free


def space_warning(paths: Iterable[Path], budget: int) -> str | None:
    """One line if the filesystem holding any of ``paths`` has less free space than ``budget``."""
    if budget <= 0:
        return None
    lowest = min(((free_bytes(p), mount_point(p)) for p in paths), default=None, key=lambda item: item[0])
    if lowest is None or lowest[0] >= budget:
        return None
    return (f"memo: warning: only {format_size(lowest[0])} free on {lowest[1]} for a {format_size(budget)} "
            "disk budget")


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


# ---------------------------------------------------------------------------- where a campaign's bytes are
def artifact_roots(store: CampaignStore) -> list[Path]:
    """The campaign's artifact folders (``mutants/NAME``): the one it recorded (older campaigns: guessed like
    triage does) and those its stored artifacts lie in. A folder is only ever a root if it is named after
    the campaign and does not contain the campaign."""
    name = (store.get_meta("config", {}) or {}).get("name") or store.get_meta("campaign_name") or store.directory.name
    recorded = store.get_meta("artifacts_root")
    bases = (Path.cwd(), store.directory.resolve().parent.parent)
    candidates = [recorded] if recorded else [str(base / "mutants" / name) for base in bases]
    candidates += [str(Path(directory).parent) for directory in store.stored_artifact_dirs(limit=50)]
    campaign = store.directory.resolve()
    roots: list[Path] = []
    for candidate in candidates:
        if not candidate:
            continue
        root = Path(candidate).resolve()
        if root.name == name and root.is_dir() and not campaign.is_relative_to(root) and root not in roots:
            roots.append(root)
    return roots


def regenerable_paths(store: CampaignStore) -> list[Path]:
    """What ``memo clean`` deletes: the artifact folders and triage's scratch folder, never the database
    or the bug folders."""
    from memo.triage import WORK_DIR  # noqa: PLC0415

    work = store.directory.resolve() / WORK_DIR
    return artifact_roots(store) + ([work] if work.is_dir() else [])


def disk_figures(store: CampaignStore) -> dict[str, Any]:
    """Bytes of the artifacts, the campaign folder and its bug folders, for the report and ``memo clean``."""
    from memo.triage.bugdir import BUGS_DIR  # noqa: PLC0415

    artifacts = sum(tree_bytes(root) for root in artifact_roots(store))
    campaign = tree_bytes(store.directory)
    executed = store.count_executions()
    config = store.get_meta("config", {}) or {}
    return {"artifacts_bytes": artifacts, "campaign_bytes": campaign,
            "bugs_bytes": tree_bytes(store.directory / BUGS_DIR),
            "artifacts_kept": store.count_executions(with_artifact=True),
            "budget_bytes": config.get("max_disk_bytes"),
            "bytes_per_executed": (artifacts + campaign) / executed if executed else None}


# ---------------------------------------------------------------------------- what to keep
def finding_signatures(verdicts: Iterable[dict[str, Any]], result: dict[str, Any] | None) -> list[str]:
    """Signatures of the bug findings among ``verdicts`` (``Verdict.to_json()`` dicts), as triage computes
    them before localization; unsupported features and invalid models need no artifact."""
    from memo.triage.signature import BUG_KINDS, signature  # noqa: PLC0415

    return list(dict.fromkeys(signature(v, result, None) for v in verdicts if v.get("kind") in BUG_KINDS))


def needed_files(verdicts: Iterable[dict[str, Any]], result: dict[str, Any] | None) -> tuple[set[str], set[str]] | None:
    """(artifact kinds, backends whose outputs) triage may read for these findings, or None when it cannot
    tell (then nothing is slimmed). Per finding: the file every involved backend consumes (and what a
    blamed converter produces) and the outputs of the faulty and the reference library."""
    from memo.backends import CONVERTERS, load_spec  # noqa: PLC0415
    from memo.triage.probe import roles  # noqa: PLC0415
    from memo.triage.signature import BUG_KINDS, reference_of  # noqa: PLC0415

    available = list(((result or {}).get("backends") or {}))
    kinds, backends = {"keras"}, set()
    try:
        for verdict in verdicts:
            if verdict.get("kind") not in BUG_KINDS:
                continue
            reference = reference_of(verdict) or str((result or {}).get("reference") or "")
            found = roles(verdict, reference, available)
            names = {*found.backends, found.faulty, found.good, str(verdict.get("backend", "")), reference}
            backends |= names
            for name in names - {""}:
                spec = load_spec(name)
                kinds.add(spec.produces if name in CONVERTERS else spec.consumes)
    except Exception:  # a plugin backend or an odd verdict: keep the whole artifact
        return None
    return kinds, backends


@dataclass
class Kept:
    """An artifact on disk for a stored execution."""

    mutant_id: int
    directory: Path
    size: int
    signatures: tuple[str, ...]


@dataclass
class DiskBudget:
    """The artifacts a campaign keeps, their bytes, and the budget; one per running campaign.

    ``limit`` 0 means no budget (a full disk still stops the campaign). Signature counts are rebuilt
    from the store on start, so a resumed campaign keeps the same artifacts it would have kept.
    """

    store: CampaignStore
    root: Path
    limit: int = DEFAULT_MAX_DISK
    per_signature: int = KEEP_PER_SIGNATURE
    used: int = 0
    released: int = 0     # kept artifacts deleted later to stay under the budget
    discarded: int = 0    # artifacts deleted right after their execution was stored
    kept: dict[int, Kept] = field(default_factory=dict)
    seen: dict[str, int] = field(default_factory=dict)
    bugs_dir: Path | None = None

    def load(self) -> None:
        """Signature counts from every stored finding; the artifacts still on disk; the true byte count.
        Folders of executions stored as not kept (a kill between commit and delete) are deleted now."""
        import json  # noqa: PLC0415

        from memo.triage.bugdir import BUGS_DIR  # noqa: PLC0415
        from memo.triage.signature import BUG_KINDS  # noqa: PLC0415

        self.bugs_dir = self.store.directory.resolve() / BUGS_DIR
        groups: dict[int, list[dict[str, Any]]] = {}
        for row in self.store.verdicts(tuple(sorted(BUG_KINDS))):
            groups.setdefault(row["mutant_id"], []).append({**row, "metrics": json.loads(row["metrics"] or "{}")})
        # streamed: a long campaign's results are hundreds of megabytes
        for execution in self.store.executions():
            mutant_id, directory = execution.mutant_id, execution.artifact_dir
            signatures = finding_signatures(groups[mutant_id], execution.result) if mutant_id in groups else []
            self._count(signatures)
            if directory and Path(directory).is_dir():
                self.kept[mutant_id] = Kept(mutant_id, Path(directory), tree_bytes(Path(directory)),
                                            tuple(signatures))
        dropped = self.store.mutants_without_artifact()
        for folder in _numbered_folders(self.root):
            if int(folder.name) in dropped:
                shutil.rmtree(folder, ignore_errors=True)
        self.rewalk()

    def _count(self, signatures: Iterable[str]) -> bool:
        """Count one more occurrence of each signature; True if one of them is within the quota."""
        within = False
        for sig in signatures:
            within |= self.seen.get(sig, 0) < self.per_signature
            self.seen[sig] = self.seen.get(sig, 0) + 1
        return within

    def admit(self, mutant_id: int, directory: Path, verdicts: list[dict[str, Any]],
              result: dict[str, Any] | None) -> bool:
        """Whether to keep the just-executed artifact in ``directory``; a kept one is slimmed and counted.
        The caller stores the execution and deletes the folder of one not kept."""
        from memo.artifact import slim_artifact  # noqa: PLC0415

        signatures = finding_signatures(verdicts, result)
        if not self._count(signatures):
            self.discarded += 1
            return False
        needed = needed_files(verdicts, result)
        if needed is not None:
            slim_artifact(directory, kinds=needed[0], backends=needed[1])
        size = tree_bytes(directory)
        self.kept[mutant_id] = Kept(mutant_id, Path(directory), size, tuple(signatures))
        self.used += size
        return True

    def rewalk(self) -> int:
        """Re-measure the whole folder (the running count misses in-flight artifacts and what triage freed)."""
        dirs = self.store.artifact_dirs(list(self.kept))
        for mutant_id in [m for m, d in dirs.items() if not d or not Path(d).is_dir()]:
            del self.kept[mutant_id]
        self.used = tree_bytes(self.root)
        return self.used

    def over(self) -> bool:
        return self.limit > 0 and self.used > self.limit

    def enforce(self) -> bool:
        """Over the budget, delete the least useful kept artifacts, oldest first, until under it: first those
        beyond their signatures' quota (kept under an older policy), then later occurrences of signatures
        whose first is still kept, then those whose bugs all have a bug folder. False if still over."""
        if not self.over():
            return True
        self.rewalk()
        for mutant_id in self._deletable():
            if not self.over():
                break
            self.release(mutant_id)
        return not self.over()

    def release(self, mutant_id: int) -> int:
        entry = self.kept.pop(mutant_id, None)
        freed = self.store.release_artifact(mutant_id)
        self.used = max(0, self.used - (freed or (entry.size if entry else 0)))
        self.released += 1
        return freed

    def _deletable(self) -> list[int]:
        holders: dict[str, list[int]] = {}
        for mutant_id in sorted(self.kept):
            for sig in self.kept[mutant_id].signatures:
                holders.setdefault(sig, []).append(mutant_id)
        within = {m for ids in holders.values() for m in ids[:self.per_signature]}
        first = {ids[0] for ids in holders.values()}
        surplus = [m for m in sorted(self.kept) if m not in within]
        repeats = [m for m in sorted(self.kept) if m in within and m not in first]
        triaged = [m for m in sorted(self._triaged()) if m in self.kept and m not in surplus and m not in repeats]
        return surplus + repeats + triaged

    def _triaged(self) -> set[int]:
        """Kept mutants all of whose bugs have a bug folder already (triage's tables, read only)."""
        if self.bugs_dir is None:
            return set()
        bugs_dir = self.bugs_dir
        return {m for m, ids in self.store.triage.bugs_by_mutant().items()
                if all((bugs_dir / bug).is_dir() for bug in ids)}

    def figures(self) -> dict[str, Any]:
        return {"used_bytes": self.used, "limit_bytes": self.limit, "kept": len(self.kept),
                "deleted": self.released + self.discarded}


def _numbered_folders(root: Path) -> list[Path]:
    try:
        return [p for p in Path(root).iterdir() if p.is_dir() and p.name.isdigit()]
    except OSError:
        return []
