"""The comparison the papers make, on the libraries' code: lines covered per library in equal time (issue 32).

    .venv/bin/python benchmarks/bench_library_coverage.py [--minutes 30] [--seed 0] [--jobs N] [--only b,c]

Configurations, each one ``memo fuzz --library-coverage`` campaign of ``--minutes`` with the same ``--seed``:
(a) seeds only: the lines the seeds' own runs reach (every campaign runs the seeds once first, so (a) is read from
each campaign's seed lines rather than run as a campaign that would only repeat them); (b) MEMO's configuration:
its seven operators, MH, no directed share; (c) memo's default; (d) memo's default with library-coverage feedback.
Prints, per configuration and library, the lines covered beyond the seeds' own at 1/3, 2/3 and the end of the
fuzzing time, the unique bugs (triage's bugs, merged ones counted once), and the command that reproduces it.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from memo.campaign.slot import split_budget  # noqa: E402
from memo.store import CampaignStore  # noqa: E402

MEMO_SEVEN = "NLA,LResh,LMerg,LConn,CShape,CMode,NaN"  # MEMO's operators (as bench_ablation.py's RQ4 row)
# every model traced (--library-coverage-every 1) in every configuration: the ruler counts all of them
CONFIGURATIONS: dict[str, list[str]] = {
    "b": ["--library-coverage", "--library-coverage-every", "1", "--ops", MEMO_SEVEN, "--search", "mh",
          "--directed", "0"],
    "c": ["--library-coverage", "--library-coverage-every", "1"],
    "d": ["--library-coverage", "feedback", "--library-coverage-every", "1"],
}
LABELS = {"a": "(a) seeds only", "b": "(b) MEMO's configuration", "c": "(c) memo's default",
          "d": "(d) default + library feedback"}
FRACTIONS = (1 / 3, 2 / 3, 1.0)


def run_campaign(key: str, minutes: float, seed: int, jobs: int | None, workdir: Path) -> Path:
    """Run configuration ``key``'s campaign; its directory."""
    directory = workdir / f"libcov-{key}-s{seed}"
    command = [sys.executable, "-m", "memo", "fuzz", "--minutes", f"{minutes:g}", "--seed", str(seed), "--quiet",
               "--seeds-dir", str(REPO / "seeds"), "--out", str(directory), "--name", directory.name,
               "--bugs-db", "none", *(["--jobs", str(jobs)] if jobs else []), *CONFIGURATIONS[key]]
    done = subprocess.run(command, cwd=workdir, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    if done.returncode not in (0, 130):
        raise SystemExit(f"configuration {key} failed: {(done.stderr.strip().splitlines() or ['?'])[-1]}")
    return directory


def figures(directory: Path, fuzzing_s: float) -> dict:
    """Per library: the seeds' lines, the total, and the lines beyond the seeds' own at each fraction of the time;
    and the unique bugs."""
    with CampaignStore(directory) as store:
        started = float(store.get_meta("started"))
        counts = {c.library: c for c in store.library.counts()}
        beyond = {library: [0] * len(FRACTIONS) for library in counts}
        for library, created in store.library.first_reached(seeds=False):
            for index, fraction in enumerate(FRACTIONS):
                if created - started <= fraction * fuzzing_s:
                    beyond[library][index] += 1
        late = {library: counts[library].covered - counts[library].by_seeds for library in counts}
        bugs = sum(1 for bug in store.triage.load_bugs() if not bug.merged_into)
    return {"libraries": {name: {"seeds": counts[name].by_seeds, "total": counts[name].total,
                                 "beyond": beyond[name], "beyond_all": late[name]} for name in sorted(counts)},
            "bugs": bugs}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30.0, help="minutes per configuration (default 30)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, help="memo fuzz --jobs (default: memo's)")
    parser.add_argument("--only", help="comma-separated configurations among b, c, d (default: all)")
    args = parser.parse_args()
    keys = [key for key in CONFIGURATIONS if not args.only or key in args.only.split(",")]
    workdir = Path(tempfile.mkdtemp(prefix="memo-bench-libcov-"))
    results = {}
    for key in keys:
        directory = run_campaign(key, args.minutes, args.seed, args.jobs, workdir)
        fuzzing_s = split_budget(args.minutes * 60, None)[0] or args.minutes * 60  # the slot's fuzzing share
        results[key] = figures(directory, fuzzing_s)
        print(f"{LABELS[key]}: done ({directory})", file=sys.stderr, flush=True)
    marks = " / ".join(f"{fraction * args.minutes:.3g} min" for fraction in FRACTIONS)
    print(f"\nLines covered beyond the seeds' own at {marks}; unique bugs. seed {args.seed}, {args.minutes:g} min each")
    print("\n| configuration | library | seeds' lines (a) | total | beyond seeds | bugs |\n|---|---|---|---|---|---|")
    for key, result in results.items():
        for name, item in result["libraries"].items():
            print(f"| {LABELS[key]} | {name} | {item['seeds']} | {item['total']} | "
                  f"{' / '.join(map(str, item['beyond']))} | {result['bugs']} |")
    totals = {key: sum(item["beyond"][-1] for item in result["libraries"].values()) for key, result in results.items()}
    print("\nall libraries, lines beyond the seeds' own at the end: "
          + ", ".join(f"{LABELS[key]} {total}" for key, total in totals.items()))
    for better, worse, goal in (("c", "b", 15), ("d", "c", 10)):
        if better in totals and worse in totals and totals[worse]:
            gain = 100 * (totals[better] / totals[worse] - 1)
            print(f"{LABELS[better]} over {LABELS[worse]}: {gain:+.1f} % (goal +{goal} %), bugs "
                  f"{results[better]['bugs']} against {results[worse]['bugs']}")
    print("\n" + json.dumps(results, sort_keys=True))
    print(f"\nreproduce: .venv/bin/python benchmarks/bench_library_coverage.py --minutes {args.minutes:g} "
          f"--seed {args.seed}" + (f" --jobs {args.jobs}" if args.jobs else "")
          + (f" --only {args.only}" if args.only else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
