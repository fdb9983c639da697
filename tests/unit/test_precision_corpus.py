"""The float64 verdict on labelled numeric findings of real campaigns (tests/corpus/precision/, written by
tests/corpus/capture_precision.py): each label (with the reader's reason) must still come out."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from memo.triage.onnx_reference import EVALUATED, judge_opinion, settle
from memo.triage.truth import load_arrays
from memo.truth import assess_runs

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "precision"
LABELS: dict[str, dict] = json.loads((CORPUS / "labels.json").read_text()) if (CORPUS / "labels.json").exists() else {}


def test_the_corpus_has_every_label_it_needs() -> None:
    labels = {case["label"] for case in LABELS.values()}
    assert {"real", "wrong-library", "float-noise", "ill-conditioned", "documented"} <= labels, labels
    assert all(case["reason"].strip() for case in LABELS.values())
    assert sum(path.stat().st_size for path in CORPUS.iterdir()) < 150_000


@pytest.mark.parametrize("case", sorted(LABELS))
def test_a_labelled_finding_gets_the_decision_its_label_expects(case: str) -> None:
    label = LABELS[case]
    outputs, runs = load_arrays(CORPUS / f"{case}.npz")
    evaluated = outputs.pop(EVALUATED, None)  # ONNX's reference evaluator on the converted file, where it ran
    verdict = assess_runs(outputs, runs, label["accused"], label["witnesses"], label["reference"],
                          special_inside=bool(label.get("special_inside")))
    if evaluated is not None:
        where = label["onnx_reference"]
        opinion = judge_opinion({name: outputs[name] for name in label["accused"]}, evaluated,
                                outputs[label["reference"]], label["reference"], where["file"], where["converter"])
        verdict = settle(verdict, opinion)
    assert verdict.decision in label["expected"], (label["reason"], verdict.to_json())


def test_the_corpus_holds_a_case_only_the_operators_contract_decides() -> None:
    contract = [name for name, case in LABELS.items() if case.get("onnx_reference") and case.get("special_inside")]
    assert contract and all(LABELS[name]["decision_when_captured"] == "ill-conditioned" for name in contract)
