"""memo's own code as standalone source, for scripts that must run it without memo installed.

``Bundle.add(module, name)`` collects a module-level function, class or constant of a memo module
(``inspect.getsource`` for functions and classes, the assignment statement for constants) together with
everything it references at module level, transitively: memo objects are inlined the same way, anything
else (stdlib, numpy) becomes the import statement the module itself uses. The collected text is memo's
code verbatim, so a script built from it runs what memo runs and cannot drift from it.

A function that reads memo's registry (the masks the backends declare) is inlined *frozen*
(:meth:`Bundle.freeze`): as a function returning the value it returns when the script is written, so the
script holds what memo held without importing the backends.

Annotations are not followed (scripts start with ``from __future__ import annotations``), and a name
bound inside a function is local, not a reference. Inlined code must not import memo inside a function
body (move such an import to module level): that raises :class:`InlineError`, as does a script name that
two different objects would need at once.
"""
from __future__ import annotations

import ast
import builtins
import functools
import importlib
import inspect
import pprint
import threading
from pathlib import Path
from typing import Any

# The top-level package whose code is inlined; everything else is imported.
PACKAGE = "memo"


class InlineError(Exception):
    """The object cannot be inlined as standalone source (see the module docstring)."""


def _is_memo(module: str | None) -> bool:
    return bool(module) and (module == PACKAGE or module.startswith(PACKAGE + "."))  # type: ignore[union-attr]


def _module_file(module: str) -> Path:
    """The source file of a memo module, found without importing it (nor its package's ``__init__``)."""
    base = Path(__file__).resolve().parents[1].joinpath(*module.split(".")[1:])
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


# CPython 3.11's ast.parse is not safe to call from two threads at once: under the campaign's background triage
# it raised "SystemError: AST constructor recursion depth mismatch" (seen here, 3.11.7). One parse of memo's at a
# time; and since any compile() elsewhere (a dataclass's exec while another thread imports) shares that state, a
# parse that raises it is tried again (long150f lost a training bug's folder to it, with the lock in place).
_PARSE_LOCK = threading.Lock()
_RACED = "recursion depth mismatch"
PARSE_TRIES = 5


def parse_python(source: str) -> ast.Module:
    """``ast.parse(source)``, one at a time and again where another thread's compile raced it."""
    for _ in range(PARSE_TRIES - 1):
        try:
            with _PARSE_LOCK:
                return ast.parse(source)
        except SystemError as exc:
            if _RACED not in str(exc):
                raise
    with _PARSE_LOCK:
        return ast.parse(source)


@functools.lru_cache(maxsize=None)
def _module_tree(module: str) -> tuple[str, ast.Module]:
    source = _module_file(module).read_text()
    return source, parse_python(source)


def _segment(module: str, node: ast.stmt, comments: bool) -> str:
    """A top-level statement's source: a definition from its first decorator on (what ``inspect.getsource``
    gives), an assignment with the comment lines right above it (they usually say why)."""
    source, _tree = _module_tree(module)
    lines = source.splitlines()
    decorators = getattr(node, "decorator_list", [])
    start = min([node.lineno, *(d.lineno for d in decorators)]) - 1
    while comments and start > 0 and lines[start - 1].lstrip().startswith("#"):
        start -= 1
    return "\n".join(lines[start:node.end_lineno]) + "\n"


def _binding(module: str, name: str) -> ast.stmt | None:
    """The last top-level statement of ``module`` that binds ``name``."""
    found = None
    for node in _module_tree(module)[1].body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            found = node
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            found = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == name \
                and node.value is not None:
            found = node
        elif isinstance(node, (ast.Import, ast.ImportFrom)) and any(
                (alias.asname or alias.name.split(".")[0]) == name for alias in node.names):
            found = node
    return found


