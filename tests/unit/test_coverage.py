"""Coverage criteria: what one model covers, what is new to a tracker, denominators, JSON round trip, CLI."""
from __future__ import annotations

import json

import pytest

from memo.coverage import (CRITERIA, DEGREE_CAP, PRIMARY, Coverage, CoverageTracker, declared, denominators,
                           inert_denominators, model_coverage, size_label, union_all, unknown_layers)
from memo.coverage_realizable import (IDENTITY_LAYERS, INERT_PARAMS, INERT_RULES, INERT_SUFFIXES, headline_pair,
                                      headline_param, inert_param, is_identity)
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
    inert = {("Conv2D", "kernel_initializer", "he_normal"), ("Conv2D", "kernel_regularizer", "none"),
             ("BatchNormalization", "momentum", "0.9-1")}  # momentum: read only when training
    assert inert <= first.params and first.inert().params == inert
    assert added.types == first.types and added.size() == len(first.types) + len(first.pairs) + len(first.params) - 3
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
    assert restored.models == 1 and restored.type_counts == tracker.type_counts and restored.type_models == 1
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
    totals, inert = denominators(), inert_denominators()
    assert set(totals) == set(inert) == set(CRITERIA)
    assert totals["types"] + inert["types"] == len(CATALOGUE)
    assert totals["types"] == len(CATALOGUE) - len(IDENTITY_LAYERS)
    assert totals["pairs"] + inert["pairs"] == len(possible_pairs())
    assert totals["pairs"] == sum(1 for a, b in possible_pairs() if not is_identity(a) and not is_identity(b))
    all_values = sum(len(p.values) for spec in CATALOGUE.values() for p in spec.params)
    assert totals["params"] + inert["params"] == all_values
    assert totals["params"] == sum(len(p.values) for spec in CATALOGUE.values() for p in spec.params
                                   if not inert_param(spec.name, p.name))


