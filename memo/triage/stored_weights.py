"""Where an ONNX file's layer operators take their weights from: a stored tensor of their graph (an initializer or a
Constant's output), or a value computed in the graph or captured from an enclosing one. An importer that builds a
torch layer from the node's stored weights (onnx2pytorch's ``convert/layer.py``) fails on the others, whichever
operator and message: one root cause (:func:`memo.triage.signature.reduced_keys`), and what the issue text says of
the attached file (:mod:`memo.filing.check`). Pure: reads the file only."""
from __future__ import annotations

from pathlib import Path
from typing import Any

# Importers that build a layer from its node's stored weights, and the module doing so: a crash with a frame there, on
# a file holding a layer operator whose weight is not stored, is that one assumption (t58: onnx2pytorch's Gemm
# "Unexpected number of parameters: 0" and its Conv in a Loop body "Conv3d.__init__() missing 2 required positional
# arguments", both in convert/layer.py, which reads the weights from the initializers)
STORED_WEIGHT_IMPORTERS: dict[str, str] = {"onnx2pytorch": "onnx2pytorch/convert/layer.py"}
COMPUTED_WEIGHT = "computed_weight"  # the root-cause part: the operator whose weight is not stored

# The input of an operator that holds its weights (the ONNX operators' specifications): a converter that builds a
# module per node reads it as a stored tensor (onnx2pytorch's Conv and Gemm: t54's "Conv3d missing in_channels",
# t55's "Unexpected number of parameters: 0" on a Gemm whose B a MultiHeadAttention computes)
WEIGHT_INPUTS = {"Conv": (1, "W"), "ConvTranspose": (1, "W"), "Gemm": (1, "B")}


def computed_weight(path: Path, op: str) -> str:
    """Where the first ``op`` node of the file (its subgraphs included) whose weight input is no stored tensor of its
    graph (an initializer or a Constant's output) takes it from, as a phrase ("its Gemm's B input is computed in the
    graph, not a stored initializer"); "" where every such node's weight is stored, or ``op`` holds none."""
    import onnx

    return _computed_in(onnx.load(str(path)).graph, op) if op in WEIGHT_INPUTS else ""


def _computed_in(graph: Any, op: str) -> str:
    """:func:`computed_weight` in a loaded ``graph`` (its subgraphs included)."""
    index, role = WEIGHT_INPUTS[op]

    def find(graph: Any) -> str:
        stored = {init.name for init in graph.initializer} | {name for node in graph.node
                                                               if node.op_type == "Constant" for name in node.output}
        made = {name for node in graph.node for name in node.output} | {arg.name for arg in graph.input}
        for node in graph.node:
            if node.op_type == op and len(node.input) > index and node.input[index] not in stored:
                how = "computed in the graph" if node.input[index] in made else \
                    "taken from the enclosing graph (a subgraph's capture)"
                return f"its {op}'s {role} input is {how}, not a stored initializer"
        return next((found for node in graph.node for attribute in node.attribute
                     for sub in ([attribute.g] if attribute.HasField("g") else list(attribute.graphs))
                     if (found := find(sub))), "")

    return find(graph)


def stored_weight_parts(library: str, frames: list[str], path: Path | None) -> dict[str, str]:
    """The root-cause part of a crash of an importer of :data:`STORED_WEIGHT_IMPORTERS` in its layer-building module
    on a file with a weight that is not stored (``{COMPUTED_WEIGHT: op}``), else {}."""
    module = STORED_WEIGHT_IMPORTERS.get(library)
    if module is None or not any(frame.startswith(module) for frame in frames):
        return {}
    op = first_computed_weight(path)
    return {COMPUTED_WEIGHT: op} if op else {}


def first_computed_weight(path: Path | None) -> str | None:
    """The first layer operator of :data:`WEIGHT_INPUTS` in the file whose weight is not stored (None: none, or no
    readable file)."""
    from memo.triage.failing_node import file_graph

    graph = file_graph(path)  # once per version of the file: a title asks for every crash of an importer
    return next((op for op in WEIGHT_INPUTS if _computed_in(graph, op)), None) if graph is not None else None


__all__ = ["COMPUTED_WEIGHT", "STORED_WEIGHT_IMPORTERS", "WEIGHT_INPUTS", "computed_weight", "first_computed_weight",
           "stored_weight_parts"]
