"""Localization re-checks its culprit alone: fed the arrays it received, one layer on the accused library and
the reference. A planted bug (a plugin whose Dense is off by one only when the model also holds a ReLU) is
right alone and wrong together with the ReLU before it; the same plugin made wrong always is wrong alone."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from triage_fixtures import SEED, chain  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

PLUGIN = Path(__file__).resolve().parents[1] / "plugins" / "dense_wrong_after_relu.py"
FAULTY = "dense-wrong-after-relu"


@pytest.mark.parametrize("always, alone, together", [("0", "right", ["relu_1", "dense_2"]), ("1", "wrong", [])])
def test_the_culprit_is_rechecked_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, always: str, alone: str,
                                        together: list[str]) -> None:
    from memo.backends.executor import DifferentialExecutor
    from memo.triage.localize import localize
    from memo.triage.probe import Roles

    monkeypatch.setenv("MEMO_TEST_DENSE_ALWAYS", always)
    model = chain("pair", (5,), [("Activation", {"activation": "tanh"}), ("ReLU", {}), ("Dense", {"units": 3}),
                                 ("Activation", {"activation": "sigmoid"})])
    roles = Roles(FAULTY, "keras-tensorflow", ("keras-tensorflow", FAULTY))
    with DifferentialExecutor(backends=["keras-tensorflow"], plugins=[PLUGIN], timeout_s=120) as executor:
        found, _run = localize(executor, model, "inconsistency", roles, tmp_path / "probe", seed=SEED, inputs=None)
    details = found.to_json()
    assert (details["layer"], details["alone"], details["together"]) == ("dense_2", alone, together), details
