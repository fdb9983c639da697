"""Where a measured campaign leads at six hours: memory, disk, database, executed models, distinct bugs.

    .venv/bin/python benchmarks/extrapolate_campaign.py NAME [--hours 6]

Reads the per-minute samples ``benchmarks/bench_long_campaign.py`` wrote (``reports/NAME-samples.csv``) and the
campaign's store, and prints, for a ``memo fuzz --hours H`` slot split the way memo splits it (fuzzing, then the
final pass):

* memory: the peak RSS of memo + workers per 30-minute window of fuzzing, and the slope of a line through those
  peaks (flat means bounded: what the six-hour peak would be if it kept the slope);
* disk and database: the campaign folder, the artifacts and the SQLite file grow with the models executed, so
  their growth per hour over the last hour of fuzzing is carried to the end of the longer slot;
* executed models: the last hour's rate over the rest of the longer slot's fuzzing;
* distinct bugs (the store's entries not merged into another) by the minute each was first seen: the discovery
  curve, fitted like coverage (``benchmarks/coverage_curve.py``): a saturating curve (a lower estimate) and a power
  law (an upper one).

An extrapolation is not a measurement; the figures it starts from are printed beside it.
"""
from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from coverage_curve import power_fit, saturating_fit  # noqa: E402
from memo.campaign.slot import split_budget  # noqa: E402
from memo.paths import campaign_dir  # noqa: E402
from memo.store import CampaignStore  # noqa: E402

WINDOW_S = 1800.0
BUG_CEILING_FACTOR = 10.0  # the saturating fit's asymptote may reach this many times the bugs seen so far


def read_samples(path: Path) -> list[dict[str, float]]:
    with open(path, newline="") as handle:
        return [{key: float(value) for key, value in row.items()} for row in csv.DictReader(handle)]


def fuzzing_seconds(slot_s: float) -> float:
    """The fuzzing share of a timed slot, as ``memo fuzz`` splits it."""
    return float(split_budget(slot_s, None)[0] or slot_s)


def window_peaks(samples: list[dict[str, float]], end_s: float) -> list[tuple[float, float, float]]:
    """(start, end in minutes, peak RSS of memo + workers in MB) of each 30-minute window of fuzzing."""
    peaks = []
    start = 0.0
    while start < end_s:
        stop = min(end_s, start + WINDOW_S)
        part = [s["memo_mb"] + s["workers_mb"] for s in samples if start <= s["elapsed_s"] < stop]
        if part:
            peaks.append((start / 60.0, stop / 60.0, max(part)))
        start += WINDOW_S
    return peaks


def at(samples: list[dict[str, float]], elapsed_s: float) -> dict[str, float]:
    """The last sample taken at or before ``elapsed_s``."""
    before = [s for s in samples if s["elapsed_s"] <= elapsed_s]
    return before[-1] if before else samples[0]


def per_hour(samples: list[dict[str, float]], key: str, start_s: float, end_s: float) -> float:
    """How fast ``key`` grew per hour between two moments of the campaign."""
    first, last = at(samples, start_s), at(samples, end_s)
    span = max(1.0, last["elapsed_s"] - first["elapsed_s"])
    return 3600.0 * (last[key] - first[key]) / span


