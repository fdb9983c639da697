"""A reproducing bug rerun on the newest code before it is called ready to file (:mod:`memo.newest`).

Its ``repro.py`` runs unchanged with the newest-code environment's interpreter (``.venv-next``: the development
builds keras-nightly, tf-nightly-cpu and onnx-weekly, the newest releases elsewhere), by the bug database's script
runner (:func:`memo.bugdb.recheck.recheck_folder`), which says ``reproduces``, ``fixed`` (the script ran to its
end and the bug did not show) or ``error`` (it could not run there: the build broke something else). The verdict
is stored with the bug (``BugRow.newest``) and decides its report section: still reproducing, it is ready to file
and names the build it was checked on; fixed, it goes to "fixed upstream" with the build that no longer shows it;
an error keeps it ready on the release with that caveat. A library in its own environment (MXNet, retired: no
development build) is not checked there.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

from memo.backends import find_spec
from memo.backends.versions import MISSING
from memo.bug_files import NEWEST_FILE, Reduction, read_bug_file, retried
from memo.bugdb.recheck import read_facts, recheck_folder
from memo.json_types import JsonObject
from memo.newest import NEXT_ONLY, NOT_APPLICABLE, build_text
from memo.store import BugRow, CampaignStore

EARLIER_KEY = "newest_before"  # bug.json: the rerun on the newest code the bug database kept for an adopted bug
CONFIG_KEY = "next_python"  # the campaign's newest-code interpreter, in its stored configuration ("" for none)


def recorded_next_python(config: JsonObject) -> str | None:
    """The newest-code interpreter a campaign was started with (``memo fuzz --next-python``; "" for none, as for a
    campaign from before the check existed: ``memo report --triage --next-python PATH`` gives it one)."""
    recorded = str(config.get(CONFIG_KEY) or "")
    return recorded if recorded and Path(recorded).is_file() else None


def has_newer_build(library: str) -> bool:
    """Whether ``library`` can be rerun on the newest code: not one in its own environment (MXNet, retired)."""
    spec = find_spec(library)
    return spec is None or not spec.python


def newest_check(folder: Path, library: str, python: str, *, timeout_s: float, remember: bool = False) -> JsonObject:
    """Rerun ``folder``'s script with ``python`` and say what the newest code does with the bug of ``library``:
    ``result`` (reproduces, fixed, error, or not applicable), a one-line ``detail``, the ``build`` it ran on
    (``keras-nightly 3.16.0.dev2026102704, jax 0.10.2``), every needed distribution's version, when and how long."""
    spec = find_spec(library)
    if spec is not None and spec.python:  # its own environment (MXNet): no newer build to run it on
        return {"result": NOT_APPLICABLE, "detail": f"{library} runs in its own environment ({spec.python}); "
                "no development build of it exists", "build": "", "versions": {}, "checked": time.time()}
    also = tuple(NEXT_ONLY.get(library, ()))
    # the library's own distributions are read whatever the script's header names (a training script's names none)
    own = tuple(spec.distributions) if spec is not None and spec.distributions else ()
    result = recheck_folder(folder, python=python, timeout_s=timeout_s, also=own + also, remember=remember)
    needed = (own or tuple(read_facts(folder).distributions)) + also
    outcome: JsonObject = {"result": result.result, "detail": result.detail, "library": library,
                           "build": build_text(needed, result.versions, MISSING), "versions": dict(result.versions),
                           "python": python, "seconds": round(result.seconds, 1), "checked": time.time()}
    if result.remembered:  # answered from the remembered runs (the same files on the same packages), not run again
        earlier = remembered_from(folder, outcome)
        if not earlier.get("checked") and result.ran_at:  # when the remembered run itself ran
            earlier["checked"] = result.ran_at
        outcome.update(seconds=None, remembered=earlier)
    return outcome


