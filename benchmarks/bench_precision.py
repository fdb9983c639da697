"""The float64 check over a campaign's numeric bugs: each bug's verdict, errors and conditioning, recomputed.

    .venv/bin/python benchmarks/bench_precision.py CAMPAIGN [--keep]

For every NaN/inconsistency bug of the campaign (a name under ``campaigns/`` or a folder) that has a bug folder,
its reduced model runs again on the libraries it involves and in float64 (:mod:`memo.triage.reassess`), and
the table shows: the library blamed by the campaign, float64's decision (confirmed, contradicted, noise,
undecided, ill-conditioned, unavailable), the accused's and the witnesses' best error against float64 (in
tolerances: at most 1 is within the oracle's tolerance), how far the float64 result moves under a few-ulp
perturbation, and the seconds it took. The new truth is written into each bug.json unless ``--dry-run``
(then into a copy of the folder that is thrown away). Ends with the count per decision and the command.
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from memo.paths import campaign_dir  # noqa: E402
from memo.kinds import NUMERIC_KINDS  # noqa: E402
from memo.store import CampaignStore  # noqa: E402
from memo.triage.finding import load_finding  # noqa: E402
from memo.triage.reassess import reassess_folder  # noqa: E402
from memo.triage.session import Session  # noqa: E402


def _best(errors: dict, names: list[str]) -> str:
    values = [float(errors[name]) for name in names if name in errors]
    return f"{min(values):.3g}" if values else "-"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("campaign")
    parser.add_argument("--dry-run", action="store_true", help="leave the bug folders as they are")
    args = parser.parse_args(argv)
    directory = Path(args.campaign) if Path(args.campaign).exists() else campaign_dir(args.campaign)
    decisions: Counter[str] = Counter()
    with CampaignStore(directory) as store:
        bugs = [bug for bug in store.triage.load_bugs() if bug.kind in NUMERIC_KINDS and bug.merged_into is None
                and bug.bug_dir and Path(bug.bug_dir).exists()]
        session = Session(store, None, 60.0 * 60)
        for bug in bugs:
            finding = load_finding(store, bug.first_verdict)
            if finding is not None:
                session.needed.update(session.roles(finding).backends)
        scratch = Path(tempfile.mkdtemp(prefix="bench-precision-"))
        print(f"{'bug':44} {'blamed':24} {'float64':16} {'accused':>8} {'witness':>8} {'moves':>8} {'s':>5}")
        try:
            for bug in bugs:
                if args.dry_run:
                    copy = scratch / bug.id
                    shutil.copytree(bug.bug_dir, copy)
                    bug.bug_dir = str(copy)
                started = time.perf_counter()
                truth = reassess_folder(session, bug).get("truth") or {}
                seconds = time.perf_counter() - started
                decision = truth.get("decision", "no run")
                decisions[decision] += 1
                errors = truth.get("errors") or {}
                moves = truth.get("condition")
                print(f"{bug.id:44} {bug.library:24} {decision:16} {_best(errors, truth.get('accused') or []):>8} "
                      f"{_best(errors, truth.get('witnesses') or []):>8} "
                      f"{'-' if moves is None else format(moves, '.3g'):>8} {seconds:5.1f}")
        finally:
            session.close()
            shutil.rmtree(scratch, ignore_errors=True)
    print("decisions: " + ", ".join(f"{name} {count}" for name, count in decisions.most_common()) if decisions
          else "no numeric bug with a folder")
    print(f"reproduce: .venv/bin/python benchmarks/bench_precision.py {args.campaign}"
          + (" --dry-run" if args.dry_run else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
