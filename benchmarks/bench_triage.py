"""How good the bug report is: a campaign, then the figures a maintainer receiving its bugs cares about.

    .venv/bin/python benchmarks/bench_triage.py --minutes 30 [--backends a,b] [--seed S]
    .venv/bin/python benchmarks/bench_triage.py --campaign campaigns/NAME     # an existing campaign

Runs ``memo fuzz`` in a fresh directory (or reads a finished campaign), then reports: bug entries before and
after merging, the share of numeric findings localized, the share of bugs reduced with the median and
largest reduced size, the share whose ``repro.py`` reproduces the bug when run again now in a fresh process
(every script is re-run here, not read from the store), triage seconds per bug, and any two entries with the
same reduced model and symptom (there should be none). Prints a Markdown block for docs/benchmarks.md.
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

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from memo.store import CampaignStore  # noqa: E402
from memo.bug_files import read_bug_file  # noqa: E402
from memo.triage.rerun import rerun_script  # noqa: E402
from memo.kinds import BUG_KINDS, NUMERIC_KINDS  # noqa: E402


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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--backends")
    parser.add_argument("--campaign", type=Path, help="measure this finished campaign instead of running one")
    parser.add_argument("--no-recheck", action="store_true", help="trust the stored repro outcome")
    args = parser.parse_args()
    campaign = args.campaign or run_campaign(args.minutes, args.seed, args.backends)
    figures = measure(campaign, recheck=not args.no_recheck)
    command = " ".join(["benchmarks/bench_triage.py", *sys.argv[1:]])
    print(f"\n### Triage ({time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, {platform.machine()})\n")
    print(f"`.venv/bin/python {command}`\n")
    print("| figure | value |\n|---|---|")
    for name, value in figures.items():
        print(f"| {name.replace('_', ' ')} | {json.dumps(value) if isinstance(value, dict) else value} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
