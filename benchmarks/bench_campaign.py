"""A timed campaign: mutants executed, coverage over time, findings, memory of the whole process tree, disk.

    .venv/bin/python benchmarks/bench_campaign.py --minutes 30 [--jobs N] [--backends a,b] [--seed S]
    .venv/bin/python benchmarks/bench_campaign.py --minutes 8 --compare-train-share 0.2 [--train-budget 0.25]

Runs ``memo fuzz`` as a child process (JSON-lines progress), samples the RSS of memo and all its worker
processes every few seconds, then prints a Markdown table ready for docs/benchmarks.md, with the disk the
campaign left behind (``mutants/`` and ``campaigns/``) in all and per executed model. ``--compare-train-share F``
runs two campaigns one after the other, with the training check on a share F of the models and without it
(``--train-share 0``), and prints the ratio of their models executed per hour (issue 40: at most 15 % below).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from memo.diskspace import format_size, tree_bytes  # noqa: E402
from memo.kinds import KNOWN_FAILURE_PREFIX  # noqa: E402
from memo.report.data import SKIP_REASONS, engine_activity, generation  # noqa: E402
from memo.store import CampaignStore  # noqa: E402


def process_role(proc: psutil.Process) -> str:
    """"memo" for the campaign process, else the worker's backends (its --spec/--plugin arguments)."""
    args = proc.cmdline()
    names = [args[i + 1] for i, arg in enumerate(args[:-1]) if arg in ("--spec", "--plugin")]
    return "+".join(names) if names else "memo" if "fuzz" in args else Path(args[-1]).name if args else "?"


def sample_tree(pid: int, cpu: dict[int, tuple[str, float]]) -> float:
    """RSS of the process tree in MB; records every process's CPU seconds so far in ``cpu`` (by pid)."""
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0.0
    total = 0
    for proc in procs:
        try:
            with proc.oneshot():
                total += proc.memory_info().rss
                times = proc.cpu_times()
                role = cpu[proc.pid][0] if proc.pid in cpu else process_role(proc)
                cpu[proc.pid] = (role, times.user + times.system)
        except psutil.Error:
            pass
    return total / 2**20


def print_disk(workdir: Path, db: sqlite3.Connection, executed: int) -> None:
    """Bytes left in mutants/ (regenerable artifacts) and the campaign folder (database, bug folders)."""
    mutants, campaign = tree_bytes(workdir / "mutants"), tree_bytes(workdir / "bench")
    bugs = tree_bytes(workdir / "bench" / "bugs")
    kept = db.execute("SELECT COUNT(*) FROM executions WHERE artifact_dir IS NOT NULL").fetchone()[0]
    per_model = format_size((mutants + campaign) / executed) if executed else "-"
    print(f"- disk at end: mutants/ {format_size(mutants)} ({kept} artifacts kept of {executed} executed), "
          f"campaign folder {format_size(campaign)} (bug folders {format_size(bugs)}); "
          f"{per_model} per executed model")


