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


def test_a_failing_loop_is_described_by_its_counts_and_the_values_its_body_captures(tmp_path: Path) -> None:
    """t58's reader counted OpenVINO's "canonical inputs size (9)" out of a 95-node file: 8 body inputs and one value
    the body reads from the enclosing graph."""
    from onnx import TensorProto, helper

    from memo.filing.onnx_code import loop_facts

    scalar = [helper.make_tensor_value_info(name, TensorProto.FLOAT, [1]) for name in ("i", "c", "x")]
    body = helper.make_graph(
        [helper.make_node("Identity", ["c"], ["c_out"]), helper.make_node("Add", ["x", "outer"], ["x_out"])],
        "body", scalar, [helper.make_tensor_value_info(name, TensorProto.FLOAT, [1]) for name in ("c_out", "x_out")])
    loop = helper.make_node("Loop", ["m", "cond", "x0"], ["x_final"], body=body)
    graph = helper.make_graph([helper.make_node("Identity", ["x0"], ["outer"]), loop], "g",
                              [helper.make_tensor_value_info(name, TensorProto.FLOAT, [1])
                               for name in ("m", "cond", "x0")],
                              [helper.make_tensor_value_info("x_final", TensorProto.FLOAT, [1])])
    path = tmp_path / "loop.onnx"
    onnx.save(helper.make_model(graph), path)
    assert loop_facts(path, "Loop") == (
        "its Loop node has 3 inputs (trip count, condition and 1 loop-carried value) and 1 output, its body 3 "
        "inputs and 2 outputs (condition, 1 carried value); the body also reads 1 value of the enclosing graph "
        "(`outer`), as ONNX allows")
    assert loop_facts(path, "Conv") == ""


def test_a_loop_body_passing_an_input_through_says_so(tmp_path: Path) -> None:
    """t58's reduced OpenVINO Loop: 3 of the body's outputs are its inputs, no node between (OpenVINO counted 11)."""
    from onnx import TensorProto, helper

    from memo.filing.onnx_code import loop_facts

    value = [helper.make_tensor_value_info(name, TensorProto.FLOAT, [1]) for name in ("i", "c", "w")]
    body = helper.make_graph([helper.make_node("Identity", ["c"], ["c_out"])], "body", value,
                             [helper.make_tensor_value_info("c_out", TensorProto.FLOAT, [1]),
                              helper.make_tensor_value_info("w", TensorProto.FLOAT, [1])])
    graph = helper.make_graph([helper.make_node("Loop", ["m", "cond", "w0"], ["w_final"], body=body)], "g",
                              [helper.make_tensor_value_info(name, TensorProto.FLOAT, [1])
                               for name in ("m", "cond", "w0")],
                              [helper.make_tensor_value_info("w_final", TensorProto.FLOAT, [1])])
    path = tmp_path / "loop.onnx"
    onnx.save(helper.make_model(graph), path)
    assert loop_facts(path, "Loop").endswith(
        "; 1 body output is a body input passed through unchanged (no node between), as ONNX allows")
