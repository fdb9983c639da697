"""Coverage speed: model_coverage + tracker.add on a 50-layer model (goal: well under 10 ms per call),
plus the catalogue's sampler speed (pure Python, no Keras import). With ``--validity N`` it also builds N
sampled settings of every entry with Keras (numpy backend) and prints the per-entry pass rate.

Reproduce: .venv/bin/python benchmarks/bench_coverage.py [--layers 50] [--repeat 2000] [--seed 0] [--validity 40]
"""
from __future__ import annotations

import argparse
import random
import statistics
import time

from memo.coverage import CoverageTracker, model_coverage
from memo.layers import CATALOGUE
from memo.model.ir import Layer, ModelIR

CHAIN = ("Conv2D", "BatchNormalization", "ReLU", "DepthwiseConv2D", "LayerNormalization", "SeparableConv2D",
         "Activation", "Dropout", "MaxPooling2D", "ZeroPadding2D")


def chain_model(layers: int, seed: int) -> tuple[ModelIR, dict]:
    """An image model of ``layers`` sampled layers with a residual Add every 5 layers (configs are full
    Keras configs drawn by the catalogue, so each layer carries all its parameters)."""
    rng = random.Random(seed)
    shape = (None, 16, 16, 8)
    nodes = [Layer("x", "InputLayer", {"batch_shape": list(shape), "dtype": "float32"})]
    shapes = {"x": shape}
    prev = "x"
    for i in range(layers):
        if i % 5 == 4:
            name = f"add{i}"
            nodes.append(Layer(name, "Add", {}, [prev, nodes[-2].name if nodes[-2].name != "x" else prev],
                               call_style="list"))
        else:
            spec = CATALOGUE[CHAIN[i % len(CHAIN)]]
            config = spec.sample(rng, [shape])
            if spec.name in ("Conv2D", "SeparableConv2D"):
                config.update(filters=8, strides=(1, 1), padding="same")
            if spec.name in ("DepthwiseConv2D", "MaxPooling2D"):
                config.update(padding="same", strides=(1, 1))
                config.pop("depth_multiplier", None)
            if spec.name == "ZeroPadding2D":
                config["padding"] = ((0, 0), (0, 0))
            name = f"l{i}"
            nodes.append(Layer(name, spec.name, config, [prev]))
        shapes[name] = shape
        prev = name
    return ModelIR(layers=nodes, outputs=[prev]), shapes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--validity", type=int, default=0, metavar="N",
                        help="also build N sampled settings per entry with Keras and print pass rates")
    args = parser.parse_args()
    ir, shapes = chain_model(args.layers, args.seed)
    tracker = CoverageTracker()
    times = []
    cpu_start = time.process_time()
    for _ in range(args.repeat):
        start = time.perf_counter()
        tracker.add(model_coverage(ir, shapes))
        times.append(time.perf_counter() - start)
    cpu = (time.process_time() - cpu_start) / args.repeat
    params = sum(len(layer.config) for layer in ir.body)
    print(f"model_coverage + CoverageTracker.add, {len(ir.body)} layers ({params} config entries), "
          f"{args.repeat} calls: wall median {statistics.median(times) * 1e3:.3f} ms, "
          f"p95 {sorted(times)[int(0.95 * len(times))] * 1e3:.3f} ms, max {max(times) * 1e3:.3f} ms; "
          f"CPU time per call {cpu * 1e3:.3f} ms (wall tails grow when other processes share the cores)")
    rng = random.Random(args.seed)
    cases = [(spec, spec.random_inputs(rng)) for spec in CATALOGUE.values() for _ in range(20)]
    start = time.perf_counter()
    for spec, shapes_in in cases:
        spec.sample(rng, shapes_in)
    elapsed = time.perf_counter() - start
    print(f"LayerSpec.sample over all {len(CATALOGUE)} entries, {len(cases)} calls: "
          f"{elapsed / len(cases) * 1e6:.1f} us per call")
    if args.validity:
        print_validity(args.validity, args.seed)
    print(f"reproduce: .venv/bin/python benchmarks/bench_coverage.py --layers {args.layers} "
          f"--repeat {args.repeat} --seed {args.seed}" + (f" --validity {args.validity}" if args.validity else ""))


def print_validity(samples: int, seed: int) -> None:
    from memo.layers.probe import build_rate  # noqa: PLC0415 (imports Keras)

    start = time.perf_counter()
    rates = {name: build_rate(spec, samples, seed) for name, spec in CATALOGUE.items()}
    elapsed = time.perf_counter() - start
    for name, (rate, errors) in sorted(rates.items(), key=lambda item: (item[1][0], item[0])):
        print(f"  {name:28s} {rate:7.1%}" + (f"  e.g. {errors[0][:160]}" if errors else ""))
    worst = min(rate for rate, _ in rates.values())
    print(f"Keras shape inference of sampled settings: {len(rates)} entries x {samples} samples in "
          f"{elapsed:.1f} s; lowest per-entry pass rate {worst:.1%}")


if __name__ == "__main__":
    main()
