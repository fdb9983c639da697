"""A campaign's bugs in the bug database (:mod:`memo.bugdb`, docs/bugs.md).

Keys: a campaign bug is found in the database by ``sig:<its id>`` (the id hashes its signature, so one symptom
gets one id in every campaign) and ``rc:<key>`` for each root-cause key of its reduced model
(:func:`memo.triage.signature.reduced_keys`, the key that merges entries within a campaign). Before reduction only
the signature is known: for a crash, hang or shape finding that is the library, exception, masked message and
frames; for a NaN or inconsistency finding it includes the class of the first misbehaving layer, known once the
finding is localized on its original model (an unlocalized finding is not a bug yet). So a finding is matched
before reduction on its signature (and then adopted: no reduction, the known bug's reduced model and script are
copied), and after reduction on its root-cause keys too (then recorded as one more sighting of the known bug).
A known bug reduced by an older reducer is adopted too, and reduced again from its adopted model by a later unit of
the pass (:func:`memo.triage.bug_reduction.reduces_further`); its new reduction replaces the database's.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from memo.bugdb.location import is_off
from memo.bugdb import (BugDatabase, BugDatabaseVersionError, CampaignRef, KnownBug, Sighting, export_bug_files,
                        folder_files)
from memo.bugdb.expected import DIGEST_FILE, EXPECTED_FILE
from memo.bugdb.recheck import script_files
from memo.bugdb.records import REDUCER_KEY, reducer_of
from memo.json_types import JsonObject
from memo.newest import FIXED_UPSTREAM, STILL_REPRODUCES
from memo.model.ir import ModelIR
from memo.store import BugRow, CampaignStore
from memo.bug_files import (BUG_FILE, IR_FILE, MODEL_FILE, NEWEST_FILE, REPRO_FILE, Reduction, read_bug_file,
                            write_bug_file)
from memo.triage.bug_reduction import reduces_further
from memo.triage.bugdir import bug_folder
from memo.triage.describe import symptom
from memo.triage.materialize import refresh_script
from memo.triage.newest import EARLIER_KEY
from memo.triage.rekey import rekey
from memo.triage.session import Session
from memo.triage.training_truth import reference_wrong

SIGNATURE_PREFIX, ROOT_CAUSE_PREFIX = "sig:", "rc:"
NEEDED_FILES = (BUG_FILE, IR_FILE, MODEL_FILE, REPRO_FILE)


def campaign_ref(store: CampaignStore) -> CampaignRef:
    """The campaign as the database names it (name and start time)."""
    name = store.get_meta("campaign_name") or (store.get_meta("config", {}) or {}).get("name") or store.directory.name
    started = store.get_meta("started")
    return CampaignRef.of(str(name), str(store.directory.resolve()), float(started) if started else None)


def database_path(store: CampaignStore, override: Path | None = None) -> Path | None:
    """``override``, else the database the campaign was started with (``memo fuzz --bugs-db``), else none; an
    override of ``none`` (:data:`memo.bugdb.location.OFF_PATH`) means none, whatever the campaign recorded."""
    if override is not None:
        return None if is_off(override) else Path(override)
    recorded = (store.get_meta("config", {}) or {}).get("bugs_db")
    return Path(recorded) if recorded else None


def bug_keys(bug: BugRow, merged: list[BugRow]) -> list[str]:
    """The keys that find ``bug`` (with the bugs merged into it) in the database."""
    keys = [SIGNATURE_PREFIX + row.id for row in (bug, *merged)]
    for row in (bug, *merged):
        keys += [ROOT_CAUSE_PREFIX + key for key in (row.final_key or "").split()]
    return list(dict.fromkeys(keys))


# A reduction that ended without a folder worth remembering: the model did not show the bug again, or triage failed.
_NOT_REMEMBERED = (Reduction.NOT_AGAIN, Reduction.TRIAGE_FAILED)


def finished_folder(store: CampaignStore, bug: BugRow) -> Path | None:
    """The folder of a bug worth remembering (its folder is written, its reduction over, and it showed again when
    re-run), else None. The folder under the campaign's own directory wins: a copied or moved campaign still
    records its paths as they were."""
    status = Reduction.of(bug.reduction)
    if (not bug.bug_dir or bug.merged_into is not None or bug.unlocalized or (status is not None and status.retried)
            or status in _NOT_REMEMBERED):
        return None
    here = bug_folder(store.directory, bug.id)
    return here if here.is_dir() else Path(bug.bug_dir) if Path(bug.bug_dir).is_dir() else None


def waiting(bug: BugRow) -> bool:
    """Whether ``bug`` is a bug still waiting for (or between) reduction passes: recorded without files, so that a
    later campaign knows it was seen, and reduced by whichever campaign gets to it first."""
    status = Reduction.of(bug.reduction)
    unreduced = not (bug.reduction or {}).get("status")
    return bug.merged_into is None and not bug.unlocalized and (unreduced or (status is not None and status.retried))


def headline(bug: BugRow, data: JsonObject) -> str:
    """The bug's one line (:func:`memo.triage.describe.symptom`), from its bug.json where there is one."""
    try:
        return symptom({"kind": bug.kind, "library": bug.library, "stage": bug.stage, **data})
    except Exception:  # an odd bug.json: a plain headline, never a lost record
        return f"{bug.library}: {bug.kind}"


