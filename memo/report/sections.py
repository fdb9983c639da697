"""Where each bug entry stands: ready to file, or which section keeps it apart, and why.

A maintainer reads "ready to file" first and must accept every entry there as a real defect of the library
named. Everything else stays visible, in its own section with the reason: a numeric finding whose float64
truth blames another library, one no float32 library can be held to (ill-conditioned), one within the
tolerance of float64 (float noise), one float64 cannot settle, a documented difference, a retired library's
or a legacy code path's bug (no tracker takes it: not fileable, never counted as ready). The first rule that applies
decides (a registry, in order).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from memo.backends.spec import UNLIKELY_FIXED
from memo.bug_files import Reduction
from memo.json_types import JsonObject
from memo.bugdb import FIXED_UPSTREAM as FIXED_UPSTREAM_STATUS
from memo.kinds import NUMERIC_KINDS, TRAINING_KINDS, VerdictKind
from memo.newest import FIXED_UPSTREAM, STILL_REPRODUCES
from memo.triage.newest import provenance
from memo.triage.onnx_reference import NAN_NOT_PROPAGATED, SPECIAL_VALUES
from memo.truth import CONFIRMED, CONTRADICTED, ILL_CONDITIONED, NOISE, UNAVAILABLE, UNDECIDED

if TYPE_CHECKING:
    from memo.report.entry import BugEntry

READY = "ready to file"
# Kinds judged by the float64 truth: the oracle's numeric kinds and the training check's.
TRUTH_KINDS = NUMERIC_KINDS | (TRAINING_KINDS - {VerdictKind.TRAINING_CRASH.value})


@dataclass(frozen=True)
class Section:
    key: str
    title: str
    note: str


UNCHECKED = "minimal script not checked (no time left)"  # memo report NAME --issue-scripts checks it

SECTIONS: tuple[Section, ...] = (
    Section("ready", READY, "reduced, its checked minimal script reproduces, and (numeric findings) confirmed by the "
                            "float64 truth"),
    Section("not-ready", "not ready yet", "not reduced, no checked minimal script reproducing it, not rechecked on "
                                          "the newest code, or not triaged yet"),
    Section("retired", "retired library or legacy code: not fileable",
            "reduced or not, there is no tracker to take it: the library is retired (MXNet, moved to the "
            "Apache Attic: no more releases), or the code reached is a legacy path its maintainers replaced "
            "(torch.onnx's TorchScript exporter, which Keras's export calls for a dynamic batch); kept as a record "
            "(triage reduces such bugs after all others), not counted as ready to file"),
    Section("fixed-upstream", "fixed upstream", "reproduces on the release memo tests, but no longer on the newest "
                                                "code (the development build named): already fixed, nothing to file"),
    Section("truth-blames-other", "float64 blames another library",
            "the float64 truth sides with the library accused: the one the verdict trusted is wrong"),
    Section("documented", "documented differences",
            "behaviour the library's documentation or the operator's specification allows"),
    Section("spec-open", "NaN the specification leaves open",
            "an engine's result differs only through NaN or Inf made inside the model (0/0, 255/0), where ONNX's "
            "reference implementation and the other libraries propagate NaN, through operators whose specification "
            "does not say what NaN gives (Min, Max, Clip, the reductions): "
            "a question of consistency for the engine's maintainers, not a defect the specification decides; not "
            "counted as ready to file"),
    Section("ill-conditioned", "ill-conditioned",
            "no float32 library can be held to the tolerance on this model (the float64 result itself is unstable, "
            "non-finite, near overflow, or an index decided by ties)"),
    Section("noise", "float noise", "every library involved is within the tolerance of the float64 result"),
    Section("undecided", "undecided by float64", "neither side is close to the float64 result, or it could not "
                                                  "be computed"),
    Section("not-reproducing", "does not reproduce", "the standalone script does not show the bug"),
)
SECTION_RANK = {section.key: rank for rank, section in enumerate(SECTIONS)}
TITLES = {section.key: section.title for section in SECTIONS}


def _truth_decision(entry: BugEntry) -> str | None:
    truth = entry.get("truth") or {}
    return truth.get("decision") if entry.get("kind") in TRUTH_KINDS else None


def _spec_silent(entry: BugEntry) -> bool:
    """Confirmed only through NaN or Inf made inside the model, where the operator's specification is silent on NaN:
    the truth :func:`memo.triage.onnx_reference.settle` decided, whose reason opens with what settled it."""
    reason = str((entry.get("truth") or {}).get("reason") or "")
    return _truth_decision(entry) == CONFIRMED and reason.startswith((NAN_NOT_PROPAGATED, SPECIAL_VALUES))


def _reduced(entry: BugEntry) -> bool:
    """Reduced, and the reduction finished: one cut short by its time limit (a later pass continues it) may still
    hold layers the bug does not need."""
    return entry.get("reduced_layers") is not None and entry.get("original_layers") is not None \
        and entry["reduced_layers"] < entry["original_layers"] and not _unfinished(entry)


def id_note(entry: BugEntry) -> str:
    """Why the entry's id names another library than the one it is filed against ("" where it does not): an id is
    made when the finding is first seen, from the backend that showed it; blame comes later (a float64 truth blaming
    the reference, a crash inside the library a backend delegates to). t56's reader took the id's keras-torch for
    the entry's library."""
    named = entry["id"].removeprefix(f"{entry['kind']}-").rsplit("-", 1)[0]
    library = entry["library"]
    if not named or named == library:
        return ""
    return f"the id names {named}, the library memo first saw it in; the entry is {library}'s"


