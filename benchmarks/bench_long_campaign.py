"""A long campaign's health, minute by minute: memory, disk, database, throughput, coverage, bugs, triage backlog.

    .venv/bin/python benchmarks/bench_long_campaign.py --minutes 150 --name long150 [--every 60] [--svg PATH]

Starts ``python -m memo fuzz --minutes N --name NAME`` exactly as the README runs it (the repository as working
directory, default backends, default bug database; its output goes to ``reports/NAME-fuzz.log``) and samples,
every ``--every`` seconds until it exits:

* RSS of memo and of each worker process (the process tree), and the machine's available memory;
* the campaign folder, its artifacts (``mutants/NAME``) and the SQLite file (with its WAL);
* executed and generated models and the headline coverage (the store's coverage history);
* bugs, and the triage backlog: bugs waiting for reduction and numeric findings waiting for localization
  (the same counts the campaign's summary gives).

The samples go to ``reports/NAME-samples.csv`` (the fresh processes of each sample to ``NAME-processes.log``, any
process above 4 GB with its command line and open files to ``NAME-large.log``); the curves to one SVG picture (default ``reports/NAME.svg``; the
docs' picture, ``docs/long-campaign.svg``, only when ``--svg`` names it). It then prints issue 42's figures: exit code and wall time against the slot, peak
memory in the first hour and in the last 30 minutes, executed models per 10 minutes in the first hour and in the
last half hour, the backlog at the end of the first hour and at the end of fuzzing, the database's size.
``--attach`` samples a campaign started elsewhere (by its name) instead of starting one. The picture is rewritten
every 10 samples while the campaign runs, and its ``<desc>`` holds the printed figures (at the end) and every sample
as CSV: with ``--svg docs/long-campaign.svg`` the run's record survives in the working tree a session leaves behind.
"""
from __future__ import annotations

import argparse
import csv
import io
import os
import sqlite3
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, fields
from html import escape
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from memo.campaign.slot import split_budget  # noqa: E402
from memo.diskspace import format_size, tree_bytes  # noqa: E402
from memo.report.charts import line_chart  # noqa: E402
from memo.campaign.backpressure import PAUSED_META  # noqa: E402
from memo.triage.turns import PHASES_META, SPENT_META  # noqa: E402
from memo.store import CampaignStore  # noqa: E402
from memo.triage import pending_localizations  # noqa: E402
from memo.triage.pending import backlog  # noqa: E402


@dataclass
class Sample:
    """One minute of a campaign's life."""
    elapsed_s: float
    memo_mb: float
    workers_mb: float
    largest_worker_mb: float
    workers: int
    available_mb: float
    campaign_mb: float
    artifacts_mb: float
    sqlite_mb: float
    generated: int
    executed: int
    pairs: int
    params: int
    bugs: int
    backlog_bugs: int
    backlog_localizations: int
    memo_cpu_s: float = 0.0
    workers_cpu_s: float = 0.0
    scripts_cpu_s: float = 0.0
    backlog_distinct: int = 0  # of backlog_bugs, fileable and of a root guess no other bug stands for


WORKER_MODULE = "memo.backends.worker"


