"""Markdown renderings: one bug as an upstream issue, and the whole report for CI and issue trackers."""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from memo import __version__
from memo.json_types import JsonObject
from memo.newest import NOT_APPLICABLE
from memo.report.sections import model_heading
from memo.triage.describe import symptom

if TYPE_CHECKING:
    from memo.report.entry import BugEntry

FENCE = "```"
TRACEBACK_LINES = 30


def _versions_line(library: str, versions: Any) -> str:
    entry = versions.get(library) if isinstance(versions, dict) else None
    if isinstance(entry, dict):
        return ", ".join(f"{k} {v}" for k, v in sorted(entry.items()))
    return str(entry) if entry else library


def _fenced(text: str, language: str = "") -> str:
    safe = text.replace(FENCE, "`\u200b``")
    return f"{FENCE}{language}\n{safe.rstrip()}\n{FENCE}"


def issue_markdown(bug: BugEntry, versions: Any) -> str:
    """An upstream issue: title, environment, minimal model, symptom, standalone script, traceback."""
    lines = [f"### {symptom(bug)}", "",
             f"**Library:** {bug['library']} ({_versions_line(bug['library'], versions)})  "]
    if bug.get("device", "cpu") != "cpu":
        lines.append(f"**Device:** {bug['device']} (the repro script prints the GPU, its driver and CUDA version)  ")
    if bug.get("reference"):
        lines.append(f"**Compared with:** {bug['reference']} ({_versions_line(bug['reference'], versions)})  ")
    lines += [f"**Symptom:** {bug.get('message') or bug['kind']}  ",
              f"**Found by:** memo {__version__} (coverage-guided model mutation), bug `{bug['id']}`, "
              f"{bug['occurrences']} occurrence(s)", ""]
    variants = bug.get("variants") or []
    if len(variants) > 1:
        lines += ["**Variants of this one root cause:** " + "; ".join(
            f"{v['library']} on {', '.join(v['layer_classes']) or '-'} ({v['findings']} findings)" for v in variants),
            ""]
    lines += _truth_lines(bug.get("truth") or {})
    opinion = bug.get("onnx_reference") or {}
    if opinion.get("reason"):
        lines += [f"**ONNX reference** (`onnx.reference.ReferenceEvaluator` on the same file): "
                  f"{opinion.get('decision')}: {opinion['reason']}", ""]
    if bug.get("model"):
        lines += [f"**{model_heading(bug)}** (Keras 3 functional):", "",
                  "| layer | class | inputs | settings |", "|---|---|---|---|"]
        for row in bug["model"]:
            settings = (row["config"] or "").replace("|", "\\|")
            lines.append(f"| {row['name']} | {row['class_name']} | {', '.join(row['inputs'])} | {settings} |")
        lines.append("")
    if bug.get("repro_script"):
        lines += [f"**Reproduce** (`{bug.get('bug_dir')}/repro.py`: the model, its input and the expected output "
                  "are in that folder; the script exits 0 when the bug reproduces):", "",
                  _fenced(bug["repro_script"], "python"), ""]
    if bug.get("traceback"):
        tail = "\n".join(bug["traceback"].rstrip().splitlines()[-TRACEBACK_LINES:])
        lines += ["**Traceback:**", "", _fenced(tail), ""]
    return "\n".join(lines)


def _truth_lines(truth: JsonObject) -> list[str]:
    """The float64 truth as an issue states it: the verdict and each library's error against float64."""
    if not truth.get("errors"):
        return []
    lines = [f"**Float64 truth** ({truth.get('method', '')}): {truth.get('decision')}: {truth.get('reason', '')}", "",
             "| library | error against float64 (in tolerances; at most 1 is within tolerance) |", "|---|---|"]
    for name, error in truth["errors"].items():
        lines.append(f"| {name} | {error if isinstance(error, str) else format(error, '.3g')} |")
    return lines + [""]


def _when(seconds: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(seconds)) + " UTC" if seconds else "-"


def _reproduces(value: bool | None) -> str:
    return "-" if value is None else ("yes" if value else "no")


