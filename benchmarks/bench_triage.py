"""How good the bug report is: a campaign, then the figures a maintainer receiving its bugs cares about.

    .venv/bin/python benchmarks/bench_triage.py --minutes 30 [--backends a,b] [--seed S]
    .venv/bin/python benchmarks/bench_triage.py --campaign campaigns/NAME     # an existing campaign
    .venv/bin/python benchmarks/bench_triage.py --pass-speed campaigns/NAME --findings 1000 [--code DIR]

Runs ``memo fuzz`` in a fresh directory (or reads a finished campaign), then reports: bug entries before and
after merging, the share of numeric findings localized, the share of bugs reduced with the median and
largest reduced size, the share whose ``repro.py`` reproduces the bug when run again now in a fresh process
(every script is re-run here, not read from the store), triage seconds per bug, and any two entries with the
same reduced model and symptom (there should be none). Prints a Markdown block for docs/benchmarks.md.

``--pass-speed`` times triage's pass itself instead: on a scratch copy of a recorded campaign (its store, bug folders
and artifacts, the paths in the store pointing at the copy) whose findings are repeated until there are
``--findings`` of them, ``--passes`` passes without a budget, executor, bug database or newest-code rerun (what
``memo report`` runs before rendering, and each background pass starts with); the first pass also does what
the copy left undone. ``--code DIR``: time the memo of another checkout (main, say) on the same copy.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import shutil
import sqlite3

REPO = Path(__file__).resolve().parents[1]
FINDING_KINDS = ("crash", "hang", "nan", "inconsistency", "training-crash", "training-nan", "training-inconsistency")


def run_campaign(minutes: float, seed: int, backends: str | None) -> Path:
    workdir = Path(tempfile.mkdtemp(prefix="memo-bench-triage-"))
    cmd = [sys.executable, "-m", "memo", "fuzz", "--minutes", str(minutes), "--seed", str(seed), "--quiet",
           "--seeds-dir", str(REPO / "seeds"), "--name", "bench"]
    if backends:
        cmd += ["--backends", backends]
    started = time.monotonic()
    subprocess.run(cmd, cwd=workdir, check=False, env={**os.environ, "PYTHONPATH": str(REPO)})
    print(f"- campaign: {time.monotonic() - started:.0f} s of wall time in {workdir}")
    return workdir / "campaigns" / "bench"


def measure(campaign: Path, recheck: bool) -> dict[str, object]:
    from memo.bug_files import read_bug_file
    from memo.kinds import BUG_KINDS, NUMERIC_KINDS
    from memo.store import CampaignStore
    from memo.triage.rerun import rerun_script

    with CampaignStore(campaign) as store:
        rows = store.triage.load_bugs()
        numeric = store.findings(NUMERIC_KINDS)
        localized = store.triage.localizations()
        findings = len(store.findings(BUG_KINDS))
        executed = store.count_executions()
    real = [bug for bug in rows if not bug.unlocalized]
    primary = [bug for bug in real if bug.merged_into is None]
    reduced = [bug for bug in primary if bug.reduced_layers is not None and bug.original_layers is not None
               and bug.reduced_layers < bug.original_layers]
    sizes = sorted(bug.reduced_layers for bug in primary if bug.reduced_layers is not None)
    seconds = [float(bug.reduction.get("seconds")) for bug in primary if bug.reduction.get("seconds") is not None]
    reproduces = 0
    for bug in primary:
        if recheck and bug.bug_dir and (Path(bug.bug_dir) / "repro.py").exists():
            reproduces += bool(rerun_script(Path(bug.bug_dir), read_bug_file(Path(bug.bug_dir))).reproduces)
        elif not recheck:
            reproduces += bug.reproduces is True
    keys = Counter(bug.final_key for bug in primary if bug.final_key)
    unreduced = Counter(str(bug.reduction.get("status", "not triaged")) for bug in primary if bug not in reduced)
    return {"executed": executed, "findings": findings, "entries_before_merging": len(real),
            "bugs": len(primary), "merged": len(real) - len(primary),
            "localized": f"{len([r for r in numeric if r.id in localized and localized[r.id].layer])}"
                         f" of {len(numeric)}",
            "reduced": f"{len(reduced)} of {len(primary)}",
            "median_layers": statistics.median(sizes) if sizes else None, "max_layers": max(sizes) if sizes else None,
            "reproduce": f"{reproduces} of {len(primary)}",
            "triage_s_per_bug_median": round(statistics.median(seconds), 1) if seconds else None,
            "duplicate_reduced_entries": sum(n - 1 for n in keys.values() if n > 1),
            "not_reduced_because": dict(unreduced)}


def scratch_copy(campaign: Path, scratch: Path) -> Path:
    """A copy of ``campaign`` (store, bug folders) and its artifacts under ``scratch``, every stored path moved there,
    so that nothing a pass writes or releases touches the original."""
    campaign = campaign.resolve()
    origin, name = campaign.parent.parent, campaign.name
    copy = scratch / "campaigns" / name
    shutil.copytree(campaign, copy)
    if (origin / "mutants" / name).is_dir():
        shutil.copytree(origin / "mutants" / name, scratch / "mutants" / name)
    db = sqlite3.connect(copy / "campaign.sqlite")
    old, new = str(origin) + "/", str(scratch.resolve()) + "/"
    for table, column in (("executions", "artifact_dir"), ("bugs", "bug_dir"), ("bugs", "repro")):
        db.execute(f"UPDATE {table} SET {column} = replace({column}, ?, ?) WHERE {column} LIKE ?",
                   (old, new, old + "%"))
    db.execute("UPDATE meta SET value = replace(value, ?, ?) WHERE key = 'artifacts_root'", (old, new))
    db.commit()
    db.close()
    return copy


def add_findings(campaign: Path, wanted: int) -> int:
    """Repeat the campaign's findings (new verdict rows of the same mutants, unsigned as an older memo stored them)
    until it holds ``wanted``; how many it holds."""
    db = sqlite3.connect(campaign / "campaign.sqlite")
    marks = ",".join("?" * len(FINDING_KINDS))
    rows = db.execute("SELECT mutant_id, kind, backend, stage, message, metrics, created FROM verdicts"
                      f" WHERE kind IN ({marks}) ORDER BY id", FINDING_KINDS).fetchall()
    extra = [rows[index % len(rows)] for index in range(max(0, wanted - len(rows)))]
    db.executemany("INSERT INTO verdicts(mutant_id, kind, backend, stage, message, metrics, created)"
                   " VALUES (?, ?, ?, ?, ?, ?, ?)", extra)
    db.commit()
    held = db.execute(f"SELECT COUNT(*) FROM verdicts WHERE kind IN ({marks})", FINDING_KINDS).fetchone()[0]
    db.close()
    return int(held)


def pass_speed(campaign: Path, findings: int, passes: int) -> dict[str, object]:
    """Seconds of each of ``passes`` triage passes on a scratch copy of ``campaign`` with ``findings`` findings."""
    from memo.store import CampaignStore
    from memo.triage import triage_campaign

    scratch = Path(tempfile.mkdtemp(prefix="memo-bench-pass-"))
    try:
        copy = scratch / "campaigns" / scratch_copy(campaign, scratch).name
        held = add_findings(copy, findings)
        seconds = []
        for _ in range(passes):
            started = time.perf_counter()
            with CampaignStore(copy) as store:  # opened per pass, as each ``memo report`` and background pass does
                triage_campaign(store, time_budget_s=0.0, bugs_db=Path("none"), next_python="none")
            seconds.append(time.perf_counter() - started)
        with CampaignStore(copy) as store:
            bugs = store.triage.load_bugs()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return {"findings": held, "bugs": len(bugs), "entries": len([b for b in bugs if b.merged_into is None]),
            "first_pass_s": round(seconds[0], 2), "later_passes_s": [round(s, 2) for s in seconds[1:]],
            "later_pass_median_s": round(statistics.median(seconds[1:]), 2) if len(seconds) > 1 else None}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--backends")
    parser.add_argument("--campaign", type=Path, help="measure this finished campaign instead of running one")
    parser.add_argument("--no-recheck", action="store_true", help="trust the stored repro outcome")
    parser.add_argument("--pass-speed", type=Path, metavar="CAMPAIGN", help="time triage passes on a copy of it")
    parser.add_argument("--findings", type=int, default=1000, help="--pass-speed: findings the copy holds")
    parser.add_argument("--passes", type=int, default=4, help="--pass-speed: passes timed")
    parser.add_argument("--code", type=Path, default=REPO, help="the checkout whose memo runs (default: this one)")
    args = parser.parse_args()
    sys.path.insert(0, str(args.code.resolve()))
    if args.pass_speed:
        figures = pass_speed(args.pass_speed, args.findings, args.passes)
    else:
        campaign = args.campaign or run_campaign(args.minutes, args.seed, args.backends)
        figures = measure(campaign, recheck=not args.no_recheck)
    command = " ".join(["benchmarks/bench_triage.py", *sys.argv[1:]])
    title = "Triage pass" if args.pass_speed else "Triage"
    print(f"\n### {title} ({time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, {platform.machine()})\n")
    print(f"`.venv/bin/python {command}`\n")
    print("| figure | value |\n|---|---|")
    for name, value in figures.items():
        print(f"| {name.replace('_', ' ')} | {json.dumps(value) if isinstance(value, dict) else value} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
