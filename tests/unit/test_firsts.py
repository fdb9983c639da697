"""Which model first showed each signature: its own memory (not the disk budget's), rebuilt from the stored
executions by the same walk that gives the disk budget its counts."""
from __future__ import annotations

from pathlib import Path

from memo.campaign.disk import DiskBudget, stored_signatures
from memo.campaign.firsts import ExecutionSignatures, FirstShown
from memo.store import CampaignStore
from tests.unit.triage_store import add_finding, crash_result, model


def test_the_first_model_to_show_a_signature_owns_it() -> None:
    firsts = FirstShown.of([ExecutionSignatures(3, bugs=("crash-a",)),
                            ExecutionSignatures(5, bugs=("crash-a", "crash-b"), declines=("tf2onnx-erfc",))])
    assert firsts.first == {"crash-a": 3, "crash-b": 5, "tf2onnx-erfc": 5}
    assert firsts.known_before(5, ["crash-a", "crash-b", "tf2onnx-erfc"]) == {"crash-a"}
    firsts.remember(["crash-b", "crash-c"], 9)
    assert firsts.known_before(9, ["crash-b", "crash-c"]) == {"crash-b"}, "crash-b stays 5's, crash-c is 9's"


def test_the_stored_walk_feeds_the_memory_and_the_disk_budget_alike(tmp_path: Path) -> None:
    with CampaignStore(tmp_path / "campaigns" / "c", create=True) as store:
        kept = tmp_path / "mutants" / "c" / "1"
        kept.mkdir(parents=True)
        (kept / "model.keras").write_bytes(b"x" * 100)
        crash = [("crash", "onnxruntime", "execute", "bad dims for conv_1")]
        ids = [add_finding(store, 0, model("Dense"), crash_result("bad dims for conv_1"), crash, str(kept)),
               add_finding(store, 1, model("Dense"), crash_result("bad dims for dense_7"), crash),
               add_finding(store, 2, model("Dense"), {"artifact_dir": "gone", "backends": {}}, [])]
        stored = list(stored_signatures(store))
        assert [execution.mutant_id for execution in stored] == ids
        assert stored[0].bugs == stored[1].bugs and len(stored[0].bugs) == 1 and stored[2].bugs == ()
        assert FirstShown.of(stored).known_before(ids[1], stored[1].bugs) == set(stored[1].bugs)
        budget = DiskBudget(store, tmp_path / "mutants" / "c", limit=0)
        budget.load(stored)
        assert budget.seen == {stored[0].bugs[0]: 2} and list(budget.kept) == [ids[0]]