class _References(ast.NodeVisitor):
    """Names a piece of module-level source reads from module scope (annotations excluded)."""

    def __init__(self) -> None:
        self.scopes: list[set[str]] = []
        self.names: dict[str, None] = {}
        self.memo_imports: list[str] = []

    @staticmethod
    def _bound(body: list[ast.stmt], arguments: ast.arguments | None) -> set[str]:
        bound = set()
        if arguments is not None:
            every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
            every += [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
            bound |= {a.arg for a in every}
        for statement in body:
            for node in ast.walk(statement):
                if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                    bound.add(node.id)
                elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    bound.add(node.name)
                elif isinstance(node, (ast.Import, ast.ImportFrom)):
                    bound |= {alias.asname or alias.name.split(".")[0] for alias in node.names}
                elif isinstance(node, ast.ExceptHandler) and node.name:
                    bound.add(node.name)
        return bound

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        if not isinstance(node, ast.Lambda):
            for decorator in node.decorator_list:
                self.visit(decorator)
        for default in [*node.args.defaults, *[d for d in node.args.kw_defaults if d is not None]]:
            self.visit(default)
        body = node.body if isinstance(node.body, list) else [ast.Expr(node.body)]
        self.scopes.append(self._bound(body, node.args))
        for statement in body:
            self.visit(statement)
        self.scopes.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function  # type: ignore[assignment]

    def _comprehension(self, node: ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp) -> None:
        targets = {n.id for g in node.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)}
        self.scopes.append(targets)
        self.generic_visit(node)
        self.scopes.pop()

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comprehension  # type: ignore[assignment]

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for expression in [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]:
            self.visit(expression)
        self.scopes.append(self._bound(node.body, None))
        for statement in node.body:
            self.visit(statement)
        self.scopes.pop()

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.visit(node.value)

    def visit_Import(self, node: ast.Import) -> None:
        self.memo_imports += [alias.name for alias in node.names if _is_memo(alias.name)]

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if _is_memo(node.module) or node.level:
            self.memo_imports.append(node.module or ".")

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load) and not any(node.id in scope for scope in self.scopes):
            self.names.setdefault(node.id)


def references(source: str) -> tuple[list[str], list[str]]:
    """(module-scope names ``source`` reads, memo modules it imports inside a function or class body)."""
    visitor = _References()
    tree = parse_python(source)
    for statement in tree.body:
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            continue  # a module-level import is resolved by the bundle, not read as a reference
        visitor.visit(statement)
    return list(visitor.names), visitor.memo_imports