def discovery(name: str) -> tuple[np.ndarray, float]:
    """Minutes (from the campaign's start) at which each distinct bug was first seen, and the fuzzing budget (s)."""
    with CampaignStore(campaign_dir(name)) as store:
        started = float(store.get_meta("started"))
        budget = float(((store.get_meta("config") or {}).get("budget") or {}).get("seconds") or 0.0)
        seen = [bug.first_seen for bug in store.triage.load_bugs() if bug.merged_into is None]
    return np.sort(np.array([(float(when) - started) / 60.0 for when in seen])), budget


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("campaign", help="campaign name (its samples are reports/NAME-samples.csv)")
    parser.add_argument("--hours", type=float, default=6.0, help="the slot to extrapolate to (default 6)")
    args = parser.parse_args()
    samples_path = REPO / "reports" / f"{args.campaign}-samples.csv"
    if not samples_path.exists():
        print(f"extrapolate_campaign: no samples at {samples_path} (run bench_long_campaign.py first)", file=sys.stderr)
        return 2
    samples = read_samples(samples_path)
    found, budget_s = discovery(args.campaign)
    fuzz_s = budget_s or samples[-1]["elapsed_s"]
    target_fuzz_s = fuzzing_seconds(3600.0 * args.hours)
    extra_h = max(0.0, target_fuzz_s - fuzz_s) / 3600.0
    last_hour = (max(0.0, fuzz_s - 3600.0), fuzz_s)
    end = at(samples, fuzz_s)
    print(f"command: {' '.join(sys.argv)}")
    print(f"campaign {args.campaign}: {fuzz_s / 60:.0f} minutes of fuzzing measured; a {args.hours:g}-hour slot "
          f"fuzzes {target_fuzz_s / 60:.0f} minutes, {60 * extra_h:.0f} more\n")

    peaks = window_peaks(samples, fuzz_s)
    print("| window of fuzzing (min) | peak RSS, memo + workers (MB) |\n|---|---|")
    for start_min, stop_min, peak in peaks:
        print(f"| {start_min:.0f}-{stop_min:.0f} | {peak:.0f} |")
    warm = peaks[1:] if len(peaks) >= 3 else peaks  # the first window holds the workers' start-up
    slope = (float(np.polyfit([(p[0] + p[1]) / 120.0 for p in warm], [p[2] for p in warm], 1)[0])
             if len(warm) >= 2 else 0.0)
    top = max(p[2] for p in peaks)
    print(f"\nmemory: slope of the peaks from minute {warm[0][0]:.0f} on {slope:+.0f} MB per hour; at {args.hours:g} h: "
          f"{max(top, warm[-1][2] + slope * extra_h):.0f} MB if it kept that slope (measured peak {top:.0f} MB)")

    print(f"\n| figure | at {fuzz_s / 60:.0f} min | growth per hour (last hour) | at {args.hours:g} h |\n|---|---|---|---|")
    for key, label in (("campaign_mb", "campaign folder (MB)"), ("artifacts_mb", "artifacts (MB)"),
                       ("sqlite_mb", "campaign database (MB)"), ("executed", "executed models")):
        rate = per_hour(samples, key, *last_hour)
        print(f"| {label} | {end[key]:.0f} | {rate:.0f} | {end[key] + rate * extra_h:.0f} |")

    in_fuzzing = found[found <= fuzz_s / 60.0]
    print(f"\ndistinct bugs: {len(found)} at the end ({len(in_fuzzing)} first seen while fuzzing)")
    minutes = in_fuzzing[in_fuzzing >= 5.0]
    if len(minutes) < 5:
        print("too few bugs after minute 5 for a discovery curve")
        return 0
    counts = np.arange(len(in_fuzzing) - len(minutes) + 1, len(in_fuzzing) + 1, dtype=float)
    a, tau, k = saturating_fit(minutes, counts, BUG_CEILING_FACTOR * len(in_fuzzing))
    p_a, p_b = power_fit(minutes, counts)
    target_min = target_fuzz_s / 60.0
    print(f"| discovery fit | at {fuzz_s / 60:.0f} min | at {args.hours:g} h ({target_min:.0f} min of fuzzing) |"
          "\n|---|---|---|")
    for label, value in ((f"saturating: A {a:.0f}, tau {tau:.0f} min, k {k:.2f}",
                          lambda m: a * (1 - np.exp(-(m / tau) ** k))),
                         (f"power law: {p_a:.2f} t^{p_b:.2f}", lambda m: p_a * m ** p_b)):
        print(f"| {label} | {value(fuzz_s / 60):.0f} | {value(target_min):.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
