"""``memo run MODEL``: differential-test one model on every backend and print what the oracle says."""
from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memo.defaults import DEFAULT_TIMEOUT_S
from memo.device_flags import add_device_arguments, check_device_arguments
from memo.errors import UsageError

if TYPE_CHECKING:  # the command imports its machinery when it runs
    import numpy as np

    from memo.artifact import Artifact
    from memo.backends.result import ExecutionResult
    from memo.library_coverage.merge import LibraryFigures
    from memo.oracle import Comparison, Verdict
    from memo.training.check import TrainingCheck
    from memo.truth import Truth

# The handlers below import the rest of memo when they run: the CLI imports every command module to
# build its parser, and `memo --help` must not pay for the campaign, triage, Keras or rich.


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("run", help="differential-test one model (.keras, .h5 or Keras JSON)",
                                   description="Run one model on every backend, compare against the reference "
                                               "and print the verdicts. Exit 0 when it ran, 2 on bad input.")
    parser.add_argument("model", type=Path, help="a .keras, .h5 or Keras JSON architecture file")
    parser.add_argument("--backends", help="comma-separated backend names (default: all)")
    parser.add_argument("--backend-plugin", action="append", default=[], type=Path, metavar="PATH",
                        help="a plugin file declaring SPEC = BackendSpec(...); repeatable")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    add_device_arguments(parser)
    parser.add_argument("--out", type=Path, help="keep the artifact (model, inputs, outputs) in this directory")
    parser.add_argument("--seed", type=int, default=0, help="seed for generated weights and inputs (default 0)")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S,
                        help=f"seconds per backend per model (default {DEFAULT_TIMEOUT_S:g})")
    parser.add_argument("--unsafe", action="store_true",
                        help="allow layers that carry Python code (Lambda): runs code from the model file")
    parser.add_argument("--library-coverage", action="store_true",
                        help="measure the lines of each library's Python code the model reaches (docs/coverage.md)")
    parser.add_argument("--train", action="store_true",
                        help="also run the training check on the Keras backends: loss, gradients, an SGD and an Adam "
                             "step, BatchNormalization's statistics, each against the reference (docs/training.md)")
    parser.set_defaults(func=handle)


def _backend_names(text: str | None) -> list[str] | None:
    if text is None:
        return None
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise UsageError("--backends names no backend")
    return names


def handle(args: argparse.Namespace) -> int:
    from memo.artifact import prepare_artifact
    from memo.backends.executor import DifferentialExecutor
    from memo.model.files import load_model_file
    from memo.oracle import Thresholds, compare, judge, load_outputs

    if args.timeout <= 0:
        raise UsageError("--timeout must be positive")
    names = _backend_names(args.backends)
    loaded = load_model_file(args.model, safe_mode=not args.unsafe)
    if args.unsafe:  # the user trusts this file: let the orchestrator's Keras rebuild its Lambda layers too
        from memo.model.keras_runtime import allow_unsafe_deserialization

        allow_unsafe_deserialization()
    check_device_arguments(args)
    with DifferentialExecutor(names, plugins=args.backend_plugin, timeout_s=args.timeout, safe_mode=not args.unsafe,
                              reference=args.reference, gpu_precision=args.gpu_precision,
                              library_coverage=args.library_coverage) as executor, \
            tempfile.TemporaryDirectory(prefix="memo-run-") as scratch:
        artifact = prepare_artifact(loaded.ir, args.out or Path(scratch), seed=args.seed, weights=loaded.weights)
        result = executor.run(artifact, library=bool(args.library_coverage))
        thresholds = Thresholds()
        outputs = load_outputs(result)
        comparisons = compare(outputs, result.reference, thresholds) if result.reference in outputs else {}
        verdicts = judge(result, thresholds)
        truths = _truths(artifact, verdicts, outputs, result.reference, Path(scratch))
        training = _training(executor, artifact, Path(scratch)) if args.train else None
    library = _library_figures(result) if args.library_coverage else None
    if args.json:
        print(json.dumps({"model": str(args.model), "artifact": artifact.to_json() if args.out else None,
                          **({"library_coverage": library} if library is not None else {}),
                          **({"training": training.to_json()} if training is not None else {}),
                          "thresholds": thresholds.to_json(), "result": result.without_library_lines().to_json(),
                          "comparisons": {name: c.to_json() for name, c in comparisons.items()},
                          "verdicts": [{**v.to_json(), **({"truth": truths[i].to_json()} if i in truths else {})}
                                       for i, v in enumerate(verdicts)]}, indent=1))
    else:
        print_run(str(args.model), result, comparisons, verdicts, truths)
        if library is not None:
            from memo.report.library import library_table

            print(library_table(library))
        if training is not None:
            print_training(training)
    return 0


def _training(executor: Any, artifact: Artifact, scratch: Path) -> TrainingCheck:
    """The training check of the model on the executor's Keras backends that train (memo.training)."""
    from memo.training.check import run_training_check

    return run_training_check(executor, artifact, scratch / "training")


