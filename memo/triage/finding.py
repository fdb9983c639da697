"""A finding as triage needs it: the verdict, the execution result, the mutant's model and its artifact.

The campaign keeps full artifacts only for the first occurrences of a signature (the disk budget), so a
finding's artifact may be gone: its model is rebuilt from the stored IR (weights and inputs are drawn
from the campaign seed, so the rebuilt files are the ones the campaign ran).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from memo.backends import REFERENCE
from memo.backends.result import ExecutionResult
from memo.model.ir import ModelIR
from memo.oracle import Verdict
from memo.store import CampaignStore


@dataclass
class Finding:
    """The first occurrence of a bug (or one numeric finding): its mutant, verdict, result, model and artifact."""

    mutant_id: int
    verdict: Verdict
    result: ExecutionResult | None
    ir: ModelIR | None
    artifact_dir: Path | None

    @property
    def reference(self) -> str:
        return str((self.result.reference if self.result is not None else "") or REFERENCE)

    @property
    def kind(self) -> str:
        return str(self.verdict.kind)


def _resolve(path: str | None, store: CampaignStore) -> Path | None:
    """Artifact directories are stored relative to where the campaign ran (normally the project root)."""
    if not path:
        return None
    candidate = Path(path)
    for base in (Path.cwd(), store.directory.resolve().parent.parent):
        full = candidate if candidate.is_absolute() else base / candidate
        if (full / "model.keras").exists():
            return full
    return None


def load_finding(store: CampaignStore, verdict_id: int) -> Finding | None:
    """The finding of one verdict; ``artifact_dir`` is None when the campaign no longer keeps its files."""
    row = store.finding(verdict_id)
    if row is None:
        return None
    ir = None
    if row.ir_json:
        try:
            ir = ModelIR.loads(row.ir_json)
        except Exception:  # an unreadable IR leaves the finding unreducible, nothing worse
            ir = None
    return Finding(row.mutant_id, row.verdict, row.result, ir, _resolve(row.artifact_dir, store))