def model_heading(entry: BugEntry) -> str:
    """What the report calls the entry's model: the minimal one once reduced, else the model as the campaign found it
    (its repro.py, where triage wrote one, runs that model)."""
    return "Minimal model" if _reduced(entry) else "Model as found (not reduced yet)"


def _reproduces(entry: BugEntry) -> bool:
    """Shown again in a fresh process: by memo's repro.py, or, where that was not checked yet (the campaign's time
    ran out), by the minimal script ``memo report --issue-scripts`` checked (the script a maintainer is given)."""
    checked = entry.get("reproduces")
    return checked is True or (checked is None and (entry.get("minimal") or {}).get("reproduces") is True)


def _newest(entry: BugEntry) -> JsonObject:
    return entry.get("newest") or {}


def _decisive_newest(entry: BugEntry) -> JsonObject:
    """This campaign's rerun on the newest code where it decided (reproduces or fixed); {} otherwise."""
    return _newest(entry) if _newest(entry).get("result") in (FIXED_UPSTREAM, STILL_REPRODUCES) else {}


def _fixed_upstream(entry: BugEntry) -> bool:
    """The newest code no longer shows it: this campaign's rerun there said so, or (not rerun yet, or a rerun that
    decided nothing: its script could not run there) the bug database records it fixed upstream from an earlier
    campaign's. t65: a JAX training crash whose repro.py could not run on the nightly, its minimal script not rerun
    there in time, stood "ready to file" in the row that said "known: fixed upstream"."""
    if decided := _decisive_newest(entry):
        return decided.get("result") == FIXED_UPSTREAM
    return (entry.get("known_bug") or {}).get("status") == FIXED_UPSTREAM_STATUS


def _awaiting_newest(entry: BugEntry) -> bool:
    """The campaign has a newest-code environment, and this reproducing bug was not rerun there yet."""
    return bool(entry.get("newest_pending")) and not _newest(entry)


def _minimal_reproduces(entry: BugEntry) -> bool:
    """Its minimal script (the one a maintainer is given) was checked in a fresh process and reproduces. For a
    training bug its checked repro.py (Keras's own training machinery as the worker runs it, on the reduced model,
    against the reference's arrays) decides: the minimal script's idiom (memo.filing.training_idiom: an eager
    optimizer ``apply`` where the JAX trainer jits ``stateless_apply``) may not reach every defect the worker's
    code does (docs/training.md), but a minimal script checked and not reproducing keeps the bug out of "ready":
    the maintainer is given that script."""
    if entry.get("kind") in TRAINING_KINDS:  # a checked minimal script that does not show it: memo's worker
        # setting shows it, not the library a user runs (p47: a JAX NaN gradient only under memo's XLA -O0 flag);
        # none tried yet is no time left, not ready (t70: an adopted LSTM remat crash stood ready with its 1,162-line
        # repro.py as the script)
        minimal = entry.get("minimal") or {}
        return entry.get("reproduces") is True and bool(minimal) and minimal.get("reproduces") is not False
    return (entry.get("minimal") or {}).get("reproduces") is True


def _unfinished(entry: BugEntry) -> bool:
    return Reduction.of(entry.get("reduction")) is Reduction.TIMEOUT


