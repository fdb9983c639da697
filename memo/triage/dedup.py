"""Deduplication: every finding gets a signature; findings with one signature are one bug.

Pure over the store's rows (no execution): safe to run while a campaign is writing, which is what
``memo report`` does before rendering. Localization results, when present, refine the signatures of
NaN and inconsistency findings.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence, TypedDict

from memo.json_types import JsonObject
from memo.model.ir import ModelIR
from memo.oracle import Verdict
from memo.store import BugRow, CampaignStore
from memo.bug_files import IR_FILE
from memo.kinds import BUG_KINDS, NUMERIC_KINDS, TRAINING_KINDS
from memo.triage.signature import UNSUPPORTED_KIND, UNLOCALIZED, culprit_classes, digest, signature_parts
from memo.triage.training_signature import folded, training_parts


@dataclass
class Occurrence:
    verdict_id: int
    mutant_id: int
    created: float
    kind: str
    backend: str
    stage: str | None
    parts: JsonObject

    @property
    def bug_id(self) -> str:
        return digest(self.parts)


def _ir(text: str | None) -> ModelIR | None:
    try:
        return ModelIR.loads(text) if text else None
    except Exception:  # a corrupt IR must not stop triage; the finding stays unlocalized
        return None


def occurrences(store: CampaignStore) -> list[Occurrence]:
    """Every bug finding with its signature parts (localization applied where it ran), the training check's
    included (:func:`training_occurrences`)."""
    located = store.triage.localizations()
    out = []
    inference: dict[int, list[Verdict]] = {}
    for row in store.findings(BUG_KINDS):
        inference.setdefault(row.mutant_id, []).append(row.verdict)
        verdict = row.verdict
        numeric = verdict.kind in NUMERIC_KINDS
        localization = located.get(row.id) if numeric else None
        layer = localization.layer if localization else None
        parts = signature_parts(verdict, row.result, _ir(row.ir_json) if numeric and layer else None,
                                divergent_layer=layer)
        out.append(Occurrence(row.id, row.mutant_id, row.created, verdict.kind, verdict.backend, verdict.stage,
                              parts))
    return out + training_occurrences(store, inference)


def training_occurrences(store: CampaignStore, inference: dict[int, list[Verdict]]) -> list[Occurrence]:
    """The training check's findings (:mod:`memo.triage.training_signature`), without those that repeat an
    inference verdict of their model (``inference``: per mutant) on the same backend."""
    out = []
    for row in store.findings(TRAINING_KINDS):
        verdict = row.verdict
        if folded(verdict, inference.get(row.mutant_id, ())):
            continue
        out.append(Occurrence(row.id, row.mutant_id, row.created, verdict.kind, verdict.backend, verdict.stage,
                              training_parts(verdict, _ir(row.ir_json))))
    return out


@dataclass
class BugUpdate:
    """Bug ids after a deduplication pass: all of them, the new ones, and those no finding maps to any more
    (a NaN/inconsistency bucket emptied by localization)."""

    all: list[str]
    new: list[str]
    stale: list[str]


def update_bugs(store: CampaignStore) -> BugUpdate:
    """Recompute every finding's signature, rewrite the occurrences and upsert the bugs table."""
    groups: dict[str, list[Occurrence]] = {}
    for occ in occurrences(store):
        groups.setdefault(occ.bug_id, []).append(occ)
    known = store.triage.bug_ids()
    with store.transaction():
        store.triage.replace_occurrences({bug_id: [(o.verdict_id, o.mutant_id) for o in occs]
                                          for bug_id, occs in groups.items()})
        for bug_id, occs in groups.items():
            first = min(occs, key=lambda o: o.verdict_id)
            store.triage.upsert_bug(bug_id, kind=first.kind, library=first.backend, stage=first.stage,
                                    parts=first.parts, first_verdict=first.verdict_id, first_mutant=first.mutant_id,
                                    first_seen=first.created, last_seen=max(o.created for o in occs),
                                    occurrences=len(occs), layer_class=first.parts.get("layer"))
        stale = known - set(groups)
        store.triage.delete_bugs(stale)
    return BugUpdate(sorted(groups), sorted(set(groups) - known), sorted(stale))


class UnsupportedGroup(TypedDict):
    """Unsupported findings of one library on one feature, with the first mutant and message."""

    library: str
    feature: str
    stage: str
    count: int
    first_mutant: int
    message: str


def unsupported_groups(store: CampaignStore) -> list[UnsupportedGroup]:
    """Unsupported findings grouped by library and feature: known gaps, not bugs."""
    groups: dict[tuple[str, str], UnsupportedGroup] = {}
    for row in store.findings({UNSUPPORTED_KIND}):
        verdict = row.verdict
        parts = signature_parts(verdict, row.result, None)
        key = (verdict.backend, parts["feature"])
        group = groups.setdefault(key, UnsupportedGroup(library=key[0], feature=key[1], stage=verdict.stage or "",
                                                        count=0, first_mutant=row.mutant_id, message=verdict.message))
        group["count"] += 1
    return sorted(groups.values(), key=lambda g: (-g["count"], g["library"], g["feature"]))


def _reduced_classes(bug: BugRow) -> list[str]:
    """The culprit classes of a bug's reduced model (its folder's model), else its localized layer class."""
    path = Path(bug.bug_dir) / IR_FILE if bug.bug_dir else None
    ir = _ir(path.read_text()) if path is not None and path.exists() else None
    if ir is not None:
        return culprit_classes(ir)
    return [bug.layer_class] if bug.layer_class and bug.layer_class != UNLOCALIZED else []


class Variant(TypedDict):
    """One library and culprit classes among the bugs a report entry covers."""

    library: str
    layer_classes: list[str]
    bugs: list[str]
    findings: int


def variants(bugs: Sequence[BugRow]) -> list[Variant]:
    """The variants one entry covers (its own bug and those merged into it): one per library and culprit
    classes, with the bugs and the number of findings each holds; the entry's own variant first."""
    out: dict[tuple[str, tuple[str, ...]], Variant] = {}
    for bug in bugs:
        classes = _reduced_classes(bug)
        variant = out.setdefault((bug.library, tuple(classes)), Variant(library=bug.library, layer_classes=classes,
                                                                        bugs=[], findings=0))
        variant["bugs"].append(bug.id)
        variant["findings"] += bug.occurrences
    return list(out.values())