def print_training(check: TrainingCheck) -> None:
    """The training check's stages per backend and its verdicts, for a terminal."""
    from rich.console import Console
    from rich.table import Table

    from memo.training.judge import PREPARE
    from memo.backends.training import EVAL_STAGES, TRAINING_STAGES

    console = Console(width=max(Console().width, 110))
    table = Table(title=f"training check  (reference: {check.reference}, {check.seconds:.2f} s)")
    columns = ("load", PREPARE, *TRAINING_STAGES, *EVAL_STAGES)
    for column in ("library", *columns, "seconds"):
        table.add_column(column)
    for name, result in check.results.items():
        status = {stage.stage: stage.status for stage in result.stages}
        table.add_row(name, *[status.get(column, "-") for column in columns], f"{result.seconds:.2f}")
    console.print(table)
    judgement = check.judgement
    for note in judgement.notes:
        console.print(f"  made deterministic: {note}", highlight=False, markup=False)
    if judgement.left_out:
        console.print(f"training: not checked: {judgement.left_out}", highlight=False, markup=False)
    elif not judgement.verdicts:
        console.print("training: every backend agrees with the reference at every stage", highlight=False)
    for verdict in judgement.verdicts:
        console.print(f"training verdict: [bold]{verdict.kind}[/bold] {verdict.backend} at {verdict.stage}: "
                      f"{verdict.message}", highlight=False, markup=True)
        if verdict.truth is not None:
            errors = ", ".join(f"{name} {value:.3g}" for name, value in verdict.truth.errors.items())
            console.print(f"  float64 truth: {verdict.truth.decision}: {verdict.truth.reason}"
                          + (f" (errors in tolerances: {errors})" if errors else ""), highlight=False, markup=False)


def _library_figures(result: ExecutionResult) -> dict[str, LibraryFigures]:
    """``{library: {"covered": N, "total": M}}``: the lines of each measured library this model reached."""
    from memo.library_coverage.merge import LibraryCoverage

    merged = LibraryCoverage()
    merged.add(result.library_reached())
    return merged.figures()


def _truths(artifact: Artifact, verdicts: list[Verdict], outputs: dict[str, list[np.ndarray]], reference: str,
            scratch: Path) -> dict[int, Truth]:
    """The float64 truth of every numeric verdict (by its index), computed in one float64 worker; on a converted
    ONNX file, settled by ONNX's reference evaluator where special values alone left it open."""
    from memo.kinds import NUMERIC_KINDS
    from memo.triage.onnx_reference import ask_reference, settle
    from memo.triage.truth import TruthRunner, artifact_inputs, judge_by_truth

    numeric = [i for i, verdict in enumerate(verdicts) if verdict.kind in NUMERIC_KINDS]
    if not numeric or reference not in outputs:
        return {}
    inputs = artifact_inputs(artifact)
    runner = TruthRunner(scratch / "truth-logs")
    try:
        return {i: settle(judge_by_truth(runner, artifact.keras_path, inputs, outputs, verdicts[i], reference,
                                         scratch / f"truth-{i}"),
                          ask_reference(str(verdicts[i].backend), artifact, inputs, outputs, reference,
                                        scratch / f"onnx-reference-{i}")) for i in numeric}
    finally:
        runner.close()


def _number(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def print_run(model: str, result: ExecutionResult, comparisons: dict[str, Comparison], verdicts: list[Verdict],
              truths: dict[int, Truth] | None = None) -> None:
    """The per-library table and the verdicts, for a terminal."""
    from rich.console import Console
    from rich.table import Table

    console = Console(width=max(Console().width, 110))
    table = Table(title=f"{model}  (reference: {result.reference}, {result.seconds:.2f} s)")
    for column in ("library", "stage reached", "status", "max |diff|", "D_MAD", "seconds"):
        table.add_column(column, justify="right" if column in ("max |diff|", "D_MAD", "seconds") else "left")
    for name, backend in result.backends.items():
        comparison = comparisons.get(name)
        status = backend.status
        if backend.failure is not None and backend.failure.message and status != "ok":
            status += f" ({backend.failure.exc_type or ''})" if backend.failure.exc_type else ""
        table.add_row(name, backend.stage_reached, status,
                      _number(comparison.max_abs_diff if comparison else None, ".3g"),
                      _number(comparison.dmad if comparison else None, ".3f"), f"{backend.seconds:.2f}")
    console.print(table)
    if not verdicts:
        console.print("verdict: all backends agree with the reference")
    for index, verdict in enumerate(verdicts):
        console.print(f"verdict: [bold]{verdict.kind}[/bold] {verdict.backend} at {verdict.stage}: {verdict.message}",
                      highlight=False, markup=True)
        truth = (truths or {}).get(index)
        if truth is not None:
            errors = ", ".join(f"{name} {value:.3g}" for name, value in truth.errors.items())
            console.print(f"  float64 truth: {truth.decision}: {truth.reason} (errors in tolerances: {errors})",
                          highlight=False, markup=False)
