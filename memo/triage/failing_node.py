"""The node of a converted file a crash message names: the root cause of a converter's or an engine's crash.

A converter or an engine fails in an operator of the graph it reads, whichever Keras layer wrote that operator
(ONNX Runtime's "Pad should be smaller than kernel" through a MaxPooling2D or an AveragePooling2D; OpenVINO's
frontend failing on one Conv through a Conv2D, a DepthwiseConv2D or a SeparableConv2D). Where the library's
message names the node (the ``failing_nodes`` and ``declined_nodes`` patterns the backends declare), the bug's
root-cause key names that operator: its op type and the attributes that select its code (string attributes such as
a Resize's ``mode`` or a pooling's ``auto_pad``, and the flags in :data:`CODE_FLAGS`), read from the reduced file
when the folder keeps it. Only the first node a message names counts: the failures listed after it (OpenVINO's
report of every operation it could not convert) may follow from it, a cascade, not a cause.
"""
from __future__ import annotations

import ast
import importlib.util
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from memo.backends import declared_messages
from memo.backends.spec import MessageRules
from memo.triage.inline import parse_python

# Integer attributes that choose another code path, not another size: attribute values never split a bug otherwise.
CODE_FLAGS = frozenset({"ceil_mode", "count_include_pad", "exclude_outside", "keepdims", "transA", "transB"})
OPERATOR_PART = "operator"  # the part of a crash's signature parts that names the failing operator
NODE_PART = "node"  # ...and the node's name there, masked in the message the key compares
TRANSLATOR_PART = "translator"  # the importer's per-operator function a crash arose in (its innermost such frame)

# Where an importer translates one operator of the file it reads: a traceback frame (``module/path.py:function``, as
# :func:`memo.triage.masks.library_frames` writes them) in that code names the operator that failed, whatever
# exception the wrong translation then raises (MXNet's ``_slice`` reading the graph's first input's shape as its
# own: an IndexError on one file, an MXNetError from ``slice_axis`` on another) and whatever layer wrote the node.
SUBGRAPH_HOLDERS = frozenset({"Loop", "Scan", "If"})
TRANSLATOR_FRAMES: tuple[re.Pattern[str], ...] = tuple(re.compile(pattern) for pattern in (
    r"^mxnet/contrib/onnx/onnx2mx/_op_translations\.py:_?(?P<op>\w+)$",
    r"^onnx2torch/node_converters/(?P<op>\w+)\.py:",
    r"^onnx2pytorch/operations/(?P<op>\w+)\.py:",
))


@dataclass(frozen=True)
class FailingNode:
    """The first node a message names: its op type and its name (empty where the message gives none)."""

    op: str
    node: str = ""


@lru_cache(maxsize=4)
def _patterns(rules: tuple[MessageRules, ...]) -> tuple[re.Pattern[str], ...]:
    declared = dict.fromkeys(pattern for rule in rules for pattern in (*rule.failing_nodes, *rule.declined_nodes))
    return tuple(re.compile(pattern) for pattern in declared)


def failing_node(message: str) -> FailingNode | None:
    """The first node ``message`` names (by position in the message), with the name another pattern gives it where
    the first says none; None when it names none."""
    found = sorted((match for pattern in _patterns(declared_messages()) for match in pattern.finditer(message)),
                   key=lambda match: match.start())
    if not found:
        return None
    op = found[0].group("op").rpartition(":")[2]
    named = next((match.groupdict().get("node") for match in found
                  if match.group("op").rpartition(":")[2] == op and match.groupdict().get("node")), "")
    return FailingNode(op, named or "")


def named_operators(message: str) -> list[str]:
    """Every operator ``message`` names, in the order it names them: a nested message names the node holding a
    subgraph first and the node inside it that failed last (ONNX Runtime's "while running Loop node ... while
    running Gather node")."""
    found = sorted((match for pattern in _patterns(declared_messages()) for match in pattern.finditer(message)),
                   key=lambda match: match.start())
    return list(dict.fromkeys(match.group("op").rpartition(":")[2] for match in found))


