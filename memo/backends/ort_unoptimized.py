"""ONNX Runtime with its graph optimizations off, in a child process: ``python -m memo.backends.ort_unoptimized
MODEL INPUTS OUT``. It loads the file with ``SessionOptions.graph_optimization_level = ORT_DISABLE_ALL`` (every
fusion, constant folding and layout transformation off, the kernels as the graph names them) on the CPU provider,
runs it on the inputs (``.npz``, fed as :mod:`memo.backends.onnxruntime_backend` feeds them) and writes the outputs to
``OUT`` (``out_0``, ``out_1``, ...). On failure it exits 1 with ``Type: message`` as the last line of stderr.
With ``--optimized`` it runs the file as a user does (default optimizations), after ``onnx.checker`` (its answer and
ONNX Runtime's version on stdout): the second engine's opinion on another engine's crash
(:mod:`memo.triage.second_engine`).

Which of ONNX Runtime's findings an optimization pass makes (the transpose optimizer moving a Resize to NHWC where
the cubic kernel refuses the scales; a fusion computing differently) is what :mod:`memo.triage.ort_unoptimized`
asks it. onnxruntime is imported in the child only: memo's process never imports a library under test.
"""
from __future__ import annotations

import sys

import numpy as np


OPTIMIZED = "--optimized"  # ONNX Runtime as a user runs it (default optimizations), after ONNX's checker


def _main(model_path: str, inputs_path: str, out_path: str, optimized: bool = False) -> int:
    import onnxruntime

    from memo.backends.onnxruntime_backend import _run

    with np.load(inputs_path, allow_pickle=False) as data:
        inputs = {name: data[name] for name in data.files}
    options = onnxruntime.SessionOptions()
    if optimized:  # a second engine's opinion on another engine's crash: is the file valid, and does it run?
        import onnx

        try:
            onnx.checker.check_model(model_path, full_check=True)
            print("checker: passes")
        except Exception as exc:  # noqa: BLE001  (what the checker says is the answer)
            print(f"checker: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}")
        print(f"onnxruntime {onnxruntime.__version__}")
    else:
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    try:
        session = onnxruntime.InferenceSession(model_path, options, providers=["CPUExecutionProvider"])
        outputs = _run(session, inputs)
    except Exception as exc:  # noqa: BLE001  (the parent reads the failure from stderr)
        print(f"{type(exc).__name__}: {' '.join(str(exc).split())}", file=sys.stderr)
        return 1
    np.savez(out_path, **{f"out_{i}": np.asarray(y) for i, y in enumerate(outputs)})
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1], sys.argv[2], sys.argv[3], OPTIMIZED in sys.argv[4:]))
