"""Everything the report shows, gathered from the campaign store (and the bug folders) as plain JSON data.

The three formats (HTML, JSON, Markdown) render this one structure, so they always agree.
"""
from __future__ import annotations

import json
from dataclasses import asdict
import time
from collections import Counter
from pathlib import Path
from typing import Any

from memo import __version__
from memo.backends.result import stored_result
from memo.coverage import CoverageTracker, denominators
from memo.devices import device_of
from memo.diskspace import tree_bytes
from memo.kinds import BUG_KINDS, KNOWN_FAILURE_PREFIX, KNOWN_PREFIX, TRAINING_KINDS
from memo.layers import CATALOGUE
from memo.model.ir import ModelIR
from memo.oracle import KERAS_FRONT_END
from memo.paths import campaign_dir
from memo.backends.documented import documented_difference, upstream_of
from memo.backends.spec import UPSTREAM_STATUSES
from memo.json_types import JsonObject
from memo.oracle.verdict import VerdictSummary
from memo.filing import kept_issue_text
from memo.filing.check import MINIMAL_DIR
from memo.report.entry import BugEntry, Documented, FilingView, MergedBug, ModelRow
from memo.report.known import known_figures, mark_known
from memo.report.library import library_data
from memo.report.markdown import issue_markdown
from memo.report.training import training_coverage, training_optimizers
from memo.report.triage_figures import (mark_likely_duplicates, newest_environment, newest_figures,
                                         triage_status)
from memo.report.sections import (SECTION_RANK, UNCHECKED, id_note, model_heading, section_counts, section_of,
                                  status_text)
from memo.store import BugRow, CampaignStore
from memo.triage import dedup, pending_localizations, seconds_for
from memo.triage.pending import backlog
from memo.triage.reduce_order import distinct_note
from memo.bug_files import BUGS_DIR, REPRO_FILE, Reduction, read_bug_file
from memo.triage.bugdir import bug_layers
from memo.triage.onnx_reference import ONNX_REFERENCE_KEY
from memo.triage.reassess import REDUCED_VERDICT, TRUTH_KEY
from memo.triage.signature import FailureDetails, failure_details
from memo.triage.newest import has_newer_build, pending_newest, provenance

COVERAGE_SERIES = (("types", "Layer types"), ("pairs", "Layer pairs"), ("params", "Layer parameter values"))
CONFIG_PREVIEW_KEYS = 4
UPSTREAM_RANK = {status: rank for rank, status in enumerate(UPSTREAM_STATUSES)}  # active ... retired


def collect(store: CampaignStore, bugs_db: Path | None = None) -> JsonObject:
    """The report's content, read from the store and the bug folders (nothing is written: deduplication
    belongs to triage, which ``memo report`` runs first).

    Bugs merged into another (same reduced model and symptom) appear inside that bug's entry, not as
    their own; NaN/inconsistency findings not yet localized are listed apart, not as bugs. Bugs ready to
    file (reduced, and their script reproduces them) come first; within a section, bugs new to the bug database
    ``bugs_db`` (if any) come before known ones.
    """
    versions = backend_versions(store)
    rows = store.triage.load_bugs()
    merged: dict[str, list[BugRow]] = {}
    for bug in rows:
        if bug.merged_into:
            merged.setdefault(bug.merged_into, []).append(bug)
    primary = [bug for bug in rows if not bug.merged_into and not bug.unlocalized]
    newest = newest_environment(store)
    awaiting = {bug.id for bug in pending_newest(store) if has_newer_build(bug.library)} if newest else set()
    entries = [bug_entry(store, bug, versions, merged.get(bug.id, []), newest_pending=bug.id in awaiting)
               for bug in primary]
    database = mark_known(store, entries, rows, bugs_db)
    mark_likely_duplicates(entries, primary)
    for entry in entries:  # once every fact is in, the database's status too (a bug it knows fixed upstream)
        entry["section"] = section_of(entry)
        entry["status"] = status_text(entry)
        entry["model_heading"] = model_heading(entry)
        entry["id_note"] = id_note(entry)
    bugs = sorted((entry for entry in entries if not unconfirmed(entry)), key=_filing_order)
    return {"memo_version": __version__, "generated": time.time(), "summary": summary(store),
            "coverage": coverage(store), "bugs": bugs, "unsupported": dedup.unsupported_groups(store),
            "awaiting_localization": awaiting_localization(store, rows),
            "unconfirmed": [{"id": e["id"], "kind": e["kind"], "library": e["library"], "stage": e["stage"],
                             "occurrences": e["occurrences"], "message": e["message"]}
                            for e in entries if unconfirmed(e)],
            "special": store.special_groups(), "training": store.training_groups(),
            "training_optimizers": training_optimizers(store), "training_coverage": training_coverage(store),
            "triage": triage_status(bugs, rows),
            "sections": section_counts(bugs),
            "triage_errors": [{"bug": error.bug_id, "step": error.step, "message": error.message}
                              for error in store.triage.errors()],
            "verdict_counts": store.verdict_counts(), "engines": engine_activity(store),
            "generation": generation(store), "triage_left": triage_left(store, bugs),
            "known": known_figures(database, bugs), "newest": newest_figures(newest, bugs),
            **library_sections(store)}


