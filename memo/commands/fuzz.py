"""``memo fuzz``: run (or resume) a coverage-guided campaign and end with the HTML report."""
from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memo.defaults import (DEFAULT_DIRECTED_SHARE, DEFAULT_MAX_PARENT_COST, DEFAULT_MAX_PARENT_LAYERS,
                           DEFAULT_MAX_PARENT_RECURRENT, DEFAULT_PROGRESS_EVERY_S, DEFAULT_TIMEOUT_S,
                           DEFAULT_TRAIN_BUDGET, DEFAULT_TRAIN_SHARE, LIBRARY_TRACE_EVERY)
from memo.diskspace import format_size, is_disk_full, parse_size, tree_bytes
from memo.device_flags import add_device_arguments, check_device_arguments
from memo.errors import UsageError

if TYPE_CHECKING:
    from memo.campaign.config import CampaignConfig
    from memo.campaign.stop import StopFlag

# The handlers below import the rest of memo when they run: the CLI imports every command module to
# build its parser, and `memo --help` must not pay for the campaign, triage, Keras or rich.


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("fuzz", help="run a coverage-guided fuzzing campaign",
                              description="Mutate the seed models guided by layer coverage, run every diverse "
                                          "mutant on every backend, store findings, and write the report.")
    budget = p.add_argument_group("budget (the first reached ends the campaign)",
                                  "A time budget is a slot: fuzzing, the models in flight and the final triage pass "
                                  "all end within it (the final part gets a tenth, 15 s to 20 min; the split is "
                                  "printed at the start). Triage left over: memo report NAME --triage.")
    budget.add_argument("--hours", type=float)
    budget.add_argument("--minutes", type=float)
    budget.add_argument("--iterations", type=int, help="number of mutants to generate")
    budget.add_argument("--final-triage", type=float, metavar="MINUTES",
                        help="give the models in flight and the final triage pass their own bound, after the whole "
                             "budget of fuzzing (0: none, leave triage to memo report NAME --triage)")
    p.add_argument("--seed", type=int, default=0,
                   help="random seed: with the same --jobs and flags, the same seed gives the same mutants (README)")
    p.add_argument("--backends", help="comma-separated backends (default: all default backends)")
    p.add_argument("--backend-plugin", action="append", default=[], metavar="PATH", help="load a backend plugin")
    add_device_arguments(p)
    p.add_argument("--seeds-dir", default="seeds", help="directory of seed models (default: seeds)")
    p.add_argument("--out", help="campaign directory (default: campaigns/NAME)")
    p.add_argument("--name", help="campaign name (default: date-time and seed)")
    p.add_argument("--jobs", type=int, help="models executed at once; every three share one set of warm "
                   "workers (default: cores + 1, at most three per 12 GB of memory)")
    p.add_argument("--search", default="mh", help="seed selection: mh (default), random, mcts")
    p.add_argument("--ops", help="comma-separated mutation operators (default: MEMO's seven and memo's own; "
                                 "LEMON's only when named, docs/mutation.md)")
    p.add_argument("--execute-all", action="store_true", help="also execute mutants that add no coverage")
    p.add_argument("--no-execute", action="store_true", help="generate mutants and measure coverage only")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="seconds a backend may spend on one "
                   f"model (default {DEFAULT_TIMEOUT_S:g}; a typical reduced-seed mutant takes under 3)")
    p.add_argument("--max-parent-layers", type=int, default=DEFAULT_MAX_PARENT_LAYERS, metavar="N",
                   help="a diverse mutant with more layers is executed but not mutated further, so models stay "
                        f"cheap to run over long campaigns (default {DEFAULT_MAX_PARENT_LAYERS}; 0: no bound)")
    p.add_argument("--max-parent-cost", type=float, default=DEFAULT_MAX_PARENT_COST, metavar="MACS",
                   help="likewise for a mutant whose estimated multiply-adds per sample exceed MACS "
                        f"(default {DEFAULT_MAX_PARENT_COST:.0e}; 0: no bound)")
    p.add_argument("--max-parent-recurrent", type=int, default=DEFAULT_MAX_PARENT_RECURRENT, metavar="N",
                   help="likewise for a mutant with more than N recurrent layers (a Bidirectional counting two) "
                        f"and more than its parent (default {DEFAULT_MAX_PARENT_RECURRENT}; 0: no bound)")
    p.add_argument("--directed", type=float, default=DEFAULT_DIRECTED_SHARE, metavar="SHARE",
                   help="share of the mutations made by the directed operator Target on the model the search "
                        f"chose (default {DEFAULT_DIRECTED_SHARE:g}; 0: only the operator the search chose)")
    p.add_argument("--max-disk", metavar="SIZE",
                   help="budget for the campaign's regenerable artifacts under mutants/NAME, e.g. 2G or 500M "
                        "(default 2G; 0: none): over it the oldest artifacts no bug needs are deleted, and with "
                        "none left the campaign stops cleanly (exit 3) like a full disk does")
    p.add_argument("--library-coverage", nargs="?", const="measure", default="", choices=("measure", "feedback"),
                   help="measure the lines of each library's Python code the models reach (docs/coverage.md); "
                        "feedback: a mutant reaching new lines also becomes a parent, and every 4th valid mutant "
                        "without model-level coverage is executed too")
    p.add_argument("--library-coverage-every", type=int, default=LIBRARY_TRACE_EVERY, metavar="N",
                   help=f"with --library-coverage: trace every seed and one executed mutant in N (default "
                        f"{LIBRARY_TRACE_EVERY}: tracing every model costs about +58 %% CPU per model; 1: all)")
    p.add_argument("--train-share", type=float, default=DEFAULT_TRAIN_SHARE, metavar="F",
                   help="run the training check (loss, gradients, SGD and Adam steps, BatchNormalization's statistics "
                        "on the Keras backends: docs/training.md) on this share of the executed models the reference "
                        f"ran (default {DEFAULT_TRAIN_SHARE:g}; 0: none); its findings are stored, triaged and reported")
    p.add_argument("--train-budget", type=float, default=DEFAULT_TRAIN_BUDGET, metavar="F",
                   help="the training checks' seconds at most this share of the inference runs' seconds (default "
                        f"{DEFAULT_TRAIN_BUDGET:g}): a model chosen over it is not checked")
    p.add_argument("--no-reduce", action="store_true", help="mutate the original seeds, not the reduced ones")
    p.add_argument("--unsafe", action="store_true", help="allow seed files whose layers carry code (Lambda)")
    p.add_argument("--bugs-db", metavar="PATH", help="the bug database shared across campaigns (default: "
                   "$MEMO_BUGS_DB, else ~/.local/share/memo/bugs.sqlite; none: do not use one)")
    p.add_argument("--next-python", metavar="PATH",
                   help="the interpreter of the newest-code environment every reproducing bug is rerun in before it "
                        "is called ready to file (default: $MEMO_NEXT_PYTHON, else .venv-next, which the set-up "
                        "builds with the libraries' development builds; none: no such check; docs/recheck.md)")
    p.add_argument("--resume", metavar="CAMPAIGN", help="continue a stopped campaign (name or directory)")
    p.add_argument("--cluster", metavar="ADDRESS",
                   help="execute on a Ray cluster: auto (the one `ray start` made), HOST:PORT, ray://HOST:PORT, or "
                        "local:N (N nodes on this machine, for trials); --jobs is then the models run at once "
                        "across it (default: every node's share by the local rule). See docs/cluster.md")
    view = p.add_mutually_exclusive_group()
    view.add_argument("--quiet", action="store_true", help="print only the final summary")
    view.add_argument("--json", action="store_true", help="print one JSON line per event")
    p.add_argument("--progress-every", type=float, default=DEFAULT_PROGRESS_EVERY_S, metavar="SECONDS",
                   help="without a terminal (cron, CI, > log): seconds between progress lines "
                        f"(default {DEFAULT_PROGRESS_EVERY_S:g}); each new bug has its own line at once")
    p.set_defaults(func=run)


