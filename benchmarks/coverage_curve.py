"""A campaign's coverage curve and where it leads: headline pairs and parameter values over time, extrapolated.

    .venv/bin/python benchmarks/coverage_curve.py CAMPAIGN [--hours 6] [--from-minute 5]

Reads the coverage history a campaign stored (``memo fuzz`` writes a point every 10 s) and fits two curves to
each criterion from ``--from-minute`` on:

* saturating, ``y = A (1 - exp(-(t / tau) ** k))`` with 0.3 <= k <= 1 and ``A`` at most the realizable
  denominator (least squares over a grid of ``tau`` and ``k``; ``A`` solved exactly for each): where a
  fuzzer's coverage usually goes, a lower estimate;
* power law, ``y = a t ** b`` (a straight line in log-log), capped by the denominator: no saturation at all, so
  an upper estimate.

It prints the measured figures at a few minutes and each fit's value at 1 hour and at ``--hours``. An
extrapolation is not a measurement: the report of a real ``--hours 6`` campaign settles it.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from memo.paths import campaign_dir  # noqa: E402
from memo.coverage import denominators  # noqa: E402
from memo.store import CampaignStore  # noqa: E402

CRITERIA = ("pairs", "params")


def saturating_fit(t: np.ndarray, y: np.ndarray, ceiling: float) -> tuple[float, float, float]:
    """(A, tau, k) of ``A (1 - exp(-(t / tau) ** k))`` minimizing the squared error, ``A <= ceiling``."""
    best = (np.inf, 0.0, 1.0, 1.0)
    for tau in np.geomspace(max(t.min(), 1.0), 1e4 * max(t.max(), 1.0), 200):
        for k in np.linspace(0.3, 1.0, 15):  # concave from the start, as coverage grows
            f = 1.0 - np.exp(-(t / tau) ** k)
            a = min(ceiling, float(f @ y) / max(float(f @ f), 1e-12))
            error = float(((y - a * f) ** 2).sum())
            if error < best[0]:
                best = (error, a, float(tau), float(k))
    return best[1], best[2], best[3]


def power_fit(t: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """(a, b) of ``a t ** b`` fitted in log-log space."""
    b, log_a = np.polyfit(np.log(t), np.log(y), 1)
    return float(np.exp(log_a)), float(b)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("campaign", help="campaign name or directory")
    parser.add_argument("--hours", type=float, default=6.0, help="where to extrapolate to (default 6)")
    parser.add_argument("--from-minute", type=float, default=5.0, help="fit from this minute on (default 5)")
    args = parser.parse_args()
    with CampaignStore(campaign_dir(args.campaign)) as store:
        history = store.coverage_history()
        budget = ((store.get_meta("config") or {}).get("budget") or {}).get("seconds")
    if budget:  # the drain and the final triage add points after the budget, with almost no new executions
        history = [row for row in history if float(row["elapsed"]) <= float(budget) + 1.0]
    if len(history) < 5:
        print("coverage_curve: fewer than 5 history points", file=sys.stderr)
        return 2
    totals = denominators()
    minutes = np.array([float(row["elapsed"]) / 60 for row in history])
    print(f"command: {' '.join(sys.argv)}")
    print(f"campaign {args.campaign}: {len(history)} points over its {minutes[-1]:.1f} minutes of fuzzing")
    print("\n| minute | executed | pairs | params |\n|---|---|---|---|")
    shown: set[int] = set()
    for mark in (5, 10, 20, 30, 45, 60, 90, 120, 180, 240, 300, 360):
        index = int(np.searchsorted(minutes, mark, side="right")) - 1
        if 0 <= index and index not in shown:
            shown.add(index)
            row = history[index]
            print(f"| {minutes[index]:.1f} | {row['executed']} | "
                  + " | ".join(f"{row[c]} ({100 * row[c] / totals[c]:.1f} %)" for c in CRITERIA) + " |")
    use = minutes >= args.from_minute
    print(f"\nfits over minutes {args.from_minute:g}-{minutes[-1]:.1f}; denominators: "
          + ", ".join(f"{c} {totals[c]}" for c in CRITERIA))
    print(f"\n| criterion | fit | at 60 min | at {args.hours:g} h |\n|---|---|---|---|")
    for criterion in CRITERIA:
        t, y = minutes[use], np.array([float(row[criterion]) for row in history])[use]
        ceiling = float(totals[criterion])
        a, tau, k = saturating_fit(t, y, ceiling)
        p_a, p_b = power_fit(t, y)
        for label, value in (
                (f"saturating: A {a:.0f}, tau {tau:.0f} min, k {k:.2f}",
                 lambda m: a * (1 - np.exp(-(m / tau) ** k))),
                (f"power law: {p_a:.1f} t^{p_b:.2f}", lambda m: min(ceiling, p_a * m ** p_b))):
            one, later = value(60.0), value(60.0 * args.hours)
            print(f"| {criterion} | {label} | {one:.0f} ({100 * one / ceiling:.1f} %) | "
                  f"{later:.0f} ({100 * later / ceiling:.1f} %) |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
