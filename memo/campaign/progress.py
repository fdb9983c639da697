"""How a running campaign shows itself: a live rich panel on a terminal, plain log lines without one (cron,
CI, ``> log``), nothing (``--quiet``), or JSON lines (``--json``).

Every reporter receives the same events: ``start`` (with the time plan, :mod:`memo.campaign.slot`),
``progress`` (a snapshot dict, a few times a second), ``finding`` and ``end``. The registry picks one by
name, so adding a reporter means adding one class.
"""
from __future__ import annotations

import json
import sys
import time
from typing import Any, Callable, NotRequired, TextIO, TypedDict

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from memo.defaults import DEFAULT_PROGRESS_EVERY_S
from memo.diskspace import format_size
from memo.json_types import JsonObject
from memo.text import without_ansi
from memo.triage.reduce_order import distinct_note

HEADLINE_WIDTH = 160
HEADLINE_COVERAGE = ("types", "pairs", "params")  # the plain line's coverage; the report has the rest


class FindingEvent(TypedDict):
    """A line worth showing as it happens: a verdict on a mutant, or memo's own triage or report news
    (``mutant_id`` ``"-"``, ``backend`` ``"memo"``)."""

    mutant_id: int | str
    kind: str
    backend: str
    stage: NotRequired[str | None]
    message: str
    signature: NotRequired[str | None]  # the bug it shows (triage's signature; None: not a bug kind)


class Reporter:
    """Base reporter: ignores everything."""

    def starting(self, name: str) -> None:
        """The command began: the seeds load and the workers start (a minute on a loaded machine) before ``start``."""

    def start(self, info: JsonObject) -> None: ...

    def progress(self, snapshot: JsonObject) -> None: ...

    def finding(self, finding: FindingEvent) -> None: ...

    def end(self, summary: JsonObject) -> None: ...

    def close(self) -> None: ...


class QuietReporter(Reporter):
    """Prints only the final summary line."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stdout

    def end(self, summary: JsonObject) -> None:
        print(summary_line(summary), file=self.stream, flush=True)


class JsonLinesReporter(Reporter):
    """One JSON object per line and per event, for CI."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stdout

    def _emit(self, event: str, payload: JsonObject) -> None:
        self.stream.write(json.dumps({"event": event, "time": round(time.time(), 3), **payload}, default=str) + "\n")
        self.stream.flush()

    def start(self, info: JsonObject) -> None:
        self._emit("start", info)

    def progress(self, snapshot: JsonObject) -> None:
        self._emit("progress", snapshot)

    def finding(self, finding: FindingEvent) -> None:
        self._emit("finding", finding)

    def end(self, summary: JsonObject) -> None:
        self._emit("end", summary)


