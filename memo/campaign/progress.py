"""How a running campaign shows itself: a live rich panel, nothing (``--quiet``), or JSON lines (``--json``).

Every reporter receives the same events: ``start``, ``progress`` (a snapshot dict), ``finding`` and
``end``. The registry picks one by name, so adding a reporter means adding one class.
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

from memo.diskspace import format_size
from memo.json_types import JsonObject


class FindingEvent(TypedDict):
    """A line worth showing as it happens: a verdict on a mutant, or memo's own triage or report news
    (``mutant_id`` ``"-"``, ``backend`` ``"memo"``)."""

    mutant_id: int | str
    kind: str
    backend: str
    stage: NotRequired[str | None]
    message: str


class Reporter:
    """Base reporter: ignores everything."""

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
        remaining = snap.get("remaining_s")
        table.add_row("time", f"{_clock(snap['elapsed_s'])} elapsed"
                      + (f", {_clock(remaining)} left" if remaining is not None else ""))
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
    return (f"memo: campaign {summary['name']} {summary.get('stopped_because', 'ended')}: "
            f"{summary['generated']} mutants, {summary['executed']} executed in {_clock(summary['elapsed_s'])}; "
            f"coverage {cov}; {findings}{disk}{report}")


REPORTERS: dict[str, Callable[[], Reporter]] = {
    "live": LiveReporter,
    "quiet": QuietReporter,
    "json": JsonLinesReporter,
}
