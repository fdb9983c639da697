"""Reading a backend plugin file in the orchestrator without executing it.

A plugin is a Python file that assigns ``SPEC = BackendSpec(name="...", consumes="...", load=..., run=...)``, as
memo's own backend modules do. The orchestrator must
not import heavy libraries (nor run a user's code), so it parses the file with ``ast`` and reads the literal keyword
arguments it needs; the worker process imports the file for real.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memo.backends.spec import ARTIFACT_KINDS, SPEC_NAME
from memo.errors import UsageError


@dataclass(frozen=True)
class PluginInfo:
    path: Path
    name: str
    consumes: str
    env: dict[str, str] = field(default_factory=dict)
    python: str | None = None


def read_plugin(path: Path | str) -> PluginInfo:
    """The plugin's name and consumed artifact; :class:`UsageError` with one line if it cannot be read."""
    path = Path(path).resolve()
    if not path.is_file():
        raise UsageError(f"backend plugin {path}: no such file")
    try:
        tree = ast.parse(path.read_text(), filename=str(path))
    except (SyntaxError, UnicodeDecodeError, ValueError) as exc:
        raise UsageError(f"backend plugin {path}: cannot be parsed ({type(exc).__name__}: {exc})") from exc
    call = _declaration(tree)
    if call is None:
        raise UsageError(f"backend plugin {path}: defines no `{SPEC_NAME} = BackendSpec(...)`")
    keywords = {kw.arg: kw.value for kw in call.keywords if kw.arg}
    values: dict[str, Any] = {}
    for key in ("name", "consumes", "env", "python"):
        if key in keywords:
            try:
                values[key] = ast.literal_eval(keywords[key])
            except ValueError as exc:
                raise UsageError(f"backend plugin {path}: `{key}=` must be a literal") from exc
    for key in ("name", "consumes", "load", "run"):
        if key not in keywords:
            raise UsageError(f"backend plugin {path}: BackendSpec(...) needs `{key}=`")
    if not isinstance(values["name"], str) or not values["name"]:
        raise UsageError(f"backend plugin {path}: `name=` must be a non-empty string")
    if values["consumes"] not in ARTIFACT_KINDS:
        raise UsageError(f"backend plugin {path}: `consumes=` must be one of {', '.join(ARTIFACT_KINDS)}")
    return PluginInfo(path=path, name=values["name"], consumes=values["consumes"], env=dict(values.get("env", {})),
                      python=values.get("python"))


def _declaration(tree: ast.Module) -> ast.Call | None:
    """The call of the file's spec declaration, ``SPEC = ...(...)`` (the first)."""
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else \
            node.target if isinstance(node, ast.AnnAssign) else None
        value = getattr(node, "value", None)
        if isinstance(target, ast.Name) and target.id == SPEC_NAME and isinstance(value, ast.Call):
            return value
    return None