def _budget_seconds(args: argparse.Namespace) -> float | None:
    parts = [args.hours * 3600 if args.hours else None, args.minutes * 60 if args.minutes else None]
    given = [part for part in parts if part is not None]
    return min(given) if given else None


def _split_budget(args: argparse.Namespace) -> tuple[float | None, float]:
    """(fuzzing seconds, final phase seconds): the time budget is a slot both fit in, unless --final-triage."""
    from memo.campaign.slot import split_budget

    final = getattr(args, "final_triage", None)
    if final is not None and final < 0:
        raise UsageError(f"--final-triage must be 0 or more minutes (got {final:g})")
    return split_budget(_budget_seconds(args), None if final is None else final * 60)


def _unused_name(base: str, directory_of) -> str:
    name, suffix = base, 1
    while directory_of(name).exists():
        suffix += 1
        name = f"{base}-{suffix}"
    return name


def _disk_stop_message(reason: str, directory: Path, config: CampaignConfig) -> str:
    """One line: why the campaign stopped, what to delete, how to continue."""
    from memo.campaign.disk import STOP_DISK_FULL, regenerable_paths
    from memo.paths import campaign_dir
    from memo.store import CampaignStore

    ref = config.name if campaign_dir(config.name).resolve() == directory.resolve() else str(directory)
    try:
        with CampaignStore(directory) as store:
            freeable = sum(tree_bytes(path) for path in regenerable_paths(store))
    except Exception:  # the message must come out even when the database cannot be read
        freeable = 0
    if reason == STOP_DISK_FULL:
        what = "disk full: stopped cleanly; free space"
    else:
        what = (f"disk budget of {format_size(config.max_disk_bytes)} reached with no regenerable artifact left "
                "to delete: stopped cleanly; raise --max-disk or free space")
    return (f"memo: {what} (memo clean {ref} frees {format_size(freeable)} of regenerable artifacts) and run "
            f"memo fuzz --resume {ref}")


