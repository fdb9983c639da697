"""ONNX's reference implementation as a third opinion on a converted file.

``onnx.reference.ReferenceEvaluator`` (pure numpy, shipped with the onnx package) computes what the ONNX
specification says a file computes. Run on the very file an engine read, with the same inputs, it tells the
converter's defect (the file itself computes another result than the Keras model) from the engine's (the engine
differs from the specification on a valid file): :mod:`memo.triage.onnx_reference` judges by it.

It runs in a child process of its own (``python -m memo.backends.onnx_reference MODEL INPUTS OUT``), started
per request: the evaluator can be slow on a large graph, so it is bounded by a node count and a time limit, and
the orchestrator never imports onnx for it. Stdlib and numpy here; onnx inside the child only.
"""
from __future__ import annotations

import os
import subprocess
import sys
import traceback
from pathlib import Path

import numpy as np

from memo.backends.node_shapes import graph_feed

MAX_NODES = 300  # a reduced model's file has a few dozen nodes; past this the evaluator is not worth its time
TIMEOUT_S = 60.0
FAILED = 3  # the child's exit status when the evaluator raised (its stderr says why)
TOO_LARGE = 4
TIMED_OUT = "timed out"  # what the child runner says of a child that did not finish


def _evaluate(model_path: str, inputs_path: str, out_path: str, max_nodes: int) -> int:
    """In the child: the file's outputs by the reference evaluator, written as ``out_0``, ``out_1``..."""
    import onnx
    from onnx.reference import ReferenceEvaluator

    model = onnx.load(model_path)
    if len(model.graph.node) > max_nodes:
        print(f"{len(model.graph.node)} nodes, over the limit of {max_nodes}", file=sys.stderr)
        return TOO_LARGE
    feed = graph_feed(model, _read_inputs(inputs_path))
    try:
        outputs = ReferenceEvaluator(model).run(None, feed)
    except Exception as exc:  # noqa: BLE001 - an operator the evaluator lacks is no opinion, reported as text
        # the operator whose implementation raised (its module, onnx/reference/ops/op_NAME.py): what failed
        modules = [Path(frame.filename).stem for frame in traceback.extract_tb(exc.__traceback__)
                   if Path(frame.filename).stem.startswith("op_")]
        where = f" [in {modules[-1]}]" if modules else ""
        print(f"{type(exc).__name__}: {' '.join(str(exc).split())[:400]}{where}", file=sys.stderr)
        return FAILED
    np.savez(out_path, **{f"out_{i}": np.asarray(array) for i, array in enumerate(outputs)})
    return 0


def _read_inputs(inputs_path: str) -> dict[str, np.ndarray]:
    with np.load(inputs_path, allow_pickle=False) as data:
        return {name: data[name] for name in data.files}


def _child(args: list[str], inputs: dict[str, np.ndarray], inputs_path: Path, out: Path, timeout_s: float,
           more: list[str] | None = None, python: str | None = None) -> str | None:
    """Run this module in a child process on ``inputs`` (saved to ``inputs_path``), writing ``out``: None when it
    did, :data:`TIMED_OUT`, or the last line of its stderr (or its exit status) when it did not. ``python``: another
    interpreter (the newest-code environment's, which has onnx and numpy but not memo: memo's folder is put on its
    path)."""
    inputs_path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(inputs_path, **inputs)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    if python:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(__file__).resolve().parents[2]),
                                                          env.get("PYTHONPATH")]))
    try:
        command = [python or sys.executable, "-m", "memo.backends.onnx_reference", *args, str(inputs_path), str(out),
                   *(more or [])]
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, env=env, check=False)
    except subprocess.TimeoutExpired:
        return TIMED_OUT
    if done.returncode != 0 or not out.exists():
        lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
        return lines[-1] if lines else f"exit {done.returncode}"
    return None


def _shapes_at(model_path: str, inputs_path: str, out_path: str, op: str) -> int:
    """In the child: the output shape of the file's first top-level ``op`` node by the specification (the evaluator on
    the file cut after that node) and by ONNX Runtime (the whole file, that output added), as JSON."""
    import json

    import onnx
    import onnx.utils
    from onnx.reference import ReferenceEvaluator

    model = onnx.load(model_path)
    node = next((node for node in model.graph.node if node.op_type == op), None)
    if node is None or not node.output or not node.output[0]:
        print(f"no top-level {op} node", file=sys.stderr)
        return FAILED
    feed = graph_feed(model, _read_inputs(inputs_path))
    cut = Path(out_path).with_suffix(".cut.onnx")
    onnx.utils.extract_model(model_path, str(cut), list(feed), [node.output[0]], check_model=False)
    found: dict[str, object] = {"node": node.name, "op": op}
    try:
        found["spec"] = list(np.shape(ReferenceEvaluator(onnx.load(str(cut))).run(None, feed)[0]))
    except Exception as exc:  # noqa: BLE001 - said as text
        found["spec"] = f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
    try:
        import onnxruntime

        model.graph.output.extend([onnx.ValueInfoProto(name=node.output[0])])
        session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        found["onnxruntime"] = list(np.shape(session.run([node.output[0]], feed)[0]))
    except Exception as exc:  # noqa: BLE001 - said as text
        found["onnxruntime"] = f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
    Path(out_path).write_text(json.dumps(found))
    return 0


def shapes_at(model_path: Path, inputs: dict[str, np.ndarray], op: str, scratch: Path,
              timeout_s: float = TIMEOUT_S) -> dict[str, object] | str:
    """``{"node", "op", "spec", "onnxruntime"}``: the output shape of the file's first ``op`` node by the ONNX
    specification and by ONNX Runtime (each a shape, or why there is none), or why neither could be computed."""
    import json

    out = scratch / "shapes-at.json"
    failed = _child(["--at", op, str(model_path)], inputs, scratch / "shapes-at.inputs.npz", out, timeout_s)
    if failed == TIMED_OUT:
        return f"not finished in {timeout_s:g} s"
    return failed if failed is not None else json.loads(out.read_text())


def reference_outputs(model_path: Path, inputs: dict[str, np.ndarray], scratch: Path,
                      timeout_s: float = TIMEOUT_S, max_nodes: int = MAX_NODES,
                      python: str | None = None) -> list[np.ndarray] | str:
    """The outputs ONNX's reference evaluator computes for the file at ``model_path`` on ``inputs`` (in the
    model's input order), or why there are none (too large, too slow, an operator it does not implement).
    ``python``: the interpreter whose onnx evaluates (default: memo's)."""
    out = scratch / "onnx-reference.out.npz"
    failed = _child([str(model_path)], inputs, scratch / "onnx-reference.inputs.npz", out, timeout_s, [str(max_nodes)],
                    python)
    if failed == TIMED_OUT:
        return f"the ONNX reference evaluator did not finish in {timeout_s:g} s"
    if failed is not None:
        return f"the ONNX reference evaluator cannot run this file: {failed}"
    with np.load(out, allow_pickle=False) as data:
        return [data[f"out_{i}"] for i in range(len(data.files))]


if __name__ == "__main__":
    if sys.argv[1] == "--at":
        sys.exit(_shapes_at(sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[2]))
    sys.exit(_evaluate(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]) if len(sys.argv) > 4 else MAX_NODES))
