"""The float64 verdict on labelled numeric findings of real campaigns (tests/corpus/precision/, written by
tests/corpus/capture_precision.py): each label (with the reader's reason) must still come out."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

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
    verdict = assess_runs(outputs, runs, label["accused"], label["witnesses"], label["reference"])
    assert verdict.decision in label["expected"], (label["reason"], verdict.to_json())