def _cluster_executor(address: str | None, config: "CampaignConfig", stop: "StopFlag", *, jobs_given: bool) -> Any:
    """The cluster's executor for ``--cluster`` (None without it, or with nothing to execute). Without
    ``--jobs`` a new campaign runs as many models at once as the cluster's ready nodes take."""
    if not address or not config.execute:
        return None
    from memo.cluster.connect import ClusterSession
    from memo.cluster.executor import ClusterExecutor

    print(f"memo: connecting to the Ray cluster {address} and starting memo's workers on its nodes", file=sys.stderr,
          flush=True)
    session = ClusterSession(address)
    executor = ClusterExecutor(session, backends=config.backends, plugins=[Path(p) for p in config.plugins],
                               timeout_s=config.timeout_s, safe_mode=config.safe_mode, stopping=lambda: bool(stop),
                               reference=config.reference, gpu_precision=config.gpu_precision)
    if not jobs_given:
        config.jobs = max(1, executor.slots())
    return executor


def _bugs_db(args: argparse.Namespace) -> str | None:
    from memo.bugdb.location import resolve

    path = resolve(args.bugs_db)
    return str(path.resolve()) if path is not None else None


def _next_python(args: argparse.Namespace) -> str:
    """The newest-code interpreter the campaign's triage reruns bugs with ("" for none): :mod:`memo.newest`."""
    from memo.newest import next_python

    return next_python(args.next_python) or ""


def _check_bugs_db(path: str | None) -> None:
    """Stop before the campaign starts when its bug database is in another memo's format (one line); an older one
    that a migration brings up to date is migrated now."""
    if path is None or not Path(path).exists():
        return
    from memo.bugdb import BugDatabase

    BugDatabase(Path(path)).close()


def _max_disk(args: argparse.Namespace) -> int | None:
    return None if args.max_disk is None else parse_size(args.max_disk)


def _check_arguments(args: argparse.Namespace) -> None:
    """Every usage error the arguments alone show, before anything starts."""
    if args.progress_every <= 0:
        raise UsageError(f"--progress-every must be a positive number of seconds (got {args.progress_every:g})")
    for plugin in args.backend_plugin:
        if not Path(plugin).is_file():
            raise UsageError(f"backend plugin {plugin}: no such file")
    check_device_arguments(args)
    if args.jobs is not None and args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    if not 0.0 <= args.directed <= 1.0:
        raise UsageError(f"--directed must be a share between 0 and 1 (got {args.directed:g})")
    if getattr(args, "cluster", None):
        from memo.cluster.connect import parse_address

        parse_address(args.cluster)  # a bad address fails before anything starts


def _resumed_config(args: argparse.Namespace, max_disk: int | None) -> tuple[Path, "CampaignConfig"]:
    """The campaign ``--resume`` names and its stored configuration, with what this command changes saved."""
    from memo.campaign.config import Budget, CampaignConfig
    from memo.paths import campaign_dir
    from memo.store import CampaignStore

    directory = campaign_dir(args.resume)
    with CampaignStore(directory) as store:
        saved = store.get_meta("config")
    if saved is None:
        raise UsageError(f"{directory} holds no campaign configuration")
    config = CampaignConfig.from_json(saved)
    seconds, final_s = _split_budget(args)
    if seconds is not None or args.iterations:
        # a new budget on resume counts from the campaign's start, like the original one
        config.budget = Budget(seconds=seconds, iterations=args.iterations)
        config.triage_budget_s = final_s
    if max_disk is not None or args.bugs_db or args.next_python:
        if max_disk is not None:
            config.max_disk_bytes = max_disk
        if args.bugs_db:
            config.bugs_db = _bugs_db(args)
        if args.next_python:
            config.next_python = _next_python(args)
        with CampaignStore(directory) as store:
            store.set_meta("config", config.to_json())
    return directory, config