def operator_text(op: str, attributes: dict[str, object]) -> str:
    """``Resize(coordinate_transformation_mode=asymmetric, mode=nearest)``: the op and its code-selecting attributes."""
    chosen = {name: value for name, value in attributes.items() if isinstance(value, str) or name in CODE_FLAGS}
    return f"{op}({', '.join(f'{name}={chosen[name]}' for name in sorted(chosen))})" if chosen else op


def file_graph(onnx_path: Path | None) -> Any | None:
    """The top-level graph of the ONNX file at ``onnx_path`` (None for no readable file), loaded once per version of
    the file: one finding's blame reads the same file for its attributes, its operators and their producers."""
    if onnx_path is None or not onnx_path.is_file():
        return None
    stat = onnx_path.stat()
    return _loaded_graph(str(onnx_path), stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=2)
def _loaded_graph(path: str, mtime_ns: int, size: int) -> Any | None:  # noqa: ARG001 - the version is the cache key
    import onnx

    try:
        return onnx.load(path, load_external_data=False).graph
    except Exception:  # noqa: BLE001 - an unreadable file names nothing
        return None


def _file_attributes(onnx_path: Path, found: FailingNode) -> dict[str, object] | None:
    """The attributes of the node of the file at ``onnx_path`` the message named (by node name or output name)."""
    from onnx import helper

    graph = file_graph(onnx_path)
    if graph is None:  # an unreadable file: the op the message names still counts
        return None
    for node in graph.node:
        if node.op_type == found.op and found.node and (node.name == found.node or found.node in node.output):
            values = {attr.name: helper.get_attribute_value(attr) for attr in node.attribute}
            return {name: value.decode() if isinstance(value, bytes) else value for name, value in values.items()}
    return None


def node_attributes(onnx_path: Path | None, op: str, node: str) -> dict[str, object]:
    """The attributes of the ``op`` node named ``node`` (or producing an output so named) of the file at
    ``onnx_path``; empty where there is no such node."""
    if onnx_path is None or not onnx_path.is_file():
        return {}
    return _file_attributes(onnx_path, FailingNode(op, node)) or {}


def failing_operator(message: str, onnx_path: Path | None = None) -> tuple[str, str] | None:
    """(operator, node name) of the node a crash ``message`` names, the operator with its code-selecting attributes
    where the converted file at ``onnx_path`` holds that node; None when the message names no node."""
    found = failing_node(message)
    if found is None:
        return None
    attributes = _file_attributes(onnx_path, found) if onnx_path is not None and onnx_path.is_file() else None
    return operator_text(found.op, attributes or {}), found.node


def _canonical(name: str) -> str:
    return name.replace("_", "").lower()


def translator_frame(frames: list[str] | tuple[str, ...], ops: set[str]) -> tuple[str, str] | None:
    """(operator, frame) of the innermost frame of ``frames`` (innermost first) in an importer's per-operator code
    (:data:`TRANSLATOR_FRAMES`) whose function or module is named after one of the file's operators ``ops``
    (``_slice`` -> ``Slice``); None when no frame is."""
    by_name = {_canonical(op): op for op in ops}
    for index, frame in enumerate(frames):
        for pattern in TRANSLATOR_FRAMES:
            match = pattern.search(frame)
            op = by_name.get(_canonical(match.group("op"))) if match else None
            # a Loop's code around the failing frame only holds the body whose operator failed: no root cause
            if op and not (index and op in SUBGRAPH_HOLDERS):
                return op, frame
    return None


def dispatch_table(source: str) -> dict[str, str]:
    """Function name -> operator, from an importer's dispatch code (``source``): the functions called in exactly one
    ``if node.op_type == "Gemm":`` branch (or ``in ("A", "B")`` with one operator), as onnx2pytorch's
    ``convert_operations`` calls ``convert_linear_layer`` for Gemm only. A helper several branches call names none."""
    called: dict[str, set[str]] = {}
    for branch in ast.walk(parse_python(source)):
        ops = _compared_op_types(branch.test) if isinstance(branch, ast.If) else set()
        for statement in branch.body if ops else ():
            for call in ast.walk(statement):
                if isinstance(call, ast.Call):
                    name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
                    called.setdefault(name, set()).update(ops)
    return {name: next(iter(ops)) for name, ops in called.items() if name and len(ops) == 1}