def library_sections(store: CampaignStore) -> JsonObject:
    """``library_coverage`` ({library: {"covered": N, "total": M}}, empty without ``--library-coverage``) and
    ``library`` (its table, top modules and curves, or None: :func:`memo.report.library.library_data`)."""
    details = library_data(store)
    return {"library_coverage": details["figures"] if details else {}, "library": details}


MIN_CONTINUE_BUDGET_S = 120.0


def triage_left(store: CampaignStore, entries: list[BugEntry] | None = None) -> JsonObject:
    """What triage has not done yet (bugs to reduce, numeric findings to localize) and the command that
    finishes it, with the campaign as the user can name it from where they ran memo; ``scripts``: the entries
    (of ``entries``) reduced and reproducing whose minimal script the campaign had no time to check, and
    ``scripts_command``, which checks them; ``distinct``: of ``bugs``, those that would be entries of their own
    (:class:`memo.triage.reduce_order.Backlog`)."""
    waiting, localizations = backlog(store), len(pending_localizations(store))
    bugs = waiting.total
    name = store.get_meta("campaign_name") or store.directory.name
    named = campaign_dir(name).resolve() == store.directory.resolve()
    budget = 60 * -(-max(MIN_CONTINUE_BUDGET_S, seconds_for(bugs, localizations)) // 60)  # whole minutes, up
    where = name if named else store.directory
    return {"bugs": bugs, "distinct": waiting.distinct, "note": distinct_note(bugs, waiting.distinct),
            "localizations": localizations,
            "command": f"python -m memo report {where} --triage --budget {budget:.0f}",
            "scripts": [entry["id"] for entry in entries or [] if entry.get("status") == UNCHECKED],
            "scripts_command": f"python -m memo report {where} --issue-scripts"}


def awaiting_localization(store: CampaignStore, rows: list[BugRow]) -> list[JsonObject]:
    """Numeric findings not yet bugs, per (kind, library): ``findings`` in all, ``unlocalizable`` of them whose
    localization ran and found no first misbehaving layer (the library gave no outputs on the probe model...)."""
    tried = store.triage.localizations()
    return [{"kind": bug.kind, "library": bug.library, "findings": bug.occurrences,
             "unlocalizable": sum(verdict in tried for verdict in store.triage.bug_verdicts(bug.id))}
            for bug in rows if bug.unlocalized]


def unconfirmed(entry: BugEntry) -> bool:
    """A finding whose own model did not show it again when re-run, and whose script does not reproduce it
    either: a hang under load or a flaky failure, not a bug to file. Listed apart, never counted as a bug."""
    return entry.get("reproduces") is not True and Reduction.of(entry.get("reduction")) is Reduction.NOT_AGAIN


def _filing_order(entry: BugEntry) -> tuple[Any, ...]:
    """By section; within one, new bugs before known ones, actively maintained libraries first; then the most
    frequent."""
    maintained = UPSTREAM_RANK.get((entry.get("upstream") or {}).get("status"), len(UPSTREAM_RANK))
    return SECTION_RANK[entry["section"]], bool(entry.get("known")), maintained, -entry["occurrences"], entry["first_seen"]


def summary(store: CampaignStore) -> JsonObject:
    history = store.coverage_history()
    started = store.get_meta("started")
    state = store.load_state()
    elapsed = float((state[1] if state else {}).get("elapsed", 0.0) or 0.0)
    if history:
        elapsed = max(elapsed, float(history[-1]["elapsed"]))
    generated = store.count_mutants()
    executed = store.count_executions()
    config = store.get_meta("config", {}) or {}
    return {"campaign": store.get_meta("campaign_name") or store.directory.name, "directory": str(store.directory),
            "started": started, "duration_s": elapsed, "generated": generated,
            "valid": store.count_mutants(valid=True), "executed": executed,
            "generated_per_min": 60.0 * generated / elapsed if elapsed else None,
            "executed_per_min": 60.0 * executed / elapsed if elapsed else None,
            "versions": flatten_versions(backend_versions(store)),
            "backends": config.get("backends"), "seed": config.get("seed"), "search": config.get("search"),
            "disk": disk_figures(store), "cluster": store.get_meta("cluster")}


def disk_figures(store: CampaignStore) -> JsonObject:
    """Bytes of the artifacts, the campaign folder and its bug folders."""
    artifacts = sum(tree_bytes(root) for root in store.artifact_roots())
    campaign = tree_bytes(store.directory)
    executed = store.count_executions()
    config = store.get_meta("config", {}) or {}
    return {"artifacts_bytes": artifacts, "campaign_bytes": campaign,
            "bugs_bytes": tree_bytes(store.directory / BUGS_DIR),
            "artifacts_kept": store.count_executions(with_artifact=True),
            "budget_bytes": config.get("max_disk_bytes"),
            "bytes_per_executed": (artifacts + campaign) / executed if executed else None}


# Why a backend skipped a model, by the stage its skip is recorded at.
SKIP_REASONS = {"sample": "not in its sample", "convert": "no converted file", "load": "converter's load lost",
                "start": "unavailable", "known": KNOWN_PREFIX}


def engine_activity(store: CampaignStore) -> list[JsonObject]:
    """Per backend and converter: models it ran (any stage attempted), models it skipped and why (a sampled
    engine's share, a converter that produced no file), and its findings (bug kinds); in execution order."""
    rows: dict[str, JsonObject] = {}
    for execution in store.executions():
        for name, entry in ((execution.result or {}).get("backends") or {}).items():
            row = rows.setdefault(name, {"name": name, "role": entry.get("role") or "backend", "ran": 0,
                                         "skipped": {}, "findings": 0})
            stages = entry.get("stages") or []
            if stages and all(stage.get("status") == "skipped" for stage in stages):
                reason = SKIP_REASONS.get(stages[0].get("stage"), str(stages[0].get("stage")))
                if str(stages[0].get("message") or "").startswith(KNOWN_FAILURE_PREFIX):
                    reason = KNOWN_FAILURE_PREFIX  # a failure already filed as a bug, not a declined feature
                row["skipped"][reason] = row["skipped"].get(reason, 0) + 1
            else:
                row["ran"] += 1
    for name, count in store.finding_counts(BUG_KINDS).items():
        if name not in rows:  # a finding against no single library: Keras itself, failing alike on every backend
            rows[name] = {"name": name, "role": "shared front end" if name == KERAS_FRONT_END else "backend",
                          "ran": "-", "skipped": {}, "findings": 0}
        rows[name]["findings"] = count
    executed = store.count_executions()
    for row in rows.values():
        row["share"] = row["ran"] / executed if executed and isinstance(row["ran"], int) else None
        row["skipped_text"] = "; ".join(f"{n} {why}" for why, n in row["skipped"].items()) or "-"
        row["device"] = device_of(row["name"])
    return list(rows.values())


# A layer type in fewer than this share of the executed mutants is "rarely executed" (issue 12's goal: every
# type in at least 1 %).
RARELY_EXECUTED = 0.01


def generation(store: CampaignStore) -> JsonObject:
    """What the executions were spent on. Per operator: mutants generated, diverse, executed, and executed ones
    the reference could not run (no library can be compared on those: a wasted execution, or a bug of the
    reference); over all executed mutants (seeds excluded): that share, and the catalogue's layer types in
    fewer than :data:`RARELY_EXECUTED` of them (never executed ones included)."""
    operators = {op: {"operator": op, "generated": n, "diverse": d, "executed": 0, "reference_failed": 0}
                 for op, (n, d) in store.operator_counts().items()}
    per_type: Counter[str] = Counter()
    executed = failed = 0
    for operator, ir_json, row in store.executed_mutants():
        result = stored_result(row.result)
        if result is None:  # memo's own failure while preparing the artifact: no library ran it
            continue
        executed += 1
        entry = operators.setdefault(operator, {"operator": operator, "generated": 0, "diverse": 0, "executed": 0,
                                                "reference_failed": 0})
        entry["executed"] += 1
        reference = result.backends.get(result.reference)
        if reference is None or reference.status != "ok":
            failed += 1
            entry["reference_failed"] += 1
        per_type.update({layer.class_name for layer in ModelIR.loads(ir_json).layers})
    rare = sorted(name for name in CATALOGUE if per_type[name] < RARELY_EXECUTED * executed) if executed else []
    return {"executed": executed, "reference_failed": failed, "reference_failed_share": failed / executed if executed
            else None, "rare_types": rare, "rare_threshold": RARELY_EXECUTED, "types": len(CATALOGUE),
            "operators": sorted(operators.values(), key=lambda e: (-e["executed"], e["operator"]))}


def backend_versions(store: CampaignStore) -> JsonObject:
    """``{backend: {distribution: version}}``: the campaign's record, else what the first execution saw."""
    recorded = store.get_meta("versions", {}) or {}
    if recorded and "error" not in recorded:
        return recorded
    for row in store.executions(limit=5):
        backends = (row.result or {}).get("backends") or {}
        found = {name: entry.get("versions") for name, entry in backends.items() if entry.get("versions")}
        if found:
            return found
    return recorded


def flatten_versions(versions: Any) -> list[tuple[str, str]]:
    """``[(backend, "dist version, ...")]`` from ``{backend: {dist: version}}`` (or ``{dist: version}``)."""
    rows = []
    for name, value in sorted((versions or {}).items()):
        if isinstance(value, dict):
            rows.append((str(name), ", ".join(f"{dist} {ver}" for dist, ver in sorted(value.items()))))
        else:
            rows.append((str(name), str(value)))
    return rows


def coverage(store: CampaignStore) -> list[JsonObject]:
    """One series per primary criterion: its history (``points``, over the denominator it was recorded with,
    ``total``), the final headline figure (``final``: [covered, realizable denominator]) and the inert one
    (``inert``: [covered, inert denominator], or None), both from the campaign's saved coverage when there is
    one (docs/coverage.md). ``history_note`` says when the history was recorded with other denominators (by
    a memo that counted inert items too)."""
    history = store.coverage_history()
    tracker = saved_tracker(store)
    counts = tracker.counts() if tracker else {}
    inert = tracker.inert_counts() if tracker else {}
    current = denominators()
    out = []
    for key, title in COVERAGE_SERIES:
        points = [(float(row["elapsed"]), float(row[key])) for row in history]
        total = None
        if history:
            extra = json.loads(history[-1]["extra"] or "{}")
            pair = extra.get(key)
            total = int(pair[1]) if isinstance(pair, list) and len(pair) > 1 and pair[1] else None
        final = list(counts[key]) if key in counts else ([int(points[-1][1]), total] if points and total else None)
        note = (f"the chart was recorded over {total} items (by an earlier memo, which counted inert items too, "
                f"or over another catalogue); the figure above is over the {current[key]} realizable ones"
                if tracker and total and total != current[key] else None)
        out.append({"key": key, "title": title, "points": points, "total": total, "final": final,
                    "inert": list(inert[key]) if key in inert else None, "history_note": note})
    return out


def saved_tracker(store: CampaignStore) -> CoverageTracker | None:
    """The coverage the campaign saved with its last mutant (None before the first, or if unreadable)."""
    state = store.load_state()
    document = (state[1] if state else {}).get("coverage")
    if not document:
        return None
    try:
        return CoverageTracker.from_json(document)
    except (ValueError, TypeError, KeyError):
        return None



def _model_table(ir: ModelIR | None, shapes: JsonObject, highlight: str | None) -> list[ModelRow]:
    if ir is None:
        return []
    rows: list[ModelRow] = []
    for layer in ir.layers:
        config = {k: v for k, v in layer.config.items() if k not in ("trainable", "dtype") and v not in (None, {})}
        preview = ", ".join(f"{k}={json.dumps(v, default=str)}" for k, v in list(config.items())[:CONFIG_PREVIEW_KEYS])
        if len(config) > CONFIG_PREVIEW_KEYS:
            preview += ", ..."
        rows.append(ModelRow(name=layer.name, class_name=layer.class_name, inputs=list(layer.inputs), config=preview,
                             shape=shapes.get(layer.name), output=layer.name in ir.outputs,
                             highlight=layer.name == highlight))
    return rows


def bug_entry(store: CampaignStore, bug: BugRow, versions: JsonObject,
              merged: list[BugRow] | None = None, newest_pending: bool = False) -> BugEntry:
    """One bug with everything its report section needs (:func:`collect` sections it once the bug database is read);
    ``merged``: the entries folded into it; ``newest_pending``: it awaits its rerun on the newest code
    (:func:`memo.triage.newest.pending_newest`), so it is not ready yet."""
    finding = store.finding(bug.first_verdict)
    details = failure_details(finding.verdict, finding.result) if finding else FailureDetails()
    folder = Path(bug.bug_dir) if bug.bug_dir else None
    info = read_bug_file(folder) if folder else {}
    ir = _load_ir(folder, finding.ir_json if finding else None)
    script_path = folder / REPRO_FILE if folder else None
    localization = info.get("localization") or {}
    reduced = VerdictSummary.from_json(info.get(REDUCED_VERDICT) or {})  # the figures the entry shows
    if not reduced.message and bug.kind in TRAINING_KINDS:  # a folder older than that record: its run's message
        reduced = VerdictSummary(str(info.get("message") or ""), reduced.metrics)  # (t66: M-0006's Adam, 0.0355)
    entry: BugEntry = {
        "id": bug.id, "kind": bug.kind, "library": bug.library, "device": device_of(bug.library),
        "stage": bug.stage or "",
        "signature": bug.parts, "first_seen": bug.first_seen, "last_seen": bug.last_seen,
        "occurrences": bug.occurrences, "first_mutant": bug.first_mutant,
        "layers": bug_layers(ir) if ir else [], "layer": bug.layer or localization.get("layer"),
        "layer_class": bug.layer_class, "reproduces": bug.reproduces, "checked": bug.checked,
        "message": reduced.message or (finding.verdict.message if finding else ""),
        "metrics": reduced.metrics or (finding.verdict.metrics() if finding else {}),
        "truth": info.get(TRUTH_KEY) or {}, "truth_command": info.get("truth_command", ""),
        "onnx_reference": info.get(ONNX_REFERENCE_KEY) or {},
        "exception": details.exception, "traceback": details.traceback,
        # a training bug's triage may find another cause than the campaign's finding said (a gradient difference that
        # a layer's forward output makes: memo.triage.training_forward): its heading follows the reduced verdict
        "error_message": (reduced.message if bug.kind in TRAINING_KINDS and reduced.message else details.message),
        "stderr": details.stderr, "reduction": bug.reduction, "original_layers": bug.original_layers,
        "reduced_layers": bug.reduced_layers, "bug_dir": str(folder) if folder else None,
        "artifact_dir": finding.artifact_dir if finding else None, "localization": localization,
        "io": info.get("io", {}),
        "reference": info.get("reference", ""), "model": _model_table(ir, info.get("shapes", {}), bug.layer),
        "repro_script": script_path.read_text() if script_path and script_path.exists() else "",
        "repro_command": info.get("repro_command", ""),
        "merged": [MergedBug(id=other.id, occurrences=other.occurrences, signature=other.parts)
                   for other in merged or []],
        "variants": dedup.variants([bug, *(merged or [])]),
        "newest": bug.newest,
        "newest_provenance": provenance(bug.newest) if bug.newest else "",  # a remembered verdict, never a 0-s rerun
        "newest_pending": newest_pending,
    }
    entry["occurrences"] += sum(other.occurrences for other in merged or [])
    entry["weight"] = training_weight(entry["metrics"], info) if bug.kind in TRAINING_KINDS else None
    # whom it is filed against, as triage decided (memo.triage.blame); a bug no pass decided yet: its own library
    blame = bug.blame
    entry["library"] = str(blame.get("library") or bug.library)
    entry["reported_by"] = blame.get("reported_by")
    entry["upstream"] = asdict(upstream_of(entry["library"]))
    # an engine following the specification on a file the converter got wrong: the engine's documented differences
    # do not apply (onnx2torch's nearest-resize warning on tf2onnx's wrong Resize scales)
    documented = documented_difference(blame.get("opinion") or bug.library, bug.kind, ir, entry["layer"],
                                       entry["message"])
    entry["documented"] = (Documented(behaviour=documented.behaviour, source=documented.source,
                                      quote=documented.quote) if documented else None)
    if blame.get("refusal") and not documented:
        entry["documented"] = Documented(behaviour=f"{bug.library} declines this on purpose (a declared refusal)",
                                         source="the refusal memo's spec for it declares", quote=blame["refusal"])
    # the issue text filed where the table says (a bug no pass blamed yet: where its folder says); a checked minimal
    # script counts as reproducing (collect sections it)
    entry.update(filing_view(folder, str(blame.get("library") or "") or None))
    entry["issue_markdown"] = issue_markdown(entry, versions)
    return entry


def training_weight(metrics: JsonObject, info: JsonObject) -> str | None:
    """A training bug's weight (or ``input N``) whose array first differs: its folder's run, else the finding's."""
    record = info.get("training") or metrics.get("training") or {}
    return str(record["name"]) if isinstance(record, dict) and record.get("name") else None


def filing_view(folder: Path | None, blamed: str | None = None) -> FilingView:
    """The bug's issue text, filed against ``blamed`` (triage's blame: the library the report names), and minimal
    script as its folder keeps them (memo.filing; none checked: empty): the script's text and the files it reads
    (in the folder's ``minimal/``) with its check."""
    kept = kept_issue_text(folder, blamed) if folder is not None and (folder / "bug.json").is_file() else None
    if kept is None:
        return {"issue_text": "", "minimal": None}
    text, script = kept
    return {"issue_text": text, "minimal": {"reproduces": script.reproduces, "lines": script.lines,
                                            "reason": script.reason, "script": script.text,
                                            "files": sorted(script.files), "source": script.source,
                                            "folder": str(folder / MINIMAL_DIR)}}


def _load_ir(folder: Path | None, fallback_json: str | None) -> ModelIR | None:
    for text in ((folder / "ir.json").read_text() if folder and (folder / "ir.json").exists() else None,
                 fallback_json):
        if text:
            try:
                return ModelIR.loads(text)
            except Exception:  # an unreadable model is shown as missing, never breaks the report
                continue
    return None