def remembered_from(folder: Path, outcome: JsonObject) -> JsonObject:
    """Where a verdict answered from the remembered runs comes from: :func:`earlier_run` of the rerun the bug
    database kept for this bug (bug.json's ``newest_before``)."""
    try:
        earlier = read_bug_file(folder).get(EARLIER_KEY) or {}
    except (OSError, ValueError):
        earlier = {}
    return earlier_run(outcome, earlier)


def earlier_run(outcome: JsonObject, earlier: JsonObject) -> JsonObject:
    """The run a remembered ``outcome`` stands for: ``earlier`` (a rerun recorded before: when, on which build, how
    long) where it gave the same result on the same build; else only the build (its date and length unknown)."""
    if earlier.get("result") == outcome.get("result") and earlier.get("build") == outcome.get("build") \
            and earlier.get("seconds") and earlier.get("checked"):
        return {"checked": earlier["checked"], "build": earlier["build"], "seconds": earlier["seconds"]}
    return {"checked": None, "build": outcome.get("build"), "seconds": None}


def provenance(newest: JsonObject) -> str:
    """Where a stored rerun's verdict comes from, as a report says it: "" for a run made then;
    ``memo ran this script on keras-nightly 3.16.0.dev2026102704, torch 2.15.0 on 2026-11-28 10:02 UTC (24.1 s); its
    files and those packages are unchanged since`` for one answered from the remembered runs (never a "0 s" rerun:
    t54's reader read "not rerun" as a stale claim)."""
    if not is_remembered(newest):
        return ""
    earlier = newest.get("remembered") if isinstance(newest.get("remembered"), dict) else {}
    if earlier.get("checked"):
        day = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(float(earlier["checked"])))
        build = earlier.get("build") or newest.get("build") or "the same packages"
        took = f" ({float(earlier['seconds']):.1f} s)" if earlier.get("seconds") else ""
        return f"memo ran this script on {build} on {day}{took}; its files and those packages are unchanged since"
    return "memo ran this script on these packages before (its date not recorded); its files and they are unchanged"


def is_remembered(newest: JsonObject) -> bool:
    """Whether a stored rerun was answered from memory: marked so, or (a record from before the mark) 0 s long."""
    return bool(newest.get("remembered")) or (newest.get("seconds") is not None and not newest.get("seconds")
                                              and newest.get("result") not in (None, NOT_APPLICABLE))


def pending_newest(store: CampaignStore) -> list[BugRow]:
    """Finished bugs whose script was not seen to fail (it reproduces, or was not run yet: a minimal script may have
    shown the bug) and that were not rerun on the newest code yet, most frequent first."""
    return sorted((bug for bug in store.triage.load_bugs()
                   if bug.merged_into is None and bug.reproduces is not False and not bug.newest and bug.bug_dir
                   and (Path(bug.bug_dir) / "repro.py").is_file()
                   and not retried(bug.reduction) and Reduction.of(bug.reduction) is not Reduction.NOT_AGAIN),
                  key=lambda bug: (-bug.occurrences, bug.first_seen))


def check_and_store(store: CampaignStore, bug: BugRow, python: str, *, timeout_s: float) -> JsonObject:
    """:func:`newest_check` of ``bug``'s folder, stored with the bug and in its folder (``newest.json``, which the
    issue text's environment quotes; bug.json stays as it is: a minimal script's check is keyed by it)."""
    folder = Path(str(bug.bug_dir))
    # the library its folder blames: float64 may have turned a training bug round to the reference (t58: a TensorFlow
    # remat bug rerun on torch's newest build, the issue text quoting "keras-nightly, torch 2.15.0")
    blamed = str(read_bug_file(folder).get("library") or "")
    library = blamed if blamed and find_spec(blamed) is not None else bug.library
    outcome = newest_check(folder, library, python, timeout_s=timeout_s, remember=True)
    store.triage.update_bug(bug.id, newest=outcome)
    (folder / NEWEST_FILE).write_text(json.dumps(outcome, indent=1, sort_keys=True))
    return outcome
