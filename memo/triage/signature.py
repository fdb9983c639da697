"""Bug signatures: what makes two findings the same bug.

A crash (or hang, or shape mismatch) is identified by the library, the stage, the exception type, the
exception message with every run-specific detail masked (addresses, paths, tensor names, shapes, numbers)
and the innermost traceback frames that lie inside the library itself. A numerical finding (NaN/Inf,
inconsistency) is identified by the library (and its reference) and the class of the first layer whose
output goes wrong, which :mod:`memo.triage.localize` finds.

Everything here is pure (no execution, no DL import) so that it can be unit-tested and run while a
campaign is still writing.
"""
from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Iterable

from memo.model.ir import ModelIR

# Verdict kinds that are bugs, and how each is identified.
MESSAGE_KINDS = frozenset({"crash", "hang", "shape"})
NUMERIC_KINDS = frozenset({"nan", "inconsistency"})
BUG_KINDS = MESSAGE_KINDS | NUMERIC_KINDS
UNSUPPORTED_KIND = "unsupported"
TOP_FRAMES = 3
MESSAGE_LIMIT = 300
UNLOCALIZED = "?"

# Python import names for the distributions a backend declares (the rest map by replacing "-" with "_").
_MODULE_OF_DISTRIBUTION = {"tensorflow-cpu": "tensorflow", "tensorflow": "tensorflow", "jaxlib": "jaxlib"}
_NOT_THE_LIBRARY = frozenset({"numpy"})

# Masks applied in order: each (pattern, replacement).
_MASKS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"0x[0-9a-fA-F]+"), "0xADDR"),
    (re.compile(r"(?:[A-Za-z]:)?(?:/[\w.+@-]+){2,}/?"), "PATH"),
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"), "UUID"),
    # quoted tensor / node names: anything quoted that holds a slash, a colon-index or a trailing number
    (re.compile(r"(['\"`])[^'\"`\s]*(?:[/:]|_\d+\b|\d+\1)[^'\"`\s]*\1"), r"\1NAME\1"),
    # shapes and index tuples: (2, 3, None), [1,?,4], {2, 3}
    (re.compile(r"[\[({]\s*(?:-?\d+|None|\?|-1)?(?:\s*[,x×]\s*(?:-?\d+|None|\?))+\s*,?\s*[\])}]"), "SHAPE"),
    (re.compile(r"[\[(]\s*(?:-?\d+|None|\?)\s*,?\s*[\])]"), "SHAPE"),
    (re.compile(r"\b\d+(?:x\d+)+\b"), "SHAPE"),
    # auto-generated layer/tensor names keep their stem: conv2d_13 -> conv2d_N
    (re.compile(r"\b([A-Za-z][A-Za-z0-9]*?)_\d+\b"), r"\1_N"),
    (re.compile(r"(?<![\w.])[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?(?![\w.])"), "N"),
    (re.compile(r"\bnan\b|\binf\b", re.IGNORECASE), "N"),
)
_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line \d+, in (?P<func>\S+)', re.MULTILINE)


def normalize_message(message: str | None, limit: int = MESSAGE_LIMIT) -> str:
    """The message with everything that varies between two occurrences of one bug masked."""
    text = " ".join((message or "").split())
    for pattern, replacement in _MASKS:
        text = pattern.sub(replacement, text)
    return text[:limit]


def library_modules(backend: str) -> tuple[str, ...]:
    """Top-level Python packages whose frames count as "inside the library" for ``backend``."""
    name = backend.split(":")[0]
    try:
        from memo.backends import load_spec  # noqa: PLC0415  (stdlib-only registry)

        distributions = list(load_spec(name).distributions)
    except Exception:  # an unknown or plugin backend: guess from its name
        distributions = [part for part in re.split(r"[-_]", name) if part]
    modules = [_MODULE_OF_DISTRIBUTION.get(d, d.replace("-", "_")) for d in distributions]
    return tuple(m for m in dict.fromkeys(modules) if m and m not in _NOT_THE_LIBRARY)


def library_frames(traceback_text: str | None, modules: Iterable[str], top: int = TOP_FRAMES) -> list[str]:
    """The ``top`` innermost traceback frames inside one of ``modules``, as ``package/relative/path.py:function``.

    Line numbers are dropped (they change between patch releases without changing the bug).
    """
    wanted = tuple(modules)
    frames: list[str] = []
    for match in _FRAME.finditer(traceback_text or ""):
        path = match.group("path").replace("\\", "/")
        parts = path.split("/")
        for i, part in enumerate(parts[:-1]):
            if part in wanted:
                frames.append("/".join(parts[i:]) + ":" + match.group("func"))
                break
    return frames[::-1][:top]


def _backend_record(result: dict[str, Any] | None, backend: str) -> dict[str, Any]:
    """The per-backend entry of an ExecutionResult JSON (tolerates the shapes the executor may use)."""
    if not result:
        return {}
    backends = result.get("backends") or {}
    if isinstance(backends, list):
        backends = {entry.get("name") or entry.get("backend"): entry for entry in backends}
    return backends.get(backend) or {}


