"""The typed shape of one bug's entry in the report (``bugs`` of the report's JSON, one section of the HTML)."""
from __future__ import annotations

from typing import NotRequired, TypedDict

from memo.json_types import JsonObject
from memo.triage.dedup import Variant


class ModelRow(TypedDict):
    """One layer of the bug's model, as the entry's model table shows it."""

    name: str
    class_name: str
    inputs: list[str]
    config: str  # the first few settings, as text
    shape: list[int | None] | None
    output: bool
    highlight: bool  # the localized layer


class MergedBug(TypedDict):
    """A bug folded into the entry (same reduced model and symptom)."""

    id: str
    occurrences: int
    signature: JsonObject


class Documented(TypedDict):
    """Why the library behaves so on purpose: a documented difference or a declared refusal."""

    behaviour: str
    source: str
    quote: str


class FilingView(TypedDict):
    """A bug's issue text ready to file and its minimal script's check, as the bug folder keeps them."""

    issue_text: str
    minimal: JsonObject | None


class BugEntry(TypedDict):
    """One bug with everything its report section needs (``signature``, ``metrics``, ``truth``,
    ``reduction``, ``localization`` and ``io`` are the JSON documents the store and the bug's folder keep)."""

    id: str
    kind: str
    library: str  # the library it is filed against
    device: str  # where that library ran ("cpu", "cuda")
    stage: str
    signature: JsonObject
    first_seen: float
    last_seen: float
    occurrences: int  # with those of the merged bugs
    first_mutant: int
    layers: list[str]
    layer: str | None
    layer_class: str | None
    reproduces: bool | None
    checked: float | None
    message: str
    metrics: JsonObject
    truth: JsonObject
    truth_command: str
    onnx_reference: JsonObject  # ONNX's reference evaluator on the converted file (memo.triage.onnx_reference)
    exception: str
    error_message: str
    traceback: str
    stderr: str
    reduction: JsonObject
    original_layers: int | None
    reduced_layers: int | None
    bug_dir: str | None
    artifact_dir: str | None
    localization: JsonObject
    io: JsonObject
    reference: str
    model: list[ModelRow]
    repro_script: str
    repro_command: str
    merged: list[MergedBug]
    variants: list[Variant]
    newest: JsonObject  # the script rerun on the newest code (memo.triage.newest): result, detail, build; {} if not
    newest_provenance: str  # where a remembered newest-code verdict comes from ("": a run made then)
    newest_pending: bool  # the campaign has a newest-code environment and this reproducing bug awaits its rerun
    weight: NotRequired[str | None]  # a training bug's weight (or input) whose array first differs: conv/kernel
    reported_by: NotRequired[str | None]  # the backend that reported it, when filed against another library
    upstream: NotRequired[JsonObject]
    documented: NotRequired[Documented | None]
    section: NotRequired[str]
    status: NotRequired[str]
    id_note: NotRequired[str]  # why the id names another library (memo.report.sections.id_note); "" if it does not
    issue_markdown: NotRequired[str]
    known: NotRequired[bool]  # seen by an earlier campaign (the bug database)
    known_bug: NotRequired[JsonObject | None]  # the database bug it is, with its status and link
    collapsed: NotRequired[bool]  # filed, won't fix or duplicate: folded away in the HTML report
    issue_text: NotRequired[str]  # in its tracker's form with a checked minimal script (memo.filing); "" if none
    minimal: NotRequired[JsonObject | None]  # that script's check: reproduces, lines, reason
