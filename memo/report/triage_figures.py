"""The report's figures on triage: how far it got, the newest-code reruns, and which bugs not reduced yet likely
duplicate a reduced one."""
from __future__ import annotations

from memo.json_types import JsonObject
from memo.newest import CANNOT_RUN, FIXED_UPSTREAM, NOT_APPLICABLE, STILL_REPRODUCES
from memo.report.entry import BugEntry
from memo.report.sections import ready_count
from memo.store import BugRow, CampaignStore
from memo.triage.newest import recorded_next_python
from memo.triage.reduce_order import root_guess, stands_for_its_root


def mark_likely_duplicates(entries: list[BugEntry], bugs: list[BugRow]) -> None:
    """Name, on each entry not reduced yet, the reduced entry whose root guess it shares
    (:func:`memo.triage.reduce_order.root_guess`: the same failure site; triage reduces such a bug last, and merges
    it once reduced if it is one): ``likely_duplicate_of``."""
    standing: dict[tuple[str, ...], str] = {}
    for bug in bugs:
        if stands_for_its_root(bug):
            standing.setdefault(root_guess(bug), bug.id)
    for entry, bug in zip(entries, bugs):
        twin = standing.get(root_guess(bug))
        if twin and twin != bug.id and not stands_for_its_root(bug):
            entry["likely_duplicate_of"] = twin


def newest_environment(store: CampaignStore) -> str | None:
    """The newest-code interpreter the campaign's triage reruns bugs with (None: none; :mod:`memo.triage.newest`)."""
    return recorded_next_python(store.get_meta("config", {}) or {})


def newest_figures(python: str | None, bugs: list[BugEntry]) -> JsonObject:
    """The report's line on the newest code: the interpreter, the builds it ran, how many bugs were rerun there
    and with what result."""
    recorded = [entry["newest"] for entry in bugs if entry.get("newest")]
    checked = [check for check in recorded if check.get("result") != NOT_APPLICABLE]  # MXNet: no newest build
    builds = sorted({str(check.get("build")) for check in checked if check.get("build")})
    return {"python": python, "builds": builds, "checked": len(checked),
            "results": {result: sum(1 for check in recorded if check.get("result") == result)
                        for result in (STILL_REPRODUCES, FIXED_UPSTREAM, CANNOT_RUN, NOT_APPLICABLE)},
            "pending": sum(1 for entry in bugs if entry.get("newest_pending"))}


def triage_status(bugs: list[BugEntry], rows: list[BugRow]) -> JsonObject:
    """How far triage got: the figures a reader checks before trusting the bug list."""
    reduced = [b for b in bugs if b["reduced_layers"] is not None and b["original_layers"] is not None
               and b["reduced_layers"] < b["original_layers"]]
    sizes = sorted(b["reduced_layers"] for b in reduced)  # of the reduced bugs: an unreduced one keeps its size
    return {"bugs": len(bugs), "entries_before_merging": len([r for r in rows if not r.unlocalized]),
            "merged": len([r for r in rows if r.merged_into]), "reduced": len(reduced),
            "reproduce": len([b for b in bugs if b["reproduces"] is True]),
            "minimal_checked": len([b for b in bugs if b.get("minimal")]),
            "minimal_reproduce": len([b for b in bugs if (b.get("minimal") or {}).get("reproduces")]),
            "ready": ready_count(bugs),
            "likely_duplicates": len([b for b in bugs if b.get("likely_duplicate_of")]),
            "median_layers": sizes[len(sizes) // 2] if sizes else None}
