"""memo's parses of Python source survive CPython 3.11's shared AST state (memo.triage.inline.parse_python): another
thread's compile at the same moment makes ast.parse raise "SystemError: AST constructor recursion depth mismatch"
(long150f lost a training bug's folder to it); the parse is tried again, and any other SystemError is raised."""
from __future__ import annotations

import ast

import pytest

from memo.triage import inline
from memo.triage.inline import PARSE_TRIES, parse_python


def _parse_failing(times: int, message: str, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    real = ast.parse

    def racing(source: str) -> ast.Module:
        calls.append(source)
        if len(calls) <= times:
            raise SystemError(message)
        return real(source)

    monkeypatch.setattr(inline.ast, "parse", racing)
    return calls


def test_a_raced_parse_is_tried_again(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _parse_failing(2, "AST constructor recursion depth mismatch (before=72, after=48)", monkeypatch)
    tree = parse_python("x = 1")
    assert isinstance(tree.body[0], ast.Assign) and len(calls) == 3


def test_a_parse_racing_every_time_and_other_system_errors_are_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _parse_failing(PARSE_TRIES, "AST constructor recursion depth mismatch", monkeypatch)
    with pytest.raises(SystemError, match="mismatch"):
        parse_python("x = 1")
    assert len(calls) == PARSE_TRIES
    calls = _parse_failing(1, "some other interpreter fault", monkeypatch)
    with pytest.raises(SystemError, match="other"):
        parse_python("x = 1")
    assert len(calls) == 1