class CpuTracker:
    """Cumulative CPU seconds (user + system) of memo itself (all its threads: generation, the pipeline, the triage
    thread), of its warm workers, and of the fresh processes it starts (repro.py reruns, script checks, the newest-code
    checks, per-node shape probes). A child memo has reaped adds its CPU to memo's ``children`` times, whatever it
    was: a worker memo retired or restarted (a crash, a hang, the recycling bound) is counted as a worker with the
    CPU it had at the last sample that saw it, the rest of the reaped time as fresh processes."""

    def __init__(self, log: Path | None = None) -> None:
        self.live_workers: dict[int, float] = {}  # pid -> its CPU at the last sample
        self.retired_workers = 0.0  # the last-seen CPU of workers gone since
        self.log = log  # each sample's live fresh processes (pid, CPU, command line): what they are
        self.began = time.monotonic()

    def sample(self, pid: int) -> tuple[float, float, float]:
        try:
            root = psutil.Process(pid)
            times = root.cpu_times()
            children = root.children(recursive=True)
        except psutil.Error:
            return 0.0, 0.0, 0.0
        workers: dict[int, float] = {}
        others = 0.0
        for child in children:
            try:
                cpu = sum(child.cpu_times()[:2])
                is_worker = WORKER_MODULE in child.cmdline()
            except psutil.Error:
                continue
            if is_worker:
                workers[child.pid] = cpu
            else:
                others += cpu
                if self.log is not None:
                    with open(self.log, "a") as handle:
                        handle.write(f"{time.monotonic() - self.began:.0f}\t{child.pid}\t{cpu:.1f}\t"
                                     f"{' '.join(child.cmdline())[:300]}\n")
        self.retired_workers += sum(cpu for gone, cpu in self.live_workers.items() if gone not in workers)
        self.live_workers = workers
        reaped = times.children_user + times.children_system
        return (times.user + times.system, sum(workers.values()) + self.retired_workers,
                others + max(0.0, reaped - self.retired_workers))


LARGE_MB = 4096  # a descendant above this is logged with its command line and open files (what it was doing)


def tree_rss(pid: int, large_log: Path | None = None, elapsed_s: float = 0.0) -> tuple[float, list[float]]:
    """RSS in MB of the process ``pid`` and of each of its descendants; each one above :data:`LARGE_MB` gets a line
    in ``large_log`` (long150f's 12.1 GB worker left no trace of what it ran)."""
    try:
        root = psutil.Process(pid)
        children = root.children(recursive=True)
        own = root.memory_info().rss / 2**20
    except psutil.Error:
        return 0.0, []
    sizes = []
    for child in children:
        try:
            sizes.append(child.memory_info().rss / 2**20)
            if large_log is not None and sizes[-1] > LARGE_MB:
                files = " ".join(f.path for f in child.open_files() if not f.path.endswith((".so", ".stderr")))
                with open(large_log, "a") as handle:
                    handle.write(f"{elapsed_s:.0f}\t{child.pid}\t{sizes[-1]:.0f} MB\t"
                                 f"{' '.join(child.cmdline())[:300]}\topen: {files[:600]}\n")
        except psutil.Error:
            pass
    return own, sizes


def store_figures(campaign: Path) -> dict[str, int]:
    """Executed, coverage, bugs and the backlog, read from the campaign's store (zeros before it exists)."""
    figures = {"generated": 0, "executed": 0, "pairs": 0, "params": 0, "bugs": 0, "backlog_bugs": 0,
               "backlog_localizations": 0, "backlog_distinct": 0}
    if not (campaign / "campaign.sqlite").exists():
        return figures
    try:
        with CampaignStore(campaign) as store:
            db = sqlite3.connect(f"file:{campaign / 'campaign.sqlite'}?mode=ro", uri=True, timeout=30)
            row = db.execute("SELECT generated, executed, pairs, params FROM coverage_history "
                             "ORDER BY id DESC LIMIT 1").fetchone()
            if row:
                figures.update(zip(("generated", "executed", "pairs", "params"), row))
            figures["bugs"] = db.execute("SELECT COUNT(*) FROM bugs").fetchone()[0]
            db.close()
            waiting = backlog(store)
            figures["backlog_bugs"], figures["backlog_distinct"] = waiting.total, waiting.distinct
            figures["backlog_localizations"] = len(pending_localizations(store))
    except (sqlite3.Error, OSError) as error:
        print(f"sample: store not readable now ({error})", file=sys.stderr)
    return figures


def triage_spent(campaign: Path, key: str = SPENT_META) -> str:
    """Where the campaign's triage time went: units and wall seconds per kind (the store's ``triage_spent``), or per
    phase with ``key`` :data:`PHASES_META`."""
    if not (campaign / "campaign.sqlite").exists():
        return "no store"
    with CampaignStore(campaign) as store:
        spent = store.get_meta(key)
    if not isinstance(spent, dict) or not spent:
        return "nothing recorded"
    ordered = sorted(spent.items(), key=lambda item: -float(item[1].get("seconds", 0)))
    return ", ".join(f"{kind} {int(entry.get('units', 0))} units {float(entry.get('seconds', 0)):.0f} s"
                     for kind, entry in ordered)


