"""A reduction's status is one enum (memo.bug_files.Reduction), stored as the text memo always stored."""
from __future__ import annotations

import json

import pytest

from memo.bug_files import Reduction, retried


@pytest.mark.parametrize("stored, status", [
    ("done", Reduction.DONE), ("timeout", Reduction.TIMEOUT),
    ("not reduced (no time or no executor)", Reduction.NOT_REDUCED),
    ("not reduced: the model did not show the bug again when re-run (flaky or environment-dependent)",
     Reduction.NOT_AGAIN),
    ("final check failed; original model kept", Reduction.FINAL_CHECK_FAILED),
    ("model not stored", Reduction.MODEL_NOT_STORED),
    ("triage failed: ValueError: boom", Reduction.TRIAGE_FAILED),
    ("known: M-0003, reduced model and script copied from the bug database (first seen as c/x)", Reduction.KNOWN),
    ("something a later memo writes", None), ("", None), (None, None),
])
def test_stored_statuses_read_back(stored: str | None, status: Reduction | None) -> None:
    assert Reduction.of({"status": stored}) is status and Reduction.of(stored) is status
    assert retried({"status": stored}) == (status in (Reduction.TIMEOUT, Reduction.NOT_REDUCED))


def test_a_status_is_stored_as_its_text() -> None:
    assert json.dumps({"status": Reduction.TIMEOUT}) == '{"status": "timeout"}'
    assert Reduction.TRIAGE_FAILED.saying("KeyError: 'x'") == "triage failed: KeyError: 'x'"
    assert Reduction.of(None) is None and not retried(None)
