"""memo's package layering, read from the source with ``ast``: every import (at module level or inside a
function: both are arrows) goes from a higher layer to a lower one, never sideways within a layer nor up; no
module imports itself through others; and no module is longer than :data:`MAX_LINES`. docs/architecture.md
states the same layers."""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

MEMO = Path(__file__).resolve().parents[2] / "memo"

# Lowest first. A unit is a sub-package of memo (memo/store/) or a top-level module (memo/oracle.py); "memo" is
# memo/__init__.py. A unit may import only units of lower layers (its own modules aside).
LAYERS: tuple[frozenset[str], ...] = tuple(frozenset(layer) for layer in (
    {"memo", "errors", "defaults", "kinds", "paths", "artifact_files", "text", "json_types",
     "script_exit"},  # vocabulary, stdlib only
    {"npz_arrays"},  # arrays through .npz files (numpy, ml_dtypes)
    {"model", "diskspace", "bug_files", "library_coverage", "newest"},  # the IR and its Keras side; sizes and full
    # disks; a bug folder's files; library code coverage (the measured folders, statements, the tracer, merging); the
    # newest-code environment
    {"layers"},  # the layer catalogue
    {"artifact"},  # one model's files, written once
    {"backends"},  # the libraries under test, their workers, the executor
    {"devices", "device_flags"},  # what a backend's device changes in a verdict; the flags that choose it
    {"oracle"},  # verdicts from one execution
    {"truth"},  # the float64 truth's maths
    {"training"},  # the training check: judging, its float64 truth, running it on one artifact
    {"store"},  # the campaign database
    {"bugdb"},  # the bug database across campaigns
    {"coverage_realizable", "search"},  # generation: inert coverage items; seed selection
    {"coverage"},
    {"mutation", "seed_reduction"},  # mutation operators; block-aware seed reduction
    {"seeds"},
    {"triage"},  # findings -> bugs
    {"filing"},  # a bug's minimal script and issue text, in its library's idiom and its tracker's form
    {"report"},  # a read-only view of the store and the bug folders
    {"campaign"},  # generation loop, pipelines, disk budget, schedule
    {"cluster"},  # the campaign's executor on a Ray cluster
    {"commands"},  # one module per subcommand
    {"cli"},
    {"__main__"},
))
LAYER_OF: dict[str, int] = {unit: index for index, layer in enumerate(LAYERS) for unit in layer}

MAX_LINES = 450
# Modules allowed over MAX_LINES (none: a module that grows past it is split).
OVERSIZED: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Arrow:
    """One import: module ``source`` (a path under the repository) imports module ``target`` (dotted)."""

    source: str
    line: int
    target: str