def record_campaign(db: BugDatabase, store: CampaignStore) -> int:
    """Record every bug of the campaign (insert, or one more sighting of a known bug), with its files once its
    reduction is over (:func:`finished_folder`), without while it waits (:func:`waiting`); returns how many."""
    campaign = campaign_ref(store)
    versions = store.get_meta("versions", {}) or {}
    rows = store.triage.load_bugs()
    merged: dict[str, list[BugRow]] = {}
    for row in rows:
        if row.merged_into:
            merged.setdefault(row.merged_into, []).append(row)
    recorded = 0
    for bug in rows:
        folder = finished_folder(store, bug)
        if folder is None and not waiting(bug):
            continue
        # a bug still waiting has no folder yet: its signature names the exception and the masked message
        data = read_bug_file(folder) if folder is not None else {
            key: bug.parts[key] for key in ("exception", "message") if bug.parts.get(key)}
        others = merged.get(bug.id, [])
        library_versions = versions.get(bug.library) if isinstance(versions, dict) else None
        known_id = db.record(Sighting(
            campaign=campaign, campaign_bug=bug.id, keys=bug_keys(bug, others), kind=bug.kind, library=bug.library,
            stage=bug.stage or "", headline=headline(bug, data),
            occurrences=bug.occurrences + sum(other.occurrences for other in others),
            versions={str(k): str(v) for k, v in (library_versions or {}).items()},
            first_seen=bug.first_seen, last_seen=max([bug.last_seen] + [o.last_seen for o in others]),
            reduced=folder is not None and Reduction.of(bug.reduction) is Reduction.DONE,
            reducer=reducer_of(bug.reduction),
            files=(lambda folder=folder: folder_files(folder)) if folder is not None else None))
        result = (bug.newest or {}).get("result") if folder is not None else None
        if result == FIXED_UPSTREAM:
            db.mark_fixed_upstream(known_id, str(bug.newest.get("build") or ""))
        elif result == STILL_REPRODUCES:
            db.reopen_upstream(known_id, str(bug.newest.get("build") or ""))
        recorded += 1
    return recorded


