"""Add a campaign's numeric bug to the labelled precision corpus (tests/corpus/precision/).

    .venv/bin/python tests/corpus/capture_precision.py BUG_FOLDER LABEL "REASON" [--name NAME]

LABEL is what a reader who did not write memo concluded from the bug folder (its reduced model, repro script
and float64 errors): ``real`` (a defect of the library blamed), ``wrong-library`` (real, but another library is
wrong), ``float-noise``, ``ill-conditioned`` or ``documented``. The case keeps the arrays the float64 verdict was
computed from (the folder's ``truth.npz``: every backend's float32 outputs, the float64 outputs and the perturbed
float64 outputs; ONNX's reference evaluator's outputs on the converted file where it ran, ``onnx_reference.npz``),
the sides the verdict took, and the label with its reason; ``tests/unit/test_precision_corpus.py``
checks that :func:`memo.truth.assess` still comes to the decision the label expects, with no library installed.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

import numpy as np

CORPUS = Path(__file__).resolve().parent / "precision"
LABELS = CORPUS / "labels.json"
# The float64 decision each label expects (a real defect of the blamed library must be confirmed; ...).
EXPECTED = {"real": ["confirmed"], "wrong-library": ["contradicted"], "float-noise": ["noise", "ill-conditioned"],
            "ill-conditioned": ["ill-conditioned"], "documented": ["confirmed", "contradicted", "noise", "undecided"]}
MAX_CASE_BYTES = 40_000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", type=Path)
    parser.add_argument("label", choices=sorted(EXPECTED))
    parser.add_argument("reason")
    parser.add_argument("--name", help="case name (default: the bug id)")
    args = parser.parse_args(argv)
    bug = json.loads((args.folder / "bug.json").read_text())
    truth = bug.get("truth")
    arrays = args.folder / "truth.npz"
    if not truth or not arrays.exists():
        print(f"{args.folder}: no float64 truth with its arrays (run `memo truth` on it first)", file=sys.stderr)
        return 2
    if arrays.stat().st_size > MAX_CASE_BYTES:
        print(f"{args.folder}: truth.npz is {arrays.stat().st_size} bytes, over {MAX_CASE_BYTES}", file=sys.stderr)
        return 2
    name = args.name or args.folder.name
    CORPUS.mkdir(exist_ok=True)
    evaluated = args.folder / "onnx_reference.npz"  # ONNX's reference evaluator on the same file, when it ran
    opinion = bug.get("onnx_reference") or {}
    if evaluated.exists() and opinion:
        with np.load(arrays) as first, np.load(evaluated) as second:
            np.savez_compressed(CORPUS / f"{name}.npz", **{key: first[key] for key in first.files},
                                **{key: second[key] for key in second.files})
    else:
        shutil.copyfile(arrays, CORPUS / f"{name}.npz")
    labels = json.loads(LABELS.read_text()) if LABELS.exists() else {}
    labels[name] = {"label": args.label, "reason": args.reason, "library": bug.get("library"),
                    "kind": bug.get("kind"), "layers": [layer["class_name"] for layer in json.loads(
                        (args.folder / "ir.json").read_text())["layers"] if layer["class_name"] != "InputLayer"],
                    "accused": truth["accused"], "witnesses": truth["witnesses"],
                    "reference": bug.get("reference") or "keras-tensorflow",
                    "decision_when_captured": truth["decision"], "expected": EXPECTED[args.label],
                    "special_inside": bool(truth.get("special_values"))}
    if evaluated.exists() and opinion:
        labels[name]["onnx_reference"] = {"file": opinion.get("file"), "converter": opinion.get("converter")}
    LABELS.write_text(json.dumps(labels, indent=1, sort_keys=True) + "\n")
    print(f"{name}: {args.label} (float64 said {truth['decision']}; the label expects {EXPECTED[args.label]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
