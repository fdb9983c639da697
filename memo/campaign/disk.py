"""Disk use of a campaign: which executed artifacts stay on disk, the ``--max-disk`` budget, a full disk.

Every artifact under ``mutants/NAME/`` is regenerable: the store holds each mutant's IR, and weights and
inputs come from the campaign seed (:func:`memo.artifact.ensure_artifact` rebuilds one). So a campaign
keeps a full artifact only for the first :data:`KEEP_PER_SIGNATURE` occurrences of each bug signature
(what triage reads), slims those to the files their findings involve, and deletes the rest as soon as
the execution is stored. :class:`DiskBudget` keeps a running byte count of what stays (re-walked now and
then, since triage releases artifacts too) and, over the budget, deletes the least useful artifacts
first; only when nothing is left to delete does the campaign stop (:data:`STOP_DISK_BUDGET`). Sizes and
the detection of a full disk, which the store, triage and the report need too, are :mod:`memo.diskspace`.
"""
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

from memo.artifact import slim_artifact
from memo.backends import CONVERTERS, load_spec
from memo.backends.result import ExecutionResult
from memo.campaign.config import DEFAULT_MAX_DISK, KEEP_PER_SIGNATURE
from memo.campaign.firsts import ExecutionSignatures
from memo.diskspace import format_size, tree_bytes
from memo.oracle import Verdict
from memo.store import CampaignStore, SignedVerdict
from memo.bug_files import BUGS_DIR
from memo.triage import WORK_DIR, sign_findings
from memo.triage.probe import roles
from memo.kinds import BUG_KINDS, VerdictKind

UNSUPPORTED = VerdictKind.UNSUPPORTED.value

REWALK_EVERY_S = 60.0         # the running count misses what triage releases and in-flight artifacts
STOP_DISK_FULL = "disk full"
STOP_DISK_BUDGET = "disk budget reached"
DISK_STOPS = frozenset({STOP_DISK_FULL, STOP_DISK_BUDGET})
EXIT_DISK = 3                 # distinct from 2 (usage errors) and 130 (interrupted)


# ---------------------------------------------------------------------------- free space
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


# ---------------------------------------------------------------------------- where a campaign's bytes are
def regenerable_paths(store: CampaignStore) -> list[Path]:
    """What ``memo clean`` deletes: the artifact folders and triage's scratch folder, never the database
    or the bug folders."""
    work = store.directory.resolve() / WORK_DIR
    return store.artifact_roots() + ([work] if work.is_dir() else [])


# ---------------------------------------------------------------------------- what to keep
def finding_signatures(signed: Iterable[SignedVerdict]) -> list[str]:
    """Signatures of the bug findings among ``signed`` (as recorded, before localization); unsupported features and
    invalid models need no artifact."""
    return list(dict.fromkeys(row.signed.signature for row in signed if row.kind in BUG_KINDS and row.signed))


def converter_declines(signed: Iterable[SignedVerdict]) -> list[str]:
    """Signatures of the features a converter declined (tf2onnx, Keras's export, the TFLite converter): a model
    with one has no file for the engines behind that converter, and neither would its descendants."""
    return list(dict.fromkeys(row.signed.signature for row in signed
                              if row.kind == UNSUPPORTED and row.backend in CONVERTERS and row.signed))


def stored_signatures(store: CampaignStore) -> Iterator[ExecutionSignatures]:
    """What every stored execution showed, in the order they were stored, as its findings were signed when they
    were recorded: the disk budget counts its bugs, the memory of first occurrences (:mod:`memo.campaign.firsts`)
    remembers them and its declines. Findings an older memo stored unsigned are signed first (once)."""
    sign_findings(store)
    groups: dict[int, list[SignedVerdict]] = {}
    for row in store.signed_verdicts(BUG_KINDS | {UNSUPPORTED}):
        groups.setdefault(row.mutant_id, []).append(row)
    for mutant_id, directory in store.execution_folders():
        signed = groups.get(mutant_id, [])
        yield ExecutionSignatures(mutant_id, tuple(finding_signatures(signed)), tuple(converter_declines(signed)),
                                  directory)


def needed_files(verdicts: Iterable[Verdict], result: ExecutionResult | None) -> tuple[set[str], set[str]] | None:
    """(artifact kinds, backends whose outputs) triage may read for these findings, or None when it cannot
    tell (then nothing is slimmed). Per finding: the file every involved backend consumes (and what a
    blamed converter produces) and the outputs of the faulty and the reference library."""
    available = list(result.backends) if result is not None else []
    kinds, backends = {"keras"}, set()
    try:
        for verdict in verdicts:
            if verdict.kind not in BUG_KINDS:
                continue
            reference = str((result.reference if result is not None else "") or "")
            found = roles(verdict, reference, available)
            names = {*found.backends, found.faulty, found.good, str(verdict.backend or ""), reference}
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

    ``limit`` 0 means no budget (a full disk still stops the campaign). Signature counts (how many artifacts
    of each bug are kept) are rebuilt from the store on start, so a resumed campaign keeps the same artifacts
    it would have kept.
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

    def load(self, stored: Iterable[ExecutionSignatures] | None = None) -> None:
        """Signature counts from every stored execution (``stored``: :func:`stored_signatures`, walked here when
        not given); the artifacts still on disk; the true byte count. Folders of executions stored as not kept
        (a kill between commit and delete) are deleted now."""
        self.bugs_dir = self.store.directory.resolve() / BUGS_DIR
        for execution in stored_signatures(self.store) if stored is None else stored:
            self._count(execution.bugs)
            directory = execution.artifact_dir
            if directory and Path(directory).is_dir():
                self.kept[execution.mutant_id] = Kept(execution.mutant_id, Path(directory),
                                                      tree_bytes(Path(directory)), execution.bugs)
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

    def admit(self, mutant_id: int, directory: Path, verdicts: list[Verdict], result: ExecutionResult | None,
              signatures: list[str]) -> bool:
        """Whether to keep the just-executed artifact in ``directory``; a kept one is slimmed and counted.
        The caller stores the execution and deletes the folder of one not kept. ``signatures``: the findings'
        (:func:`finding_signatures`, as the pipeline signed them)."""
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