def test_coverage_command_prints_table_and_json(tmp_path, capsys):
    from memo.cli import main

    (tmp_path / "m.json").write_text(image_model().dumps())
    assert main(["coverage", str(tmp_path), "--json", "--no-shapes"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["counts"]["types"] == [6, len(CATALOGUE) - len(IDENTITY_LAYERS)]
    assert report["inert"]["params"] == [3, inert_denominators()["params"]]
    assert report["unknown_layers"] == {"MyCustomLayer": [str(tmp_path / "m.json")]}
    assert main(["coverage", str(tmp_path / "m.json"), "--no-shapes"]) == 0
    out = capsys.readouterr().out
    assert "denominator" in out and str(denominators()["pairs"]) in out and "MyCustomLayer" in out
    assert "inert" in out and str(inert_denominators()["pairs"]) in out
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
    assert tracker.type_counts == {} and tracker.type_models == 0 and tracker.rare_types() == frozenset()
    assert {key: value for key, value in tracker.to_json().items() if key in saved} == saved
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


# ----------------------------------------------------------------------------- headline and inert
def test_realizable_tables_name_only_catalogue_entries():
    assert set(IDENTITY_LAYERS) <= set(CATALOGUE)
    for class_name, params in INERT_PARAMS.items():
        assert class_name in CATALOGUE and not is_identity(class_name)
        assert all(CATALOGUE[class_name].has_param(param) for param in params), class_name
    declared_params = {p.name for spec in CATALOGUE.values() for p in spec.params}
    assert all(any(name.endswith(suffix) for name in declared_params) for suffix in INERT_SUFFIXES)
    assert set(INERT_RULES) == set(CRITERIA)
    # RandomCrop center-crops at inference: never an identity (and every Random* entry is checked by hand)
    assert "RandomCrop" not in IDENTITY_LAYERS


def dropout_model() -> ModelIR:
    """input -> conv -> dropout -> noise -> relu, and conv -> dense (rank 4 stays rank 4)."""
    return _ir(
        Layer("x", "InputLayer", {"batch_shape": [None, 8, 8, 3], "dtype": "float32"}),
        Layer("conv", "Conv2D", {"filters": 4, "kernel_size": [3, 3], "padding": "same",
                                 "kernel_initializer": {"class_name": "HeNormal", "config": {}}}, ["x"]),
        Layer("drop", "Dropout", {"rate": 0.5}, ["conv"]),
        Layer("noise", "GaussianNoise", {"stddev": 0.1}, ["drop"]),
        Layer("relu", "ReLU", {"max_value": 6.0}, ["noise"]),
        Layer("dense", "Dense", {"units": 3, "bias_constraint": None}, ["conv"]),
        outputs=["relu", "dense"])


def test_identity_layers_and_inert_settings_are_counted_apart():
    mc = model_coverage(dropout_model())
    head, inert = mc.headline(), mc.inert()
    assert head.types == {"Conv2D", "ReLU", "Dense"} and inert.types == {"Dropout", "GaussianNoise"}
    # conv -> dropout -> noise -> relu runs as conv -> relu at inference: that pair is headline
    assert head.pairs == {("Conv2D", "ReLU"), ("Conv2D", "Dense")}
    assert inert.pairs == {("Conv2D", "Dropout"), ("Dropout", "GaussianNoise"), ("GaussianNoise", "ReLU")}
    assert {item[:2] for item in inert.params} == {("Conv2D", "kernel_initializer"), ("Dense", "bias_constraint"),
                                                   ("Dropout", "rate"), ("GaussianNoise", "stddev")}
    assert all(headline_param(item) for item in head.params) and not any(headline_param(i) for i in inert.params)
    assert all(headline_pair(pair) for pair in head.pairs) and not any(headline_pair(p) for p in inert.pairs)
    # every item is kept: the two parts partition the model's coverage
    for name in CRITERIA:
        assert head[name] | inert[name] == mc[name] and not head[name] & inert[name]
    assert mc.counts()["types"] == 3 and mc.inert_counts()["types"] == 2
    assert all(layer not in IDENTITY_LAYERS for layer, *_ in head["out_degrees"])


def test_a_mutant_new_only_in_inert_settings_is_not_diverse():
    tracker = CoverageTracker()
    tracker.add(model_coverage(dropout_model()))
    ir = dropout_model()
    ir.get("conv").config["kernel_initializer"] = {"class_name": "Orthogonal", "config": {}}
    ir.get("drop").config["rate"] = 0.0
    ir.get("noise").class_name = "GaussianDropout"
    ir.get("noise").config = {"rate": 0.2}
    delta = tracker.delta(model_coverage(ir))
    assert delta.inert().params and delta.inert().types == {"GaussianDropout"} and delta.inert().pairs
    assert not delta.is_new() and delta.size() == 0 and delta.counts() == dict.fromkeys(CRITERIA, 0)
    ir.get("relu").config["max_value"] = 0.5  # a headline value
    assert tracker.delta(model_coverage(ir)).size() == 1


def test_headline_figures_never_exceed_the_realizable_denominators():
    everything = declared()
    tracker = CoverageTracker()
    tracker.add(everything)
    tracker.add(model_coverage(dropout_model()))
    tracker.add(model_coverage(image_model(), SHAPES))
    assert tracker.counts() == {name: (total, total) for name, total in denominators().items()}
    assert tracker.inert_counts() == {name: (total, total) for name, total in inert_denominators().items()}
    for mc in (model_coverage(dropout_model()), model_coverage(image_model(), SHAPES)):
        for name in CRITERIA:
            assert mc.headline()[name] <= everything.headline()[name]
            assert mc.inert()[name] <= everything.inert()[name]


def test_split_survives_unions_and_matches_a_fresh_split():
    a, b = model_coverage(dropout_model()), model_coverage(image_model(), SHAPES)
    a.headline(), b.headline()  # both split: the union reuses their parts
    union = a | b
    fresh = Coverage(dict(union))
    assert union.headline() == fresh.headline() and union.inert() == fresh.inert()
    assert (union | Coverage()).counts() == fresh.counts()


def test_old_tracker_documents_report_headline_and_inert_figures():
    saved = {"format": "memo-coverage/1", "models": 3,
             "covered": {"types": ["Dense", "Dropout"], "pairs": [["Dense", "Dropout"], ["Dense", "Dense"]],
                         "params": [["Dense", "units", "1"], ["Dense", "kernel_initializer", "zeros"],
                                    ["Dropout", "rate", "0"]]}}
    tracker = CoverageTracker.from_json(saved)
    counts, inert = tracker.counts(), tracker.inert_counts()
    assert counts["types"] == (1, denominators()["types"]) and inert["types"] == (1, inert_denominators()["types"])
    assert counts["pairs"][0] == 1 and inert["pairs"][0] == 1
    assert counts["params"][0] == 1 and inert["params"][0] == 2
    assert set(inert) == {name for name, total in inert_denominators().items() if total}


def test_type_counts_and_rare_types():
    tracker = CoverageTracker()
    for _ in range(3):
        tracker.add(model_coverage(image_model()))
    tracker.add(model_coverage(dropout_model()))
    assert tracker.type_counts["Conv2D"] == 4 and tracker.type_counts["Dense"] == 4
    assert tracker.type_counts["BatchNormalization"] == 3 and tracker.type_counts["Dropout"] == 1
    assert tracker.type_models == tracker.models == 4
    rare = tracker.rare_types(fraction=0.5)  # in at most 2 of the 4 models
    assert "ReLU" not in rare and "Conv2D" not in rare and "BatchNormalization" not in rare
    assert "LSTM" in rare  # never seen
    assert not rare & set(IDENTITY_LAYERS)  # generation must not chase identity layers
    assert tracker.rare_types(fraction=0.8) >= {"BatchNormalization", "Add", "Flatten"}  # 3 <= 3.2
    assert rare == tracker.rare_types(0.5) and len(tracker.rare_types()) == denominators()["types"] - 6
    restored = CoverageTracker.from_json(json.loads(json.dumps(tracker.to_json())))
    assert restored.type_counts == tracker.type_counts and restored.rare_types(0.5) == rare
    view = tracker.with_claims(Coverage(types={"LSTM"}))
    assert "LSTM" in view.covered.types and "LSTM" not in tracker.covered.types
    assert view.rare_types(0.5) == rare and view.models == 4


def test_items_outside_the_catalogue_never_count():
    saved = {"format": "memo-coverage/1", "models": 1,
             "covered": {"types": ["Dense", "LocallyConnected2D"], "pairs": [["Dense", "LocallyConnected2D"]],
                         "params": [["Dense", "units", "9999+"], ["LocallyConnected2D", "kernel_initializer", "x"]]}}
    tracker = CoverageTracker.from_json(saved)  # saved over another catalogue
    assert tracker.counts()["types"][0] == 1 and tracker.counts()["pairs"][0] == 0
    assert tracker.counts()["params"][0] == 0 and tracker.inert_counts()["params"][0] == 0


def test_items_the_reference_keeps_refusing_are_given_up_and_survive_a_resume() -> None:
    from memo.coverage import GIVE_UP_AFTER, Coverage, CoverageTracker
    from memo.model.ir import Layer, ModelIR
    from memo.mutation.preference import CoverageView

    failing = Coverage(pairs={("Masking", "Softmax"), ("Dense", "ReLU")}, params={("Softmax", "axis", "1")})
    tracker = CoverageTracker()
    tracker.add(Coverage(pairs={("Dense", "ReLU")}))
    for _ in range(GIVE_UP_AFTER - 1):
        tracker.refuse(failing)
    assert not any(tracker.given_up().values())
    tracker.refuse(failing)
    given_up = tracker.given_up()
    assert given_up.pairs == {("Masking", "Softmax")}  # a covered pair is never given up
    assert given_up.params == {("Softmax", "axis", "1")}
    again = CoverageTracker.from_json(json.loads(json.dumps(tracker.to_json())))
    assert again.given_up() == given_up and again.refusals == tracker.refusals
    seed = ModelIR([Layer("x", "InputLayer", {"batch_shape": [None, 4], "dtype": "float32"})], ["x"], "s")
    view = CoverageView(tracker.with_claims(Coverage()), seed)
    assert ("Masking", "Softmax") not in view.uncovered_pairs and ("Masking", "Dense") in view.uncovered_pairs
    tracker.add(Coverage(pairs={("Masking", "Softmax")}))  # covered after all: counted, no longer given up
    assert tracker.given_up().pairs == frozenset()