def module_name(path: Path) -> str:
    parts = list(path.relative_to(MEMO.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def unit_of(module: str) -> str:
    """The layered unit a dotted module belongs to: ``memo.store.records`` -> ``store``, ``memo`` -> ``memo``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


MODULES = sorted(MEMO.rglob("*.py"))
MODULE_NAMES = frozenset(module_name(path) for path in MODULES)


def imported_modules(node: ast.AST, package: str) -> list[str]:
    """The modules an import statement imports: ``from X import Y`` imports X.Y where that is a module of memo,
    else X; a relative import is resolved against ``package``."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    if node.level:
        parts = package.split(".")
        base = ".".join(parts[:len(parts) - (node.level - 1)] + ([node.module] if node.module else []))
    else:
        base = node.module or ""
    return list(dict.fromkeys(f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULE_NAMES else base
                              for alias in node.names))


def arrows(path: Path) -> list[Arrow]:
    """Every import of memo in one module, wherever it stands (module level, function, TYPE_CHECKING block)."""
    module = module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    source = str(path.relative_to(MEMO.parent))
    return [Arrow(source, node.lineno, target)
            for node in ast.walk(ast.parse(path.read_text(), filename=source))
            for target in imported_modules(node, package)
            if target == "memo" or target.startswith("memo.")]


def upward_or_sideways(arrow: Arrow) -> str | None:
    """Why ``arrow`` breaks the layering, or None if it goes down (or stays inside its unit; a unit without a layer
    is the first test's finding)."""
    source, target = unit_of(module_name(MEMO.parent / arrow.source)), unit_of(arrow.target)
    if source == target or source not in LAYER_OF or target not in LAYER_OF:
        return None
    if LAYER_OF[target] < LAYER_OF[source]:
        return None
    where = "in the same layer as" if LAYER_OF[target] == LAYER_OF[source] else "above"
    return f"{arrow.source}:{arrow.line} imports {arrow.target} ({target} is {where} {source})"


def import_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` (module -> the modules it imports) as its modules in order, the first repeated
    at the end; None if there is none."""
    state: dict[str, str] = {}  # "open" while on the current path, then "done"
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = "open"
        path.append(module)
        for target in sorted(graph.get(module, ())):
            if state.get(target) == "open":
                return path[path.index(target):] + [target]
            if target not in state and (cycle := visit(target)):
                return cycle
        state[module] = "done"
        path.pop()
        return None

    for module in sorted(graph):
        if module not in state and (cycle := visit(module)):
            return cycle
    return None


def nearest_module(dotted: str) -> str:
    """``dotted`` or its nearest enclosing module of memo (``memo.oracle.Verdict`` -> ``memo.oracle``)."""
    while dotted not in MODULE_NAMES and "." in dotted:
        dotted = dotted.rpartition(".")[0]
    return dotted


def test_every_unit_of_memo_has_a_layer_and_every_layer_names_a_unit() -> None:
    units = {unit_of(module_name(path)) for path in MODULES}
    assert not units - set(LAYER_OF), f"place these in LAYERS: {sorted(units - set(LAYER_OF))}"
    assert not set(LAYER_OF) - units, f"no longer in memo/, drop from LAYERS: {sorted(set(LAYER_OF) - units)}"


def test_imports_go_down_the_layers_only() -> None:
    broken = [why for path in MODULES for arrow in arrows(path) if (why := upward_or_sideways(arrow))]
    assert not broken, "\n".join(broken)


def test_no_module_is_over_the_line_limit() -> None:
    long = {str(path.relative_to(MEMO.parent)): n for path in MODULES
            if (n := len(path.read_text().splitlines())) > MAX_LINES}
    assert not set(long) - OVERSIZED, f"over {MAX_LINES} lines: {long}"
    assert set(long) >= OVERSIZED, f"gone or short enough now, drop from OVERSIZED: {sorted(OVERSIZED - set(long))}"


def test_no_module_imports_itself_through_others() -> None:
    graph: dict[str, set[str]] = {}
    for path in MODULES:
        module = module_name(path)
        graph[module] = {nearest_module(arrow.target) for arrow in arrows(path)} - {module}
    assert import_cycle(graph) is None, f"an import cycle: {' -> '.join(import_cycle(graph) or [])}"


def test_the_cycle_finder_finds_a_cycle_and_only_a_cycle() -> None:
    assert import_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert import_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


@pytest.mark.parametrize(("source", "target", "broken"), [
    ("memo/report/data.py", "memo.campaign.config", True),  # up
    ("memo/artifact.py", "memo.backends.spec", True),  # up
    ("memo/model/ir.py", "memo.diskspace", True),  # sideways: a layer's units are independent
    ("memo/campaign/pipeline.py", "memo.report", False),  # down
    ("memo/store/campaign.py", "memo.store.records", False),  # inside its unit
    ("memo/cli.py", "memo", False),  # memo/__init__.py is the lowest layer
])
def test_the_checker_tells_up_and_sideways_from_down(source: str, target: str, broken: bool) -> None:
    assert (upward_or_sideways(Arrow(source, 1, target)) is not None) is broken


def test_imports_inside_functions_and_relative_imports_are_arrows() -> None:
    tree = ast.parse("from . import records\n\ndef f():\n    from memo.campaign import config, Campaign\n")
    found = [target for node in ast.walk(tree) for target in imported_modules(node, "memo.store")]
    assert sorted(found) == ["memo.campaign", "memo.campaign.config", "memo.store.records"]


def test_no_two_test_modules_share_a_name() -> None:
    """The test folders are not packages: pytest imports each test module by its basename, and two with one name
    (tests/unit/test_x.py, tests/integration/test_x.py) stop the README's `pytest -q` at collection."""
    tests = Path(__file__).resolve().parents[1]
    names = [path.name for path in tests.rglob("test_*.py")]
    assert sorted({name for name in names if names.count(name) > 1}) == []
