"""``memo repro BUG``: run a bug's standalone script in a fresh process; does it still reproduce?"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from memo.errors import UsageError

# The handlers below import the rest of memo when they run: the CLI imports every command module to
# build its parser, and `memo --help` must not pay for the campaign, triage, Keras or rich.

EXIT_REPRODUCES, EXIT_FIXED, EXIT_UNKNOWN = 0, 1, 2


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("repro", help="re-run a bug's reproduction script (e.g. after a library upgrade)",
                              description="Run the bug's repro.py with the interpreter its library needs. "
                                          "Exit status: 0 reproduces, 1 does not, 2 could not run.")
    p.add_argument("bug", metavar="BUG", help="bug id (looked up in campaigns/*/bugs/) or a bug folder")
    p.add_argument("--campaign", help="campaign name or directory to look the bug up in")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds before giving up (default 300)")
    p.set_defaults(func=run)


def find_bug_folder(bug: str, campaign: str | None) -> Path:
    from memo.paths import CAMPAIGNS_DIR, campaign_dir
    from memo.bug_files import BUGS_DIR, REPRO_FILE

    direct = Path(bug)
    if (direct / REPRO_FILE).exists():
        return direct
    roots = [campaign_dir(campaign)] if campaign else sorted(CAMPAIGNS_DIR.glob("*"))
    found = [root / BUGS_DIR / bug for root in roots if (root / BUGS_DIR / bug / REPRO_FILE).exists()]
    if not found:
        where = campaign or str(CAMPAIGNS_DIR)
        raise UsageError(f"no bug {bug!r} with a repro.py in {where} (run `memo report CAMPAIGN --triage` first?)")
    if len(found) > 1:
        raise UsageError(f"bug {bug!r} is in several campaigns ({', '.join(str(f.parent.parent) for f in found)}); "
                         "pass --campaign")
    return found[0]


def _record(folder: Path, reproduces: bool | None) -> None:
    """Store the outcome in the campaign's bug table when the folder belongs to a campaign."""
    from memo.store import DB_NAME, CampaignStore

    campaign = folder.resolve().parent.parent
    if not (campaign / DB_NAME).exists():
        return
    with CampaignStore(campaign) as store:
        if store.triage.load_bug(folder.name) is not None:
            store.triage.update_bug(folder.name, reproduces=reproduces, checked=time.time())


def run(args: argparse.Namespace) -> int:
    from memo.bug_files import read_bug_file
    from memo.triage.rerun import rerun_script

    folder = find_bug_folder(args.bug, args.campaign)
    bug = read_bug_file(folder)
    result = rerun_script(folder, bug, timeout_s=args.timeout)
    print(result.output.rstrip())
    print(f"memo repro: {folder.name}: {result.verdict()} (exit {result.returncode}, {result.seconds:.1f} s, "
          f"{result.python})")
    if result.reproduces is not None:
        _record(folder, result.reproduces)
    return {True: EXIT_REPRODUCES, False: EXIT_FIXED, None: EXIT_UNKNOWN}[result.reproduces]
