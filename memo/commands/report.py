"""``memo report CAMPAIGN``: write the campaign's report (HTML by default; JSON or Markdown for CI)."""
from __future__ import annotations

import argparse
from pathlib import Path

from memo.errors import UsageError

# The handlers below import the rest of memo when they run: the CLI imports every command module to
# build its parser, and `memo --help` must not pay for the campaign, triage, Keras or rich.


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("report", help="write a campaign's report (also while it runs)",
                              description="Deduplicate the campaign's findings and write its report: "
                                          "reports/NAME.html by default. Safe while the campaign runs.")
    p.add_argument("campaign", metavar="CAMPAIGN", help="campaign name (under ./campaigns/) or directory")
    p.add_argument("--format", choices=("html", "json", "markdown"), default="html", dest="fmt")
    p.add_argument("--output", "-o", type=Path, help="file to write (default: reports/NAME.html|.json|.md)")
    p.add_argument("--triage", action="store_true",
                   help="first localize, reduce and script new bugs (runs the libraries; bounded by --budget)")
    p.add_argument("--budget", type=float, default=120.0, help="seconds for --triage (default 120)")
    p.add_argument("--bugs-db", metavar="PATH", help="the bug database that says which bugs are known (default: "
                   "$MEMO_BUGS_DB, else the one the campaign was started with); triage records into it")
    p.add_argument("--next-python", metavar="PATH",
                   help="with --triage: rerun reproducing bugs with this newest-code interpreter before calling them "
                        "ready (default: the campaign's; none: no such check; docs/recheck.md)")
    p.add_argument("--issue-scripts", action="store_true",
                   help="write and check the minimal scripts (and issue texts) the campaign had no time for: "
                        "each bug's not checked yet (runs its blamed library once, a few seconds per bug)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from memo.paths import campaign_dir
    from memo.report import write_report
    from memo.store import DB_NAME, CampaignStore
    from memo.triage import triage_campaign

    from memo.bugdb.location import OFF_PATH, resolve, switched_off

    directory = campaign_dir(args.campaign)
    if not (directory / DB_NAME).exists():
        raise UsageError(f"no campaign at {directory}")
    bugs_db = OFF_PATH if switched_off(args.bugs_db) else resolve(args.bugs_db, use_default=False)
    with CampaignStore(directory) as store:
        # without --triage: only the deduplication (no library runs), so the bug list is current
        summary = triage_campaign(store, time_budget_s=args.budget if args.triage else 0.0, bugs_db=bugs_db,
                                  next_python=_next_python(args.next_python))
    if args.triage:
        print(f"triage: {summary.bugs} bugs, {summary.reduced} reduced, {summary.merged} merged, "
              f"{summary.scripts} scripts, {summary.reproduced} reproduced, {summary.known} known (copied from the bug "
              f"database), {summary.newest} rerun on the newest code ({summary.fixed_upstream} fixed upstream), "
              f"{summary.seconds:.0f} s")
        for error in summary.errors:
            print(f"triage: {error.splitlines()[0]}")
    if args.issue_scripts:
        from memo.filing import check_campaign

        checked, reproducing = check_campaign(directory / "bugs")
        print(f"issue scripts: {reproducing} of {checked} minimal scripts reproduce")
    path = write_report(directory, args.output, args.fmt, bugs_db=bugs_db)
    print(path)
    return 0


def _next_python(given: str | None) -> str | None:
    """``--next-python``: a checked interpreter, ``none`` passed on (no check), or None (the campaign's own)."""
    from memo.newest import is_off, next_python

    if given is None or is_off(given):
        return given
    return next_python(given)
