"""Deduplication over a campaign store: one bug per signature, N occurrences; unsupported kept apart."""
from __future__ import annotations

from pathlib import Path

from memo.oracle import Verdict
from memo.triage import dedup
from tests.unit.triage_store import add_finding, bug_kinds, make_campaign, model


def test_findings_with_one_signature_are_one_bug_with_occurrences(tmp_path: Path) -> None:
    with make_campaign(tmp_path / "c") as store:
        update = dedup.update_bugs(store)
        assert len(update.all) == len(update.new) == 3 and not update.stale
        assert bug_kinds(store) == [("crash", "onnxruntime", 1), ("crash", "onnxruntime", 3), ("nan", "keras-jax", 1)]
        bug = next(b for b in store.triage.load_bugs() if b.occurrences == 3)
        assert bug.parts["exception"] == "RuntimeError" and bug.first_mutant == 1
        assert bug.id.startswith("crash-onnxruntime-")
        assert sorted(store.triage.bug_mutants(bug.id)) == [1, 2, 3]


def test_deduplication_is_idempotent(tmp_path: Path) -> None:
    with make_campaign(tmp_path / "c") as store:
        first = dedup.update_bugs(store)
        second = dedup.update_bugs(store)
        assert second.all == first.all and second.new == [] and second.stale == []
        assert sum(len(store.triage.bug_mutants(bug_id)) for bug_id in store.triage.bug_ids()) == 5


def test_localization_moves_a_numeric_finding_to_its_layer_bug(tmp_path: Path) -> None:
    with make_campaign(tmp_path / "c") as store:
        dedup.update_bugs(store)
        nan_verdict = store.verdicts(("nan",))[0].id
        store.triage.save_localization(nan_verdict, "softmax_1", "Softmax", {"reason": "test"})
        update = dedup.update_bugs(store)
        assert len(update.new) == 1 and len(update.stale) == 1
        nan_bug = next(b for b in store.triage.load_bugs() if b.kind == "nan")
        assert nan_bug.parts["layer"] == "Softmax" and nan_bug.layer_class == "Softmax"


def test_unsupported_findings_are_grouped_by_library_and_feature_not_counted_as_bugs(tmp_path: Path) -> None:
    with make_campaign(tmp_path / "c") as store:
        groups = dedup.unsupported_groups(store)
        assert [(g["library"], g["feature"], g["count"]) for g in groups] == [("tf2onnx", "Erfinv", 2)]
        dedup.update_bugs(store)
        assert all(b.kind != "unsupported" for b in store.triage.load_bugs())


def test_a_finding_whose_execution_is_memos_own_failure_document_still_gets_a_bug(tmp_path: Path) -> None:
    with make_campaign(tmp_path / "c") as store:
        add_finding(store, 6, model("Dense"), {"error": "OSError: no space", "traceback": "Traceback ..."},
                    [("crash", "onnxruntime", "execute", "RuntimeError: boom")])
        row = next(r for r in store.findings({"crash"}) if r.mutant_id == 7)
        assert row.result is None and isinstance(row.verdict, Verdict) and row.verdict.message == "RuntimeError: boom"
        dedup.update_bugs(store)
        bug = next(b for b in store.triage.load_bugs() if b.first_mutant == 7)
        assert bug.parts["exception"] == "" and bug.parts["message"] == "RuntimeError: boom"
