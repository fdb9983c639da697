"""A finding is signed once, when the pipeline records it: the disk budget, the memory of first occurrences, the
progress line, deduplication and the unsupported groups read the stored signature (counted by wrapping the real
signature function)."""
from __future__ import annotations

import threading
from importlib import import_module
from pathlib import Path
from typing import Any, Callable

import pytest

from memo.campaign.disk import stored_signatures
from memo.campaign.firsts import FirstShown
from memo.kinds import BUG_KINDS, VerdictKind
from memo.store import CampaignStore
from memo.triage import dedup
from memo.triage.pending import pending_localizations
from tests.unit.test_campaign_pipeline import SameCrash, _pipeline, _stored
from tests.unit.triage_store import model

signature_module = import_module("memo.triage.signature")  # the package's ``signature`` names the function


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Count every call of :func:`memo.triage.signature.signature_parts`, wherever it is called from."""
    calls: list[str] = []
    real = signature_module.signature_parts

    def counted(*args: Any, **kwargs: Any) -> dict[str, Any]:
        calls.append(str(args[0].kind))
        return real(*args, **kwargs)

    for module in (signature_module, dedup):
        monkeypatch.setattr(module, "signature_parts", counted)
    return calls


def _run(store: CampaignStore, root: Path, count: int) -> None:
    executor = SameCrash()
    pipeline, _ = _pipeline(store, root, executor, jobs=1)
    try:
        ids = [_stored(store, iteration) for iteration in range(count)]
        for mutant_id in ids:
            executor.release.setdefault(str(mutant_id), threading.Event()).set()
            pipeline.submit(mutant_id, f"m{mutant_id}", model("Dense"))
        pipeline.drain()
    finally:
        pipeline.cancel()
        pipeline.close()


def test_each_finding_is_signed_once_when_it_is_recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _counting(monkeypatch)
    with CampaignStore(tmp_path / "campaigns" / "p", create=True) as store:
        _run(store, tmp_path / "mutants" / "p", 3)
        findings = [row for row in store.signed_verdicts(BUG_KINDS | {VerdictKind.UNSUPPORTED.value})]
        assert len(findings) == 3 and all(row.signed is not None for row in findings)
        assert len(calls) == len(findings), "one signing per recorded finding"
        readers: list[Callable[[], object]] = [
            lambda: dedup.update_bugs(store), lambda: dedup.update_bugs(store), lambda: list(stored_signatures(store)),
            lambda: FirstShown.of(stored_signatures(store)), lambda: dedup.unsupported_groups(store),
            lambda: pending_localizations(store)]
        for read in readers:
            read()
        assert len(calls) == len(findings), "every reader reads the stored signature"
        [bug] = store.triage.load_bugs()
        assert bug.occurrences == 3 and bug.id == findings[0].signed.signature