def adopt_known(db: BugDatabase, store: CampaignStore, bug: BugRow) -> KnownBug | None:
    """If the database knows ``bug``'s signature and holds its reduced model and script, copy them into the bug's
    folder instead of reducing it (the script is checked later, as any unchecked script is); returns the known bug,
    or None when there is nothing to adopt. The adopted reduction keeps the version of the reducer that made it:
    an older one's is reduced again (:func:`memo.triage.bug_reduction.reduces_further`)."""
    known = db.find([SIGNATURE_PREFIX + bug.id])
    if known is None or not known.reduced:
        return None
    stored = db.files(known.id)
    if not set(NEEDED_FILES) <= set(stored) or missing_files(stored):
        return None
    folder = bug_folder(store.directory.resolve(), bug.id)
    shutil.rmtree(folder, ignore_errors=True)
    export_bug_files(db, known.id, folder)
    data = read_bug_file(folder)
    if reference_wrong(data):  # recorded before triage turned such roles round (t63, t64: a TensorFlow remat defect
        shutil.rmtree(folder, ignore_errors=True)  # filed at keras-torch, float64 siding with it): triaged anew
        return None
    ir = ModelIR.loads((folder / IR_FILE).read_text())
    finding = store.finding(bug.first_verdict)
    original = len(ModelIR.loads(finding.ir_json).body) if finding and finding.ir_json else None
    reduction = {"status": Reduction.KNOWN.saying(f"{known.id}, reduced model and script copied from the bug "
                                                  f"database (first seen as {known.origin})"),
                 "original_layers": original, "reduced_layers": len(ir.body),
                 REDUCER_KEY: reducer_of(data.get("reduction"))}
    data.update(id=bug.id, known_as=known.id, copied_from=known.origin, reduction=reduction)
    refresh_script(folder, data)  # the database's script is an older memo's: the current one runs where it runs
    earlier = _read_json(folder / NEWEST_FILE)  # the known bug's rerun on the newest code, not this campaign's:
    (folder / NEWEST_FILE).unlink(missing_ok=True)  # kept in bug.json, what a remembered rerun quotes
    if earlier:
        data[EARLIER_KEY] = earlier
    write_bug_file(folder, data)
    store.triage.update_bug(bug.id, bug_dir=str(folder), original_layers=original, reduced_layers=len(ir.body),
                            reduction=reduction, layer=data.get("layer"), repro=str(folder / REPRO_FILE),
                            reproduces=None, checked=None, newest={})
    rekey(store, store.triage.load_bug(bug.id))
    return known


def missing_files(stored: dict[str, bytes]) -> list[str]:
    """The files a known bug's stored script reads that its database record left out (its expected output apart,
    which the reference reruns from its digest): t70 adopted a bug whose 10-MB inputs.npz had not fit, and its copied
    script failed for want of it ("does not reproduce"); such a bug is reduced anew."""
    restorable = {EXPECTED_FILE} if DIGEST_FILE in stored else set()
    wanted = script_files(stored.get(REPRO_FILE, b"").decode(errors="replace"))
    return [name for name in wanted if name not in stored and name not in restorable]


def _read_json(path: Path) -> JsonObject:
    """The JSON object at ``path``; {} when there is none or it is unreadable."""
    try:
        found = json.loads(path.read_text()) if path.is_file() else {}
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def adopted(bug: BugRow) -> bool:
    """Whether the campaign copied ``bug`` from the database instead of reducing it."""
    return Reduction.of(bug.reduction) is Reduction.KNOWN


def open_database(session: Session, path: Path | None) -> BugDatabase | None:
    """The pass's bug database (:func:`database_path`), None without one or when it does not open (the report lists
    why); another memo's format stops the command."""
    where = database_path(session.store, path)
    if where is None:
        return None
    try:
        return BugDatabase(where)
    except BugDatabaseVersionError:
        raise  # another memo's format: the command stops with its one line (never mixing two formats)
    except Exception as exc:  # noqa: BLE001  (triage goes on without it; the report lists why)
        session.error(None, "bug database", exc)
        return None


def adopt(session: Session, db: BugDatabase, bug: BugRow) -> KnownBug | None:
    """:func:`adopt_known`, a failure recorded (the bug is then reduced as if the database did not know it)."""
    try:
        known = adopt_known(db, session.store, bug)
    except Exception as exc:  # noqa: BLE001
        session.error(bug.id, "bug database", exc)
        return None
    session.summary.known += known is not None
    return known


def remember_campaign(session: Session, db: BugDatabase) -> None:
    """:func:`record_campaign`, a failure recorded (the campaign's own bugs are safe in its store)."""
    try:
        record_campaign(db, session.store)
    except Exception as exc:  # noqa: BLE001
        session.error(None, "bug database", exc)
