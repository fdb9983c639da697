"""One bug folder as filing reads it: ``bug.json``, the reduced model (``ir.json``, ``model.keras``,
``model.onnx``), ``inputs.npz``, ``expected.npz`` and memo's ``repro.py``."""
from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from pathlib import Path

from memo.errors import UsageError
from memo.json_types import JsonObject
from memo.model.ir import ModelIR
from memo.backends.documented import delegated_library
from memo.backends.inner_libraries import inner_library
from memo.triage.onnx_reference import CONVERTER, ENGINE, ONNX_REFERENCE_ARRAYS, ONNX_REFERENCE_KEY

BUG_FILE, IR_FILE, KERAS_FILE, ONNX_FILE = "bug.json", "ir.json", "model.keras", "model.onnx"
INPUTS_FILE, EXPECTED_FILE, REPRO_FILE = "inputs.npz", "expected.npz", "repro.py"
NUMERIC_KINDS = frozenset({"nan", "inconsistency", "shape", "training-nan", "training-inconsistency"})
LEADING_EXCEPTION = re.compile(r"^([A-Z]\w*(?:Error|Exception|Failure))\b")  # "ValueError: ..." opening a message


@dataclass(frozen=True)
class BugFolder:
    """The parts of a bug folder that filing reads."""

    path: Path
    info: JsonObject
    blamed: str | None = None  # whom triage files it against (bugs.blame, memo.triage.blame); None: not given

    @classmethod
    def read(cls, path: Path, blamed: str | None = None) -> "BugFolder":
        """The folder at ``path`` (``blamed``: the library triage's blame files it against, where the caller has
        it); :class:`UsageError` when it is not a bug folder."""
        bug_file = Path(path) / BUG_FILE
        if not bug_file.is_file():
            raise UsageError(f"{path}: not a bug folder (no {BUG_FILE})")
        try:
            return cls(Path(path), json.loads(bug_file.read_text()), blamed or None)
        except (OSError, ValueError) as exc:
            raise UsageError(f"{bug_file}: unreadable ({exc})") from exc

    @property
    def id(self) -> str:
        return str(self.info.get("id") or self.path.name)

    @property
    def kind(self) -> str:
        return str(self.info.get("kind", ""))

    @property
    def library(self) -> str:
        return str(self.info.get("library", ""))

    @property
    def reference(self) -> str:
        return str(self.info.get("reference") or "")

    @property
    def exception(self) -> str:
        """The exception type's name; from the message's ``Name: ...`` where bug.json records none."""
        recorded = str(self.info.get("exception") or "")
        named = LEADING_EXCEPTION.match(str(self.info.get("error_message") or ""))
        return recorded or (named.group(1) if named else "")

    @property
    def frames(self) -> list[str]:
        """The library frames of the campaign's traceback, innermost first (bug.json's ``signature``)."""
        signature = self.info.get("signature")
        if isinstance(signature, str):
            try:
                signature = ast.literal_eval(signature)
            except (ValueError, SyntaxError):
                signature = None
        frames = signature.get("frames") if isinstance(signature, dict) else None
        return [str(frame) for frame in frames] if isinstance(frames, list) else []

    @property
    def numeric(self) -> bool:
        return self.kind in NUMERIC_KINDS

    @property
    def against_evaluator(self) -> bool:
        """Whether this engine's bug is shown against ONNX's reference evaluator on the same file (which blamed the
        engine, and whose outputs the folder keeps), not against the reference library."""
        opinion = self.info.get(ONNX_REFERENCE_KEY) or {}
        return (opinion.get("decision") == ENGINE and opinion.get("blamed") == self.library
                and self.file(ONNX_REFERENCE_ARRAYS) is not None)

    @property
    def converter_blamed(self) -> str | None:
        """The converter whose file ONNX's reference evaluator found wrong (the engine reading it only shows it), or
        None."""
        opinion = self.info.get(ONNX_REFERENCE_KEY) or {}
        return str(opinion.get("blamed") or self.library) if opinion.get("decision") == CONVERTER else None

    @property
    def inside(self) -> str | None:
        """The library inside this backend's stack the crash arises in (torch.onnx under Keras's export,
        :mod:`memo.backends.inner_libraries`), or None."""
        return inner_library(self.library, self.exception, self.frames) if self.kind == "crash" else None

    @property
    def delegated(self) -> str | None:
        """The library under this backend a crash's message places it in (its spec's ``delegates``: Keras on
        OpenVINO's "Exception from src/plugins/..." is OpenVINO's plugin), or None; triage's blame decides alike."""
        return delegated_library(self.library, str(self.info.get("error_message") or self.info.get("message") or "")) \
            if self.kind == "crash" else None

    @property
    def filed_on(self) -> str:
        """The library whose tracker gets the issue: triage's blame where the folder was read with it (the report's
        library column says the same); else the converter, where ONNX's reference evaluator found that the
        converted file itself is wrong; the library inside the stack a crash arises in, or the one its message
        delegates it to; else the bug's library."""
        return self.blamed or self.converter_blamed or self.inside or self.delegated or self.library

    def file(self, name: str) -> Path | None:
        """The folder's file ``name``, None when it is missing."""
        path = self.path / name
        return path if path.is_file() else None

    def ir(self) -> ModelIR | None:
        path = self.file(IR_FILE)
        try:
            return ModelIR.loads(path.read_text()) if path else None
        except Exception:  # a folder whose model memo cannot read gets no minimal script, never a failure
            return None

    def campaign(self) -> Path:
        """The campaign folder holding this bug (``campaigns/NAME/bugs/BUG`` -> ``campaigns/NAME``)."""
        return self.path.parent.parent
