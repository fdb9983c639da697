"""Block-aware seed reduction: graph analysis, edits, and coverage preservation on random models and the ten seeds."""
from __future__ import annotations

import random
from pathlib import Path

import pytest

from memo.coverage import model_coverage
from memo.model import Layer, ModelIR
from memo.model.build import build_keras_model
from memo.seed_reduction import coverage_key, reduce_model
from memo.seed_reduction.edits import Edit, apply_edit, remove_span
from memo.seed_reduction.graph import cut_nodes, repeated_groups, spans
from memo.seed_reduction.repair import width_repairs
from memo.seed_reduction.specs import BuildConflict, full_specs, propagate


def _conv(name: str, src: str, filters: int, kernel: int = 3, strides: int = 1, padding: str = "same") -> Layer:
    return Layer(name, "Conv2D", {"filters": filters, "kernel_size": [kernel, kernel], "strides": [strides, strides],
                                  "padding": padding}, [src])


class _Builder:
    """Small random functional models: conv chains, residual Add blocks, concat branches, pooling, a dense head."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.layers = [Layer("x", "InputLayer", {"batch_shape": [None, 16, 16, 3], "dtype": "float32"})]
        self.cur, self.channels, self.size = "x", 3, 16

    def add(self, class_name: str, config: dict, inputs: list[str], call_style: str = "single") -> str:
        name = f"{class_name.lower()}_{len(self.layers)}"
        self.layers.append(Layer(name, class_name, config, inputs, call_style))
        return name

    def conv_bn_relu(self, src: str, filters: int, kernel: int) -> str:
        c = self.add("Conv2D", {"filters": filters, "kernel_size": [kernel, kernel], "padding": "same"}, [src])
        b = self.add("BatchNormalization", {"axis": -1}, [c])
        return self.add("ReLU", {}, [b])

    def block(self, kind: str, filters: int, kernel: int) -> None:
        if kind == "chain":
            self.cur, self.channels = self.conv_bn_relu(self.cur, filters, kernel), filters
        elif kind == "residual":
            y = self.conv_bn_relu(self.cur, filters, kernel)
            y = self.add("Conv2D", {"filters": self.channels, "kernel_size": [1, 1]}, [y])
            self.cur = self.add("ReLU", {}, [self.add("Add", {}, [self.cur, y], "list")])
        elif kind == "concat":
            a = self.conv_bn_relu(self.cur, filters, 1)
            b = self.conv_bn_relu(self.conv_bn_relu(self.cur, filters, 1), filters, kernel)
            self.cur = self.add("Concatenate", {"axis": -1}, [a, b, self.cur], "list")
            self.channels = 2 * filters + self.channels
        elif kind == "pool" and self.size >= 4:
            self.cur = self.add("MaxPooling2D", {"pool_size": [2, 2]}, [self.cur])
            self.size //= 2

    def model(self) -> ModelIR:
        kinds = ["chain", "residual", "concat", "pool"]
        blocks = [(self.rng.choice(kinds), self.rng.choice([4, 8, 16, 80]), self.rng.choice([1, 3]))
                  for _ in range(self.rng.randint(2, 5))]
        for _ in range(self.rng.randint(2, 4)):  # repeats of the same blocks: what inter-block reduction removes
            for kind, filters, kernel in blocks:
                if self.rng.random() < 0.8:
                    self.block(kind, filters, kernel)
        head = self.add("Flatten", {}, [self.cur]) if self.rng.random() < 0.5 else \
            self.add("GlobalAveragePooling2D", {}, [self.cur])
        head = self.add("Dense", {"units": self.rng.choice([16, 100])}, [head])
        out = self.add("Dense", {"units": 10, "activation": "softmax"}, [head])
        return ModelIR(self.layers, [out], name=f"random{len(self.layers)}")


def _weights(ir: ModelIR) -> int:
    return int(build_keras_model(ir).count_params())


@pytest.mark.parametrize("seed", range(12))
def test_random_models_keep_coverage_and_build(seed: int) -> None:
    ir = _Builder(seed).model()
    result = reduce_model(ir)
    assert coverage_key(model_coverage(result.ir)) == coverage_key(model_coverage(ir))
    build_keras_model(result.ir)  # every shape and rank constraint still holds
    assert len(result.ir) <= len(ir)
    assert _weights(result.ir) <= _weights(ir)
    assert sorted(result.removed) == sorted({layer.name for layer in ir} - {layer.name for layer in result.ir})
    assert result.stats.original_layers == len(ir) and result.stats.reduced_layers == len(result.ir)


def test_random_models_are_actually_reduced() -> None:
    originals = [_Builder(seed).model() for seed in range(12)]
    reduced = [reduce_model(ir).ir for ir in originals]
    assert sum(map(len, reduced)) < 0.6 * sum(map(len, originals))


def _repeated_residuals(blocks: int) -> ModelIR:
    layers = [Layer("x", "InputLayer", {"batch_shape": [None, 8, 8, 4], "dtype": "float32"})]
    cur = "x"
    for i in range(blocks):
        layers += [_conv(f"c{i}", cur, 4), Layer(f"bn{i}", "BatchNormalization", {"axis": -1}, [f"c{i}"]),
                   Layer(f"add{i}", "Add", {}, [cur, f"bn{i}"], call_style="list"),
                   Layer(f"relu{i}", "ReLU", {}, [f"add{i}"])]
        cur = f"relu{i}"
    layers += [Layer("gap", "GlobalAveragePooling2D", {}, [cur]), Layer("out", "Dense", {"units": 3}, ["gap"])]
    return ModelIR(layers, ["out"], name="residuals")


def test_cut_nodes_are_the_block_boundaries() -> None:
    ir = _repeated_residuals(3)
    assert cut_nodes(ir) == ["x", "add0", "relu0", "add1", "relu1", "add2", "relu2", "gap", "out"]


def test_repeated_blocks_share_a_signature() -> None:
    groups = repeated_groups(spans(_repeated_residuals(4), 2))
    biggest = groups[0]
    assert [span.exit for span in biggest] == ["relu0", "relu1", "relu2", "relu3"]
    assert all(len(span.nodes) == 4 for span in biggest)


def test_inter_block_reduction_keeps_one_residual_block() -> None:
    # Pairs from the model input are not counted, so ReLU -> Conv2D and ReLU -> Add need a ReLU in front of
    # the one block left: the first block shrinks to its ReLU, the other five go.
    ir = _repeated_residuals(6)
    result = reduce_model(ir)
    assert [layer.class_name for layer in result.ir] == ["InputLayer", "ReLU", "Conv2D", "BatchNormalization", "Add",
                                                         "ReLU", "GlobalAveragePooling2D", "Dense"]
    assert result.stats.removed_by_phase["inter-block"] == 16  # four whole blocks in one edit


def test_shape_constraint_blocks_a_removal_that_would_break_an_add() -> None:
    # x(4 ch) -> conv a(8) -> conv b(8) -> Add([a, b]); removing conv b would feed Add with a and a: fine, but
    # removing conv a would feed Add with x (4 ch) and b -> b sees 4 channels, its output is still 8: Add(x, b)
    # mismatches. The propagation must refuse that edit.
    ir = ModelIR([Layer("x", "InputLayer", {"batch_shape": [None, 8, 8, 4], "dtype": "float32"}),
                  _conv("a", "x", 8), _conv("b", "a", 8),
                  Layer("add", "Add", {}, ["a", "b"], call_style="list"), Layer("flat", "Flatten", {}, ["add"])],
                 ["flat"])
    table = full_specs(ir)
    broken = apply_edit(ir, remove_span("x", ["a"], "test"))
    assert broken is not None
    with pytest.raises(BuildConflict) as conflict:
        propagate(broken, table)
    assert conflict.value.layer == "add"
    assert [shape for shape, _ in conflict.value.inputs] == [(None, 8, 8, 4), (None, 8, 8, 8)]
    fine = apply_edit(ir, remove_span("a", ["b"], "test"))
    assert fine is not None
    new_table, rebuilt = propagate(fine, table)
    assert rebuilt == 0 and new_table.outputs["flat"] == table.outputs["flat"]


def _inception_residual() -> ModelIR:
    """Three identical branches concatenated (48 channels), a 1x1 conv back to 48, and Add([concat, conv])."""
    layers = [Layer("x", "InputLayer", {"batch_shape": [None, 8, 8, 4], "dtype": "float32"})]
    for b in "abc":
        layers += [_conv(f"{b}", "x", 16), Layer(f"{b}_relu", "ReLU", {}, [b])]
    layers += [Layer("cat", "Concatenate", {"axis": -1}, ["a_relu", "b_relu", "c_relu"], call_style="list"),
               _conv("up", "cat", 48, kernel=1), Layer("add", "Add", {}, ["cat", "up"], call_style="list"),
               Layer("gap", "GlobalAveragePooling2D", {}, ["add"])]
    return ModelIR(layers, ["gap"], name="inception_residual")


def test_width_repair_narrows_the_conv_feeding_an_add() -> None:
    ir = _inception_residual()
    table = full_specs(ir)
    dropped = apply_edit(ir, Edit("t", drop_inputs=(("cat", 2),)))
    with pytest.raises(BuildConflict) as conflict:
        propagate(dropped, table)
    assert width_repairs(dropped, conflict.value.layer, conflict.value.inputs) == [("up", "filters", 32)]
    result = reduce_model(ir)
    width = full_specs(result.ir).outputs["cat"][0][-1]
    assert result.ir.get("up").config["filters"] == width < 48  # narrowed, within the same coverage bucket
    assert len(result.ir) < len(ir)
    assert coverage_key(model_coverage(result.ir)) == coverage_key(model_coverage(ir))
    assert ir.get("up").config["filters"] == 48  # the input model is untouched


def _three_convs() -> ModelIR:
    """Each conv alone carries one value (strides 2, kernel 5-7, padding valid); two convs can hold them all."""
    layers = [Layer("x", "InputLayer", {"batch_shape": [None, 16, 16, 3], "dtype": "float32"}),
              _conv("a", "x", 8, kernel=3, strides=2), _conv("b", "a", 8, kernel=5),
              _conv("c", "b", 8, kernel=3, padding="valid"), Layer("flat", "Flatten", {}, ["c"]),
              Layer("out", "Dense", {"units": 10}, ["flat"])]
    return ModelIR(layers, ["out"], name="three_convs")


def test_value_absorption_moves_a_lone_value_onto_a_kept_layer(monkeypatch: pytest.MonkeyPatch) -> None:
    from memo.seed_reduction import reducer

    ir = _three_convs()
    result = reduce_model(ir)
    assert coverage_key(model_coverage(result.ir)) == coverage_key(model_coverage(ir))
    convs = [layer for layer in result.ir.layers if layer.class_name == "Conv2D"]
    assert len(convs) == 2  # Conv2D -> Conv2D is a pair of the model, so two convs is the least
    assert {"valid", "same"} == {layer.config["padding"] for layer in convs}
    monkeypatch.setattr(reducer, "MAX_ABSORB_PLANS", 0)
    assert [layer.name for layer in reduce_model(ir).ir.layers if layer.class_name == "Conv2D"] == ["a", "b", "c"]


def test_pair_plans_rewire_a_layer_whose_input_pair_is_made_twice() -> None:
    from memo.seed_reduction.absorb import pair_plans

    ir = ModelIR([Layer("x", "InputLayer", {"batch_shape": [None, 8, 8, 3], "dtype": "float32"}),
                  Layer("pool", "MaxPooling2D", {"pool_size": [2, 2]}, ["x"]), Layer("r1", "ReLU", {}, ["pool"]),
                  _conv("c1", "r1", 4), Layer("r2", "ReLU", {}, ["c1"]), _conv("c2", "r2", 4),
                  Layer("flat", "Flatten", {}, ["c2"])], ["flat"])
    plans = pair_plans(ir, {("MaxPooling2D", "Conv2D")}, 4)
    assert plans == [(("c1", 0, "pool"),), (("c2", 0, "pool"),)]  # nearest to the old input first
    rewired = apply_edit(ir, Edit("t", reinput=plans[0]))
    assert rewired is not None and rewired.get("c1").inputs == ["pool"] and "r1" not in rewired.by_name()
    assert ("MaxPooling2D", "Conv2D") in model_coverage(rewired).pairs
    assert pair_plans(ir, {("Flatten", "Conv2D")}, 4) == []  # no Flatten before any conv


def test_apply_edit_prunes_dropped_branches_and_refuses_bad_edits() -> None:
    ir = _Builder(3).model()
    merges = [layer for layer in ir.layers if layer.class_name == "Concatenate"]
    if not merges:
        pytest.skip("no concat block drawn")
    merge = merges[0]
    dropped = apply_edit(ir, Edit("t", drop_inputs=((merge.name, 1),)))
    assert dropped is not None and len(dropped.get(merge.name).inputs) == len(merge.inputs) - 1
    assert merge.inputs[1] not in {layer.name for layer in dropped}  # its branch is pruned
    assert apply_edit(ir, Edit("t", frozenset({"missing"}))) is None
    assert apply_edit(ir, remove_span("x", [ir.outputs[0]], "t")) is None  # output would become... gone
    assert ir.get(merge.name).inputs == merge.inputs  # the original is untouched


def test_custom_coverage_function_is_used() -> None:
    calls = []

    def types_only(model: ModelIR):
        calls.append(len(model))
        full = model_coverage(model)
        return type(full)(types=full.types)

    ir = _Builder(5).model()
    result = reduce_model(ir, types_only)
    assert calls and model_coverage(result.ir).types == model_coverage(ir).types
    assert len(result.ir) <= len(reduce_model(ir).ir)


# ---------------------------------------------------------------------------- the ten bundled seeds
@pytest.fixture(scope="module")
def reduced_bundled(tmp_path_factory: pytest.TempPathFactory):
    from memo.seeds import discover_seeds, reduced_seed

    cache = tmp_path_factory.mktemp("seed-cache")
    seeds = discover_seeds()
    return cache, [(seed, reduced_seed(seed, cache)) for seed in seeds]


def test_ten_seeds_keep_exact_coverage_and_build(reduced_bundled) -> None:
    _cache, pairs = reduced_bundled
    assert len(pairs) == 10
    for seed, reduced in pairs:
        assert coverage_key(model_coverage(reduced)) == coverage_key(model_coverage(seed.ir)), seed.name
        full_specs(reduced)
        assert len(reduced) <= len(seed.ir)


def test_big_seeds_shrink_a_lot(reduced_bundled) -> None:
    _cache, pairs = reduced_bundled
    sizes = {seed.name: (len(seed.ir), len(reduced)) for seed, reduced in pairs}
    assert sizes["inception_resnet_v2"][1] <= 80
    for name in ("densenet121", "inception_v3", "mobilenet_v2", "resnet50", "xception"):
        assert sizes[name][1] <= sizes[name][0] / 4, (name, sizes[name])


def test_reduced_seeds_are_cached(reduced_bundled, monkeypatch: pytest.MonkeyPatch) -> None:
    from memo.seeds import cache as seed_cache

    cache, pairs = reduced_bundled
    assert len(list(Path(cache).glob("*.json"))) == 10

    def refuse(*_args, **_kwargs):
        raise AssertionError("reduced again despite the cache")

    monkeypatch.setattr(seed_cache, "reduce_model", refuse)
    seed, reduced = pairs[0]
    assert seed_cache.reduced_seed(seed, cache).dumps() == reduced.dumps()


def test_zero_budget_returns_the_model_unreduced_but_valid() -> None:
    ir = _repeated_residuals(3)
    result = reduce_model(ir, budget_s=0)
    assert result.ir.dumps() == ir.dumps() and result.removed == [] and result.stats.accepted == 0