def paused_minutes(campaign: Path) -> str:
    """The pipeline-minutes fuzzing waited for triage (the store's ``pipelines_paused_s``)."""
    if not (campaign / "campaign.sqlite").exists():
        return "no store"
    with CampaignStore(campaign) as store:
        paused = store.get_meta(PAUSED_META)
    return f"{float(paused) / 60:.1f}" if isinstance(paused, (int, float)) else "none recorded"


def take_sample(pid: int, began: float, name: str, cpu: CpuTracker) -> Sample:
    campaign, artifacts = REPO / "campaigns" / name, REPO / "mutants" / name
    large = cpu.log.with_name(f"{name}-large.log") if cpu.log is not None else None
    own, workers = tree_rss(pid, large, time.monotonic() - began)
    memo_cpu, workers_cpu, scripts_cpu = cpu.sample(pid)
    sqlite_bytes = sum(path.stat().st_size for path in campaign.glob("campaign.sqlite*")) if campaign.exists() else 0
    return Sample(elapsed_s=round(time.monotonic() - began, 1), memo_mb=round(own), workers_mb=round(sum(workers)),
                  largest_worker_mb=round(max(workers, default=0.0)), workers=len(workers),
                  available_mb=round(psutil.virtual_memory().available / 2**20),
                  campaign_mb=round(tree_bytes(campaign) / 2**20, 1), artifacts_mb=round(tree_bytes(artifacts) / 2**20, 1),
                  sqlite_mb=round(sqlite_bytes / 2**20, 2), **store_figures(campaign),
                  memo_cpu_s=round(memo_cpu, 1), workers_cpu_s=round(workers_cpu, 1), scripts_cpu_s=round(scripts_cpu, 1))


def fuzz_process(name: str) -> psutil.Process | None:
    """The running ``memo fuzz`` of campaign ``name``, for ``--attach``."""
    for proc in psutil.process_iter(["cmdline"]):
        args = proc.info["cmdline"] or []
        if "fuzz" in args and name in args and any(arg == "memo" or arg.endswith("memo") for arg in args):
            return proc
    return None


CHARTS = (("RSS of memo + workers, MB", lambda s: s.memo_mb + s.workers_mb),
          ("largest worker RSS, MB", lambda s: s.largest_worker_mb),
          ("available memory, MB", lambda s: s.available_mb),
          ("executed models", lambda s: s.executed),
          ("headline layer pairs", lambda s: s.pairs),
          ("bugs", lambda s: s.bugs),
          ("triage backlog: bugs", lambda s: s.backlog_bugs),
          ("triage backlog: bugs distinct and fileable", lambda s: s.backlog_distinct),
          ("triage backlog: localizations", lambda s: s.backlog_localizations),
          ("artifacts, MB", lambda s: s.artifacts_mb),
          ("campaign database, MB", lambda s: s.sqlite_mb))


