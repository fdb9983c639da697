"""How fast triage drains a campaign's backlog: background-like passes on a copy of its store.

    .venv/bin/python benchmarks/drain_backlog.py NAME [--passes 8] [--pass-s 120]

Copies ``campaigns/NAME`` (and the bug database, so that neither is changed) to a scratch folder, then runs
``--passes`` triage passes of ``--pass-s`` seconds each on one warm executor of the campaign's backends and one set of
float64 workers, as a campaign's background triage does but with no fuzzing beside it. After each pass it prints the
backlog (:func:`memo.triage.pending.backlog`) and every bug whose reduction changed: its status, layers, runs and
reduction seconds, before and after. The figures are triage's alone: in a campaign the fuzzing pipelines share the
cores, so a pass there does less.
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from memo.backends.executor import DifferentialExecutor  # noqa: E402
from memo.bugdb.location import resolve  # noqa: E402
from memo.paths import campaign_dir  # noqa: E402
from memo.store import CampaignStore  # noqa: E402
from memo.triage import triage_campaign  # noqa: E402
from memo.triage.pending import backlog  # noqa: E402
from memo.triage.truth import TruthRunner  # noqa: E402

Waiting = dict[str, tuple[object, ...]]


def waiting(store: CampaignStore) -> Waiting:
    """The bugs not finished: without a folder, or whose reduction is to be continued; what their reduction holds."""
    out: Waiting = {}
    for bug in store.triage.load_bugs():
        reduction = bug.reduction if isinstance(bug.reduction, dict) else {}
        if bug.merged_into is None and (not bug.bug_dir or reduction.get("status") == "timeout"):
            out[bug.id] = (reduction.get("status"), bug.reduced_layers, reduction.get("runs"), reduction.get("seconds"))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name", help="the campaign (campaigns/NAME)")
    parser.add_argument("--passes", type=int, default=8)
    parser.add_argument("--pass-s", type=float, default=120.0, help="each pass's budget (the background's: 120)")
    args = parser.parse_args(argv)
    source = campaign_dir(args.name)
    if not source.exists():
        print(f"error: no campaign {args.name} ({source})", file=sys.stderr)
        return 2
    scratch = Path(tempfile.mkdtemp(prefix=f"drain-{args.name}-"))
    copy = scratch / args.name
    shutil.copytree(source, copy)
    bugs_db = scratch / "bugs.sqlite"
    known = resolve(None)
    if known is not None and known.exists():
        shutil.copyfile(known, bugs_db)
    with CampaignStore(copy) as store:
        config = store.get_meta("config") or {}
        print(f"start: backlog {backlog(store)}, {len(waiting(store))} bugs not finished", flush=True)
    truth = TruthRunner(copy / "truth-logs")
    started = time.monotonic()
    try:
        with DifferentialExecutor(backends=config.get("backends"), timeout_s=float(config.get("timeout_s") or 60.0)) \
                as executor:
            for index in range(args.passes):
                with CampaignStore(copy) as store:
                    before = waiting(store)
                    summary = triage_campaign(store, executor=executor, time_budget_s=args.pass_s, bugs_db=bugs_db,
                                              next_python="none", truth=truth)
                    after, left = waiting(store), backlog(store)
                print(f"pass {index + 1} ends at {time.monotonic() - started:.0f} s ({summary.seconds:.0f} s): "
                      f"backlog {left.total} ({left.distinct} distinct, {left.duplicates} likely duplicates, "
                      f"{left.unfileable} unfileable); errors {len(summary.errors)}", flush=True)
                for bug_id in sorted(set(before) | set(after)):
                    if before.get(bug_id) != after.get(bug_id):
                        print(f"    {bug_id}: {before.get(bug_id)} -> {after.get(bug_id, 'finished')}", flush=True)
                if not left.total:
                    break
    finally:
        truth.close()
    print(f"reproduce: .venv/bin/python benchmarks/drain_backlog.py {args.name} --passes {args.passes} "
          f"--pass-s {args.pass_s:g}  (scratch copy: {scratch})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
