"""``memo bugs``: the bug database across campaigns (docs/bugs.md): list, show, mark, import, export, recheck,
issue."""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Callable

from memo.errors import UsageError

# The handlers below import the rest of memo when they run: the CLI imports every command module to
# build its parser, and `memo --help` must not pay for the campaign, triage, Keras or rich.

STATUS_CHOICES = ("new", "filed", "fixed", "wontfix", "duplicate", "fixed-upstream")
RECHECK_DEFAULT_STATUSES = ("new", "filed", "fixed")  # fixed too: a regression shows there
NEXT_DEFAULT_STATUSES = ("new", "filed", "fixed-upstream")  # --next: fixed-upstream too, a regression on main


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("bugs", help="the bug database across campaigns: list, show, mark, import, export, "
                                           "recheck, issue",
                              description="Every bug memo found, across campaigns, with its status. The database is "
                                          "--bugs-db PATH, else $MEMO_BUGS_DB, else ~/.local/share/memo/bugs.sqlite.")
    p.add_argument("--bugs-db", metavar="PATH", help="the bug database (default: $MEMO_BUGS_DB, else the user's)")
    sub = p.add_subparsers(dest="bugs_command", metavar="ACTION", required=True)
    # `memo bugs list --bugs-db PATH` works as well as `memo bugs --bugs-db PATH list`: every action takes it too
    # (SUPPRESS: an action's own default does not erase the one given before it)
    action_options = argparse.ArgumentParser(add_help=False)
    action_options.add_argument("--bugs-db", metavar="PATH", default=argparse.SUPPRESS,
                                help="the bug database (as before the action)")

    listing = sub.add_parser("list", parents=[action_options], help="the bugs, oldest first")
    _filters(listing, "only bugs with this status (repeatable)")
    listing.add_argument("--json", action="store_true", help="a JSON list of objects")
    listing.set_defaults(func=run_list)

    show = sub.add_parser("show", parents=[action_options], help="one bug: status, history, campaigns, versions, rechecks, files")
    show.add_argument("bug", metavar="ID")
    show.add_argument("--json", action="store_true")
    show.set_defaults(func=run_show)

    mark = sub.add_parser("mark", parents=[action_options], help="set a bug's status: filed URL | fixed VERSION | wontfix REASON | "
                                       "duplicate ID | new")
    mark.add_argument("bug", metavar="ID")
    mark.add_argument("status", choices=STATUS_CHOICES)
    mark.add_argument("detail", nargs="*", help="the URL, version, reason or bug id the status needs")
    mark.set_defaults(func=run_mark)

    importing = sub.add_parser("import", parents=[action_options], help="record the bugs of campaigns run before the database existed "
                                              "(or on another machine)")
    importing.add_argument("campaigns", nargs="+", metavar="CAMPAIGN", help="campaign name or directory")
    importing.set_defaults(func=run_import)

    export = sub.add_parser("export", parents=[action_options], help="the bug list as a Markdown or JSON table")
    _filters(export, "only bugs with this status (repeatable)")
    export.add_argument("--format", choices=("markdown", "json"), default="markdown", dest="fmt")
    export.add_argument("--output", "-o", type=Path, help="file to write (default: standard output)")
    export.set_defaults(func=run_export)

    recheck = sub.add_parser("recheck", parents=[action_options], help="run every open, filed or fixed bug's script on the installed "
                                             "libraries: which no longer reproduce?")
    _filters(recheck, "recheck bugs with this status (default: new, filed, fixed)")
    recheck.add_argument("--timeout", type=float, default=120.0, help="seconds per script (default 120)")
    recheck.add_argument("--json", action="store_true", help="one JSON object per bug")
    recheck.add_argument("--jobs", type=int, default=2, help="scripts run at once (default 2: one per core of a "
                         "small machine; each script is single-threaded)")
    recheck.add_argument("--python", metavar="INTERPRETER",
                         help="run every script with this interpreter (another environment, e.g. an older or newer "
                              "release of a library); default: the one each library needs")
    recheck.add_argument("--next", action="store_true",
                         help="run them on the newest code instead (.venv-next: the development builds; "
                              "docs/recheck.md): a new bug no longer shown there becomes fixed-upstream")
    recheck.add_argument("--next-python", metavar="PATH", help="with --next: the newest-code environment's "
                         "interpreter (default: $MEMO_NEXT_PYTHON, else .venv-next/bin/python)")
    recheck.set_defaults(func=run_recheck)

    issue = sub.add_parser("issue", parents=[action_options], help="the issue text, ready to file, of one bug")
    issue.add_argument("bug", metavar="ID")
    issue.set_defaults(func=run_issue)


