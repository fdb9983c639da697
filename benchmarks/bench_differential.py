"""Benchmark: differential execution of 10-20-layer models on every default backend, with warm workers.

    .venv/bin/python benchmarks/bench_differential.py [--models 24] [--seed 0] [--backends a,b,...]

Models are drawn deterministically (conv nets, MLPs, 1-D conv nets; 10-20 layers) and each is run once
through a single DifferentialExecutor. The first model pays the cold start of every worker, reported
apart; the figures are over the warm models. Prints median and p90 seconds per model, and per backend
and stage.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memo.artifact import prepare_artifact  # noqa: E402
from memo.backends.executor import DifferentialExecutor  # noqa: E402
from memo.model.ir import Layer, ModelIR  # noqa: E402
from memo.oracle import judge  # noqa: E402


def _chain(name: str, input_shape: list[int], layers: list[tuple[str, dict]]) -> ModelIR:
    nodes = [Layer("x", "InputLayer", {"batch_shape": [None, *input_shape], "dtype": "float32"})]
    for index, (class_name, config) in enumerate(layers):
        nodes.append(Layer(f"{class_name.lower()}_{index}", class_name, config, inputs=[nodes[-1].name]))
    return ModelIR(layers=nodes, outputs=[nodes[-1].name], name=name)


def conv_model(rng: np.random.Generator, name: str) -> ModelIR:
    layers: list[tuple[str, dict]] = []
    for _ in range(int(rng.integers(3, 6))):
        layers.append(("Conv2D", {"filters": int(rng.choice([4, 8, 16])), "kernel_size": int(rng.choice([1, 3])),
                                  "padding": "same", "activation": str(rng.choice(["relu", "tanh", "linear"]))}))
        layers.append((str(rng.choice(["BatchNormalization", "LayerNormalization"])), {}))
        if rng.random() < 0.5:
            layers.append(("Activation", {"activation": str(rng.choice(["sigmoid", "elu", "softplus"]))}))
    layers += [("MaxPooling2D", {"pool_size": 2}), ("Flatten", {}), ("Dense", {"units": 16, "activation": "relu"}),
               ("Dense", {"units": 10, "activation": "softmax"})]
    return _chain(name, [16, 16, 3], layers[:20])


def mlp_model(rng: np.random.Generator, name: str) -> ModelIR:
    layers: list[tuple[str, dict]] = []
    while len(layers) < int(rng.integers(10, 19)):
        layers.append(("Dense", {"units": int(rng.choice([8, 16, 32])),
                                 "activation": str(rng.choice(["relu", "tanh", "selu", "gelu", "linear"]))}))
        if rng.random() < 0.4:
            extra = str(rng.choice(["BatchNormalization", "Dropout", "LayerNormalization"]))
            layers.append((extra, {"rate": 0.3} if extra == "Dropout" else {}))
    return _chain(name, [24], layers + [("Dense", {"units": 4})])


def conv1d_model(rng: np.random.Generator, name: str) -> ModelIR:
    layers: list[tuple[str, dict]] = []
    for _ in range(int(rng.integers(3, 6))):
        layers.append(("Conv1D", {"filters": int(rng.choice([4, 8])), "kernel_size": int(rng.choice([2, 3])),
                                  "padding": str(rng.choice(["same", "causal"])), "activation": "relu"}))
        layers.append(("BatchNormalization", {}))
    layers += [("MaxPooling1D", {"pool_size": 2}), ("GlobalAveragePooling1D", {}), ("Dense", {"units": 8}),
               ("Dense", {"units": 2, "activation": "softmax"})]
    return _chain(name, [32, 6], layers[:20])


FAMILIES = (conv_model, mlp_model, conv1d_model)


def process_cpu(pid: int | None) -> float:
    """User + system CPU seconds used so far by process ``pid`` (0 when it is not running)."""
    try:
        times = psutil.Process(pid).cpu_times() if pid else None
    except psutil.Error:
        times = None
    return times.user + times.system if times is not None else 0.0


def cpu_seconds(pids: list[int | None]) -> float:
    """User + system CPU seconds used so far by this process and the given workers."""
    return time.process_time() + sum(map(process_cpu, pids))


def group_cpu(pids: dict[str, int | None]) -> dict[str, float]:
    """User + system CPU seconds used so far by each worker group's process."""
    return {group: process_cpu(pid) for group, pid in pids.items()}


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=24)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--backends", help="comma-separated (default: memo's default set)")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    models = [FAMILIES[i % len(FAMILIES)](rng, f"bench_{i}") for i in range(args.models + 1)]  # +1: cold start
    per_model: list[float] = []
    per_model_cpu: list[float] = []
    per_stage: dict[tuple[str, str], list[float]] = {}
    per_backend: dict[str, list[float]] = {}
    per_group_cpu: dict[str, list[float]] = {}
    verdict_count: dict[str, int] = {}
    names = args.backends.split(",") if args.backends else None
    with tempfile.TemporaryDirectory(prefix="memo-bench-") as scratch, DifferentialExecutor(names) as executor:
        for index, ir in enumerate(models):
            pid_map = executor.worker_pids()
            pids = list(pid_map.values())
            cpu_before = cpu_seconds(pids)
            groups_before = group_cpu(pid_map)
            began = time.perf_counter()
            artifact = prepare_artifact(ir, Path(scratch) / ir.name, seed=args.seed + index)
            prepared = time.perf_counter() - began
            result = executor.run(artifact)
            verdicts = judge(result)
            total = time.perf_counter() - began
            cpu = cpu_seconds(pids) - cpu_before
            after_pids = executor.worker_pids()
            groups_after = group_cpu({group: pid for group, pid in after_pids.items() if pid == pid_map.get(group)})
            layers = len(ir.body)
            print(f"model {index:2d} ({layers:2d} layers): {total:6.2f} s, CPU {cpu:5.2f} s (artifact {prepared:.2f} s)"
                  f"{'  [cold start]' if index == 0 else ''}  verdicts: "
                  + (", ".join(f"{v.kind}:{v.backend}" for v in verdicts) or "-"), flush=True)
            if index == 0:
                continue
            per_model.append(total)
            per_model_cpu.append(cpu)
            for group, seconds in groups_after.items():  # a worker that restarted mid-model is left out
                per_group_cpu.setdefault(group, []).append(seconds - groups_before.get(group, 0.0))
            for verdict in verdicts:
                verdict_count[f"{verdict.kind}:{verdict.backend}"] = verdict_count.get(f"{verdict.kind}:{verdict.backend}", 0) + 1
            for name, backend in result.backends.items():
                if backend.status == "skipped":
                    continue
                per_backend.setdefault(name, []).append(backend.seconds)
                for stage in backend.stages:
                    per_stage.setdefault((name, stage.stage), []).append(stage.seconds)
    print(f"\n{len(per_model)} warm models, {len(executor.backend_names)} backends "
          f"({', '.join(executor.backend_names)})")
    print(f"seconds per model (artifact + all backends + oracle): median {percentile(per_model, 50):.3f}  "
          f"p90 {percentile(per_model, 90):.3f}")
    print(f"CPU seconds per model (orchestrator + all workers): median {percentile(per_model_cpu, 50):.3f}  "
          f"p90 {percentile(per_model_cpu, 90):.3f}  (on an idle 2-core machine, wall >= CPU / 2)")
    print(f"load average during the run: {os.getloadavg()[0]:.2f} (2 cores)")
    print(f"\n{'backend':18s} {'stage':8s} {'median':>8s} {'p90':>8s}")
    for name, values in per_backend.items():
        print(f"{name:18s} {'(wall)':8s} {percentile(values, 50):8.3f} {percentile(values, 90):8.3f}")
        for (backend, stage), stage_values in per_stage.items():
            if backend == name:
                print(f"{'':18s} {stage:8s} {percentile(stage_values, 50):8.3f} {percentile(stage_values, 90):8.3f}")
    print(f"\n{'worker':24s} {'CPU s/model: mean':>18s} {'median':>8s}")
    for group, values in sorted(per_group_cpu.items(), key=lambda item: -sum(item[1])):
        print(f"{group:24s} {sum(values) / len(values):18.3f} {percentile(values, 50):8.3f}")
    print("\nverdicts:", verdict_count or "none")
    print(f"\nreproduce: .venv/bin/python benchmarks/bench_differential.py --models {args.models} --seed {args.seed}"
          + (f" --backends {args.backends}" if args.backends else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