def print_engines(campaign: Path) -> None:
    """Per library: the share of executed models it ran, what it skipped and why, its findings (the report's
    own figures)."""
    with CampaignStore(campaign) as store:
        rows = engine_activity(store)
    print("\n| library | role | ran | share of executed | skipped (why) | findings |\n|---|---|---|---|---|---|")
    for row in rows:
        share = f"{100 * row['share']:.0f} %" if row["share"] is not None else "-"
        print(f"| {row['name']} | {row['role']} | {row['ran']} | {share} | {row['skipped_text']} | {row['findings']} |")
    for why in (SKIP_REASONS["known"], KNOWN_FAILURE_PREFIX):
        known = {row["name"]: row["skipped"][why] for row in rows if why in row["skipped"]}
        print(f"\n- runs skipped as {why}: {sum(known.values())}"
              + (f" ({', '.join(f'{name} {count}' for name, count in known.items())})" if known else ""))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--jobs", type=int, help="memo fuzz --jobs (default: memo's default for this machine)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--backends")
    parser.add_argument("--search", default="mh")
    parser.add_argument("--sample-every", type=float, default=5.0, help="seconds between RSS and CPU samples")
    parser.add_argument("--max-disk", help="memo fuzz --max-disk (default: memo's)")
    parser.add_argument("--train-share", help="memo fuzz --train-share (default: memo's)")
    parser.add_argument("--train-budget", help="memo fuzz --train-budget (default: memo's)")
    parser.add_argument("--compare-train-share", metavar="F",
                        help="two campaigns, --train-share F then 0, and the ratio of models executed per hour")
    args = parser.parse_args()
    if args.compare_train_share is None:
        campaign(args, args.train_share)
        return 0
    rates = {share: campaign(args, share) for share in (args.compare_train_share, "0")}
    checked, unchecked = rates[args.compare_train_share], rates["0"]
    print(f"\n## Training check's cost: --train-share {args.compare_train_share} against 0\n")
    print(f"- models executed per hour of fuzzing: {checked:.0f} with the check, {unchecked:.0f} without "
          f"({100 * (checked / unchecked - 1) if unchecked else 0:+.1f} %; issue 40 allows -15 %)")
    return 0


def campaign(args: argparse.Namespace, train_share: str | None) -> float:
    """One benchmarked campaign, its report printed; its models executed per hour of fuzzing."""
    workdir = Path(tempfile.mkdtemp(prefix="memo-bench-campaign-"))
    cmd = [sys.executable, "-m", "memo", "fuzz", "--minutes", str(args.minutes), "--json", "--seed", str(args.seed),
           "--search", args.search, "--seeds-dir", str(REPO / "seeds"), "--out", "bench",
           "--name", "bench"]
    if args.backends:
        cmd += ["--backends", args.backends]
    if args.jobs:
        cmd += ["--jobs", str(args.jobs)]
    if args.max_disk:
        cmd += ["--max-disk", args.max_disk]
    if train_share is not None:
        cmd += ["--train-share", train_share]
    if args.train_budget:
        cmd += ["--train-budget", args.train_budget]
    proc = subprocess.Popen(cmd, cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    rss: list[tuple[float, float]] = []
    cpu: dict[int, tuple[str, float]] = {}
    began = time.monotonic()

    def sample() -> None:
        while proc.poll() is None:
            rss.append((time.monotonic() - began, sample_tree(proc.pid, cpu)))
            time.sleep(args.sample_every)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    end: dict = {}
    assert proc.stdout is not None
    for line in proc.stdout:
        event = json.loads(line)
        if event["event"] == "end":
            end = event
    proc.wait()
    wall = time.monotonic() - began

    db = sqlite3.connect(workdir / "bench" / "campaign.sqlite")
    history = db.execute("SELECT elapsed, generated, executed, types, pairs, params FROM coverage_history "
                         "ORDER BY id").fetchall()
    findings = db.execute("SELECT kind, backend, COUNT(*) FROM verdicts WHERE kind != 'invalid' "
                          "GROUP BY kind, backend ORDER BY 3 DESC").fetchall()
    executed = end.get("executed", 0)
    hours = end.get("elapsed_s", wall) / 3600
    print(f"# memo campaign benchmark ({time.strftime('%Y-%m-%d')}, {platform.node()}, {os.cpu_count()} cores)")
    print(f"command: {' '.join(sys.argv)}" + (f" (this campaign: --train-share {train_share})"
                                                if args.compare_train_share is not None else ""))
    print(f"\n- mutants generated: {end.get('generated')}, valid {end.get('valid')}, diverse {end.get('diverse')}")
    print(f"- mutants executed: {executed} ({executed / hours if hours else 0:.0f} per hour, the drain and the final "
          f"triage included)")
    within = [row for row in history if row[0] <= 60 * args.minutes]
    rate = executed / hours if hours else 0.0
    if within and within[-1][0] > 0:
        elapsed, ex = within[-1][0], within[-1][2]
        rate = 3600 * ex / elapsed
        print(f"- executed within the budget: {ex} at {elapsed / 60:.1f} min ({rate:.0f} per hour of fuzzing)")
    with CampaignStore(workdir / "bench") as store:
        spent = generation(store)
    if spent["executed"]:
        print(f"- executed mutants the reference could not run: {spent['reference_failed']} of {spent['executed']} "
              f"({100 * spent['reference_failed_share']:.1f} %); layer types in fewer than 1 % of them: "
              f"{len(spent['rare_types'])} of {spent['types']} ({', '.join(spent['rare_types']) or '-'})")
        print("- executed by operator: " + ", ".join(f"{o['operator']} {o['executed']}" for o in spent["operators"]))
    print(f"- coverage at end: " + ", ".join(f"{k} {c}/{t}" for k, (c, t) in end.get("coverage", {}).items()))
    print("\n| minute | generated | executed | types | pairs | params |\n|---|---|---|---|---|---|")
    marks = sorted({min(len(history) - 1, i) for i in range(0, len(history), max(1, len(history) // 10))}
                   | {len(history) - 1}) if history else []
    for i in marks:
        elapsed, generated, ex, types, pairs, params = history[i]
        print(f"| {elapsed / 60:.1f} | {generated} | {ex} | {types} | {pairs} | {params} |")
    print("\n| finding kind | library | count |\n|---|---|---|")
    for kind, backend, count in findings:
        print(f"| {kind} | {backend} | {count} |")
    if rss:
        third = max(1, len(rss) // 3)
        first_mb = sum(r for _, r in rss[:third]) / third
        last_mb = sum(r for _, r in rss[-third:]) / third
        print(f"\n- RSS of memo + workers: first third mean {first_mb:.0f} MB, last third mean {last_mb:.0f} MB, "
              f"max {max(r for _, r in rss):.0f} MB ({len(rss)} samples)")
    if cpu:
        by_role: dict[str, float] = {}
        for role, seconds in cpu.values():
            by_role[role] = by_role.get(role, 0.0) + seconds
        total = sum(by_role.values())
        print(f"- CPU seconds by process (sampled every {args.sample_every:g} s, so up to one interval low; "
              f"{total:.0f} s in all over {wall:.0f} s of wall time on {os.cpu_count()} cores):")
        for role, seconds in sorted(by_role.items(), key=lambda item: -item[1]):
            print(f"  - {role}: {seconds:.0f} s ({100 * seconds / total:.0f} %)")
        if executed:
            print(f"- CPU seconds per executed model: {total / executed:.2f}")
    print_engines(workdir / "bench")
    print_disk(workdir, db, executed)
    print(f"- campaign directory: {workdir / 'bench'}")
    return rate


if __name__ == "__main__":
    sys.exit(main())