def _filters(parser: argparse.ArgumentParser, status_help: str) -> None:
    parser.add_argument("--status", action="append", choices=STATUS_CHOICES, default=[], help=status_help)
    parser.add_argument("--library", action="append", default=[], help="only bugs of this library (repeatable)")
    parser.add_argument("--kind", action="append", default=[], help="only bugs of this kind (repeatable)")


def _open(args: argparse.Namespace, *, must_exist: bool = True) -> Any:
    from memo.bugdb import BugDatabase, resolve

    path = resolve(args.bugs_db)
    if path is None:
        raise UsageError("no bug database (--bugs-db none)")
    if must_exist and not path.exists():
        raise UsageError(f"no bug database at {path} (a campaign or `memo bugs import CAMPAIGN` creates it)")
    return BugDatabase(path)


def _filtered(db: Any, args: argparse.Namespace, default_status: tuple[str, ...] = ()) -> list[Any]:
    return db.bugs(status=args.status or default_status, library=args.library, kind=args.kind)


def _when(seconds: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(seconds)) + " UTC" if seconds else "-"


def run_list(args: argparse.Namespace) -> int:
    with _open(args) as db:
        bugs = _filtered(db, args)
    if args.json:
        print(json.dumps([bug.to_json() for bug in bugs], indent=1, sort_keys=True))
        return 0
    for bug in bugs:
        print(f"{bug.id}  {bug.status_text():<24.60}  {bug.library:<18} {bug.kind:<13} "
              f"{len(bug.campaigns)} campaign(s)  {bug.headline[:100]}")
    print(f"{len(bugs)} bug(s) in {db.path}", file=sys.stderr)
    return 0


def run_show(args: argparse.Namespace) -> int:
    with _open(args) as db:
        bug = db.get(args.bug)
        history, rechecks, files = db.history(bug.id), db.rechecks(bug.id), db.files(bug.id)
    if args.json:
        print(json.dumps({**bug.to_json(), "history": [h.to_json() for h in history],
                          "rechecks": [r.to_json() for r in rechecks],
                          "files": {name: len(data) for name, data in files.items()}}, indent=1, sort_keys=True))
        return 0
    print(f"{bug.id}: {bug.headline}")
    print(f"  status    {bug.status_text()}")
    print(f"  kind      {bug.kind} in {bug.library} ({bug.stage or '-'}); first recorded as {bug.origin}")
    for seen in bug.seen:
        versions = ", ".join(f"{k} {v}" for k, v in sorted(seen.versions.items())) or "versions not recorded"
        print(f"  seen      {seen.campaign_name} as {seen.campaign_bug}: {seen.occurrences} occurrence(s), "
              f"{_when(seen.first_seen)} .. {_when(seen.last_seen)}; {versions}")
    for change in history:
        print(f"  history   {_when(change.changed)}  {change.status} {change.detail}  ({change.note})")
    for check in rechecks:
        print(f"  recheck   {_when(check.checked)}  {check.result}: {check.detail[:120]}")
    print(f"  files     {', '.join(f'{name} ({len(data)} B)' for name, data in files.items()) or 'none'}"
          + (f"; left out: {' '.join(bug.files_left_out)}" if bug.files_left_out else ""))
    return 0


def run_mark(args: argparse.Namespace) -> int:
    with _open(args) as db:
        bug = db.mark(args.bug, args.status, " ".join(args.detail))
    print(f"{bug.id}: {bug.status_text()}")
    return 0


def run_import(args: argparse.Namespace) -> int:
    from memo.paths import campaign_dir
    from memo.store import DB_NAME, CampaignStore
    from memo.triage.remember import record_campaign

    directories = [campaign_dir(name) for name in args.campaigns]
    for directory in directories:
        if not (directory / DB_NAME).exists():
            raise UsageError(f"no campaign at {directory}")
    with _open(args, must_exist=False) as db:
        for directory in directories:
            with CampaignStore(directory) as store:
                recorded = record_campaign(db, store)
            print(f"{directory}: {recorded} bug(s) recorded in {db.path}")
        total = len(db.bugs())
    print(f"{total} bug(s) in the database")
    return 0