class Bundle:
    """Standalone source for a set of memo objects: import statements, then definitions in dependency order.

    ``take()`` returns the definitions added since the previous call, so a script can bind entry points
    right after the code they belong to (two libraries may each define a ``_load``, which nothing reads at
    module scope: the later one replaces the name, and each section's entry points were bound before).
    """

    def __init__(self) -> None:
        self.imports: dict[str, None] = {}
        self._blocks: list[str] = []
        self._taken = 0
        self._bound: dict[str, tuple[str, str]] = {}  # script name -> (module, name) it holds now
        self._read: dict[str, tuple[str, str]] = {}  # script names inlined code reads -> what they must hold
        self._done: set[tuple[str, str]] = set()
        self._busy: set[tuple[str, str]] = set()
        self._frozen: dict[tuple[str, str], str] = {}  # (module, name) -> the source that stands for it

    def freeze(self, module: str, name: str) -> None:
        """Inline ``module.name``, a function of no argument returning literals (tuples, strings, numbers), as a
        function returning what it returns now, whenever inlined code reads it."""
        value = getattr(importlib.import_module(module), name)()
        literal = pprint.pformat(value, width=105).replace("\n", "\n" + " " * len("    return "))
        try:
            same = ast.literal_eval(literal) == value
        except (ValueError, SyntaxError):
            same = False
        if not same:
            raise InlineError(f"{module}.{name}() is not a literal: it cannot be frozen")
        self._frozen[(module, name)] = (f"def {name}():  # as memo had it when it wrote this script\n"
                                        f"    return {literal}\n")

    def add(self, module: str, name: str) -> str:
        """Inline ``module.name`` (and its module-level dependencies); returns its name in the script."""
        self._resolve(module, name, name)
        return name

    def add_object(self, obj: Any) -> str:
        """Inline a module-level function or class given as an object; returns its name in the script."""
        target = inspect.unwrap(obj)
        if not _is_memo(getattr(target, "__module__", None)):
            raise InlineError(f"{obj!r} is not memo's code")
        if target.__qualname__ != target.__name__:
            raise InlineError(f"{target.__module__}.{target.__qualname__} is not a module-level definition")
        return self.add(target.__module__, target.__name__)

    def take(self) -> str:
        """The definitions added since the previous call, as source text."""
        text = "\n\n\n".join(self._blocks[self._taken:])
        self._taken = len(self._blocks)
        return text

    def import_lines(self) -> list[str]:
        return list(self.imports)

    # ---------------------------------------------------------------------------- resolution
    def _bind(self, script_name: str, key: tuple[str, str]) -> None:
        wanted = self._read.get(script_name)
        if wanted is not None and wanted != key:
            raise InlineError(f"script name {script_name!r} is read as {wanted[1]} ({wanted[0]}) and would be "
                              f"rebound to {key[1]} ({key[0]})")
        self._bound[script_name] = key

    def _note_read(self, script_name: str, key: tuple[str, str]) -> None:
        previous = self._read.setdefault(script_name, key)
        if previous != key:
            raise InlineError(f"script name {script_name!r} is needed both as {previous[1]} ({previous[0]}) "
                              f"and as {key[1]} ({key[0]})")

    def _resolve(self, module: str, name: str, script_name: str) -> tuple[str, str] | None:
        """Make ``script_name`` hold ``module.name`` in the script; returns what it holds (None: a builtin)."""
        frozen = self._frozen.get((module, name))
        node = None if frozen is not None else _binding(module, name)
        if node is None and frozen is None:
            if hasattr(builtins, name):
                return None
            raise InlineError(f"{module}.{name} is not bound at the top level of its module")
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            return self._resolve_import(module, node, name, script_name)
        key = (module, name)
        if key not in self._done and key not in self._busy:
            self._busy.add(key)
            comments = isinstance(node, (ast.Assign, ast.AnnAssign))
            source = _segment(module, node, comments) if node is not None else str(frozen)
            names, memo_imports = references(source)
            if memo_imports:
                raise InlineError(f"{module}.{name} imports {', '.join(memo_imports)} in its body: the script "
                                  "cannot; import it at module level instead")
            for referenced in names:
                held = self._resolve(module, referenced, referenced)
                if held is not None:
                    self._note_read(referenced, held)
            self._busy.discard(key)
            self._done.add(key)
            self._bind(name, key)
            self._blocks.append(source.rstrip())
        self._bind(name, key)
        if script_name != name:
            self._bind(script_name, key)
            self._blocks.append(f"{script_name} = {name}")
        return key

    def _resolve_import(self, module: str, node: ast.Import | ast.ImportFrom, name: str,
                        script_name: str) -> tuple[str, str] | None:
        if isinstance(node, ast.ImportFrom) and node.level:
            raise InlineError(f"{module}: relative imports are not supported")
        for alias in node.names:
            if (alias.asname or alias.name.split(".")[0]) != name:
                continue
            source = node.module if isinstance(node, ast.ImportFrom) else alias.name
            if _is_memo(source):
                if isinstance(node, ast.Import):
                    raise InlineError(f"{module} imports the memo module {alias.name} as a whole")
                return self._resolve(source, alias.name, script_name)  # type: ignore[arg-type]
            if script_name != name:
                raise InlineError(f"{module}: cannot rename the import of {name}")
            if isinstance(node, ast.Import):
                line = f"import {alias.name}" + (f" as {alias.asname}" if alias.asname else "")
            else:
                line = f"from {node.module} import {alias.name}" + (f" as {alias.asname}" if alias.asname else "")
            self.imports.setdefault(line)
            key = ("<import>", line)
            self._bind(script_name, key)
            return key
        return None
