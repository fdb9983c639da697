"""Coverage criteria: what one model covers, what is new to a tracker, denominators, JSON round trip, CLI."""
from __future__ import annotations

import json

import pytest

from memo.coverage import (CRITERIA, DEGREE_CAP, Coverage, CoverageTracker, denominators, model_coverage, size_label,
                           union_all, unknown_layers)
from memo.layers import CATALOGUE, possible_pairs
from memo.model.ir import Layer, ModelIR


def _ir(*layers: Layer, outputs: list[str]) -> ModelIR:
    ir = ModelIR(layers=list(layers), outputs=outputs)
    ir.validate()
    return ir


def image_model() -> ModelIR:
    """input -> conv -> bn -> relu -> add(relu, conv) -> flatten -> dense, plus a custom layer."""
    return _ir(
        Layer("x", "InputLayer", {"batch_shape": [None, 8, 8, 3], "dtype": "float32"}),
        Layer("conv", "Conv2D", {"filters": 4, "kernel_size": [3, 3], "padding": "same", "activation": None,
                                 "kernel_initializer": {"class_name": "HeNormal", "config": {}},
                                 "kernel_regularizer": None, "use_bias": True, "strides": [1, 1]}, ["x"]),
        Layer("bn", "BatchNormalization", {"axis": -1, "momentum": 0.99, "epsilon": 1e-3}, ["conv"]),
        Layer("relu", "ReLU", {"max_value": 6.0}, ["bn"]),
        Layer("add", "Add", {}, ["relu", "conv"], call_style="list"),
        Layer("custom", "MyCustomLayer", {}, ["add"]),
        Layer("flat", "Flatten", {"data_format": "channels_last"}, ["add"]),
        Layer("dense", "Dense", {"units": 10, "activation": "softmax", "padding": "bogus"}, ["flat"]),
        outputs=["dense", "custom"])


SHAPES = {"x": (None, 8, 8, 3), "conv": (None, 8, 8, 4), "bn": (None, 8, 8, 4), "relu": (None, 8, 8, 4),
          "add": (None, 8, 8, 4), "custom": (None, 8, 8, 4), "flat": (None, 256), "dense": (None, 10)}


def test_primary_criteria_of_one_model():
    mc = model_coverage(image_model())
    assert mc.types == {"Conv2D", "BatchNormalization", "ReLU", "Add", "Flatten", "Dense"}
    assert mc.pairs == {("Conv2D", "BatchNormalization"), ("BatchNormalization", "ReLU"), ("ReLU", "Add"),
                        ("Conv2D", "Add"), ("Add", "Flatten"), ("Flatten", "Dense")}
    assert ("Conv2D", "filters", "2-4") in mc.params
    assert ("Conv2D", "kernel_size", "2-3") in mc.params
    assert ("Conv2D", "kernel_initializer", "he_normal") in mc.params
    assert ("Conv2D", "kernel_regularizer", "none") in mc.params
    assert ("Conv2D", "activation", "linear") in mc.params
    assert ("ReLU", "max_value", "1-10") in mc.params
    assert ("Dense", "units", "5-16") in mc.params
    # undeclared keys and values are never counted
    assert not any(param == "padding" for layer, param, _ in mc.params if layer == "Dense")
    assert all(value in CATALOGUE[layer].param(param).values for layer, param, value in mc.params)


def test_layers_outside_the_catalogue_are_reported_not_counted():
    ir = image_model()
    assert unknown_layers(ir) == ["MyCustomLayer"]
    mc = model_coverage(ir)
    assert "MyCustomLayer" not in mc.types
    assert not any("MyCustomLayer" in pair for pair in mc.pairs)


def test_pairs_are_counted_only_where_declared_reachable():
    ir = _ir(Layer("x", "InputLayer", {"batch_shape": [None, 4], "dtype": "float32"}),
             Layer("flat", "Flatten", {}, ["x"]),
             # Flatten (rank 2) -> Conv2D (rank 4) cannot be a valid edge: a hand-edited graph must not count it
             Layer("conv", "Conv2D", {"filters": 2}, ["flat"]), outputs=["conv"])
    assert model_coverage(ir).pairs == frozenset()
    assert model_coverage(image_model()).pairs <= possible_pairs()


def test_secondary_criteria_with_shapes():
    mc = model_coverage(image_model(), SHAPES)
    assert ("Conv2D", 4) in mc["input_ranks"] and ("Dense", 2) in mc["input_ranks"]
    assert ("Conv2D", "float32") in mc["dtypes"]
    assert ("Conv2D", "17-256") in mc["shapes"] and ("Dense", "17-256") in mc["shapes"]
    assert ("Add", 2) in mc["in_degrees"] and ("Conv2D", 1) in mc["in_degrees"]
    assert ("Conv2D", 2) in mc["out_degrees"] and ("Add", 2) in mc["out_degrees"] and ("Dense", 0) in mc["out_degrees"]
    without = model_coverage(image_model())
    assert without["input_ranks"] == {("Conv2D", 4)}  # only the layer fed by a model input has a known shape


