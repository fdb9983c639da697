"""The typed records the campaign store takes and returns.

Rows that carry large JSON (an execution's result, a mutant's IR) keep the text and decode it only when
read: deduplication walks every finding and most of them never need their result decoded twice.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypedDict

from memo.backends.result import ExecutionResult, stored_result
from memo.json_types import JsonObject
from memo.oracle import Verdict


@dataclass
class MutantRecord:
    """One generated mutant, valid or not, and what it added to coverage."""

    iteration: int
    slot: str
    operator: str
    parent: str
    seed: str
    lineage: JsonObject
    ir_json: str | None
    valid: bool
    error: str | None = None
    diverse: bool = False
    delta: JsonObject = field(default_factory=dict)
    gen_seconds: float = 0.0


@dataclass
class StoredVerdict:
    """A stored verdict: its row id, mutant and time beside the oracle's verdict."""

    id: int
    mutant_id: int
    created: float
    verdict: Verdict

    @classmethod
    def from_row(cls, id: int, mutant_id: int, kind: str, backend: str, stage: str | None, message: str,
                 metrics: str, created: float) -> "StoredVerdict":
        """From the columns of ``verdicts`` in table order."""
        return cls(id, mutant_id, created, Verdict.from_stored(kind, backend, stage, message, metrics))


@dataclass(frozen=True)
class Signed:
    """A finding's signature (its provisional bug id) and the parts it digests, as recorded with the verdict."""

    signature: str
    parts: JsonObject


@dataclass
class SignedVerdict:
    """A stored verdict's identity for deduplication: no message, result or IR, only what was signed when it was
    recorded (``signed`` None: stored before signatures were)."""

    id: int
    mutant_id: int
    kind: str
    backend: str
    stage: str | None
    created: float
    signed: Signed | None

    @classmethod
    def from_row(cls, id: int, mutant_id: int, kind: str, backend: str, stage: str | None, created: float,
                 signature: str | None, parts: str | None) -> "SignedVerdict":
        signed = Signed(signature, json.loads(parts)) if signature is not None and parts else None
        return cls(id, mutant_id, kind, backend, stage, created, signed)


class TrainingGroup(TypedDict):
    """Findings of the training check of one kind, library and stage (memo.training)."""

    kind: str
    library: str
    stage: str
    count: int
    example: str


class SpecialGroup(TypedDict):
    """Findings of one library on models whose NaN/Inf is there on purpose (kind ``special``)."""

    library: str
    count: int
    example: str  # one of their messages


class CoveragePoint(TypedDict):
    """One row of the coverage history: the primary counts at a moment of the campaign; ``extra``: every
    criterion's ``[covered, total]`` as JSON text."""

    id: int
    elapsed: float
    iteration: int
    generated: int
    executed: int
    types: int
    pairs: int
    params: int
    extra: str


@dataclass
class PendingMutant:
    """A stored mutant whose execution never finished (memo itself was killed while it ran)."""

    id: int
    iteration: int
    operator: str
    ir_json: str


@dataclass
class ExecutionRow:
    """One stored execution: the result JSON (often large) is decoded on first use."""

    mutant_id: int
    result_json: str
    artifact_dir: str | None

    @cached_property
    def result(self) -> JsonObject | None:
        return json.loads(self.result_json) if self.result_json else None


@dataclass
class FindingRow:
    """A verdict with its execution's result, its mutant's IR text and the artifact folder (None: the
    campaign did not keep it, or the mutant was not executed)."""

    id: int
    mutant_id: int
    verdict: Verdict
    created: float
    result_json: str | None
    ir_json: str | None
    artifact_dir: str | None

    @classmethod
    def from_row(cls, id: int, mutant_id: int, kind: str, backend: str, stage: str | None, message: str,
                 metrics: str, created: float, result_json: str | None, ir_json: str | None,
                 artifact_dir: str | None) -> "FindingRow":
        """From the columns the store selects for a finding, in order."""
        return cls(id, mutant_id, Verdict.from_stored(kind, backend, stage, message, metrics), created,
                   result_json, ir_json, artifact_dir)

    @cached_property
    def result(self) -> ExecutionResult | None:
        """The execution's result; None when the mutant was not executed, or when memo itself failed to
        prepare it (stored as an ``{"error": ..., "traceback": ...}`` document: no backend ran)."""
        return stored_result(json.loads(self.result_json)) if self.result_json else None


@dataclass
class BugRow:
    """A deduplicated bug as stored; the report reads these."""

    id: str
    kind: str
    library: str
    stage: str | None
    parts: JsonObject
    first_verdict: int
    first_mutant: int
    first_seen: float
    last_seen: float
    occurrences: int
    layer: str | None = None
    layer_class: str | None = None
    bug_dir: str | None = None
    original_layers: int | None = None
    reduced_layers: int | None = None
    reduction: JsonObject = field(default_factory=dict)
    repro: str | None = None
    reproduces: bool | None = None
    checked: float | None = None
    final_key: str | None = None
    merged_into: str | None = None
    # the repro script rerun on the newest code (memo.triage.newest): result, detail, build, versions, checked
    newest: JsonObject = field(default_factory=dict)
    # the library the bug is filed against, as triage decided it (memo.triage.blame): library, reported_by, refusal
    blame: JsonObject = field(default_factory=dict)

    @property
    def attempted(self) -> bool:
        """Whether a triage pass has worked on this bug (its folder exists or its reduction has a status)."""
        return bool(self.bug_dir) or bool(self.reduction)

    @property
    def unlocalized(self) -> bool:
        """A NaN/inconsistency bucket whose findings still await localization: not a bug yet."""
        return self.kind in ("nan", "inconsistency") and self.parts.get("layer") == "?"

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> "BugRow":
        data = dict(row)
        data["parts"] = json.loads(data["parts"])
        data["reduction"] = json.loads(data["reduction"]) if data.get("reduction") else {}
        data["reproduces"] = None if data.get("reproduces") is None else bool(data["reproduces"])
        data["newest"] = json.loads(data["newest"]) if data.get("newest") else {}
        data["blame"] = json.loads(data["blame"]) if data.get("blame") else {}
        return cls(**data)


@dataclass
class LocalizationRow:
    """The first misbehaving node of one NaN/inconsistency verdict (``layer`` None: not found, or failed;
    ``details`` says why)."""

    verdict_id: int
    layer: str | None
    layer_class: str | None
    details: JsonObject
    created: float

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> "LocalizationRow":
        return cls(row["verdict_id"], row["layer"], row["layer_class"],
                   json.loads(row["details"]) if row["details"] else {}, row["created"])


@dataclass
class TriageError:
    """One failure of triage itself (``bug_id`` None: not about one bug)."""

    id: int
    bug_id: str | None
    step: str
    message: str
    created: float


@dataclass(frozen=True)
class LibraryCount:
    """One library's lines reached in a campaign: ``covered`` in all, ``by_seeds`` of them by the seeds' runs,
    of ``total`` executable statements."""

    library: str
    covered: int
    by_seeds: int
    total: int


@dataclass(frozen=True)
class LibraryModule:
    """A module (file relative to the package root) of a library and the lines mutants reached first there."""

    library: str
    file: str
    new_lines: int
