"""``memo coverage PATH...``: layer type / pair / parameter coverage (and the secondary criteria) of model
files or directories of them, each figure printed beside the catalogue's denominator. Seed recipes (the
bundled ImageNet seeds in ``seeds/``) count as the models they build.

The figures are headline coverage: what can change an inference result. Items that cannot (inference-identity
layers, initializer/regularizer/constraint settings: docs/coverage.md) are printed on their own line."""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from memo.errors import UsageError
from memo.json_types import JsonObject

# The handlers below import the rest of memo when they run: the CLI imports every command module to
# build its parser, and `memo --help` must not pay for the campaign, triage, Keras or rich.

MODEL_SUFFIXES = (".keras", ".h5", ".hdf5", ".json")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("coverage", help="coverage of model files against the layer catalogue, or a "
                                                    "campaign's library code coverage (--library)")
    parser.add_argument("paths", nargs="*", type=Path, metavar="PATH",
                        help=".keras, .h5 or .json model files (seed recipes included), or directories holding them")
    parser.add_argument("--library", metavar="CAMPAIGN",
                        help="print the library code coverage of a campaign run with --library-coverage instead: per "
                             "library covered/total/%%, the seeds' baseline, the modules with the most new lines")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    parser.add_argument("--no-shapes", action="store_true",
                        help="skip shape inference (input rank and size criteria then count model inputs only)")
    parser.add_argument("--unsafe", action="store_true", help="allow layers that carry Python code (Lambda)")
    parser.set_defaults(func=handle)


def model_files(paths: list[Path]) -> list[Path]:
    """The model files named, and those found (recursively, sorted) in the directories named."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in MODEL_SUFFIXES)
            if not found:
                raise UsageError(f"{path}: no .keras, .h5 or .json model files in this directory")
            files.extend(found)
        elif path.exists():
            files.append(path)
        else:
            raise UsageError(f"{path}: no such file or directory")
    return files


def measure(files: list[Path], *, shapes: bool, safe_mode: bool) -> JsonObject:
    from memo.coverage import CoverageTracker, model_coverage, unknown_layers
    from memo.model.build import infer_shapes
    from memo.model.files import load_model_file
    from memo.seeds.loading import recipe_model

    tracker = CoverageTracker()
    unknown: dict[str, list[str]] = {}
    per_model = []
    for path in files:
        ir = recipe_model(path)
        if ir is None:
            ir = load_model_file(path, safe_mode=safe_mode).ir
        delta = tracker.add(model_coverage(ir, infer_shapes(ir) if shapes else None))
        for name in unknown_layers(ir):
            unknown.setdefault(name, []).append(str(path))
        per_model.append({"path": str(path), "layers": len(ir.body), "new": delta.counts(),
                          "new_inert": delta.inert_counts()})
    return {"models": per_model, "counts": {k: list(v) for k, v in tracker.counts().items()},
            "inert": {k: list(v) for k, v in tracker.inert_counts().items()},
            "unknown_layers": unknown, "coverage": tracker.to_json()}


def inert_line(inert: JsonObject, names: tuple[str, ...]) -> str:
    """``inert (cannot change an inference result; not counted above): types 2/21, pairs 3/2822, ...``."""
    figures = ", ".join(f"{name} {inert[name][0]}/{inert[name][1]}" for name in names if name in inert)
    return f"inert (cannot change an inference result; not counted above): {figures}"


def library_coverage(campaign: str, as_json: bool) -> int:
    """``memo coverage --library CAMPAIGN``."""
    from memo.paths import campaign_dir
    from memo.report.library import library_data, library_text
    from memo.store import CampaignStore

    with CampaignStore(campaign_dir(campaign)) as store:
        data = library_data(store)
    if data is None:
        raise UsageError(f"campaign {campaign} recorded no library coverage (run memo fuzz with --library-coverage)")
    print(json.dumps(data, indent=1) if as_json else library_text(data))
    return 0


def handle(args: argparse.Namespace) -> int:
    if args.library is not None:
        if args.paths:
            raise UsageError("--library CAMPAIGN takes no model paths")
        return library_coverage(args.library, args.json)
    if not args.paths:
        raise UsageError("name model files or directories, or a campaign with --library CAMPAIGN")
    report = measure(model_files(args.paths), shapes=not args.no_shapes, safe_mode=not args.unsafe)
    if args.json:
        print(json.dumps(report, indent=1))
        return 0
    from rich.console import Console
    from rich.table import Table

    from memo.coverage import PRIMARY

    table = Table(title=f"memo coverage of {len(report['models'])} model(s)",
                  caption="items that can change an inference result (docs/coverage.md)")
    for column, justify in (("criterion", "left"), ("covered", "right"), ("denominator", "right"),
                            ("percent", "right")):
        table.add_column(column, justify=justify)
    for name, (covered, total) in report["counts"].items():
        label = name if name in PRIMARY else f"{name} (secondary)"
        table.add_row(label, str(covered), str(total), f"{100.0 * covered / total:.1f} %" if total else "-")
    console = Console()
    console.print(table)
    console.print(inert_line(report["inert"], PRIMARY), markup=False)
    if report["unknown_layers"]:
        console.print("layers outside the catalogue (not counted): "
                      + ", ".join(f"{name} ({len(paths)} model(s))" for name, paths in
                                  sorted(report["unknown_layers"].items())), markup=False)
    return 0
