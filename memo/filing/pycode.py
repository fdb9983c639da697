"""Python source for values: the literals and keyword arguments a generated script writes (stdlib only)."""
from __future__ import annotations

import math
import re
from typing import Any

INDENT = "    "


def literal(value: Any) -> str:
    """``value`` as Python source: lists stay lists (Keras takes one wherever it takes a tuple), floats keep their
    shortest exact form, NaN and Inf go through ``float()``."""
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return f'float("{value}")'
        return repr(value)
    if isinstance(value, (list, tuple)):
        inner = ", ".join(literal(item) for item in value)
        return f"({inner},)" if isinstance(value, tuple) and len(value) == 1 else (
            f"({inner})" if isinstance(value, tuple) else f"[{inner}]")
    if isinstance(value, dict):
        return "{" + ", ".join(f"{literal(k)}: {literal(v)}" for k, v in value.items()) + "}"
    return repr(value)


def call(function: str, args: list[str], kwargs: dict[str, str]) -> str:
    """``function(arg, ..., key=value, ...)`` from already rendered arguments."""
    parts = [*args, *(f"{key}={value}" for key, value in kwargs.items())]
    return f"{function}({', '.join(parts)})"


def identifier(name: str, taken: set[str]) -> str:
    """A Python variable name for a layer or tensor name, unique among ``taken`` (which it joins)."""
    base = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in name).strip("_") or "t"
    if base[0].isdigit() or base in RESERVED:
        base = f"t_{base}"
    candidate, index = base, 1
    while candidate in taken:
        index += 1
        candidate = f"{base}_{index}"
    taken.add(candidate)
    return candidate


# Names a generated script uses itself, or Python's keywords and builtins it must not shadow.
RESERVED = frozenset({"np", "keras", "model", "x", "inputs", "actual", "expected", "onnx", "helper", "numpy_helper",
                      "TensorProto", "torch", "session", "w", "input", "type", "id", "list", "dict", "print",
                      "lambda", "class", "def", "from", "import", "in", "is", "not", "and", "or", "if", "else",
                      "for", "while", "return", "with", "as", "pass", "None", "True", "False", "graph", "nodes",
                      "core", "compiled", "ov", "mx", "tvm", "os"})


_FROM_IMPORT = re.compile(r"^from\s+(\S+)\s+import\s+(.+)$")


def used_imports(imports: tuple[str, ...] | list[str], body: list[str]) -> list[str]:
    """``imports`` with the names of each ``from X import a, b as c`` line that ``body`` never uses left out (a line
    none of whose names is used goes); ``import X`` lines stay (importing may be what they are for)."""
    code = "\n".join(body)
    kept = []
    for line in imports:
        match = _FROM_IMPORT.match(line)
        if match is None:
            kept.append(line)
            continue
        names = [name.strip() for name in match.group(2).split(",")]
        used = [name for name in names if re.search(rf"\b{re.escape(name.split(' as ')[-1].strip())}\b", code)]
        if used:
            kept.append(f"from {match.group(1)} import {', '.join(used)}")
    return kept