def test_degrees_are_capped():
    layers = [Layer("x", "InputLayer", {"batch_shape": [None, 4], "dtype": "float32"})]
    layers += [Layer(f"d{i}", "Dense", {"units": 4}, ["x"]) for i in range(7)]
    layers.append(Layer("sum", "Add", {}, [f"d{i}" for i in range(7)], call_style="list"))
    mc = model_coverage(_ir(*layers, outputs=["sum"]))
    assert ("Add", DEGREE_CAP) in mc["in_degrees"]
    assert all(degree <= DEGREE_CAP for _, degree in mc["out_degrees"])


def test_size_label():
    assert size_label((None, 4, 4)) == "1-16"
    assert size_label((None, 8, 8, 4)) == "17-256" and size_label((None, 8, 8, 5)) == "257-4096"
    assert size_label((None, None, 3)) == "unknown"


def test_tracker_delta_add_and_counts():
    tracker = CoverageTracker()
    first = model_coverage(image_model(), SHAPES)
    preview = tracker.delta(first)
    assert preview.is_new() and tracker.counts()["types"][0] == 0  # delta() does not add
    added = tracker.add(first)
    assert added.types == first.types and added.size() == len(first.types) + len(first.pairs) + len(first.params)
    again = tracker.add(first)
    assert not again.is_new() and again.size() == 0 and again.secondary_size() == 0
    counts = tracker.counts()
    totals = denominators()
    assert counts["types"] == (6, totals["types"]) and counts["pairs"] == (6, totals["pairs"])
    assert all(covered <= total for covered, total in counts.values())
    assert tracker.covered.types == first.types and tracker.covered.params == first.params


def test_tracker_json_round_trip():
    tracker = CoverageTracker()
    tracker.add(model_coverage(image_model(), SHAPES))
    data = json.loads(json.dumps(tracker.to_json()))
    restored = CoverageTracker.from_json(data)
    assert restored.covered == tracker.covered
    assert restored.models == 1
    assert not restored.delta(model_coverage(image_model(), SHAPES)).is_new()
    with pytest.raises(ValueError):
        CoverageTracker.from_json({"format": "other"})


def test_union_and_model_coverage_counts():
    a = model_coverage(image_model())
    b = Coverage(types={"LSTM"})
    both = union_all([a, b])
    assert both.types == a.types | {"LSTM"}
    assert set(both.counts()) == set(CRITERIA)


def test_denominators_come_from_the_catalogue():
    totals = denominators()
    assert totals["types"] == len(CATALOGUE)
    assert totals["pairs"] == len(possible_pairs())
    assert totals["params"] == sum(len(p.values) for spec in CATALOGUE.values() for p in spec.params)
    assert set(totals) == set(CRITERIA)


def test_coverage_command_prints_table_and_json(tmp_path, capsys):
    from memo.cli import main

    (tmp_path / "m.json").write_text(image_model().dumps())
    assert main(["coverage", str(tmp_path), "--json", "--no-shapes"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["counts"]["types"] == [6, len(CATALOGUE)]
    assert report["unknown_layers"] == {"MyCustomLayer": [str(tmp_path / "m.json")]}
    assert main(["coverage", str(tmp_path / "m.json"), "--no-shapes"]) == 0
    out = capsys.readouterr().out
    assert "denominator" in out and str(len(CATALOGUE)) in out and "MyCustomLayer" in out
    assert main(["coverage", str(tmp_path / "missing.keras")]) == 2


def test_tracker_reads_a_document_saved_by_earlier_versions():
    saved = {"format": "memo-coverage/1", "models": 2,
             "covered": {"types": ["Conv2D", "Dense"], "pairs": [["Conv2D", "Dense"]],
                         "params": [["Dense", "activation", "relu"]], "input_ranks": [["Dense", 2]],
                         "dtypes": [["Dense", "float32"]], "shapes": [["Dense", "17-256"]],
                         "in_degrees": [["Dense", 1]], "out_degrees": [["Dense", 0]]}}
    tracker = CoverageTracker.from_json(saved)
    assert tracker.models == 2 and tracker.covered.pairs == {("Conv2D", "Dense")}
    assert tracker.covered["in_degrees"] == {("Dense", 1)}
    assert tracker.to_json() == saved
    delta = tracker.add(Coverage(types={"Dense"}, shapes={("Dense", "1-16")}))
    assert not delta.is_new() and delta.size() == 0 and delta.secondary_size() == 1  # secondary: not diverse


def test_coverage_is_one_mapping_over_every_criterion():
    coverage = Coverage({"types": ["Dense"]}, pairs={("Dense", "Dense")})
    assert list(coverage) == list(CRITERIA) and coverage["dtypes"] == frozenset()
    assert (coverage | Coverage(types={"LSTM"})).types == {"Dense", "LSTM"}
    assert (coverage - Coverage(types={"Dense"})).counts() == {**dict.fromkeys(CRITERIA, 0), "pairs": 1}
    with pytest.raises(ValueError, match="not coverage criteria: new_types"):
        Coverage(new_types={"Dense"})


def test_coverage_command_counts_the_bundled_seed_recipes(capsys):
    from memo.cli import main
    from memo.seeds import SEEDS_DIR, discover_seeds

    assert main(["coverage", str(SEEDS_DIR), "--json", "--no-shapes"]) == 0  # six of the ten are recipes
    report = json.loads(capsys.readouterr().out)
    expected = union_all(model_coverage(seed.ir) for seed in discover_seeds())
    assert len(report["models"]) == 10 and not report["unknown_layers"]
    assert {name: covered for name, (covered, _) in report["counts"].items()} == expected.counts()
