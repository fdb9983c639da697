"""The verdict's one serialization: the JSON layout memo has always stored (old campaigns load, a verdict read
back writes the same bytes), on real executions of the labelled corpus and on each shape of verdict."""
from __future__ import annotations

import json

import pytest

from memo.oracle import Verdict, judge
from memo.oracle.verdict import Attribution, Comparison, Failure, FrontEnd, OutputFigures
from tests.unit.test_corpus import CORPUS, load

CASES = sorted(path.stem for path in CORPUS.glob("*.json") if path.stem != "duplicate_pairs")


def test_every_corpus_verdict_reads_back_to_the_same_json() -> None:
    verdicts = []
    for case in CASES:
        result, outputs, _ir = load(case)
        verdicts += judge(result, outputs=outputs) + judge(result, outputs=outputs, special_values=True)
    # every part occurs, so the round trip below covers each
    assert all(v.failure for v in verdicts if v.kind == "crash" and v.backend != "keras")
    assert any(v.front_end for v in verdicts) and any(v.comparison for v in verdicts)
    assert any(v.numeric_kind for v in verdicts) and any(v.attribution and v.attribution.agreement for v in verdicts)
    for verdict in verdicts:
        text = json.dumps(verdict.metrics())
        again = Verdict.decode(verdict.kind, verdict.backend, verdict.stage, verdict.message, json.loads(text))
        assert again == verdict and json.dumps(again.metrics()) == text and not again.extra


FAILURE = Failure("crash", None, 1.5, signal=11)
FIGURES = Comparison("onnxruntime", mad=0.5, mismatched=3, elements=8, output=0, per_output=[
    OutputFigures(0, 3, 0.9, 0.5, 8, 1.0, 1e-3, 1e-4, flags=["inconsistency"])], output_name="out")
LAYOUTS = [
    (Verdict("crash", "mxnet", "execute", "m", failure=FAILURE, also_in=["x"]),
     '{"status": "crash", "exc_type": null, "seconds": 1.5, "signal": 11, "also_in": ["x"]}'),
    (Verdict("crash", "keras-tensorflow", "tf-function", "m", failure=Failure("error", "E", 0.2), converters=["t"]),
     '{"status": "error", "exc_type": "E", "seconds": 0.2, "converters": ["t"]}'),
    (Verdict("crash", "keras", "execute", "m", also_in_tf_function=["t"], front_end=FrontEnd(
        {"keras-jax": Failure("error", "E", 0.1, stage="execute", message="E: m")}, "E")),
     '{"backends": {"keras-jax": {"status": "error", "exc_type": "E", "seconds": 0.1, "stage": "execute",'
     ' "message": "E: m"}}, "exc_type": "E", "also_in_tf_function": ["t"]}'),
    (Verdict("invalid", "*", "-", "m", not_run=["a", "b"]), '{"backends": ["a", "b"]}'),
    (Verdict("special", "onnxruntime", "execute", "m", comparison=FIGURES, attribution=Attribution([["a"]]),
             numeric_kind="inconsistency"),
     '{"mad": 0.5, "mismatched": 3, "elements": 8, "output": 0, "per_output": [{"output": 0,'
     ' "mismatched": 3, "max_abs_diff": 0.9, "mad": 0.5, "elements": 8, "scale": 1.0, "tolerance": 0.001,'
     ' "mad_floor": 0.0001, "flags": ["inconsistency"]}], "output_name": "out", "agreement": [["a"]],'
     ' "numeric_kind": "inconsistency"}'),
    (Verdict("nan", "keras-export", "convert", "m",
             attribution=Attribution([["a"]], {"onnxruntime": FIGURES}, same_engine="ort")),
     '{"backends": {"onnxruntime": ' + json.dumps(FIGURES.to_json())
     + '}, "same_engine": "ort", "agreement": [["a"]]}'),
]


@pytest.mark.parametrize("verdict, stored", LAYOUTS)
def test_each_shape_of_verdict_keeps_its_stored_layout(verdict: Verdict, stored: str) -> None:
    assert json.dumps(verdict.metrics()) == stored
    assert Verdict.decode(verdict.kind, verdict.backend, verdict.stage, verdict.message, json.loads(stored)) == verdict


def test_keys_this_memo_does_not_write_are_kept() -> None:
    stored = {"status": "error", "exc_type": "E", "seconds": 0.1, "from_an_older_memo": 1}
    verdict = Verdict.decode("crash", "mxnet", "execute", "m", stored)
    assert verdict.failure == Failure("error", "E", 0.1) and verdict.metrics() == stored
