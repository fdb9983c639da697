"""The output shape of every node of an ONNX file, on an engine and on a reference, to find where a shape goes wrong.

An engine crashing on a shape mismatch (onnx2torch's Reshape: "shape '[2, 15, 31, 80]' is invalid for input of
size 78120") often fails later than where it went wrong: the node that first gives another shape than the ONNX
specification (onnx2torch's ConvTranspose ignoring ``output_shape``: 31x63 where the file says 30x62) is the root
cause. ONNX Runtime (else ONNX's reference evaluator) gives the shape of every node's output; an engine whose model
is a torch module of one child per node (onnx2torch's ``GraphModule``, named after the nodes) gives its own through
forward hooks, up to where it fails.

It runs in a child process (``python -m memo.backends.node_shapes ENGINE MODEL INPUTS OUT``): the orchestrator
never imports a library under test. Stdlib and numpy here; the engine, onnx and onnxruntime inside the child only.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

TIMEOUT_S = 60.0
# Engines whose loaded model is a torch module with one child per ONNX node (named after the node, or after its op
# and first output): the only ones whose per-node shapes forward hooks give. Asking any other engine loads it for
# nothing (OpenVINO compiles the whole model).
PER_NODE_MODULES = frozenset({"onnx2torch", "onnx2pytorch"})
Shapes = dict[str, list[list[int]]]  # node name -> the shape of each of its outputs


def graph_feed(model: Any, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The feed of an ONNX ``model``'s graph inputs (initializers aside), as the engines feed it: by name when the
    graph's inputs are named after the model's, else by position."""
    initialized = {tensor.name for tensor in model.graph.initializer}
    args = [arg.name for arg in model.graph.input if arg.name not in initialized]
    return ({name: inputs[name] for name in args} if all(name in inputs for name in args)
            else dict(zip(args, inputs.values())))


ONNXRUNTIME, EVALUATOR = "ONNX Runtime", "onnx.reference.ReferenceEvaluator"


def _reference_shapes(model_path: str, inputs: dict[str, np.ndarray]) -> tuple[str, Shapes]:
    """Who computed them (:data:`ONNXRUNTIME`, else :data:`EVALUATOR`) and every top-level node's output shapes."""
    import onnx

    model = onnx.load(model_path)
    feed = graph_feed(model, inputs)
    names = [output for node in model.graph.node for output in node.output if output]
    try:
        import onnxruntime

        listed = {output.name for output in model.graph.output}
        model.graph.output.extend(onnx.ValueInfoProto(name=name) for name in names if name not in listed)
        session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        wanted = [output.name for output in session.get_outputs()]
        values, by = dict(zip(wanted, session.run(wanted, feed))), ONNXRUNTIME
    except Exception:  # noqa: BLE001 - ONNX Runtime cannot run it: the evaluator's intermediate results
        from onnx.reference import ReferenceEvaluator

        values, by = ReferenceEvaluator(onnx.load(model_path)).run(None, feed, intermediate=True), EVALUATOR
    return by, {node.name: [list(np.shape(values[output])) for output in node.output if output in values]
            for node in model.graph.node if all(output in values for output in node.output if output)}


def _engine_shapes(engine: str, model_path: str, inputs: dict[str, np.ndarray]) -> Shapes:
    """The output shapes of the engine's per-node modules, in the order they ran, up to where it failed."""
    from memo.backends import load_spec

    spec = load_spec(engine)
    if spec.setup:
        spec.setup()
    converted = spec.convert(Path(model_path)) if spec.convert is not None else Path(model_path)
    module = spec.load(converted)
    shapes: Shapes = {}
    if not hasattr(module, "named_children"):
        return shapes

    def recorder(name: str) -> Any:
        def hook(_module: Any, _args: Any, output: Any) -> None:
            outputs = output if isinstance(output, (tuple, list)) else [output]
            shapes[name] = [list(value.shape) for value in outputs if hasattr(value, "shape")]
        return hook

    for name, child in module.named_children():
        child.register_forward_hook(recorder(name))
    try:
        spec.run(module, inputs)
    except Exception:  # noqa: BLE001 - the crash being explained: the shapes up to it are the answer
        pass
    return shapes


def _measure(engine: str, model_path: str, inputs_path: str, out_path: str) -> int:
    """In the child: both sets of shapes, written as JSON (``reference``, ``engine``, and ``by``: who computed the
    reference's)."""
    with np.load(inputs_path, allow_pickle=False) as data:
        inputs = {name: data[name] for name in data.files}
    found: dict[str, Any] = {}
    for side, measure in (("reference", lambda: _reference_shapes(model_path, inputs)),
                          ("engine", lambda: ("", _engine_shapes(engine, model_path, inputs)))):
        try:
            by, found[side] = measure()
            found["by"] = found.get("by") or by
        except Exception as exc:  # noqa: BLE001 - one side missing: no comparison, said as text
            found[side] = f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
    Path(out_path).write_text(json.dumps(found))
    return 0


def node_shapes(engine: str, model_path: Path, inputs: dict[str, np.ndarray], scratch: Path,
                timeout_s: float = TIMEOUT_S) -> dict[str, Shapes | str]:
    """``{"reference": shapes, "engine": shapes, "by": who computed the reference's}`` for the file at ``model_path`` on ``inputs`` (a side that could
    not run: why, as text; both, when the child did not finish)."""
    scratch.mkdir(parents=True, exist_ok=True)
    inputs_path, out = scratch / "node-shapes.inputs.npz", scratch / "node-shapes.json"
    np.savez(inputs_path, **inputs)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    try:
        done = subprocess.run([sys.executable, "-m", "memo.backends.node_shapes", engine, str(model_path),
                               str(inputs_path), str(out)], capture_output=True, text=True, timeout=timeout_s,
                              env=env, check=False)
    except subprocess.TimeoutExpired:
        return dict.fromkeys(("reference", "engine"), f"not finished in {timeout_s:g} s")
    if done.returncode != 0 or not out.exists():
        lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
        return dict.fromkeys(("reference", "engine"), lines[-1] if lines else f"exit {done.returncode}")
    return json.loads(out.read_text())


if __name__ == "__main__":
    sys.exit(_measure(*sys.argv[1:5]))
