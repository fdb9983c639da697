"""What a backend is: the declaration every backend module (and every user plugin) provides.

Stdlib only: this module is imported by worker processes in every environment (including the MXNet
one, which has no rich, no keras), and by plugin files a user writes.

A backend runs in its own worker process. Its callables import their library lazily, so that the
orchestrator can read a declaration without loading any library under test.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

# The artifact files a backend can consume. "onnx" is tf2onnx's default-opset conversion (dynamic batch);
# "onnx-opset11" is the opset-11, static-shape conversion with every initializer listed as a graph input,
# the form MXNet's importer accepts.
ARTIFACT_KINDS = ("keras", "onnx", "onnx-opset11")

# Exception messages that mean "this library declines the feature on purpose" rather than "it broke".
DEFAULT_UNSUPPORTED_PATTERNS: tuple[str, ...] = (
    r"not (yet )?supported", r"unsupported", r"not implemented", r"no conversion function",
    r"could not find an implementation", r"no converter", r"is not registered",
)

Outputs = Any  # a list/tuple of arrays, a dict of arrays, or a single array


@dataclass(frozen=True)
class BackendSpec:
    """A library under test.

    ``load(path)`` turns the consumed artifact file into a handle, ``run(handle, inputs)`` executes it
    on the model inputs (a dict from input name to array, in model-input order) and returns the outputs
    in model-output order. ``convert(path)`` is an optional first stage (a converter shipped with the
    library, e.g. onnx2torch); when given, ``load`` receives its result instead of the path.
    ``setup()`` imports the library once per worker and returns ``{distribution: version}``.
    """

    name: str
    consumes: str
    load: Callable[[Any], Any]
    run: Callable[[Any, dict[str, Any]], Outputs]
    convert: Callable[[Path], Any] | None = None
    setup: Callable[[], dict[str, str]] | None = None
    distributions: Sequence[str] = ()
    env: dict[str, str] = field(default_factory=dict)
    python: str | None = None  # interpreter for the worker; None = the orchestrator's own
    group: str | None = None  # specs with the same group share one worker process
    unsupported_patterns: Sequence[str] = DEFAULT_UNSUPPORTED_PATTERNS

    def __post_init__(self) -> None:
        if self.consumes not in ARTIFACT_KINDS:
            raise ValueError(f"backend {self.name!r}: consumes must be one of {ARTIFACT_KINDS}, not {self.consumes!r}")

    @property
    def worker_group(self) -> str:
        return self.group or self.name


@dataclass(frozen=True)
class ConverterSpec:
    """A converter between artifacts (tf2onnx): its failures are findings against the converter itself.

    ``export(handle, inputs, out_path)`` writes the converted file and returns the list of problems it
    noticed without raising (ops left unconverted in the output graph): a non-empty list makes the stage
    "unsupported" and the dependent backends are skipped.
    """

    name: str
    consumes: str
    produces: str
    load: Callable[[Any], Any]
    export: Callable[[Any, dict[str, Any], Path], list[str]]
    setup: Callable[[], dict[str, str]] | None = None
    distributions: Sequence[str] = ()
    env: dict[str, str] = field(default_factory=dict)
    python: str | None = None
    group: str | None = None
    unsupported_patterns: Sequence[str] = DEFAULT_UNSUPPORTED_PATTERNS

    @property
    def worker_group(self) -> str:
        return self.group or self.name


AnySpec = BackendSpec | ConverterSpec