def _stage_record(entry: dict[str, Any], stage: str | None) -> dict[str, Any]:
    stages = entry.get("stages") or {}
    if isinstance(stages, list):
        stages = {s.get("stage") or s.get("name"): s for s in stages}
    if stage and stage in stages:
        return stages[stage]
    failed = [s for s in stages.values() if isinstance(s, dict) and s.get("status") not in (None, "ok")]
    return failed[0] if failed else entry


def failure_details(verdict: dict[str, Any], result: dict[str, Any] | None) -> dict[str, str]:
    """Exception type, message and traceback of a verdict, from its metrics or the execution result."""
    metrics = _metrics(verdict)
    stage = _stage_record(_backend_record(result, verdict.get("backend", "")), verdict.get("stage"))
    def pick(*keys: str) -> str:
        for source in (metrics, stage):
            for key in keys:
                value = source.get(key)
                if value:
                    return str(value)
        return ""
    return {"exception": pick("exception", "exception_type", "error_type"),
            "message": pick("error", "exception_message", "message") or str(verdict.get("message") or ""),
            "traceback": pick("traceback"),
            "stderr": pick("stderr_tail", "stderr")}


def _metrics(verdict: dict[str, Any]) -> dict[str, Any]:
    metrics = verdict.get("metrics") or {}
    if isinstance(metrics, str):
        try:
            metrics = json.loads(metrics)
        except json.JSONDecodeError:
            metrics = {}
    return metrics if isinstance(metrics, dict) else {}


def reference_of(verdict: dict[str, Any]) -> str:
    metrics = _metrics(verdict)
    return str(metrics.get("reference") or metrics.get("reference_backend") or "")


def divergent_class(ir: ModelIR | None, layer_name: str | None) -> str:
    """Class of the localized layer, or ``"?"`` when localization has not run or found nothing."""
    if ir is None or not layer_name:
        return UNLOCALIZED
    try:
        return ir.get(layer_name).class_name
    except KeyError:
        return UNLOCALIZED


def signature_parts(verdict: dict[str, Any], result: dict[str, Any] | None, ir: ModelIR | None,
                    *, divergent_layer: str | None = None) -> dict[str, Any]:
    """The fields that identify a finding's bug (see the module docstring), as a JSON-able dict.

    ``divergent_layer`` names the first misbehaving node (from localization) for NaN and inconsistency;
    without it the stored ``metrics["first_divergent_layer"]`` is used, if any.
    """
    kind = str(verdict.get("kind", ""))
    backend = str(verdict.get("backend", ""))
    parts: dict[str, Any] = {"kind": kind, "library": backend}
    if kind in NUMERIC_KINDS:
        name = divergent_layer or _metrics(verdict).get("first_divergent_layer")
        parts["reference"] = reference_of(verdict) if kind == "inconsistency" else ""
        parts["layer"] = divergent_class(ir, name)
        return parts
    details = failure_details(verdict, result)
    parts["stage"] = str(verdict.get("stage") or "")
    if kind == UNSUPPORTED_KIND:
        parts["feature"] = unsupported_feature(verdict, details["message"])
        return parts
    parts["exception"] = details["exception"]
    parts["message"] = normalize_message(details["message"])
    parts["frames"] = library_frames(details["traceback"], library_modules(backend))
    return parts


def digest(parts: dict[str, Any]) -> str:
    """A short, readable, stable id: ``kind-library-hash``."""
    canonical = json.dumps(parts, sort_keys=True, separators=(",", ":"))
    short = hashlib.sha256(canonical.encode()).hexdigest()[:10]
    return f"{parts.get('kind', 'bug')}-{parts.get('library', 'x')}-{short}"


def signature(verdict: dict[str, Any], result: dict[str, Any] | None, ir: ModelIR | None,
              *, divergent_layer: str | None = None) -> str:
    """The bug id of a finding: equal ids mean the same bug (pure; see :func:`signature_parts`)."""
    return digest(signature_parts(verdict, result, ir, divergent_layer=divergent_layer))


_FEATURE_PATTERNS = (
    re.compile(r"['\"`]([A-Z][A-Za-z0-9_]+)['\"`]"),
    re.compile(r"(?:op|operator|layer|node)s?\s*(?:type)?\s*[:=]?\s*['\"`]?([A-Z][A-Za-z0-9_]+)"),
    re.compile(r"\b([A-Z][a-z]+(?:[A-Z0-9][a-z0-9]*)+)\b"),
)


def unsupported_feature(verdict: dict[str, Any], message: str | None = None) -> str:
    """What a library declined: ``metrics["feature"]`` if the oracle set it, else an op name in the message."""
    metrics = _metrics(verdict)
    if metrics.get("feature"):
        return str(metrics["feature"])
    text = message if message is not None else str(verdict.get("message") or "")
    for pattern in _FEATURE_PATTERNS:
        found = pattern.search(text)
        if found:
            return found.group(1)
    return normalize_message(text, limit=80) or "unknown"
