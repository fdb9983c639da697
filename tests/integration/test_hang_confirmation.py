"""A hang is confirmed before it is filed: triage re-runs the model on the hanging library alone with twice
the limit. A run that was only slow (a plugin taking 3 s, "hung" under a 2 s limit with no first-model
grace, as a first compile on a loaded machine did) finishes then: the bug is unconfirmed, not reduced, and
its script does not reproduce. A real hang (a plugin that never finishes on a Relu) is confirmed."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from triage_fixtures import chain, record_campaign  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

PLUGINS = Path(__file__).resolve().parents[1] / "plugins"
LIMIT_S = 2.0


@pytest.mark.parametrize("plugin, confirmed", [("slow_model", False), ("hang_on_relu", True)])
def test_a_hang_is_filed_only_when_it_hangs_again_alone_with_twice_the_limit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, plugin: str, confirmed: bool) -> None:
    from memo.backends.executor import DifferentialExecutor
    from memo.triage import triage_campaign
    from memo.bug_files import Reduction

    monkeypatch.setenv("MEMO_TEST_SLOW_S", str(1.5 * LIMIT_S))  # read by slow_model only
    monkeypatch.chdir(tmp_path)
    path = str(PLUGINS / f"{plugin}.py")
    model = chain("relu", (4,), [("Dense", {"units": 3}), ("ReLU", {})])
    with DifferentialExecutor(backends=[], plugins=[Path(path)], timeout_s=LIMIT_S, first_model_grace=1.0) as executor:
        with record_campaign(Path("campaigns/h"), Path("mutants"), executor, [model], backends=[]) as store:
            store.set_meta("config", {**store.get_meta("config"), "timeout_s": LIMIT_S, "plugins": [path]})
            assert [row.verdict.kind for row in store.verdicts()] == ["hang"]
            summary = triage_campaign(store, executor=executor, time_budget_s=240)
            (bug,) = store.triage.load_bugs()
    assert (bug.reduction.get("status") != Reduction.NOT_AGAIN) == confirmed, (bug.reduction, summary.errors)
    assert bug.reproduces is confirmed, (bug.reduction, summary.errors)