# (section key, does it apply?) in order: the first that applies decides.
RULES: tuple[tuple[str, Callable[[BugEntry], bool]], ...] = (
    ("documented", lambda e: bool(e.get("documented"))),
    ("spec-open", _spec_silent),
    ("ill-conditioned", lambda e: _truth_decision(e) == ILL_CONDITIONED),
    ("noise", lambda e: _truth_decision(e) == NOISE),
    ("undecided", lambda e: _truth_decision(e) in (UNDECIDED, UNAVAILABLE)),
    ("truth-blames-other", lambda e: _truth_decision(e) == CONTRADICTED),
    ("not-reproducing", lambda e: e.get("reproduces") is False),
    ("fixed-upstream", _fixed_upstream),
    # before "not ready": a bug no tracker takes is not made fileable by its reduction or its script's check (t60's
    # reader: an MXNet entry "not ready for want of a checked minimal script")
    ("retired", lambda e: (e.get("upstream") or {}).get("status") in UNLIKELY_FIXED),
    ("not-ready", lambda e: not (_reproduces(e) and _reduced(e) and _minimal_reproduces(e))
     or (e.get("kind") in TRUTH_KINDS and _truth_decision(e) is None) or _awaiting_newest(e)),
    ("ready", lambda e: True),
)


def section_of(entry: BugEntry) -> str:
    """The key of the section ``entry`` belongs in."""
    return next(key for key, applies in RULES if applies(entry))


def status_text(entry: BugEntry) -> str:
    """The status column: the section's title, made specific where a reader acts on the detail."""
    section = entry["section"]
    if section == "truth-blames-other":
        blamed = (entry.get("truth") or {}).get("blamed")
        return f"float64 blames {blamed}" if blamed else TITLES[section]
    if section == "fixed-upstream":
        decided = _decisive_newest(entry)
        build = decided.get("build") or (entry.get("known_bug") or {}).get("detail") or "the newest code"
        said = (entry.get("newest_provenance") or provenance(decided)) if decided else \
            "recorded by the bug database from an earlier campaign; not rerun"
        return f"fixed upstream: no longer reproduces on {build}" + (f" ({said})" if said else "")
    if section == "not-ready":
        if _reduced(entry):  # repro.py not failing (else "does not reproduce"): what is missing, in triage's order
            return _missing_step(entry)
        if entry.get("likely_duplicate_of"):
            return f"not reduced: likely a duplicate of {entry['likely_duplicate_of']} (the same failure site)"
        if _reproduces(entry) and _unfinished(entry):
            return f"reduction unfinished ({entry.get('reduced_layers')} of {entry.get('original_layers')} layers left)"
        if _reproduces(entry):
            return "reproduces (not reduced)"
        return (entry.get("reduction") or {}).get("status") or "not triaged yet"
    return TITLES[section]


def _missing_step(entry: BugEntry) -> str:
    """Why a reduced bug whose script has not failed is not ready: the first step of its triage left to do (t64: a
    reduced training crash adopted from the bug database, whose repro.py had not run yet, read "float64 truth not
    computed yet", a truth no crash needs)."""
    minimal = _minimal_status(entry)
    training = entry.get("kind") in TRAINING_KINDS
    tried, not_run = entry.get("minimal") or {}, "reduced; its repro.py not run in a fresh process yet"
    if training and not _reproduces(entry):  # a training bug's repro.py first: it decides where no idiom writes one
        return not_run
    if minimal and (not training or not tried or tried.get("reproduces") is False):
        return minimal
    if not (_reproduces(entry) and _minimal_reproduces(entry)):
        return not_run
    if entry.get("kind") in TRUTH_KINDS and _truth_decision(entry) is None:
        return "float64 truth not computed yet"
    return "not rechecked on the newest code yet"


def _minimal_status(entry: BugEntry) -> str | None:
    """Why a reduced, reproducing entry is not ready for want of its minimal script; None when it reproduces."""
    minimal = entry.get("minimal")
    if not minimal:
        return UNCHECKED
    if minimal.get("reproduces") is not True:
        why = minimal.get("reason") or "no reason recorded"
        return f"minimal script does not reproduce ({why})" if minimal.get("lines") else f"no minimal script: {why}"
    return None


def counts_by_section(entries: list[BugEntry]) -> dict[str, int]:
    """How many of ``entries`` each section holds, by key: the one count the report's header, its summary figures
    and its section list all read ("ready to file" is the ``ready`` section's, never a status text matched)."""
    counts = {section.key: 0 for section in SECTIONS}
    for entry in entries:
        counts[entry.get("section") or section_of(entry)] += 1
    return counts


def ready_count(entries: list[BugEntry]) -> int:
    """How many of ``entries`` are ready to file (:func:`counts_by_section`)."""
    return counts_by_section(entries)["ready"]


def section_counts(entries: list[BugEntry]) -> list[JsonObject]:
    """Every section with its title, note and number of entries, in reading order."""
    counts = counts_by_section(entries)
    return [{"key": s.key, "title": s.title, "note": s.note, "count": counts[s.key]} for s in SECTIONS]
