"""The oracle's verdict on one backend (or converter, or the shared Keras front end) and the comparison
figures it carries."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from memo.kinds import VerdictKind

@dataclass
class Verdict:
    kind: str
    backend: str
    stage: str
    message: str
    metrics: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.kind = str(self.kind.value if isinstance(self.kind, VerdictKind) else self.kind)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Verdict":
        return cls(**data)


@dataclass
class Comparison:
    """One backend's outputs against the reference's.

    The scalar fields describe the output that decided (the first flagged one, else the one deviating most
    relative to its tolerance; ``output`` is its index); ``per_output`` holds the figures of every output.
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
    per_output: list[dict[str, Any]] | None = None

    def metrics(self) -> dict[str, Any]:
        return {key: value for key, value in asdict(self).items() if key != "backend" and value is not None}

