"""``--library-coverage`` in a worker: one tracer per measured set of specs, around each model's stages.

Stdlib only at import (the worker imports it in every environment); coverage.py is imported when a campaign asks
for library coverage. An environment without coverage.py (MXNet's own) measures nothing and says so once on
stderr: its results simply carry no library lines.
"""
from __future__ import annotations

import contextlib
import sys
from typing import TYPE_CHECKING, Iterator, Sequence

from memo.backends.spec import AnySpec
from memo.json_types import JsonObject
from memo.library_coverage.measured import MeasuredCode

if TYPE_CHECKING:
    from memo.library_coverage.tracer import LibraryTracer


class CoverageProbes:
    """The tracers of one worker process, by spec name (specs measuring the same code share one)."""

    def __init__(self) -> None:
        self.tracers: dict[str, LibraryTracer] = {}
        self.totals: dict[str, int] = {}

    def prepare(self, specs: Sequence[AnySpec]) -> None:
        """Build the tracers and count each library's statements (cached per library version): before the worker
        says it is ready, so that no model's time limit pays for the count."""
        try:
            from memo.library_coverage.tracer import LibraryTracer
        except ImportError as exc:
            print(f"memo: no library coverage in this environment ({exc})", file=sys.stderr)
            return
        shared: dict[tuple[MeasuredCode, ...], LibraryTracer] = {}
        for spec in specs:
            if spec.library_code:
                if spec.library_code not in shared:
                    shared[spec.library_code] = LibraryTracer(spec.library_code)
                    self.totals.update(shared[spec.library_code].totals())
                self.tracers[spec.name] = shared[spec.library_code]

    @contextlib.contextmanager
    def measuring(self, spec: AnySpec | None) -> Iterator[JsonObject]:
        """Trace the block (a model's stages) for ``spec``; the dict yielded is filled, after the block, with
        ``{library: {"total": M, "files": {file: [line...]}}}`` (empty when ``spec`` is not measured, or None: a
        model the campaign does not trace)."""
        library: JsonObject = {}
        tracer = self.tracers.get(spec.name) if spec is not None else None
        if tracer is None:
            yield library
            return
        tracer.start()
        try:
            yield library
        finally:
            for name, files in tracer.stop().items():
                library[name] = {"total": self.totals.get(name, 0), "files": files}