def run_export(args: argparse.Namespace) -> int:
    from memo.bugdb.export import FORMATS

    with _open(args) as db:
        text = FORMATS[args.fmt](_filtered(db, args))
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text, encoding="utf-8")
        print(args.output)
    else:
        sys.stdout.write(text)
    return 0


def _checker() -> Callable[..., Any]:
    try:
        from memo.bugdb.recheck import recheck_all
    except ImportError as exc:
        raise UsageError(f"this memo has no script checker (memo.bugdb.recheck: {exc})") from exc
    return recheck_all


def run_recheck(args: argparse.Namespace) -> int:
    import tempfile

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from memo.bugdb.files import export_bug_files
    from memo.bugdb.rechecking import record_outcome

    if args.timeout <= 0:
        raise UsageError("--timeout must be positive")
    if args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    if args.python and not Path(args.python).exists():
        raise UsageError(f"--python {args.python}: no such interpreter")
    upstream = bool(args.next or args.next_python)
    python = _next_interpreter(args) if upstream else args.python
    recheck_all = _checker()
    outcomes = []
    with _open(args) as db, tempfile.TemporaryDirectory(prefix="memo-recheck-") as scratch:
        bugs = _filtered(db, args, NEXT_DEFAULT_STATUSES if upstream else RECHECK_DEFAULT_STATUSES)
        if upstream:  # a library in its own environment (MXNet, retired) has no development build to run on
            bugs = [bug for bug in bugs if not _own_environment(bug.library)]
        # the database is read and written here only: the scripts run on threads, each in its own folder
        folders = {export_bug_files(db, bug.id, Path(scratch) / bug.id): bug
                   for bug in bugs if "repro.py" in db.files(bug.id)}
        console = Console(stderr=True)
        with Progress(TextColumn("recheck"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      TextColumn("{task.description}"), console=console, transient=False) as progress:
            task = progress.add_task("", total=len(bugs))

            def done(outcome: Any) -> None:
                outcomes.append(outcome)
                if not args.json:
                    progress.console.print(f"{outcome.id}: {outcome.result} on {outcome.installed}"
                                           + (f" ({outcome.change})" if outcome.change else ""), markup=False,
                                           highlight=False)
                progress.update(task, advance=1, description=f"{outcome.id} {outcome.result}")

            with_script = {bug.id for bug in folders.values()}
            for bug in bugs:
                if bug.id not in with_script:
                    done(record_outcome(db, bug, None, upstream=upstream))
            for folder, result in recheck_all(list(folders), python=python, timeout_s=args.timeout,
                                              jobs=args.jobs):
                done(record_outcome(db, folders[folder], result, upstream=upstream))
    outcomes.sort(key=lambda outcome: outcome.id)
    if args.json:
        print(json.dumps([outcome.to_json() for outcome in outcomes], indent=1, sort_keys=True))
    else:
        counts = {result: sum(1 for o in outcomes if o.result == result) for result in ("reproduces", "fixed", "error")}
        print(f"{len(outcomes)} rechecked: {counts['reproduces']} reproduce, {counts['fixed']} fixed, "
              f"{counts['error']} could not run")
    return 0


def _next_interpreter(args: argparse.Namespace) -> str:
    """``recheck --next``'s interpreter (:func:`memo.newest.next_python`); one line when there is none."""
    from memo.newest import next_python

    python = next_python(args.next_python)
    if python is None:
        raise UsageError("no newest-code environment: scripts/setup.sh builds .venv-next, or give --next-python PATH")
    return python


def _own_environment(library: str) -> bool:
    from memo.backends import find_spec

    spec = find_spec(library)
    return spec is not None and bool(spec.python)


def run_issue(args: argparse.Namespace) -> int:
    import tempfile

    from memo.bugdb import export_bug_files

    try:
        from memo.filing import issue_text
    except ImportError as exc:
        raise UsageError(f"this memo has no issue writer (memo.filing: {exc})") from exc
    with _open(args) as db, tempfile.TemporaryDirectory(prefix="memo-issue-") as scratch:
        bug = db.get(args.bug)
        folder = export_bug_files(db, bug.id, Path(scratch) / bug.origin)
        text = issue_text(folder)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0
