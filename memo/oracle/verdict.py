"""The oracle's verdict, typed, and its one serialization.

A :class:`Verdict` names a kind, the library blamed, a stage and a message; its typed parts say why: a
:class:`Failure` (a crash, hang or refusal of one backend), a :class:`FrontEnd` (every Keras backend failing
alike), a :class:`Comparison` (one backend's figures against the reference) and an :class:`Attribution`
(the agreement groups, and the backends a shared cause covers). The store keeps the parts as one JSON object
(the ``metrics`` column, the ``metrics`` of ``bug.json`` and of ``memo run --json``): :meth:`Verdict.metrics`
writes it and :meth:`Verdict.decode` reads it, here and nowhere else, so a field is never read by its key
outside this module. The layout is the one memo has always written (old campaigns load, and a verdict read
back writes the same JSON); keys an older memo wrote and this one does not know are kept in ``extra``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, fields

from memo.json_types import JsonObject
from memo.kinds import VerdictKind


def _without_none(pairs: JsonObject) -> JsonObject:
    return {key: value for key, value in pairs.items() if value is not None}


@dataclass
class OutputFigures:
    """One output of a backend against the reference's (see :mod:`memo.oracle.criterion`)."""

    output: int
    mismatched: int  # elements outside atol * s + rtol * |O|
    max_abs_diff: float
    mad: float  # delta(Y, O), Eq. 5, over the positions finite in both
    elements: int
    scale: float
    tolerance: float  # atol * s
    mad_floor: float  # max(mad_floor, p) * s
    nan_problem: str | None = None
    dmad: float | None = None  # Eq. 6 against the closest peer
    dmad_peer: str | None = None
    peer_mad: float | None = None
    flags: list[str] = field(default_factory=list)

    def to_json(self) -> JsonObject:
        return _without_none({"output": self.output, "nan_problem": self.nan_problem, "mismatched": self.mismatched,
                              "max_abs_diff": self.max_abs_diff, "mad": self.mad, "elements": self.elements,
                              "scale": self.scale, "tolerance": self.tolerance, "mad_floor": self.mad_floor,
                              "dmad": self.dmad, "dmad_peer": self.dmad_peer, "peer_mad": self.peer_mad,
                              "flags": self.flags})

    @classmethod
    def from_json(cls, data: JsonObject) -> "OutputFigures":
        return cls(**data)


@dataclass
class Comparison:
    """One backend's outputs against the reference's.

    The scalar fields describe the output that decided (the first flagged one, else the one deviating most
    relative to its tolerance; ``output`` is its index, ``output_name`` its name once a verdict names it);
    ``per_output`` holds the figures of every output.
    """

    backend: str
    shape_problem: str | None = None
    nan_problem: str | None = None
    max_abs_diff: float | None = None
    mad: float | None = None  # delta(Y, O), Eq. 5
    dmad: float | None = None  # Eq. 6 against the closest peer
    dmad_peer: str | None = None
    peer_mad: float | None = None
    mismatched: int = 0  # elements outside atol * s + rtol * |O|
    elements: int = 0
    output: int | None = None
    scale: float | None = None
    tolerance: float | None = None  # atol * s of that output
    mad_floor: float | None = None  # max(mad_floor, p) * s of that output
    per_output: list[OutputFigures] | None = None
    output_name: str | None = None

    def to_json(self) -> JsonObject:
        """The figures without the backend's name, absent ones left out."""
        data = _without_none({item.name: getattr(self, item.name) for item in fields(self) if item.name != "backend"})
        if self.per_output is not None:
            data["per_output"] = [row.to_json() for row in self.per_output]
        return data

    @classmethod
    def from_json(cls, backend: str, data: JsonObject) -> "Comparison":
        rows = data.get("per_output")
        return cls(backend=backend, **{**data, "per_output": None if rows is None else [
            OutputFigures.from_json(row) for row in rows]})


@dataclass
class VerdictSummary:
    """What a bug's folder keeps of the verdict on its reduced model (``bug.json``), for the report: the
    message and the parts as :meth:`Verdict.metrics` writes them."""

    message: str
    metrics: JsonObject

    @classmethod
    def of(cls, verdict: "Verdict") -> "VerdictSummary":
        return cls(verdict.message, verdict.metrics())

    def to_json(self) -> JsonObject:
        return {"message": self.message, "metrics": self.metrics}

    @classmethod
    def from_json(cls, data: JsonObject) -> "VerdictSummary":
        """Absent keys read as empty (a folder triaged before memo kept the reduced verdict)."""
        return cls(str(data.get("message") or ""), data.get("metrics") or {})


_COMPARISON_KEYS = frozenset(item.name for item in fields(Comparison)) - {"backend"}


@dataclass
class Failure:
    """A backend's failed stage as a verdict records it (its stage and message are the verdict's own, or, in a
    :class:`FrontEnd`, ``stage``/``message`` here)."""

    status: str
    exc_type: str | None
    seconds: float
    signal: int | None = None
    exit_code: int | None = None
    stage: str | None = None
    message: str | None = None

    def to_json(self) -> JsonObject:
        return {"status": self.status, "exc_type": self.exc_type, "seconds": self.seconds,
                **_without_none({"signal": self.signal, "exit_code": self.exit_code, "stage": self.stage,
                                 "message": self.message})}

    @classmethod
    def from_json(cls, data: JsonObject) -> "Failure":
        return cls(**data)


_FAILURE_KEYS = ("status", "exc_type", "seconds", "signal", "exit_code")


@dataclass
class FrontEnd:
    """Every Keras backend failed at run time alike: each one's failure, and the exception type they share."""

    failures: dict[str, Failure]
    exc_type: str | None