class LiveReporter(Reporter):
    """A rich panel redrawn a few times a second: time, throughput, coverage with denominators, findings."""

    def __init__(self) -> None:
        self.console = Console(stderr=False)
        self.live = Live(console=self.console, refresh_per_second=4, transient=False)
        self.recent: list[str] = []
        self.started = False

    def start(self, info: JsonObject) -> None:
        self.console.print(f"[bold]memo fuzz[/bold] campaign [cyan]{info['name']}[/cyan]: "
                           f"{len(info.get('seeds', []))} seeds, {len(info.get('backends', []))} backends, "
                           f"search {info.get('search')}, seed {info.get('seed')}")
        if info.get("plan"):
            self.console.print(plan_line(info["plan"], info.get("iterations")), markup=False)
        self.console.print(newest_line(info.get("next_python") or ""), markup=False)
        self.live.start()
        self.started = True

    def progress(self, snapshot: JsonObject) -> None:
        self.live.update(self._render(snapshot))

    def finding(self, finding: FindingEvent) -> None:
        self.recent.append(f"#{finding['mutant_id']} {finding['kind']} {finding['backend']} "
                           f"{finding.get('stage') or ''}: {finding['message'][:80]}")
        self.recent = self.recent[-5:]

    def end(self, summary: JsonObject) -> None:
        self.close()
        if not self.console.is_terminal:  # piped output: the panel's last line has no newline of its own
            self.console.print()
        self.console.print(summary_line(summary))

    def close(self) -> None:
        if self.started:
            self.live.stop()
            self.started = False

    def _render(self, snap: JsonObject) -> Any:
        table = Table(show_header=False, box=None, padding=(0, 1))
        table.add_row("time", time_line(snap))
        table.add_row("mutants", f"{snap['generated']} generated ({snap['generated_per_s']:.1f}/s), "
                      f"{snap['valid']} valid, {snap['diverse']} diverse, "
                      f"{snap['executed']} executed ({snap['executed_per_s']:.2f}/s)")
        for name, (covered, total) in snap["coverage"].items():
            share = 100.0 * covered / total if total else 0.0
            table.add_row(f"cov {name}", f"{covered} / {total} ({share:.1f} %)")
        if snap.get("disk"):
            table.add_row("disk", disk_line(snap["disk"]))
        findings = snap.get("findings", {})
        table.add_row("findings", ", ".join(f"{k}: {v}" for k, v in sorted(findings.items())) or "none yet")
        if snap.get("triage"):
            table.add_row("triage", triage_line(snap["triage"]))
        if snap.get("cluster"):
            table.add_row("cluster", cluster_line(snap["cluster"]))
        recent = Text("\n".join(self.recent), style="dim") if self.recent else Text("")
        return Group(table, recent)