def _new_config(args: argparse.Namespace, max_disk: int | None) -> tuple[Path, "CampaignConfig"]:
    """A new campaign's folder and configuration, from the arguments."""
    from memo.campaign.config import DEFAULT_MAX_DISK, Budget, CampaignConfig, default_jobs, default_name
    from memo.paths import campaign_dir

    name = args.name or _unused_name(default_name(args.seed), campaign_dir)
    fuzzing_s, final_s = _split_budget(args)
    config = CampaignConfig(
        name=name, seed=args.seed, budget=Budget(seconds=fuzzing_s, iterations=args.iterations),
        backends=[b.strip() for b in args.backends.split(",") if b.strip()] if args.backends else None,
        plugins=[os.path.abspath(p) for p in args.backend_plugin], seeds_dir=args.seeds_dir,
        search=args.search, operators=[o.strip() for o in args.ops.split(",")] if args.ops else None,
        execute_all=args.execute_all, execute=not args.no_execute, jobs=args.jobs or default_jobs(),
        timeout_s=args.timeout, safe_mode=not args.unsafe,
        reduce_seeds=not args.no_reduce, max_parent_layers=args.max_parent_layers,
        max_parent_cost=int(args.max_parent_cost),
        max_parent_recurrent=args.max_parent_recurrent, directed_share=args.directed,
        triage_budget_s=final_s, reference=args.reference,
        gpu_precision=args.gpu_precision, bugs_db=_bugs_db(args), next_python=_next_python(args),
        library_coverage=args.library_coverage, library_every=args.library_coverage_every,
        train_share=args.train_share,
        train_budget=args.train_budget,
        max_disk_bytes=DEFAULT_MAX_DISK if max_disk is None else max_disk)
    directory = Path(args.out) if args.out else campaign_dir(name)
    if (directory / "campaign.sqlite").exists():
        raise UsageError(f"campaign {directory} exists already; use --resume {directory} or another --name")
    return directory, config


def _exit_code(stopped: str | None, directory: Path, config: "CampaignConfig", cluster_address: str | None) -> int:
    """The command's exit status for why the campaign stopped, with the one line a stop needs on stderr."""
    from memo.campaign.disk import DISK_STOPS, EXIT_DISK
    from memo.cluster import CLUSTER_LOST, EXIT_CLUSTER

    if stopped and stopped.startswith(CLUSTER_LOST):
        print(f"memo: {stopped}: stopped cleanly; when nodes are back, run memo fuzz --resume {config.name} "
              f"--cluster {cluster_address}", file=sys.stderr, flush=True)
        return EXIT_CLUSTER
    if stopped in DISK_STOPS:
        print(_disk_stop_message(stopped, directory, config), file=sys.stderr, flush=True)
        return EXIT_DISK
    return 130 if stopped == "interrupted" else 0


def run(args: argparse.Namespace) -> int:
    started = time.monotonic()  # a time budget's slot starts now: the start-up is inside it
    from memo.campaign.campaign import Campaign
    from memo.campaign.disk import EXIT_DISK, space_warning
    from memo.campaign.progress import make_reporter
    from memo.campaign.stop import StopFlag
    from memo.paths import MUTANTS_DIR

    max_disk = _max_disk(args)
    _check_arguments(args)
    reporter = make_reporter("json" if args.json else "quiet" if args.quiet else None, every_s=args.progress_every)
    directory, config = _resumed_config(args, max_disk) if args.resume else _new_config(args, max_disk)
    _check_bugs_db(config.bugs_db)
    reporter.starting(config.name)
    stop = StopFlag()
    cluster_address = getattr(args, "cluster", None)
    executor = _cluster_executor(cluster_address, config, stop, jobs_given=args.jobs is not None or bool(args.resume))
    try:
        campaign = Campaign(directory, config, reporter, resume=bool(args.resume), executor=executor, stop=stop,
                            started=started)
    except BaseException as exc:
        if executor is not None:
            executor.close()
        if not isinstance(exc, (OSError, sqlite3.Error)) or not is_disk_full(exc):
            raise
        again = f"memo fuzz --resume {args.resume}" if args.resume else "memo fuzz again"
        print(f"memo: disk full: the campaign could not start; free space and run {again}", file=sys.stderr)
        return EXIT_DISK
    warning = space_warning([MUTANTS_DIR, directory], config.max_disk_bytes) if config.execute else None
    if warning:
        print(warning, file=sys.stderr, flush=True)
    try:
        summary = campaign.run()
    finally:
        reporter.close()
    return _exit_code(summary.get("stopped_because"), directory, config, cluster_address)