def _compared_op_types(test: ast.expr) -> set[str]:
    """The operators an ``if`` compares ``<node>.op_type`` with (``==`` a string, ``in`` a tuple of strings)."""
    if not (isinstance(test, ast.Compare) and isinstance(test.left, ast.Attribute) and test.left.attr == "op_type"
            and len(test.ops) == 1):
        return set()
    right = test.comparators[0]
    values = right.elts if isinstance(test.ops[0], ast.In) and isinstance(right, (ast.Tuple, ast.List, ast.Set)) \
        else [right] if isinstance(test.ops[0], ast.Eq) else []
    return {value.value for value in values if isinstance(value, ast.Constant) and isinstance(value.value, str)}


@lru_cache(maxsize=16)
def _library_dispatch(frame_file: str) -> dict[str, str]:
    """:func:`dispatch_table` of an installed library's file (``onnx2pytorch/convert/operations.py``), located without
    importing the library; empty where it is not installed or not readable."""
    package, _, relative = frame_file.partition("/")
    try:
        found = importlib.util.find_spec(package)
        roots = list(found.submodule_search_locations or []) if found else []
        return dispatch_table((Path(roots[0]) / relative).read_text()) if roots else {}
    except (ImportError, ValueError, OSError, SyntaxError):
        return {}


def dispatched_operator(frames: list[str] | tuple[str, ...], ops: set[str]) -> str | None:
    """The operator of the file (``ops``) whose dispatch branch called a function of the traceback (``frames``,
    innermost first, ``package/path.py:function``): the innermost frame a dispatching frame further out calls for one
    operator only (:func:`dispatch_table`); None when none is."""
    for index, frame in enumerate(frames):
        function = frame.rpartition(":")[2]
        for outer in frames[index + 1:]:
            op = _library_dispatch(outer.rpartition(":")[0]).get(function)
            if op in ops:
                return op
    return None


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SENTENCE_START = re.compile(r"(?:^|[.:!?]\s)\s*")


def file_operators(onnx_path: Path | None) -> dict[str, str]:
    """Operator -> the op type of the node whose subgraph holds it ("" at the top level), for every node of the
    file at ``onnx_path`` and of its subgraphs (a Loop's body); empty when there is no readable file."""
    graph = file_graph(onnx_path)
    if graph is None:  # no readable file names no operator
        return {}
    found: dict[str, str] = {}
    level = [(node, "") for node in graph.node]
    while level:  # the top level first: an operator there is never named by a subgraph holding it too
        for node, holder in level:
            found.setdefault(node.op_type, holder)
        level = [(inner, holder or node.op_type) for node, holder in level for attr in node.attribute
                 for sub in ([attr.g] if attr.HasField("g") else list(attr.graphs)) for inner in sub.node]
    return found


def _made_by(onnx_path: Path | None) -> dict[str, Any]:
    """Each value of the file's top-level graph -> the node that makes it (empty for no readable file)."""
    graph = file_graph(onnx_path)
    if graph is None:
        return {}
    return {output: node for node in graph.node for output in node.output}


