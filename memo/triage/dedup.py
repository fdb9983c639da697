"""Deduplication: every finding gets a signature; findings with one signature are one bug.

Pure over the store's rows (no execution): safe to run while a campaign is writing, which is what
``memo report`` does before rendering. Localization results, when present, refine the signatures of
NaN and inconsistency findings.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from memo.model.ir import ModelIR
from memo.store import CampaignStore
from memo.triage import db
from memo.triage.signature import BUG_KINDS, NUMERIC_KINDS, UNSUPPORTED_KIND, digest, signature_parts

_FINDINGS_SQL = ("SELECT v.id, v.mutant_id, v.kind, v.backend, v.stage, v.message, v.metrics, v.created,"
                 " e.result, m.ir FROM verdicts v LEFT JOIN executions e ON e.mutant_id = v.mutant_id"
                 " LEFT JOIN mutants m ON m.id = v.mutant_id WHERE v.kind IN ({kinds}) ORDER BY v.id")


@dataclass
class Occurrence:
    verdict_id: int
    mutant_id: int
    created: float
    kind: str
    backend: str
    stage: str | None
    parts: dict[str, Any]

    @property
    def bug_id(self) -> str:
        return digest(self.parts)


def finding_rows(store: CampaignStore, kinds: frozenset[str] | set[str]) -> list[dict[str, Any]]:
    """Verdict rows of ``kinds`` with their execution result and mutant IR (JSON decoded lazily)."""
    ordered = sorted(kinds)
    sql = _FINDINGS_SQL.format(kinds=",".join("?" * len(ordered)))
    return store.rows(sql, tuple(ordered))


def _decode(text: str | None) -> dict[str, Any] | None:
    return json.loads(text) if text else None


def _ir(text: str | None) -> ModelIR | None:
    try:
        return ModelIR.loads(text) if text else None
    except Exception:  # a corrupt IR must not stop triage; the finding stays unlocalized
        return None


def occurrences(store: CampaignStore) -> list[Occurrence]:
    """Every bug finding with its signature parts (localization applied where it ran)."""
    located = db.localizations(store)
    out = []
    for row in finding_rows(store, BUG_KINDS):
        verdict = {**row, "metrics": _decode(row["metrics"]) or {}}
        numeric = row["kind"] in NUMERIC_KINDS
        layer = (located.get(row["id"]) or {}).get("layer") if numeric else None
        parts = signature_parts(verdict, _decode(row["result"]),
                                _ir(row["ir"]) if numeric and layer else None, divergent_layer=layer)
        out.append(Occurrence(row["id"], row["mutant_id"], row["created"], row["kind"], row["backend"],
                              row["stage"], parts))
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
    db.ensure_tables(store)
    groups: dict[str, list[Occurrence]] = {}
    for occ in occurrences(store):
        groups.setdefault(occ.bug_id, []).append(occ)
    known = {row["id"] for row in store.rows("SELECT id FROM bugs")}
    with store.transaction():
        store.db.execute("DELETE FROM bug_occurrences")
        for bug_id, occs in groups.items():
            first = min(occs, key=lambda o: o.verdict_id)
            store.db.executemany("INSERT INTO bug_occurrences(verdict_id, bug_id, mutant_id) VALUES (?, ?, ?)",
                                 [(o.verdict_id, bug_id, o.mutant_id) for o in occs])
            store.db.execute(
                "INSERT INTO bugs(id, kind, library, stage, parts, first_verdict, first_mutant, first_seen, last_seen,"
                " occurrences, layer_class) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET"
                " first_verdict = excluded.first_verdict, first_mutant = excluded.first_mutant,"
                " first_seen = excluded.first_seen, last_seen = excluded.last_seen,"
                " occurrences = excluded.occurrences",
                (bug_id, first.kind, first.backend, first.stage, json.dumps(first.parts, sort_keys=True),
                 first.verdict_id, first.mutant_id, first.created, max(o.created for o in occs), len(occs),
                 first.parts.get("layer")))
        stale = known - set(groups)
        store.db.executemany("DELETE FROM bugs WHERE id = ?", [(bug_id,) for bug_id in stale])
    return BugUpdate(sorted(groups), sorted(set(groups) - known), sorted(stale))


def bug_mutants(store: CampaignStore, bug_id: str) -> list[int]:
    """The mutants in which ``bug_id`` occurred."""
    return [row["mutant_id"] for row in store.rows("SELECT DISTINCT mutant_id FROM bug_occurrences WHERE bug_id = ?",
                                                   (bug_id,))]


def unsupported_groups(store: CampaignStore) -> list[dict[str, Any]]:
    """Unsupported findings grouped by library and feature: known gaps, not bugs."""
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    for row in finding_rows(store, {UNSUPPORTED_KIND}):
        verdict = {**row, "metrics": _decode(row["metrics"]) or {}}
        parts = signature_parts(verdict, _decode(row["result"]), None)
        key = (row["backend"], parts["feature"])
        group = groups.setdefault(key, {"library": key[0], "feature": key[1], "stage": row["stage"] or "",
                                        "count": 0, "first_mutant": row["mutant_id"], "message": row["message"]})
        group["count"] += 1
    return sorted(groups.values(), key=lambda g: (-g["count"], g["library"], g["feature"]))
