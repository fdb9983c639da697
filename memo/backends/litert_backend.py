"""LiteRT (ai-edge-litert, formerly TensorFlow Lite's interpreter) on TensorFlow's TFLite conversion.

Stages: ``load`` builds the interpreter (with its default XNNPACK delegate, one thread) and allocates its
tensors; ``execute`` resizes the inputs to the arrays' shapes where they differ, allocates again, sets the
inputs, invokes and reads the outputs.

Order: the converter names the flatbuffer signature's inputs and outputs by position in the model
(``input_0``, ``input_1``... and ``output_0``...); LiteRT's own lists are in another order (the subgraph's
inputs put an input that is also an output elsewhere; its outputs follow the graph). A flatbuffer without
such a signature (the converter's fallback when it cannot save a SavedModel) has only the subgraph's lists.

ai_edge_litert is imported inside the functions, which run in the worker only; that worker never imports
TensorFlow.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from memo.backends import trackers
from memo.backends.spec import BackendSpec, ModelInputs, ReproRecipe, Upstream
from memo.backends.tflite_converter import INPUT_NAME, OUTPUT_NAME
from memo.backends.versions import distribution_versions

DISTRIBUTIONS = ("ai-edge-litert",)


def _setup() -> dict[str, str]:
    from ai_edge_litert import interpreter  # noqa: F401

    return distribution_versions(DISTRIBUTIONS)


def _load(path: Path) -> Any:
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_path=str(path), num_threads=1)
    interpreter.allocate_tensors()
    return interpreter


def _numbered(details: dict[str, Any], name: str) -> list[int] | None:
    """The tensor indices of a signature's inputs or outputs named ``name`` with the positions 0, 1...
    (``input_0``...; None when they are named otherwise), in the order of those positions."""
    pattern = re.compile(re.escape(name.format("")) + r"(\d+)")
    found = {int(m.group(1)): detail["index"] for key, detail in details.items() if (m := pattern.fullmatch(key))}
    return [found[i] for i in range(len(details))] if sorted(found) == list(range(len(details))) else None


def _tensor_indices(interpreter: Any) -> tuple[list[int], list[int]]:
    """The tensor indices of the model's inputs and of its outputs, each in the model's order."""
    signatures = interpreter.get_signature_list()
    if len(signatures) == 1:
        runner = interpreter.get_signature_runner(next(iter(signatures)))
        inputs = _numbered(runner.get_input_details(), INPUT_NAME)
        outputs = _numbered(runner.get_output_details(), OUTPUT_NAME)
        if inputs is not None and outputs is not None:
            return inputs, outputs
    return ([detail["index"] for detail in interpreter.get_input_details()],
            [detail["index"] for detail in interpreter.get_output_details()])


def _run(interpreter: Any, inputs: ModelInputs) -> list[Any]:
    input_indices, output_indices = _tensor_indices(interpreter)
    if len(input_indices) != len(inputs):
        raise ValueError(f"the converted model has {len(input_indices)} inputs, the model {len(inputs)}")
    arrays = list(inputs.values())
    shapes = {detail["index"]: tuple(detail["shape"]) for detail in interpreter.get_input_details()}
    resized = False
    for index, array in zip(input_indices, arrays):
        if shapes[index] != array.shape:  # the converter fixes the batch to the inputs': never, unless reused
            interpreter.resize_tensor_input(index, array.shape)
            resized = True
    if resized:
        interpreter.allocate_tensors()
    for index, array in zip(input_indices, arrays):
        interpreter.set_tensor(index, array)
    interpreter.invoke()
    return [interpreter.get_tensor(index) for index in output_indices]


SPEC = BackendSpec(name="litert", consumes="tflite", load=_load, run=_run, setup=_setup,
                   distributions=DISTRIBUTIONS, repro=ReproRecipe(),
                   upstream=Upstream("active", "https://github.com/google-ai-edge/LiteRT/issues",
                                     "Google releases ai-edge-litert regularly (2.3.0 installed)", trackers.LITERT))
