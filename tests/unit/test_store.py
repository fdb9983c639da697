"""The campaign store: atomic mutant + state writes, queries, reopening."""
from __future__ import annotations

from pathlib import Path

import pytest

from memo.errors import UsageError
from memo.oracle.verdict import Failure, Verdict
from memo.store import CampaignStore, MutantRecord


def _mutant(i: int) -> MutantRecord:
    return MutantRecord(iteration=i, slot="lenet5", operator="NLA", parent="seed:lenet5", seed="lenet5",
                        lineage={"added": ["Conv2D"]}, ir_json="{}", valid=True, diverse=i % 2 == 0,
                        delta={"types": ["Conv2D"]}, gen_seconds=0.01)


def test_mutants_verdicts_and_state_persist(tmp_path: Path) -> None:
    with CampaignStore(tmp_path / "c1", create=True) as store:
        store.set_meta("config", {"seed": 3, "backends": ["keras-tensorflow"]})
        for i in range(3):
            with store.transaction():
                mid = store.add_mutant(_mutant(i))
                store.add_execution(mid, {"backends": {}}, 0.5, None)
                crash = Verdict("crash", "onnxruntime", "execute", "boom <b>", failure=Failure("error", "E", 1.0))
                store.add_verdict(mid, crash)
                store.save_state(i, {"iteration": i})
        store.add_coverage_point(1.0, 2, 3, 3, {"types": (5, 90), "pairs": (7, 900), "params": (9, 1000)})
    with CampaignStore(tmp_path / "c1") as store:
        assert store.get_meta("config")["seed"] == 3
        assert store.count_mutants(seeds=True) == 3 and store.count_mutants(diverse=True, seeds=True) == 2
        assert store.load_state() == (2, {"iteration": 2})
        verdicts = store.verdicts(("crash",))
        assert len(verdicts) == 3 and verdicts[0].verdict.message == "boom <b>" and verdicts[0].mutant_id == 1
        assert verdicts[0].verdict.failure == Failure("error", "E", 1.0)
        assert store.coverage_history()[0]["pairs"] == 7
        assert store.operator_counts() == {"NLA": (3, 2)}


def test_a_failed_transaction_leaves_nothing(tmp_path: Path) -> None:
    with CampaignStore(tmp_path / "c2", create=True) as store:
        with pytest.raises(RuntimeError):
            with store.transaction():
                store.add_mutant(_mutant(0))
                store.save_state(0, {"iteration": 0})
                raise RuntimeError("killed mid-write")
        assert store.count_mutants(seeds=True) == 0 and store.load_state() is None


def test_opening_a_missing_campaign_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no campaign"):
        CampaignStore(tmp_path / "nothing")