class PlainReporter(Reporter):
    """For a run without a terminal (cron, CI, ``nohup``, ``> log``): plain lines a log keeps, each flushed at
    once and stamped with the time of day: the start and the time plan, one progress line every ``every_s``,
    each new bug's headline as it is found, memo's own news (the final triage pass), and the summary."""

    def __init__(self, stream: TextIO | None = None, every_s: float = DEFAULT_PROGRESS_EVERY_S) -> None:
        self.stream = stream or sys.stdout
        self.every_s = every_s
        self.next_line = time.monotonic() + every_s  # from the command's start: the start-up counts as a minute too
        self.headlined: set[str] = set()  # the bug signatures whose headline was printed

    def _print(self, text: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {text}", file=self.stream, flush=True)

    def starting(self, name: str) -> None:
        self._print(f"memo fuzz: campaign {name}: loading the seeds, starting the workers")

    def start(self, info: JsonObject) -> None:
        self._print(f"memo fuzz: campaign {info['name']}: {len(info.get('seeds', []))} seeds, "
                    f"{len(info.get('backends', []))} backends, search {info.get('search')}, seed {info.get('seed')}")
        if info.get("plan"):
            self._print(f"memo: {plan_line(info['plan'], info.get('iterations'))}")
        self._print(f"memo: {newest_line(info.get('next_python') or '')}")

    def progress(self, snapshot: JsonObject) -> None:
        now = time.monotonic()
        if now < self.next_line:
            return
        self.next_line = now + self.every_s
        self._print(progress_line(snapshot, bugs=len(self.headlined)))

    def finding(self, finding: FindingEvent) -> None:
        if finding["backend"] == "memo":  # memo's own news: the final triage pass, a triage or report error
            self._print(f"memo: {finding['kind']}: {_first_line(finding['message'])}")
            return
        bug = finding.get("signature")
        if bug is None or bug in self.headlined:
            return
        self.headlined.add(bug)
        self._print(f"memo: new bug {len(self.headlined)}: {headline(finding)}")

    def end(self, summary: JsonObject) -> None:
        self._print(summary_line(summary))


def headline(finding: FindingEvent) -> str:
    """``crash in onnxruntime (run) on mutant 412: Non-zero status code returned while running Gather...``"""
    stage = f" ({finding['stage']})" if finding.get("stage") else ""
    message = _first_line(finding["message"])
    return f"{finding['kind']} in {finding['backend']}{stage} on mutant {finding['mutant_id']}" + (
        f": {message}" if message else "")


def _first_line(text: str, width: int = HEADLINE_WIDTH) -> str:
    line = next((line.strip() for line in without_ansi(text or "").splitlines() if line.strip()), "")
    return line if len(line) <= width else line[:width - 3] + "..."


def progress_line(snap: JsonObject, *, bugs: int | None = None) -> str:
    """One plain progress line: time, executed models and their rate, coverage, findings, triage."""
    parts = [time_line(snap),
             f"{snap['generated']} generated, {snap['executed']} executed ({60 * snap['executed_per_s']:.1f}/min)",
             "coverage " + ", ".join(f"{name} {covered}/{total}" for name, (covered, total) in snap["coverage"].items()
                                     if name in HEADLINE_COVERAGE)]
    findings = snap.get("findings", {})
    count = sum(findings.values())
    parts.append((f"{_count(bugs, 'bug')}, " if bugs is not None else "") + _count(count, "finding")
                 + (f" ({', '.join(f'{k} {v}' for k, v in sorted(findings.items()))})" if findings else ""))
    if snap.get("triage"):
        waiting = snap["triage"].get("waiting")
        distinct = snap["triage"].get("distinct")
        parts.append("triage: " + triage_line(snap["triage"])
                     + (f", {waiting} waiting" if waiting is not None else "")
                     + (f" ({distinct} distinct)" if waiting and distinct is not None and distinct != waiting else "")
                     + (f", {snap['paused']} of {snap['pipelines']} pipelines paused for it" if snap.get("paused") else ""))
    if snap.get("disk"):
        parts.append("disk " + disk_line(snap["disk"]))
    return "memo: " + "; ".join(parts)


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" + ("" if number == 1 else "s")


def time_line(snap: JsonObject) -> str:
    """``0:02:05 elapsed, 0:06:55 left``; in the final phase, ``fuzzed 0:09:00; final phase: 2 models in flight,
    0:00:40 left``."""
    final = snap.get("final")
    if final:
        in_flight = f"{final['in_flight']} models in flight, " if final.get("in_flight") else ""
        return f"fuzzed {_clock(snap['elapsed_s'])}; final phase: {in_flight}{_clock(final['left_s'])} left"
    remaining = snap.get("remaining_s")
    return f"{_clock(snap['elapsed_s'])} elapsed" + (f", {_clock(remaining)} left" if remaining is not None else "")


def newest_line(python: str) -> str:
    """Where bugs are rerun before they are called ready (memo.triage.newest), or that they are not."""
    if not python:
        return "newest code: none (bugs are not rechecked on development builds; scripts/setup.sh builds .venv-next)"
    return f"newest code: reproducing bugs are rerun with {python} before they are ready to file"


def plan_line(plan: JsonObject, iterations: int | None = None) -> str:
    """``fuzzing 9 min, final triage up to 1 min, ends by 23:40``: how a campaign splits its time."""
    fuzzing = plan.get("fuzzing_s")
    first = f"fuzzing {_duration(fuzzing)}" if fuzzing is not None else f"fuzzing until {iterations} mutants"
    ends_at = plan.get("ends_at")
    if ends_at is None:
        return f"{first}, then final triage up to {_duration(plan['final_s'])}"
    same_day = time.strftime("%Y-%m-%d", time.localtime(ends_at)) == time.strftime("%Y-%m-%d")
    end = time.strftime("%H:%M" if same_day else "%Y-%m-%d %H:%M", time.localtime(ends_at))
    return f"{first}, final triage up to {_duration(plan['final_s'])}, ends by {end}"


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{round(seconds / 60, 1):g} min"
    return f"{round(seconds / 3600, 2):g} h"


def left_line(name: str, left: JsonObject) -> str:
    """``triage left: 3 bugs, 12 localizations (`python -m memo report NAME --triage --budget 150` does it)``, and
    the minimal scripts the final pass had no time to check (``memo report NAME --issue-scripts`` does it)."""
    parts = [f"{left[key]} {key if left[key] != 1 else key[:-1]}" for key in ("bugs", "localizations") if left.get(key)]
    if left.get("bugs"):
        parts[0] += distinct_note(left["bugs"], left.get("distinct"))
    lines = [f"triage left: {', '.join(parts)} (`python -m memo report {name} --triage --budget {left['budget_s']}` "
             "does it)"] if parts else []
    scripts = left.get("scripts") or 0
    if scripts:
        lines.append(f"{scripts} minimal script{'s' if scripts != 1 else ''} to check "
                     f"(`python -m memo report {name} --issue-scripts` does it)")
    return "; ".join(lines)


def _clock(seconds: float | None) -> str:
    seconds = int(seconds or 0)
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def triage_line(triage: JsonObject) -> str:
    """What the background triage has done so far."""
    errors = f", {triage['errors']} errors (see the report)" if triage.get("errors") else ""
    return (f"{triage.get('reduced', 0)} bugs reduced, {triage.get('reproduced', 0)} reproduce standalone, "
            f"{triage.get('merged', 0)} merged{errors}")


def cluster_line(cluster: JsonObject) -> str:
    """``2 nodes ready, 2 worker sets: a:1f3c9e 120 runs (1 sets); b:77ab01 98 runs (1 sets, lost: ...)`` (a node's runs include triage's)."""
    nodes = cluster.get("nodes") or []
    ready = [node for node in nodes if node.get("state") == "ready"]
    parts = [f"{node['host']}:{node['node'][:6]} {node.get('executed', 0)} runs ({node.get('worker_sets', 0)} sets"
             + ("" if node.get("state") == "ready" else f", {node.get('state')}") + ")" for node in nodes]
    return (f"{len(ready)} nodes ready, {sum(node.get('worker_sets', 0) for node in ready)} worker sets"
            + (": " + "; ".join(parts) if parts else ""))


def disk_line(disk: JsonObject) -> str:
    """``312 MB of 2.0 GB budget in artifacts (14 kept, 230 deleted)``."""
    limit = disk.get("limit_bytes") or 0
    budget = f" of {format_size(limit)} budget" if limit else " (no budget)"
    return (f"{format_size(disk.get('used_bytes', 0))}{budget} in artifacts ({disk.get('kept', 0)} kept, "
            f"{disk.get('deleted', 0)} deleted)")


def summary_line(summary: JsonObject) -> str:
    cov = ", ".join(f"{name} {c}/{t}" for name, (c, t) in summary.get("coverage", {}).items())
    findings = ", ".join(f"{k} {v}" for k, v in sorted(summary.get("findings", {}).items())) or "no findings"
    disk = f"; disk {disk_line(summary['disk'])}" if summary.get("disk") else ""
    report = f"; report: {summary['report']}" if summary.get("report") else (
        f"; report not written ({summary['report_error']}): `python -m memo report {summary['name']}` writes it"
        if summary.get("report_error") else "")
    cluster = summary.get("cluster")
    if cluster:
        disk += f"; cluster {cluster_line(cluster)}"
    if summary.get("triage_left"):
        disk += f"; {left_line(summary['name'], summary['triage_left'])}"
    return (f"memo: campaign {summary['name']} {summary.get('stopped_because', 'ended')}: "
            f"{summary['generated']} mutants, {summary['executed']} executed in {_clock(summary['elapsed_s'])}; "
            f"coverage {cov}; {findings}{disk}{report}")


REPORTERS: dict[str, Callable[[], Reporter]] = {
    "live": LiveReporter,
    "plain": PlainReporter,
    "quiet": QuietReporter,
    "json": JsonLinesReporter,
}


def make_reporter(view: str | None = None, *, every_s: float = DEFAULT_PROGRESS_EVERY_S) -> Reporter:
    """The reporter named ``view``; None: the live panel on a terminal, plain lines otherwise (a log, cron, CI).
    ``every_s``: seconds between plain progress lines."""
    name = view or ("live" if sys.stdout.isatty() else "plain")
    return PlainReporter(every_s=every_s) if name == "plain" else REPORTERS[name]()
