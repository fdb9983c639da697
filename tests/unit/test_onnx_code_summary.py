"""What an attached ONNX file holds, in one line (memo.filing.onnx_code.file_summary), and the helper code's limits."""
from __future__ import annotations

from pathlib import Path

import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

from memo.filing.onnx_code import MAX_HELPER_NODES, GraphNotWritable, file_summary, onnx_graph_code  # noqa: E402


def _save(path: Path, nodes: list, producer: str = "tf2onnx", version: str = "1.17.0 None") -> Path:
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
                                           helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)], producer_name=producer,
                              producer_version=version)
    onnx.save(model, str(path))
    return path


def _branch(name: str) -> object:
    return helper.make_graph([helper.make_node("Relu", ["x"], [f"{name}_out"])], name, [],
                             [helper.make_tensor_value_info(f"{name}_out", TensorProto.FLOAT, [2])])


def test_the_summary_names_producer_opset_nodes_operators_and_subgraphs(tmp_path: Path) -> None:
    nodes = [helper.make_node("If", ["c"], ["t"], then_branch=_branch("a"), else_branch=_branch("b")),
             helper.make_node("Transpose", ["t"], ["u"]), helper.make_node("Resize", ["u"], ["y"])]
    path = _save(tmp_path / "m.onnx", nodes)
    assert file_summary(path, frozenset({"Transpose"}), first="Resize") == \
        "tf2onnx 1.17.0's file, opset 15, 5 nodes (Resize, Relu, If, Transpose; 2 subgraphs)"


def test_helper_code_declines_a_subgraph_and_a_graph_over_its_node_limit_with_a_reason(tmp_path: Path) -> None:
    nodes = [helper.make_node("If", ["c"], ["y"], then_branch=_branch("a"), else_branch=_branch("b"))]
    with pytest.raises(GraphNotWritable, match="subgraph"):
        onnx_graph_code(_save(tmp_path / "if.onnx", nodes))
    chain = [helper.make_node("Relu", [f"t{i}" if i else "x"], [f"t{i + 1}" if i < MAX_HELPER_NODES else "y"])
             for i in range(MAX_HELPER_NODES + 1)]
    with pytest.raises(GraphNotWritable, match=f"over {MAX_HELPER_NODES} nodes"):
        onnx_graph_code(_save(tmp_path / "long.onnx", chain))
