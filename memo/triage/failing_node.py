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

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from memo.backends import declared_messages
from memo.backends.spec import MessageRules

# Integer attributes that choose another code path, not another size: attribute values never split a bug otherwise.
CODE_FLAGS = frozenset({"ceil_mode", "count_include_pad", "exclude_outside", "keepdims", "transA", "transB"})
OPERATOR_PART = "operator"  # the part of a crash's signature parts that names the failing operator
NODE_PART = "node"  # ...and the node's name there, masked in the message the key compares


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


def operator_text(op: str, attributes: dict[str, object]) -> str:
    """``Resize(coordinate_transformation_mode=asymmetric, mode=nearest)``: the op and its code-selecting attributes."""
    chosen = {name: value for name, value in attributes.items() if isinstance(value, str) or name in CODE_FLAGS}
    return f"{op}({', '.join(f'{name}={chosen[name]}' for name in sorted(chosen))})" if chosen else op


def _file_attributes(onnx_path: Path, found: FailingNode) -> dict[str, object] | None:
    """The attributes of the node of the file at ``onnx_path`` the message named (by node name or output name)."""
    import onnx
    from onnx import helper

    try:
        graph = onnx.load(str(onnx_path), load_external_data=False).graph
    except Exception:  # an unreadable file: the op the message names still counts
        return None
    for node in graph.node:
        if node.op_type == found.op and found.node and (node.name == found.node or found.node in node.output):
            values = {attr.name: helper.get_attribute_value(attr) for attr in node.attribute}
            return {name: value.decode() if isinstance(value, bytes) else value for name, value in values.items()}
    return None


def failing_operator(message: str, onnx_path: Path | None = None) -> tuple[str, str] | None:
    """(operator, node name) of the node a crash ``message`` names, the operator with its code-selecting attributes
    where the converted file at ``onnx_path`` holds that node; None when the message names no node."""
    found = failing_node(message)
    if found is None:
        return None
    attributes = _file_attributes(onnx_path, found) if onnx_path is not None and onnx_path.is_file() else None
    return operator_text(found.op, attributes or {}), found.node
