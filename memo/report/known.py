"""New or known: each report entry looked up in the bug database (docs/bugs.md).

An entry is *known* when the database bug it matches (by signature or root-cause key,
:func:`memo.triage.remember.bug_keys`) was first seen in another campaign; it is *collapsed* when that bug is
filed, won't be fixed or is a duplicate (nothing left to do but watch it). The report reads the database and never
creates one.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

from memo.bugdb import COLLAPSED_STATUSES, BugDatabase, BugDatabaseVersionError, KnownBug
from memo.errors import UsageError
from memo.json_types import JsonObject
from memo.report.entry import BugEntry
from memo.store import BugRow, CampaignStore
from memo.bug_files import NEWEST_FILE
from memo.triage.newest import earlier_run, is_remembered, provenance
from memo.triage.remember import bug_keys, campaign_ref


def known_bug_json(known: KnownBug) -> JsonObject:
    """What an entry shows of its database bug."""
    first = known.first
    return {"id": known.id, "status": known.status, "status_words": known.status_words(), "detail": known.detail,
            "link": known.link,
            "status_text": known.status_text(), "regression": known.regression, "campaigns": known.campaigns,
            "first_campaign": first.campaign_name if first else None}


def mark_known(store: CampaignStore, entries: Sequence[BugEntry], rows: Sequence[BugRow],
               database: Path | None) -> str | None:
    """Set each entry's ``known`` (bool), ``known_bug`` (its database bug, or None) and ``collapsed``; returns the
    database read (None: none, or none there yet)."""
    for entry in entries:
        entry["known"], entry["known_bug"], entry["collapsed"] = False, None, False
    if database is None or not Path(database).exists():
        return None
    by_id = {row.id: row for row in rows}
    merged: dict[str, list[BugRow]] = {}
    for row in rows:
        if row.merged_into:
            merged.setdefault(row.merged_into, []).append(row)
    this_campaign = campaign_ref(store).key
    try:
        db = BugDatabase(Path(database), read_only=True)
    except BugDatabaseVersionError:
        raise  # another memo's format: one line and a non-zero exit, never a report that silently says "new"
    except UsageError:  # unreadable here (a WAL file in a read-only folder...): every bug reads as new
        return None
    with db:
        for entry in entries:
            row = by_id.get(entry["id"])
            found = db.find(bug_keys(row, merged.get(row.id, []))) if row is not None else None
            if found is None:
                continue
            first = found.first
            entry["known_bug"] = known_bug_json(found)
            entry["known"] = first is not None and first.campaign != this_campaign
            entry["collapsed"] = found.status in COLLAPSED_STATUSES
            if is_remembered(entry.get("newest") or {}) and not (entry["newest"].get("remembered") or {}).get("checked"):
                earlier = earlier_newest(db, found)  # the run the remembered verdict stands for, where the database
                entry["newest_provenance"] = provenance(  # kept it (a folder from before bug.json kept it)
                    {**entry["newest"], "remembered": earlier_run(entry["newest"], earlier)})
    return str(database)


def earlier_newest(db: BugDatabase, known: KnownBug) -> JsonObject:
    """The rerun on the newest code the database keeps with ``known`` (its newest.json), {} when none."""
    data = db.files(known.id).get(NEWEST_FILE)
    try:
        found = json.loads(data) if data else {}
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def known_figures(database: str | None, bugs: Sequence[BugEntry]) -> JsonObject:
    """The report's line: the database, how many bugs are new, known (seen again) and folded away."""
    known = sum(1 for entry in bugs if entry.get("known"))
    return {"database": database, "new": len(bugs) - known, "seen_again": known,
            "collapsed": sum(1 for entry in bugs if entry.get("collapsed"))}
