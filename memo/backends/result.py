"""What one differential execution produced, per backend and per stage. Stdlib only; JSON round-trip.

Statuses of a stage:
  ok          the stage finished
  error       the library raised an exception
  unsupported the library declined on purpose: NotImplementedError, or a phrase the backend's spec declares
              (``unsupported_patterns``), or an op tf2onnx has no handler for; a known gap, kept apart from bugs
  crash       the worker process died (signal or exit code recorded, with the tail of its stderr)
  hang        the stage ran past the per-model timeout; the worker was killed
  skipped     the stage did not run (its input artifact is missing because a converter failed, or the
              backend is not installed)

Stages, in order: ``start`` (the worker), ``trace`` (a converter's Keras load and ``tf.function`` trace:
TensorFlow's graph mode, not the converter's), ``convert``, ``load``, ``execute``. Statuses and kinds live in
:mod:`memo.kinds`; the tuples here are aliases of its values.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

from memo.json_types import JsonObject
from memo.kinds import FAILURES, STATUSES, StageStatus

STAGES = ("start", "trace", "convert", "load", "execute")
TRACE_STAGE = "trace"


class StageFailure(Exception):
    """Raised by a callable that spans several stages to say in which one ``cause`` was raised.

    tf2onnx's ``load`` is memo's Keras load plus ``tf.function`` trace (stage ``trace``, TensorFlow's) followed
    by the freeze (stage ``load``, tf2onnx's); the worker records the failure under ``stage`` with the type,
    message and traceback of ``cause``.
    """

    def __init__(self, stage: str, cause: BaseException) -> None:
        super().__init__(f"{stage}: {type(cause).__name__}: {cause}")
        self.stage = stage
        self.cause = cause


@dataclass
class ConversionProblem:
    """Something a converter noticed without raising (tf2onnx runs with ``continue_on_error``).

    ``status`` "unsupported" for an op the converter has no handler for, "error" for an exception inside
    a handler or rewriter that the converter logged and swallowed. ``feature`` names the op type, so
    findings group by it.
    """

    status: str
    message: str
    exc_type: str | None = None
    feature: str | None = None
    traceback: str = ""


@dataclass
class StageResult:
    stage: str
    status: str
    seconds: float = 0.0
    exc_type: str | None = None
    message: str = ""
    traceback: str = ""
    signal: int | None = None
    exit_code: int | None = None
    stderr_tail: str = ""

    def to_json(self) -> JsonObject:
        data = asdict(self)
        data["status"] = str(self.status)  # a plain string, never an enum member, in JSON and SQLite
        return data

    @classmethod
    def from_json(cls, data: JsonObject) -> "StageResult":
        return cls(**data)


@dataclass
class LibraryLines:
    """What ``--library-coverage`` saw of one measured library while a backend ran one model: the library's
    ``total`` executable statements and the statement lines reached per file (relative to the package root)."""

    total: int
    files: dict[str, list[int]] = field(default_factory=dict)

    def to_json(self) -> JsonObject:
        return {"total": self.total, "files": self.files}

    @classmethod
    def from_json(cls, data: JsonObject) -> "LibraryLines":
        return cls(total=int(data["total"]), files={name: list(lines) for name, lines in data["files"].items()})


@dataclass
class BackendResult:
    """One backend (role "backend") or converter (role "converter") on one model.

    ``outputs_path`` is the ``.npz`` of the outputs (keys ``out_0``, ``out_1``... in model-output order)
    for a backend, or the converted file for a converter.
    """

    name: str
    consumes: str
    role: str = "backend"
    stages: list[StageResult] = field(default_factory=list)
    outputs_path: str | None = None
    versions: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    precision: str = ""  # a GPU backend's precision mode ("strict" or "tf32", memo.backends.cuda); "" on the CPU
    # ``--library-coverage``: per measured library (memo.library_coverage), the lines this run reached
    library: dict[str, LibraryLines] = field(default_factory=dict)

    @property
    def failure(self) -> StageResult | None:
        """The first stage that did not finish, if any."""
        return next((stage for stage in self.stages if stage.status != "ok"), None)

    @property
    def status(self) -> str:
        failure = self.failure
        status = failure.status if failure else ("ok" if self.stages else "skipped")
        return status.value if isinstance(status, StageStatus) else status

    @property
    def stage_reached(self) -> str:
        failure = self.failure
        if failure:
            return failure.stage
        return self.stages[-1].stage if self.stages else "-"

    def to_json(self) -> JsonObject:
        data = asdict(self)
        data["stages"] = [stage.to_json() for stage in self.stages]
        if not self.precision:
            del data["precision"]  # CPU results read as they did before GPU backends existed
        data["library"] = {name: lines.to_json() for name, lines in self.library.items()}
        if not self.library:
            del data["library"]  # results without --library-coverage read as before
        return data

    @classmethod
    def from_json(cls, data: JsonObject) -> "BackendResult":
        fields = dict(data)
        fields["stages"] = [StageResult.from_json(stage) for stage in data.get("stages", [])]
        fields["library"] = {name: LibraryLines.from_json(lines) for name, lines in data.get("library", {}).items()}
        return cls(**fields)


@dataclass
class ExecutionResult:
    """Every backend and converter on one artifact; ``reference`` names the backend others are judged by."""

    artifact_dir: str
    reference: str
    output_names: list[str] = field(default_factory=list)
    backends: dict[str, BackendResult] = field(default_factory=dict)
    seconds: float = 0.0

    def results(self, role: str | None = None) -> list[BackendResult]:
        return [result for result in self.backends.values() if role is None or result.role == role]

    def library_reached(self) -> list[tuple[str, int, dict[str, list[int]]]]:
        """``(library, total statements, {file: lines})`` for every measured library of every backend and converter
        (what :meth:`memo.library_coverage.merge.LibraryCoverage.add` takes)."""
        return [(name, lines.total, lines.files) for result in self.backends.values()
                for name, lines in result.library.items()]

    def without_library_lines(self) -> "ExecutionResult":
        """A copy without the lines ``--library-coverage`` saw (a campaign stores them in tables of their own)."""
        backends = {name: replace(result, library={}) for name, result in self.backends.items()}
        return replace(self, backends=backends)

    def to_json(self) -> JsonObject:
        return {"artifact_dir": self.artifact_dir, "reference": self.reference, "output_names": self.output_names,
                "seconds": self.seconds, "backends": {name: result.to_json() for name, result in self.backends.items()}}

    @classmethod
    def from_json(cls, data: JsonObject) -> "ExecutionResult":
        return cls(artifact_dir=data["artifact_dir"], reference=data["reference"],
                   output_names=list(data.get("output_names", [])), seconds=data.get("seconds", 0.0),
                   backends={name: BackendResult.from_json(item) for name, item in data["backends"].items()})


def stored_result(data: JsonObject | None) -> ExecutionResult | None:
    """A stored execution's result document decoded, or None where there is none: memo's own failure
    while preparing an artifact is stored as ``{"error": ..., "traceback": ...}`` and ran no backend."""
    if not data or "backends" not in data:
        return None
    return ExecutionResult.from_json(data)