def picture(samples: list[Sample], title: str, notes: list[str] | tuple[str, ...] = ()) -> str:
    """The curves as one SVG: a grid of :func:`memo.report.charts.line_chart` panels; its ``<desc>`` keeps ``notes``
    (the summary) and every sample as CSV, so that the picture kept in docs/ is the run's record: long150h's and
    long150i's sessions ended before their figures were written down, and only the picture was left to read."""
    columns, width, height = 2, 390, 190
    rows = (len(CHARTS) + columns - 1) // columns
    panels = []
    for i, (label, value) in enumerate(CHARTS):
        x, y = (i % columns) * width, 30 + (i // columns) * height
        chart = line_chart(label, [(s.elapsed_s, float(value(s))) for s in samples])
        panels.append(f'<g transform="translate({x},{y})">{chart}</g>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{columns * width}" height="{30 + rows * height}" '
            f'font-family="sans-serif" font-size="11"><style>.axis{{stroke:#888}} .line{{fill:none;stroke:#2a6;'
            f'stroke-width:1.5}} .dot{{fill:#2a6}} .title{{font-weight:bold}}</style>'
            f'<desc>{escape(record(samples, notes))}</desc>'
            f'<text x="8" y="18" font-size="14">{escape(title)}</text>{"".join(panels)}</svg>\n')


def sample_columns() -> list[str]:
    """The CSV columns of a sample, in ``reports/NAME-samples.csv`` and in the picture's record."""
    return [f.name for f in fields(Sample)]


def record(samples: list[Sample], notes: list[str] | tuple[str, ...]) -> str:
    """``notes`` then the samples as CSV (the columns of ``reports/NAME-samples.csv``)."""
    rows = io.StringIO()
    writer = csv.DictWriter(rows, fieldnames=sample_columns())
    writer.writeheader()
    writer.writerows(asdict(sample) for sample in samples)
    return "\n".join([*notes, rows.getvalue()])


def window(samples: list[Sample], start_s: float, end_s: float) -> list[Sample]:
    return [s for s in samples if start_s <= s.elapsed_s <= end_s]


def per_ten_minutes(samples: list[Sample]) -> float:
    """Executed models per 10 minutes over the samples' span."""
    if len(samples) < 2 or samples[-1].elapsed_s <= samples[0].elapsed_s:
        return 0.0
    return 600 * (samples[-1].executed - samples[0].executed) / (samples[-1].elapsed_s - samples[0].elapsed_s)


def cpu_split(samples: list[Sample]) -> str:
    """Where the CPU went over the samples' span: memo's own process, the warm workers, the fresh processes."""
    alive = [s for s in samples if s.memo_cpu_s > 0]  # the sample after the campaign's exit has no process to read
    if len(alive) < 2:
        return "no CPU samples"
    first, last = alive[0], alive[-1]
    parts = {"memo": last.memo_cpu_s - first.memo_cpu_s, "workers": last.workers_cpu_s - first.workers_cpu_s,
             "fresh processes": last.scripts_cpu_s - first.scripts_cpu_s}
    total, wall = sum(parts.values()), max(1e-9, last.elapsed_s - first.elapsed_s)
    shares = ", ".join(f"{name} {100 * value / max(total, 1e-9):.0f} %" for name, value in parts.items())
    return f"{total / wall:.2f} cores busy ({shares})"


def summary(samples: list[Sample], minutes: float, exit_code: int | None, wall_s: float) -> list[str]:
    """Issue 42's figures from the samples."""
    fuzzing_s = split_budget(60 * minutes, None)[0] or 0.0  # the slot's fuzzing share, as the campaign splits it
    first_hour = window(samples, 0, 3600)
    last_half = window(samples, fuzzing_s - 1800, fuzzing_s)
    last_30 = window(samples, samples[-1].elapsed_s - 1800, samples[-1].elapsed_s) if samples else []
    end_fuzz = window(samples, 0, fuzzing_s)

    def peak(part: list[Sample]) -> float:
        return max((s.memo_mb + s.workers_mb for s in part), default=0.0)

    lines = [f"- exit code {exit_code}; wall {wall_s / 60:.1f} min for a {minutes:g}-minute slot",
             f"- peak RSS of memo + workers: first hour {peak(first_hour):.0f} MB, last 30 minutes "
             f"{peak(last_30):.0f} MB ({100 * (peak(last_30) / max(peak(first_hour), 1) - 1):+.0f} %)",
             f"- executed per 10 minutes: first hour {per_ten_minutes(first_hour):.1f}, last half hour of fuzzing "
             f"{per_ten_minutes(last_half):.1f} ({100 * per_ten_minutes(last_half) / max(per_ten_minutes(first_hour), 1e-9):.0f} %)"]
    lines.append(f"- CPU: first hour {cpu_split(first_hour)}; last half hour of fuzzing {cpu_split(last_half)}")
    if first_hour and end_fuzz:
        def waiting(sample: Sample) -> str:
            return f"{sample.backlog_bugs} ({sample.backlog_distinct} distinct fileable) + {sample.backlog_localizations}"

        lines.append(f"- triage backlog (bugs + localizations): end of the first hour {waiting(first_hour[-1])}, "
                     f"end of fuzzing {waiting(end_fuzz[-1])}, at the end {waiting(samples[-1])}")
    if samples:
        last = samples[-1]
        lines.append(f"- at the end: {last.executed} executed, {last.bugs} bugs, pairs {last.pairs}, database "
                     f"{last.sqlite_mb:.1f} MB, campaign folder {last.campaign_mb:.0f} MB, artifacts "
                     f"{last.artifacts_mb:.0f} MB, largest worker {max(s.largest_worker_mb for s in samples):.0f} MB, "
                     f"least available memory {min(s.available_mb for s in samples):.0f} MB")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=150.0)
    parser.add_argument("--name", default="long150")
    parser.add_argument("--every", type=float, default=60.0, help="seconds between samples")
    parser.add_argument("--svg", type=Path, default=None, help="the picture (default: reports/NAME.svg)")
    parser.add_argument("--attach", action="store_true", help="sample the running campaign NAME, start nothing")
    args = parser.parse_args()

    reports = REPO / "reports"
    reports.mkdir(exist_ok=True)
    began = time.monotonic()
    if args.attach:
        proc = fuzz_process(args.name)
        if proc is None:
            print(f"bench_long_campaign: no running 'memo fuzz' of campaign {args.name}", file=sys.stderr)
            return 2
        child, pid = None, proc.pid
    else:
        log = open(reports / f"{args.name}-fuzz.log", "w")
        child = subprocess.Popen([sys.executable, "-m", "memo", "fuzz", "--minutes", f"{args.minutes:g}",
                                  "--name", args.name], cwd=REPO, stdout=log, stderr=subprocess.STDOUT,
                                 env={**os.environ, "PYTHONPATH": str(REPO)})
        pid = child.pid
    samples: list[Sample] = []
    processes = reports / f"{args.name}-processes.log"
    processes.unlink(missing_ok=True)
    (reports / f"{args.name}-large.log").unlink(missing_ok=True)
    cpu = CpuTracker(processes)
    out = reports / f"{args.name}-samples.csv"
    svg = args.svg or reports / f"{args.name}.svg"
    title = f"memo fuzz --minutes {args.minutes:g} ({time.strftime('%Y-%m-%d')})"
    with open(out, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=sample_columns())
        writer.writeheader()
        while psutil.pid_exists(pid) and (child is None or child.poll() is None):
            samples.append(take_sample(pid, began, args.name, cpu))
            writer.writerow(asdict(samples[-1]))
            handle.flush()
            if len(samples) % 10 == 0:  # the picture so far, in case the session ends before the run does
                svg.write_text(picture(samples, f"{title} (running: {samples[-1].elapsed_s / 60:.0f} min)",
                                       [f"running; command: {' '.join(sys.argv)}"]))
            deadline = time.monotonic() + args.every
            while time.monotonic() < deadline and (child is None or child.poll() is None) and psutil.pid_exists(pid):
                time.sleep(1)
        samples.append(take_sample(pid, began, args.name, cpu))
        writer.writerow(asdict(samples[-1]))
    exit_code = child.wait() if child is not None else None
    wall = time.monotonic() - began
    lines = [f"# long campaign {args.name} ({time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, "
             f"{format_size(psutil.virtual_memory().total)})", f"command: {' '.join(sys.argv)}",
             *summary(samples, args.minutes, exit_code, wall),
             f"- triage's time (units, wall seconds; background and final passes): "
             f"{triage_spent(REPO / 'campaigns' / args.name)}",
             f"- by phase (times, wall seconds): {triage_spent(REPO / 'campaigns' / args.name, PHASES_META)}",
             f"- fuzzing paused for triage: {paused_minutes(REPO / 'campaigns' / args.name)} pipeline-minutes "
             "(memo.campaign.backpressure)"]
    svg.write_text(picture(samples, title, lines))
    print("\n".join(lines))
    print(f"- samples: {out} ({len(samples)}); picture: {svg}")
    return 0 if exit_code in (0, None) else 1


if __name__ == "__main__":
    sys.exit(main())