@dataclass
class Attribution:
    """Why a numeric verdict names its library: the agreement groups of every backend with outputs (reference
    included), and, when a shared cause is blamed, the figures of the backends it covers and the engine that
    agreed with the reference on another converter's file."""

    agreement: list[list[str]] | None = None
    backends: dict[str, Comparison] | None = None
    same_engine: str | None = None
    cpu_twin: str | None = None  # a GPU backend's CPU twin, which agreed with the reference (memo.devices)


@dataclass
class Verdict:
    """What the oracle concluded about one backend (or converter, or the shared Keras front end)."""

    kind: str
    backend: str
    stage: str
    message: str
    failure: Failure | None = None  # crash / hang / unsupported of one backend, or of the tf.function trace
    front_end: FrontEnd | None = None  # the one crash against the shared Keras front end
    comparison: Comparison | None = None  # nan / inconsistency / shape of one backend
    attribution: Attribution | None = None
    not_run: list[str] | None = None  # invalid: the backends selected, none of which reached the model
    converters: list[str] | None = None  # tf-function: the conversions that reported the trace failure
    also_in: list[str] | None = None  # backends and converters that failed the same way (not filed again)
    also_in_tf_function: list[str] | None = None  # the conversions whose trace failed the same way
    numeric_kind: str | None = None  # special: the kind it would be without special values
    extra: JsonObject = field(default_factory=dict)  # stored keys this memo does not write

    def __post_init__(self) -> None:
        self.kind = str(self.kind.value if isinstance(self.kind, VerdictKind) else self.kind)

    def involved(self) -> list[str]:
        """The backends the verdict covers beside the one it names (a shared cause's, the front end's, or the
        ones selected for an invalid run), in recorded order."""
        if self.front_end is not None:
            return list(self.front_end.failures)
        if self.attribution is not None and self.attribution.backends is not None:
            return list(self.attribution.backends)
        return list(self.not_run or [])

    # ------------------------------------------------------------------ serialization
    def metrics(self) -> JsonObject:
        """The parts as the one JSON object memo stores (the order of the keys is part of the format)."""
        data: JsonObject = {}
        if self.front_end is not None:
            data["backends"] = {name: failure.to_json() for name, failure in self.front_end.failures.items()}
            data["exc_type"] = self.front_end.exc_type
        if self.failure is not None:
            data.update(self.failure.to_json())
        if self.not_run is not None:
            data["backends"] = list(self.not_run)
        if self.comparison is not None:
            data.update(self.comparison.to_json())
        attribution = self.attribution or Attribution()
        if attribution.backends is not None:
            data["backends"] = {name: comparison.to_json() for name, comparison in attribution.backends.items()}
        data.update(_without_none({"same_engine": attribution.same_engine, "cpu_twin": attribution.cpu_twin,
                                   "agreement": attribution.agreement,
                                   "converters": self.converters, "also_in": self.also_in,
                                   "also_in_tf_function": self.also_in_tf_function,
                                   "numeric_kind": self.numeric_kind}))
        return {**data, **self.extra}

    def metrics_text(self) -> str:
        """:meth:`metrics` as the text the store keeps."""
        return json.dumps(self.metrics())

    def to_json(self) -> JsonObject:
        return {"kind": self.kind, "backend": self.backend, "stage": self.stage, "message": self.message,
                "metrics": self.metrics()}

    @classmethod
    def from_json(cls, data: JsonObject) -> "Verdict":
        return cls.decode(data["kind"], data["backend"], data["stage"], data["message"], data.get("metrics") or {})

    @classmethod
    def from_stored(cls, kind: str, backend: str, stage: str | None, message: str, text: str | None) -> "Verdict":
        """A verdict from the store's columns (``text``: what :meth:`metrics_text` wrote)."""
        return cls.decode(kind, backend, stage, message, json.loads(text or "{}") or {})

    @classmethod
    def decode(cls, kind: str, backend: str, stage: str | None, message: str, metrics: JsonObject) -> "Verdict":
        """A verdict from its stored columns and metrics object (the inverse of :meth:`metrics`)."""
        rest = dict(metrics)
        verdict = cls(kind, backend, stage, message)  # type: ignore[arg-type]  # old rows may lack a stage
        backends = rest.pop("backends", None)
        attribution = Attribution(agreement=rest.pop("agreement", None), same_engine=rest.pop("same_engine", None),
                                  cpu_twin=rest.pop("cpu_twin", None))
        # "backends" is what :meth:`metrics` wrote there: the selected backends (a list), the front end's failures
        # (written with its "exc_type" and no failure "status" of its own), else the compared backends' figures
        if isinstance(backends, list):
            verdict.not_run = backends
        elif isinstance(backends, dict) and "exc_type" in rest and "status" not in rest:
            verdict.front_end = FrontEnd({name: Failure.from_json(entry) for name, entry in backends.items()},
                                         rest.pop("exc_type"))
        elif isinstance(backends, dict):
            attribution.backends = {name: Comparison.from_json(name, entry) for name, entry in backends.items()}
        if "status" in rest:
            verdict.failure = Failure.from_json({key: rest.pop(key) for key in _FAILURE_KEYS if key in rest})
        figures = {key: rest.pop(key) for key in list(rest) if key in _COMPARISON_KEYS}
        if figures:
            verdict.comparison = Comparison.from_json(backend, figures)
        if attribution != Attribution():
            verdict.attribution = attribution
        verdict.converters = rest.pop("converters", None)
        verdict.also_in = rest.pop("also_in", None)
        verdict.also_in_tf_function = rest.pop("also_in_tf_function", None)
        verdict.numeric_kind = rest.pop("numeric_kind", None)
        verdict.extra = rest
        return verdict
