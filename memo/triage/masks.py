"""The parts of a crash signature read from text: its message with every run-specific detail masked, and the
innermost traceback frames inside the failing library.

memo's own masks, and after each group of them the masks the backends declare for that stage (their specs'
``messages``, :func:`memo.backends.declared_masks`), apply to every library's message. Pure (no execution, no
DL import). A bug's script inlines this module's code with the backends' masks frozen as data.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Callable, Iterable

from memo.backends import declared_masks, load_spec
from memo.backends.spec import MASK_STAGES
from memo.text import ANSI_CODE

TOP_FRAMES = 3
MESSAGE_LIMIT = 300

# Distributions a backend lists for their versions whose frames are never the library under test.
_NOT_THE_LIBRARY = frozenset({"numpy"})

Mask = tuple[re.Pattern[str], "str | Callable[[re.Match[str]], str]"]


def _sorted_set(match: re.Match[str]) -> str:
    return "{" + ", ".join(sorted(match.group(1).split(", "))) + "}"


# memo's own masks, applied in order: each (pattern, replacement); after each group, the masks the backends
# declare for that stage (MessageMask.stage, :func:`library_masks`), in registry order.
_CLEANING: tuple[Mask, ...] = (
    # a printed Python set of strings: its order changes with the interpreter's hash seed
    (re.compile(r"\{('[^'{}]*'(?:, '[^'{}]*')+)\}"), _sorted_set),
    # terminal colours (Keras wraps a layer's error in bold)
    (ANSI_CODE, ""),
)
_DETAILS: tuple[Mask, ...] = (
    (re.compile(r"0x[0-9a-fA-F]+"), "0xADDR"),
    (re.compile(r"\[\d{1,2}:\d{2}:\d{2}(?:\.\d+)?\]"), "[TIME]"),
    (re.compile(r"(?<![\w/])(?:[A-Za-z]:|\.{1,2})?(?:/[\w.+@-]+){2,}/?"), "PATH"),
    # graph node / tensor names: conv1d_3_1/Pad, model/dense/BiasAdd:0
    (re.compile(r"\b[A-Za-z_][\w.-]*(?:/[\w.-]+)+(?::\d+)?"), "NAME"),
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"), "UUID"),
    # quoted tensor / node names: anything quoted that holds a slash, a colon-index or a trailing number
    (re.compile(r"(['\"`])[^'\"`\s]*(?:[/:]|_\d+\b|\d+\1)[^'\"`\s]*\1"), r"\1NAME\1"),
    # shapes and index tuples: (2, 3, None), [1,?,4], {2, 3}
    (re.compile(r"[\[({]\s*(?:-?\d+|None|\?|-1)?(?:\s*[,x×]\s*(?:-?\d+|None|\?))+\s*,?\s*[\])}]"), "SHAPE"),
    (re.compile(r"[\[(]\s*(?:-?\d+|None|\?)\s*,?\s*[\])]"), "SHAPE"),
    (re.compile(r"\b\d+(?:x\d+)+\b"), "SHAPE"),
    # einsum equations ('BTNH,BSNH->BNTS'): which of a model's einsums a failure names varies between runs
    (re.compile(r"(['\"`]?)[A-Za-z.]+(?:,[A-Za-z.]+)*->[A-Za-z.]*\1"), r"\1EQUATION\1"),
    # MLIR / XLA-style shapes: tensor<2x?x4xf32>, 2x3x4
    (re.compile(r"(?<![\w.])(?:\d+|\?)(?:x(?:\d+|\?))+(?:x(?:[fiu]\d+|bf16|i1))?(?![\w.])"), "SHAPE"),
)
_NAMES_AND_NUMBERS: tuple[Mask, ...] = (
    # auto-generated layer/tensor names (conv2d_13, input_layer_2, Reshape__807): the same bug hits
    # differently named nodes; also right before a masked shape (OpenVINO's Gather_5262772[?,1], a global counter)
    (re.compile(r"\b[A-Za-z]\w*?_\d+(?=\b|SHAPE)"), "NAME"),
    # generated op names without an underscore before the counter (_minimum0, MXNet's _plus12, node3);
    # dtype and opset words keep their numbers (float16 vs float32 is part of a bug)
    (re.compile(r"(?<![\w.])(?!(?:u?int|float|bfloat|complex|opset|conv|pool|relu|log|exp|sqrt)\d+\b)"
                r"_*[A-Za-z][A-Za-z_]*?[a-z_]\d+(?![\w.])"), "NAME"),
    (re.compile(r"(?<![\w.])[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?(?![\w.])"), "N"),
    (re.compile(r"\bnan\b|\binf\b", re.IGNORECASE), "N"),
)
_DUMPS: tuple[Mask, ...] = (
    # a printed array or tensor (torch's "Tensor: (1,1,.,.) = Columns 1 to 9 -0.24 0.22 ..."): its values, and so
    # how the printer lays them out, vary between runs of one bug; the message up to the dump names it
    (re.compile(r"(?:\bN[\s,;|]+){4,}.*$"), "VALUES..."),
)


def library_masks(stage: str) -> tuple[Mask, ...]:
    """The masks the registered backends declare for ``stage`` (:data:`memo.backends.spec.MASK_STAGES`), each
    once, in registry order."""
    return _compiled_masks(declared_masks())[stage]


@lru_cache(maxsize=4)
def _compiled_masks(declared: tuple[tuple[str, str, str], ...]) -> dict[str, tuple[Mask, ...]]:
    return {stage: tuple((re.compile(pattern), replacement) for at, pattern, replacement in declared if at == stage)
            for stage in MASK_STAGES}


def message_masks() -> tuple[Mask, ...]:
    """Every mask of a signature's message, in the order they apply: memo's own, each group followed by the
    backends' masks of that stage."""
    return (*_CLEANING, *library_masks("written"), *_DETAILS, *library_masks("shapes"), *_NAMES_AND_NUMBERS,
            *library_masks("numbers"), *_DUMPS)


