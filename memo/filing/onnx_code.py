"""A reduced model.onnx as ``onnx.helper`` code: its nodes with their attributes, its inputs and outputs, and its
initializers (small ones written inline, the others read from an attached ``.npz``).

Tensor names are shortened (a converter's ``StatefulPartitionedCall/model/conv2/Conv2D__6:0`` becomes ``conv0``);
the graph's input names stay, since the engines feed inputs by name.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from memo.filing.pycode import INDENT, literal

INLINE_ELEMENTS = 16  # integer initializers up to this many elements are written in the script
INLINE_FLOATS = 4  # float ones up to this many
WEIGHTS_FILE = "weights.npz"
# A graph with more nodes (its subgraphs' counted) is attached as its file: helper code for it would be no minimal
# script (Keras's own export writes hundreds of nodes for a few layers).
MAX_HELPER_NODES = 40
SUMMARY_OPERATORS = 6  # the operators a file's one-line summary lists


class GraphNotWritable(Exception):
    """A graph that helper code cannot state compactly (a subgraph attribute, a sparse tensor)."""


@dataclass
class OnnxGraphCode:
    """Lines that build ``model`` (an ``onnx.ModelProto``), the attached arrays, and the graph's input names."""

    lines: list[str]
    attached: dict[str, np.ndarray] = field(default_factory=dict)
    inputs: list[str] = field(default_factory=list)
    outputs: int = 0
    nodes: int = 0


class _Names:
    def __init__(self, keep: set[str]) -> None:
        self.map: dict[str, str] = {name: name for name in keep}
        self.counts: dict[str, int] = {}

    def short(self, name: str, base: str) -> str:
        if not name:
            return ""
        if name not in self.map:
            stem = "".join(ch for ch in base.lower() if ch.isalnum()) or "t"
            index = self.counts.get(stem, 0)
            self.counts[stem] = index + 1
            self.map[name] = f"{stem}{index}"
        return self.map[name]


def _array(array: np.ndarray, name: str, attached: dict[str, np.ndarray]) -> str:
    """``numpy_helper.from_array(...)`` for one tensor: inline when small, else from the attached file."""
    if array.size <= (INLINE_FLOATS if array.dtype.kind in "fc" else INLINE_ELEMENTS):
        values = literal(array.tolist())
        return f"numpy_helper.from_array(np.array({values}, dtype=np.{array.dtype.name}), {name!r})"
    attached[name] = array
    return f"numpy_helper.from_array(w[{name!r}], {name!r})"


def _attribute(attribute: Any, names: _Names, attached: dict[str, np.ndarray]) -> str:
    from onnx import AttributeProto, helper, numpy_helper

    if attribute.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS):
        raise GraphNotWritable(f"a subgraph (attribute {attribute.name})")
    if attribute.type in (AttributeProto.SPARSE_TENSOR, AttributeProto.SPARSE_TENSORS, AttributeProto.TENSORS):
        raise GraphNotWritable(f"attribute {attribute.name} of type {AttributeProto.AttributeType.Name(attribute.type)}")
    if attribute.type == AttributeProto.TENSOR:
        return _array(numpy_helper.to_array(attribute.t), names.short(attribute.t.name or "value", "value"), attached)
    value = helper.get_attribute_value(attribute)
    if isinstance(value, bytes):
        return literal(value.decode())
    if isinstance(value, list):
        return literal([item.decode() if isinstance(item, bytes) else item for item in value])
    return literal(value)


def _value_info(info: Any, names: _Names) -> str:
    tensor = info.type.tensor_type
    dims = [dim.dim_value if dim.HasField("dim_value") else (dim.dim_param or None) for dim in tensor.shape.dim]
    shape = literal(dims) if tensor.HasField("shape") else "None"
    from onnx import TensorProto

    elem = TensorProto.DataType.Name(tensor.elem_type)
    return f"helper.make_tensor_value_info({names.short(info.name, 'out')!r}, TensorProto.{elem}, {shape})"


def onnx_graph_code(path: Path) -> OnnxGraphCode:
    """The helper code rebuilding the graph of the ONNX file at ``path``."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(path))
    graph = model.graph
    counted = len(all_nodes(graph))
    if counted > MAX_HELPER_NODES:  # checked first: a large graph's reason is its size, whatever else it holds
        raise GraphNotWritable(f"over {MAX_HELPER_NODES} nodes")
    initializer_names = {init.name for init in graph.initializer}
    inputs = [arg for arg in graph.input if arg.name not in initializer_names]
    names = _Names({arg.name for arg in inputs})
    declared = [*inputs, *(arg for arg in graph.input if arg.name in initializer_names)]  # MXNet's importer reads
    # initializers only where the graph lists them as inputs too (tf2onnx-opset11's files): kept as they are
    attached: dict[str, np.ndarray] = {}
    initializers = [_array(numpy_helper.to_array(init), names.short(init.name, "w"), attached)
                    for init in graph.initializer]
    inputs_code = ", ".join(_value_info(arg, names) for arg in declared)
    nodes = []
    for node in graph.node:
        node_inputs = [names.short(name, "t") for name in node.input]
        node_outputs = [names.short(name, node.op_type) for name in node.output]
        attributes = "".join(f", {a.name}={_attribute(a, names, attached)}" for a in node.attribute)
        domain = f", domain={node.domain!r}" if node.domain else ""
        nodes.append(f"{INDENT}helper.make_node({node.op_type!r}, {literal(node_inputs)}, {literal(node_outputs)}"
                     f"{domain}{attributes}),")
    lines = [f"w = np.load({WEIGHTS_FILE!r})"] if attached else []
    lines += ["nodes = [", *nodes, "]",
              "graph = helper.make_graph(nodes, \"bug\",",
              f"{INDENT}[{inputs_code}],",
              f"{INDENT}[{', '.join(_value_info(arg, names) for arg in graph.output)}],",
              f"{INDENT}[{', '.join(initializers)}])" if initializers else f"{INDENT}[])"]
    opsets = ", ".join(f"helper.make_opsetid({entry.domain!r}, {entry.version})" for entry in model.opset_import)
    lines.append(f"model = helper.make_model(graph, opset_imports=[{opsets}], ir_version={model.ir_version})")
    return OnnxGraphCode(lines, attached, [arg.name for arg in inputs], len(graph.output), len(graph.node))


def onnx_file_inputs(path: Path) -> tuple[list[str], int]:
    """The graph's own inputs (initializers left out) and its number of outputs, for a script loading the file."""
    import onnx

    graph = onnx.load(str(path)).graph
    initializer_names = {init.name for init in graph.initializer}
    return [arg.name for arg in graph.input if arg.name not in initializer_names], len(graph.output)