def report_markdown(data: JsonObject) -> str:
    s = data["summary"]
    lines = [f"# memo campaign {s['campaign']}", "",
             f"- duration: {s['duration_s']:.0f} s; mutants generated: {s['generated']} (valid {s['valid']}); "
             f"executed: {s['executed']}",
             *[f"- {name}: {versions}" for name, versions in s["versions"]], ""]
    cluster = s.get("cluster")
    if cluster:
        lines += [f"## Cluster ({cluster.get('address', '')})", "",
                  "| node | host | CPUs | memory | worker sets | runs (triage's included) | run again | state |",
                  "|---|---|---|---|---|---|---|---|"]
        lines += [f"| {n['node']} | {n['host']} | {n['cpus']} | {n['memory_gb']} GB | {n['worker_sets']} | "
                  f"{n['executed']} | {n['rerun']} | {n['state']} |" for n in cluster.get("nodes", [])]
        lines.append("")
    engines = data.get("engines") or []
    if engines:
        lines += ["## Which models each library ran", "", "| library | ran | skipped (why) | findings |", "|---|---|---|---|"]
        lines += [f"| {e['name']} | {e['ran']} | {e['skipped_text']} | {e['findings']} |" for e in engines]
        lines.append("")
    g = data.get("generation") or {}
    if g.get("executed"):
        lines += ["## What the executions were spent on", "",
                  f"- executed mutants the reference could not run: {g['reference_failed']} of {g['executed']} "
                  f"({100 * g['reference_failed_share']:.1f} %)",
                  f"- layer types in fewer than {100 * g['rare_threshold']:.0f} % of the executed mutants: "
                  f"{len(g['rare_types'])} of {g['types']}"
                  + (f" ({', '.join(g['rare_types'])})" if g["rare_types"] else ""),
                  "", "| operator | generated | diverse | executed | reference could not run |", "|---|---|---|---|---|"]
        lines += [f"| {o['operator']} | {o['generated']} | {o['diverse']} | {o['executed']} | {o['reference_failed']} |"
                  for o in g["operators"]]
        lines.append("")
    lines += ["## Coverage", "", "What can change an inference result (docs/coverage.md):", ""]
    lines += [f"- {c['title']}: " + (f"{c['final'][0]} of {c['final'][1]}" if c.get("final") else "0")
              for c in data["coverage"]]
    inert = "; ".join(f"{c['key']} {c['inert'][0]} of {c['inert'][1]}" for c in data["coverage"] if c.get("inert"))
    if inert:
        lines.append(f"- Inert (cannot change an inference result, not counted above): {inert}")
    library = data.get("library")
    if library:
        lines += ["", "## Library code coverage", "", "Lines of each library's Python code the models reached "
                  "(docs/coverage.md); seeds: lines the seeds' own runs reached.", "",
                  "| library | covered | total | % | seeds | beyond seeds |", "|---|---|---|---|---|---|"]
        lines += [f"| {r['library']} | {r['covered']} | {r['total']} | {r['percent']:.1f} | {r['seeds']} | "
                  f"{r['beyond_seeds']} |" for r in library["rows"]]
    t = data["triage"]
    lines += ["", f"## Bugs ({len(data['bugs'])})", "",
              f"{t['ready']} ready to file, {t['reduced']} reduced, {t['reproduce']} reproduce standalone, "
              f"{t['merged']} entries merged into others"
              + (f", {t['likely_duplicates']} not reduced but likely duplicates of reduced ones (the same failure "
                 f"site)" if t.get("likely_duplicates") else "")
              + (f"; {t['minimal_reproduce']} of {t['minimal_checked']} minimal scripts reproduce."
                 if t.get("minimal_checked") else ".") + _triage_left(data.get("triage_left")), "",
              "By section: " + "; ".join(f"{sec['title']} {sec['count']}" for sec in data.get("sections") or []
                                         if sec["count"]) + ".", "",
              "| id | kind | library | stage | layers | first seen | occurrences | reproduces | status | new or known |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    newest = data.get("newest") or {}
    if newest.get("python"):
        results = newest["results"]
        lines[-2:-2] = [f"Newest code: {newest['checked']} reproducing bugs rerun on "
                        f"{'; '.join(newest['builds']) or 'the newest-code environment'}: {results['reproduces']} "
                        f"still reproduce, {results['fixed']} fixed upstream, {results['error']} could not run there"
                        + (f", {newest['pending']} not rerun yet" if newest.get("pending") else "")
                        + (f"; {results[NOT_APPLICABLE]} more not rerun: their library has no newest-code build"
                           if results.get(NOT_APPLICABLE) else "") + ".", ""]
    known = data.get("known") or {}
    if known.get("database"):
        lines[-2:-2] = [f"{known['new']} new, {known['seen_again']} known bugs seen again (bug database "
                        f"`{known['database']}`).", ""]
    for bug in data["bugs"]:
        stage = f"{bug['stage']} ({bug['weight']})" if bug.get("weight") else bug["stage"]
        lines.append(f"| {bug['id']} | {bug['kind']} | {bug['library']} | {stage} | "
                     f"{', '.join(bug['layers'])} | {_when(bug['first_seen'])} | {bug['occurrences']} | "
                     f"{_reproduces(bug['reproduces'])} | {bug['status']} | {_known(bug)} |")
    folded = [(other["id"], bug["id"]) for bug in data["bugs"] for other in bug.get("merged") or []]
    if folded:
        lines += ["", "Merged into another entry (same reduced model and symptom), so not listed on their own: "
                  + ", ".join(f"{other} into {into}" for other, into in folded) + "."]
    for bug in data["bugs"]:
        noted = f" ({bug['id_note']})" if bug.get("id_note") else ""
        documented = bug.get("documented")  # as the HTML report's "Documented difference" says it
        cited = [f"Documented difference: {documented['behaviour']} ({documented['source']}: "
                 f"\u201c{documented['quote']}\u201d).", ""] if documented else []
        lines += ["", f"## Bug {bug['id']}", "", f"Status: {bug['status']}{noted}.", "", *cited,
                  bug.get("issue_text") or bug["issue_markdown"]]
        if bug.get("issue_text") and bug.get("bug_dir") and bug.get("repro_script"):
            lines += ["", f"(Not part of the issue: memo's full repro.py, to attach as well, is "
                          f"`{bug['bug_dir']}/repro.py`.)"]
    lines += _apart(data)
    lines += ["", "## Unsupported features (not bugs)", "", "| library | feature | occurrences |", "|---|---|---|"]
    lines += [f"| {u['library']} | {u['feature']} | {u['count']} |" for u in data["unsupported"]]
    return "\n".join(lines) + "\n"


def _apart(data: JsonObject) -> list[str]:
    """The findings listed apart from the bugs, with why (the HTML report's sections of the same name)."""
    lines: list[str] = []
    if data.get("unconfirmed"):
        lines += ["", "## Unconfirmed findings (did not show again; not bugs)", "",
                  "| finding | kind | library | stage | occurrences |", "|---|---|---|---|---|"]
        lines += [f"| {u['id']} | {u['kind']} | {u['library']} | {u['stage']} | {u['occurrences']} |"
                  for u in data["unconfirmed"]]
    if data.get("awaiting_localization"):
        lines += ["", "## Numeric findings awaiting localization (not bugs yet)", "",
                  "NaN/inconsistency findings become bugs once their first misbehaving layer is known.", "",
                  "| kind | library | findings | could not be localized |", "|---|---|---|---|"]
        lines += [f"| {a['kind']} | {a['library']} | {a['findings']} | {a['unlocalizable']} |"
                  for a in data["awaiting_localization"]]
    if data.get("special"):
        lines += ["", "## Special-value semantics (NaN/Inf injected on purpose; not bugs)", "",
                  "| library | findings |", "|---|---|"]
        lines += [f"| {g['library']} | {g['count']} |" for g in data["special"]]
    checked = data.get("training_coverage") or {}
    if checked:
        lines += ["", f"Training check: {checked['models']} models checked ({checked['by_share']} by the hash share, "
                  f"{checked['by_novelty']} by novelty, {checked['left_out']} left out), holding {checked['types']} "
                  f"layer types, {checked['pairs']} pairs, {checked['params']} parameter values"
                  + (f"; {checked['remat']}" if checked.get("remat") else "") + "."
                  + (f" {checked['over_budget']} more chosen, not checked: over the check's CPU budget "
                     f"({checked['check_s']} s of checks against {checked['inference_s']} s of inference)."
                     if checked.get("over_budget") else "")
                  + (" Optimizer sweep (every catalogue entry on one small model per set of weight dtypes): "
                     + "; ".join(f"{sweep['dtypes']}: {sweep['entries']} entries, {sweep['verdicts']} findings"
                                 for sweep in checked["swept"]) + "." if checked.get("swept") else "")]
    if data.get("training"):
        lines += ["", "## Training check (all findings; triaged as the bugs above, forward differences of an inference bug folded)", "",
                  "| kind | library | stage | findings |", "|---|---|---|---|"]
        lines += [f"| {g['kind']} | {g['library']} | {g['stage']} | {g['count']} |" for g in data["training"]]
    if data.get("training_optimizers"):
        lines += ["", "## Training check: optimizer configurations stepped (one per checked model, beside SGD and Adam)",
                  "", "| configuration | constructor | models | left out | findings at stage optimizer |",
                  "|---|---|---|---|---|"]
        lines += [f"| {o['optimizer']} | `{o['constructor']}` | {o['models']} | {o['left_out']} | {o['findings']} |"
                  for o in data["training_optimizers"]]
    return lines


def _known(bug: BugEntry) -> str:
    known = bug.get("known_bug")
    if not known:
        return "new"
    text = f"{known['id']}: {known['status_text']}"
    return (f"known {text}" if bug.get("known") else f"new ({known['id']})").replace("|", "\\|")


def _triage_left(left: JsonObject | None) -> str:
    if not left:
        return ""
    text = (f" Triage has not finished: {left['bugs']} bugs to reduce and check{left.get('note', '')}, "
            f"{left['localizations']} numeric findings to localize; `{left['command']}` continues.") \
        if left["bugs"] or left["localizations"] else ""
    unchecked = left.get("scripts") or []
    if unchecked:
        text += (f" Not ready for want of a checked minimal script (no time left): {', '.join(unchecked)}; "
                 f"`{left['scripts_command']}` checks them.")
    return text