# Python tracebacks ("File "p", line 3, in f") and faulthandler dumps ("File "p", line 3 in f").
_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line \d+,? in (?P<func>\S+)', re.MULTILINE)


def normalize_message(message: str | None, limit: int = MESSAGE_LIMIT) -> str:
    """The message with everything that varies between two occurrences of one bug masked."""
    text = " ".join((message or "").split())
    for pattern, replacement in message_masks():
        text = pattern.sub(replacement, text)
    return text[:limit]


def library_modules(backend: str) -> tuple[str, ...]:
    """Top-level Python packages whose frames count as "inside the library" for ``backend``."""
    name = backend.split(":")[0]
    try:
        spec = load_spec(name)
        modules = list(spec.messages.frame_modules) or [d.replace("-", "_") for d in spec.distributions]
    except Exception:  # an unknown or plugin backend: guess from its name
        modules = [part for part in re.split(r"[-_]", name) if part]
    return tuple(m for m in dict.fromkeys(modules) if m and m not in _NOT_THE_LIBRARY)


def library_frames(traceback_text: str | None, modules: Iterable[str], top: int = TOP_FRAMES) -> list[str]:
    """The ``top`` innermost traceback frames inside one of ``modules``, as ``package/relative/path.py:function``.

    Line numbers are dropped (they change between patch releases without changing the bug). Python
    tracebacks list the innermost frame last, faulthandler dumps ("most recent call first") first.
    """
    wanted = tuple(modules)
    text = traceback_text or ""
    frames: list[str] = []
    for match in _FRAME.finditer(text):
        path = match.group("path").replace("\\", "/")
        parts = path.split("/")
        for i, part in enumerate(parts[:-1]):
            if part in wanted:
                frames.append("/".join(parts[i:]) + ":" + match.group("func"))
                break
    innermost_first = "most recent call first" in text
    return (frames if innermost_first else frames[::-1])[:top]
