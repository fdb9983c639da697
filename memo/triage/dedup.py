"""Deduplication: every finding gets a signature; findings with one signature are one bug.

A finding is signed once, when it is recorded (:func:`sign`; the store keeps the signature and its parts with the
verdict); deduplication reads them. Pure over the store's rows (no execution): safe to run while a campaign is
writing, which is what ``memo report`` does before rendering. Localization results, when present, refine the
signatures of NaN and inconsistency findings (the layer class of their parts).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence, TypedDict

from memo.backends.result import ExecutionResult
from memo.json_types import JsonObject
from memo.model.ir import ModelIR
from memo.oracle import Verdict
from memo.store import BugRow, CampaignStore, Signed, SignedVerdict
from memo.bug_files import IR_FILE
from memo.kinds import BUG_KINDS, NUMERIC_KINDS, TRAINING_KINDS
from memo.triage.signature import (UNSUPPORTED_KIND, UNLOCALIZED, culprit_classes, digest, divergent_class,
                                   signature_parts)
from memo.triage.training_signature import folded, training_parts


SIGNED_KINDS = BUG_KINDS | TRAINING_KINDS | {UNSUPPORTED_KIND}  # the verdicts recorded with a signature


def recorded_parts(verdict: Verdict, result: ExecutionResult | None, ir: ModelIR | None) -> JsonObject | None:
    """The signature parts a verdict is recorded with (None: no finding): a training check's by
    :func:`memo.triage.training_signature.training_parts` (on the mutant's model), any other finding's by
    :func:`memo.triage.signature.signature_parts` before localization."""
    if verdict.kind in TRAINING_KINDS:
        return training_parts(verdict, ir)
    if verdict.kind in SIGNED_KINDS:
        return signature_parts(verdict, result, None)
    return None


def sign(verdict: Verdict, result: ExecutionResult | None, ir: ModelIR | None) -> Signed | None:
    """A finding's signature and parts, computed once, when it is recorded (the store keeps them with the verdict:
    :meth:`memo.store.CampaignStore.add_verdict`); None for a verdict that is no finding."""
    parts = recorded_parts(verdict, result, ir)
    return Signed(digest(parts), parts) if parts is not None else None


def sign_findings(store: CampaignStore) -> int:
    """Sign the findings a store holds without a signature (recorded before memo stored them: a campaign store
    migrated from schema 2); how many. Every reader of signatures calls it first; it finds nothing to do after."""
    rows = store.unsigned_findings(SIGNED_KINDS)
    signed = {row.id: value for row in rows if (value := sign(row.verdict, row.result, _ir(row.ir_json)))}
    if signed:
        with store.transaction():
            store.sign_verdicts(signed)
    return len(signed)


@dataclass
class Occurrence:
    verdict_id: int
    mutant_id: int
    created: float
    kind: str
    backend: str
    stage: str | None
    parts: JsonObject
    bug_id: str  # the signature stored with the finding, or its localized parts' digest


def _ir(text: str | None) -> ModelIR | None:
    try:
        return ModelIR.loads(text) if text else None
    except Exception:  # a corrupt IR must not stop triage; the finding stays unlocalized
        return None


def _occurrence(row: SignedVerdict, signed: Signed) -> Occurrence:
    return Occurrence(row.id, row.mutant_id, row.created, row.kind, row.backend, row.stage, signed.parts,
                      signed.signature)


def occurrences(store: CampaignStore) -> list[Occurrence]:
    """Every bug finding with its recorded signature parts (a numeric finding's localized layer class applied
    where localization ran), the training check's included (:func:`training_occurrences`)."""
    sign_findings(store)
    located = store.triage.localizations()
    rows = [row for row in store.signed_verdicts(BUG_KINDS) if row.signed is not None]
    numeric = {row.id: located[row.id].layer for row in rows
               if row.kind in NUMERIC_KINDS and row.id in located and located[row.id].layer}
    models = store.mutant_irs({row.mutant_id for row in rows if row.id in numeric})
    irs = {mutant_id: _ir(text) for mutant_id, text in models.items()}
    out = []
    inference: dict[int, list[Verdict]] = {}
    for row in rows:
        assert row.signed is not None  # filtered above
        inference.setdefault(row.mutant_id, []).append(Verdict(row.kind, row.backend, row.stage, ""))
        signed = row.signed
        if row.id in numeric:  # localization refines the recorded parts: the bug id follows them
            parts = {**signed.parts, "layer": divergent_class(irs.get(row.mutant_id), numeric[row.id])}
            signed = Signed(digest(parts), parts)
        out.append(_occurrence(row, signed))
    return out + training_occurrences(store, inference)


def training_occurrences(store: CampaignStore, inference: dict[int, list[Verdict]]) -> list[Occurrence]:
    """The training check's findings (:mod:`memo.triage.training_signature`), without those that repeat an
    inference verdict of their model (``inference``: per mutant) on the same backend."""
    return [_occurrence(row, row.signed) for row in store.signed_verdicts(TRAINING_KINDS)
            if row.signed is not None
            and not folded(Verdict(row.kind, row.backend, row.stage, ""), inference.get(row.mutant_id, ()))]


@dataclass
class BugUpdate:
    """Bug ids after a deduplication pass: all of them, the new ones, and those no finding maps to any more
    (a NaN/inconsistency bucket emptied by localization)."""

    all: list[str]
    new: list[str]
    stale: list[str]


def update_bugs(store: CampaignStore) -> BugUpdate:
    """Group every finding by its stored signature (localized where localization ran), rewrite the occurrences and
    upsert the bugs table."""
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
    sign_findings(store)
    for row in store.signed_verdicts({UNSUPPORTED_KIND}):
        if row.signed is None:
            continue
        key = (row.backend, str(row.signed.parts.get("feature", "")))
        group = groups.get(key)
        if group is None:
            group = groups[key] = UnsupportedGroup(library=key[0], feature=key[1], stage=row.stage or "", count=0,
                                                   first_mutant=row.mutant_id, message=store.verdict_message(row.id))
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