def culprit_operator(message: str, frames: list[str] | tuple[str, ...], onnx_path: Path | None) -> str | None:
    """The operator of the file at ``onnx_path`` a converter's or an engine's crash failed in, as a title names it
    (``Conv in a Loop body`` where only a subgraph holds it): the node the message names; else an operator the
    message names as a word (torch's ``Conv3d`` for ``Conv``); else the importer's per-operator frame
    (:func:`translator_frame`) or the function its dispatch calls for one operator (:func:`dispatched_operator`); else
    the producer of a value the message quotes (MXNet's ``KeyError: 'split2'``); an operator handed a tuple is named by
    the one-output node that made it (:func:`tuple_maker`). None when none of these names one."""
    ops = file_operators(onnx_path)
    named = failing_node(message)
    op = named.op if named is not None else None
    if op is None:  # a word opening a sentence ("Shape mismatch") names no operator unless code (Conv3d.__init__)
        openings = {start.end() for start in _SENTENCE_START.finditer(message)}
        words = [match.group(0) for match in _WORD.finditer(message)
                 if match.start() not in openings or message[match.end():match.end() + 1] in (".", "(")]
        op = next((candidate for word in words for candidate in ops
                   if candidate[:1].isupper() and re.fullmatch(rf"{re.escape(candidate)}(?:[123][dD])?", word)), None)
    if op is None:
        found = translator_frame(frames, set(ops))
        op = found[0] if found else dispatched_operator(frames, set(ops))
    if op is None and onnx_path is not None and onnx_path.is_file():
        producers = _made_by(onnx_path)
        op = next((producers[value].op_type for value in re.findall(r"'([^']+)'", message) if value in producers),
                  None)
    if op is None:
        return None
    op = (tuple_maker(onnx_path, op) if _GOT_TUPLE.search(message) else None) or op  # the cause, not who met it
    holder = ops.get(op, "")
    return f"{op} in a {holder} body" if holder else op


# torch refusing its arguments because a tuple came where a tensor goes ("squeeze() received an invalid combination of
# arguments - got (tuple, dim=Tensor)"): the operator was handed what the node before it returned
_GOT_TUPLE = re.compile(r"\bgot \(tuple\b")


def tuple_maker(onnx_path: Path | None, op: str) -> str | None:
    """The operator of the one-output node that feeds an ``op`` node of the file at ``onnx_path``, where that
    operator may have several outputs (onnx2torch's Split of one output returns a one-element tuple, which the
    Squeeze after it is handed); None where there is none."""
    made = _made_by(onnx_path)
    for node in made.values():  # a node of several outputs comes once per output: the answer is the same
        producer = made.get(node.input[0]) if node.op_type == op and node.input else None
        if producer is not None and len(producer.output) == 1 and producer.op_type in _SEVERAL_OUTPUTS:
            return producer.op_type
    return None


# operators with a variable number of outputs, which an importer may return as a tuple however many a node uses
_SEVERAL_OUTPUTS = frozenset({"Split", "Unique", "LSTM", "GRU", "RNN"})


# A failure report listing several operations, each in its own block (OpenVINO's "-- Loop-15 with a message: ...").
_BLOCK = re.compile(r"\s*-- (?=[A-Za-z]\w*-\d+ with a message:)")


def own_failure(message: str) -> str:
    """``message`` cut to the failing node's own failure (:func:`failing_node`) where it lists several: the report's
    head and that operation's block, so that the words and the native check compared are the cause's, not those of
    the operations listed beside it (sorted by name, a cascade's first); ``message`` itself otherwise."""
    head, *blocks = _BLOCK.split(message)
    found = failing_node(message)
    if len(blocks) < 2 or found is None:
        return message
    own = next((block for block in blocks if block.startswith(f"{found.op}-")), None)
    return f"{head} -- {own}" if own is not None else message


def node_parts(message: str, frames: list[str] | tuple[str, ...], onnx_path: Path | None) -> dict[str, str]:
    """The parts a converter's or an engine's crash adds to its root-cause key: the node its message names (its
    operator and name), else the importer's per-operator code it failed in (the operator and that frame: one
    translation's defect, whichever exception it raises); empty when neither is known."""
    named = failing_operator(message, onnx_path)
    if named is not None:
        return {OPERATOR_PART: named[0], NODE_PART: named[1]}
    found = translator_frame(frames, set(file_operators(onnx_path)))
    return {OPERATOR_PART: found[0], TRANSLATOR_PART: found[1]} if found else {}
