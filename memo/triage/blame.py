"""Which library a bug is filed against, decided once by triage and stored with the bug (``bugs.blame``); the report
renders it.

The oracle names the library a verdict blames (:mod:`memo.oracle.attribution`); triage refines it once the bug is
known: a crash a backend reports from inside the library under it (its spec's ``delegates``, or where in its stack
it arises: :mod:`memo.backends.inner_libraries`), one defect seen
through a backend and the library whose kernels compute it (:func:`memo.triage.signature.computing_library`, when
an entry holds both), and a numeric bug the ONNX reference evaluator blames on the converter or the engine
(:func:`memo.triage.onnx_reference.blamed_library`). A failure matching the library's declared refusals (its spec)
is recorded as that refusal.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Sequence, TypedDict

from memo.backends.documented import declared_refusal, delegated_library
from memo.backends.inner_libraries import inner_library
from memo.bug_files import read_bug_file
from memo.kinds import TRAINING_KINDS, VerdictKind
from memo.oracle import KERAS_FRONT_END
from memo.store import BugRow, CampaignStore
from memo.triage.dedup import variants
from memo.triage.hang_site import hang_delegate
from memo.triage.onnx_reference import blamed_library
from memo.triage.rekey import folder_blame
from memo.triage.signature import FailureDetails, computing_library, failure_details, keras_backends, \
    library_of

CRASH = VerdictKind.CRASH.value


class Blame(TypedDict):
    """``library``: whom the bug is filed against; ``reported_by``: the backend that showed it, when another library
    is blamed (None: the same); ``opinion``: the ONNX reference evaluator's choice (None: no opinion);
    ``refusal``: the declared refusal its failure matches (None: none)."""

    library: str
    reported_by: str | None
    opinion: str | None
    refusal: str | None


def decide(bug: BugRow, merged: Sequence[BugRow], details: FailureDetails, opinion: str | None) -> Blame:
    """The blame of ``bug`` (an entry, with the bugs ``merged`` into it), from its first finding's failure
    ``details`` and its folder's ONNX reference ``opinion``."""
    library, reported_by = bug.library, None
    delegated = None
    if bug.kind == CRASH:  # by the library's own message, else by where in its stack it arises
        delegated = (delegated_library(bug.library, details.message or "")
                     or inner_library(bug.library, details.exception or str(bug.parts.get("exception") or ""),
                                      list(bug.parts.get("frames") or [])))
    if bug.kind == "hang":  # by where its checked script's watchdog stopped it (t59: inside OpenVINO's compiler)
        delegated = hang_delegate(bug.library, Path(bug.bug_dir) if bug.bug_dir else None)
    if delegated:  # reported by one backend, failing inside the library under it
        library, reported_by = delegated, bug.library
    computing = computing_library(bug.library)
    if not delegated and computing != bug.library and any(v["library"] == computing
                                                           for v in variants([bug, *merged])):
        library, reported_by = computing, bug.library  # one defect seen through both: filed where it is computed
    if not delegated and bug.kind == CRASH and library != KERAS_FRONT_END and _keras_wide([bug, *merged]):
        library, reported_by = KERAS_FRONT_END, bug.library  # Keras's shared code, failing on more than one backend
    if bug.kind in TRAINING_KINDS and bug.parts.get("library") == KERAS_FRONT_END:
        # an optimizer step keyed by Keras's own optimizer code (memo.triage.training_signature.shared_code_parts)
        library, reported_by = KERAS_FRONT_END, bug.library
    if opinion and library_of(opinion) != library:  # ONNX's reference evaluator on the same file blames another
        # by the library's one name: tf2onnx at opset 11 is tf2onnx (one tracker, one entry name)
        library, reported_by = library_of(opinion), bug.library
    return Blame(library=library, reported_by=reported_by, opinion=opinion,
                 refusal=declared_refusal(bug.library, details.exception, details.message or ""))


def _keras_wide(bugs: Sequence[BugRow]) -> bool:
    """Whether an entry's crash is Keras's own: it holds Keras's front-end finding (every Keras backend failed
    alike) or the same crash on two Keras backends (a device twin is its CPU backend's library), merged by their key
    under Keras (:func:`memo.triage.signature.in_keras_core`)."""
    libraries = {library_of(variant["library"]) for variant in variants(bugs)}
    return KERAS_FRONT_END in libraries or len(libraries & {library_of(name) for name in keras_backends()}) > 1


def decide_all(store: CampaignStore) -> int:
    """Decide and store the blame of every entry (a bug merged into none, localized); how many changed."""
    rows = store.triage.load_bugs()
    merged: dict[str, list[BugRow]] = {}
    for bug in rows:
        if bug.merged_into:
            merged.setdefault(bug.merged_into, []).append(bug)
    changed: dict[str, Blame] = {}
    for bug in rows:
        if bug.merged_into or bug.unlocalized:
            continue
        finding = store.finding(bug.first_verdict)
        details = failure_details(finding.verdict, finding.result) if finding else FailureDetails()
        info = read_bug_file(Path(bug.bug_dir)) if bug.bug_dir else {}
        if bug.kind in TRAINING_KINDS and (parts := folder_blame(bug.parts, info)) is not bug.parts:
            bug = replace(bug, library=str(parts["library"]), parts=parts)  # float64 turned its folder round
        blame = decide(bug, merged.get(bug.id, []), details,
                       blamed_library(info))  # a numeric finding, or an engine's crash on a converted file
        if dict(blame) != bug.blame:
            changed[bug.id] = blame
    if changed:
        with store.transaction():
            for bug_id, blame in changed.items():
                store.triage.update_bug(bug_id, blame=dict(blame))
    return len(changed)