def all_nodes(graph: Any) -> list[Any]:
    """The nodes of ``graph`` and of every subgraph its nodes hold (an If's branches, a Loop's body)."""
    from onnx import AttributeProto

    found = []
    for node in graph.node:
        found.append(node)
        for attribute in node.attribute:
            held = [attribute.g] if attribute.type == AttributeProto.GRAPH else \
                list(attribute.graphs) if attribute.type == AttributeProto.GRAPHS else []
            for subgraph in held:
                found += all_nodes(subgraph)
    return found


def file_summary(path: Path, plumbing: frozenset[str] = frozenset(), first: str = "") -> str:
    """What an attached ONNX file holds, in one phrase for a maintainer who would otherwise get an unexplained
    binary: its producer, its opset, its node count and operators (most frequent first, ``plumbing`` listed last),
    its subgraphs (``first``, the failing operator where known, listed first): "tf2onnx 1.17.0's file, opset 15, 64 nodes (Resize, If, Mul, ...; 4 subgraphs)"."""
    import onnx

    model = onnx.load(str(path))
    nodes = all_nodes(model.graph)
    counts: dict[str, int] = {}
    for node in nodes:
        counts[node.op_type] = counts.get(node.op_type, 0) + 1
    ranked = sorted(counts, key=lambda op: (op != first, op in plumbing, -counts[op]))
    listed = ", ".join(ranked[:SUMMARY_OPERATORS]) + (", ..." if len(ranked) > SUMMARY_OPERATORS else "")
    held = sum(1 if attribute.HasField("g") else len(attribute.graphs) for node in nodes for attribute in node.attribute)
    producer = " ".join(word for word in f"{model.producer_name} {model.producer_version}".split() if word != "None")
    opset = next((entry.version for entry in model.opset_import if entry.domain in ("", "ai.onnx")), None)
    made = f"{producer}'s file" if producer else "a file"
    opset_text = f", opset {opset}" if opset else ""
    subgraphs = f"; {held} subgraph{'s' * (held != 1)}" if held else ""
    return f"{made}{opset_text}, {len(nodes)} node{'s' * (len(nodes) != 1)} ({listed}{subgraphs})"


def loop_facts(path: Path, op: str) -> str:
    """A failing Loop's counts as the ONNX specification relates them (the node's inputs: trip count, condition and
    the loop-carried values; its body's inputs: iteration number, condition and the same carried values), and the
    values its body reads from the enclosing graph, which ONNX allows, as a phrase; "" for another operator or a file
    without a Loop. t58's reader had to count them in a 95-node file to see that OpenVINO's "canonical inputs size
    (9)" adds the body's one outer-scope value to its 8 inputs."""
    import onnx

    if op != "Loop":
        return ""
    loops = [node for node in all_nodes(onnx.load(str(path)).graph) if node.op_type == "Loop"]
    facts = []
    for node in loops:
        body = next((attribute.g for attribute in node.attribute if attribute.name == "body"), None)
        if body is None:
            continue
        inputs = {value.name for value in body.input}
        defined = inputs | {tensor.name for tensor in body.initializer} | {name for inner in body.node
                                                                         for name in inner.output}
        outer = sorted({name for inner in body.node for name in inner.input if name and name not in defined})
        carried = len(node.input) - 2
        scans = len(body.output) - 1 - carried
        said = (f"its Loop node has {_counted(len(node.input), 'input')} (trip count, condition and "
                f"{_counted(carried, 'loop-carried value')}) and {_counted(len(node.output), 'output')}, its body "
                f"{_counted(len(body.input), 'input')} and {_counted(len(body.output), 'output')} (condition, "
                f"{_counted(carried, 'carried value')}"
                + (f", {_counted(scans, 'scan output')})" if scans > 0 else ")"))
        passed = sum(1 for value in body.output if value.name in inputs)
        if passed:  # an output that is an input of the body itself, no node between (t58: 11 = 8 inputs + 3 of these)
            said += (f"; {_counted(passed, 'body output')} {'is a body input' if passed == 1 else 'are body inputs'} "
                     f"passed through unchanged (no node between)")
        if outer:
            said += (f"; the body also reads {_counted(len(outer), 'value')} of the enclosing graph "
                     f"(`{outer[0]}`{', ...' if len(outer) > 1 else ''})")
        if outer or passed:
            return said + ", as ONNX allows"
        facts.append(said)
    return facts[0] if facts else ""


def _counted(count: int, noun: str) -> str:
    return f"{count} {noun}{'s' * (count != 1)}"
