"""Seed loading (bundled recipes and Keras files, safe mode, unknown layers), the cache, and ``memo seeds``."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from memo.cli import main
from memo.errors import ModelLoadError, UnsupportedLayerError
from memo.model import Layer, ModelIR
from memo.model.build import build_keras_model
from memo.model.inputs import make_inputs
from memo.seeds import SEEDS_DIR, discover_seeds, load_seed, matching_weights
from memo.seeds.recipes import normalize

BUNDLED = ["alexnet_cifar10", "densenet121", "inception_resnet_v2", "inception_v3", "lenet5", "lstm_sine_wave",
           "lstm_stock_price", "mobilenet_v2", "resnet50", "xception"]
SMALL = ["lenet5", "lstm_sine_wave"]


def _keras_json(layers: list[dict], output: str, tmp_path: Path, name: str = "model") -> Path:
    config = {"name": name, "layers": layers, "input_layers": [["x", 0, 0]], "output_layers": [[output, 0, 0]]}
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({"class_name": "Functional", "config": config}))
    return path


def _item(name: str, class_name: str, config: dict, src: str | None) -> dict:
    ref = {"class_name": "__keras_tensor__", "config": {"keras_history": [src, 0, 0]}}
    return {"module": "keras.layers", "class_name": class_name, "name": name, "config": {"name": name, **config},
            "inbound_nodes": [{"args": [ref], "kwargs": {}}] if src else []}


def _input_item() -> dict:
    return _item("x", "InputLayer", {"batch_shape": [None, 4], "dtype": "float32"}, None)


def test_the_ten_bundled_seeds_are_discovered() -> None:
    seeds = discover_seeds()
    assert [seed.name for seed in seeds] == BUNDLED
    by_name = {seed.name: seed for seed in seeds}
    assert len(by_name["inception_resnet_v2"].ir) == 822  # 782 layers, 40 CustomScaleLayers -> Rescaling + Add
    assert len(by_name["resnet50"].ir) == 177
    assert all(seed.weights is None for seed in seeds)  # weights are generated, never stored
    assert {layer.class_name for layer in by_name["lstm_stock_price"].ir} >= {"LSTM", "Dropout", "Dense"}


def test_custom_scale_layer_becomes_rescaling_plus_add_with_the_same_outputs() -> None:
    ir = ModelIR([Layer("x", "InputLayer", {"batch_shape": [None, 4, 4, 2], "dtype": "float32"}),
                  Layer("r", "Conv2D", {"filters": 2, "kernel_size": [1, 1]}, ["x"]),
                  Layer("s", "CustomScaleLayer", {"scale": 0.17}, ["x", "r"], call_style="list",
                        module="keras.src.applications.inception_resnet_v2")], ["s"], name="scale")
    original = build_keras_model(ir)
    rewritten = normalize(ir.copy())
    assert [layer.class_name for layer in rewritten] == ["InputLayer", "Conv2D", "Rescaling", "Add"]
    model = build_keras_model(rewritten)
    model.get_layer("r").set_weights(original.get_layer("r").get_weights())
    inputs = make_inputs(ir, seed=1)["x"]
    np.testing.assert_allclose(np.asarray(model(inputs)), np.asarray(original(inputs)), rtol=1e-6, atol=1e-6)


def test_recipes_name_only_whitelisted_builders_and_arguments(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "memo-seed/1", "builder": "os.system", "kwargs": {}}))
    with pytest.raises(ModelLoadError, match="builder 'os.system' is not allowed"):
        load_seed(bad)
    bad.write_text(json.dumps({"format": "memo-seed/1", "builder": "keras.applications.ResNet50",
                               "kwargs": {"weights": "imagenet"}}))
    with pytest.raises(ModelLoadError, match="weights not allowed"):
        load_seed(bad)


def test_lambda_layer_is_refused_in_safe_mode_and_by_the_catalogue(tmp_path: Path) -> None:
    lam = _item("lam", "Lambda", {"function": {"class_name": "__lambda__", "config": {"code": "x"}}}, "x")
    path = _keras_json([_input_item(), lam], "lam", tmp_path, "lambda_model")
    with pytest.raises(ModelLoadError, match="'lam' is a Lambda"):
        load_seed(path)
    with pytest.raises(UnsupportedLayerError, match="outside memo's catalogue: Lambda"):
        load_seed(path, safe_mode=False)


def test_custom_layer_is_refused_with_its_name(tmp_path: Path) -> None:
    custom = {**_item("mine", "MyFancyLayer", {}, "x"), "module": "my_package.layers"}
    path = _keras_json([_input_item(), custom], "mine", tmp_path, "custom")
    with pytest.raises(UnsupportedLayerError, match="MyFancyLayer"):
        load_seed(path)


def test_discover_skips_bad_files_only_when_asked(tmp_path: Path) -> None:
    shutil.copy(SEEDS_DIR / "lenet5.json", tmp_path)
    (tmp_path / "broken.json").write_text("{not json")
    (tmp_path / "_helper.py").write_text("print('never run')")
    with pytest.raises(ModelLoadError, match="broken.json: not valid JSON"):
        discover_seeds(tmp_path)
    problems: list[str] = []
    assert [seed.name for seed in discover_seeds(tmp_path, problems=problems)] == ["lenet5"]
    assert len(problems) == 1 and "broken.json" in problems[0]


def test_keras_file_seed_keeps_its_weights(tmp_path: Path) -> None:
    from memo.model.files import save_keras_artifact

    seed = load_seed(SEEDS_DIR / "lenet5.json")
    save_keras_artifact(seed.ir, tmp_path / "lenet.keras", seed=3)
    loaded = load_seed(tmp_path / "lenet.keras")
    assert loaded.ir.dumps() == seed.ir.dumps().replace('"name":"lenet5"', f'"name":"{loaded.ir.name}"')
    assert loaded.weights is not None and loaded.weights["conv1"][0].shape == (5, 5, 1, 6)
    narrowed = loaded.ir.copy()
    narrowed.get("fc1").config["units"] = 100
    kept = matching_weights(loaded.weights, narrowed)
    assert "conv1" in kept and "fc1" not in kept and "fc2" not in kept  # fc2's input width changed too
    assert matching_weights(None, narrowed) is None


# ---------------------------------------------------------------------------- the CLI
@pytest.fixture()
def small_seeds(tmp_path: Path) -> Path:
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    for name in SMALL:
        shutil.copy(SEEDS_DIR / f"{name}.json", seeds)
    return seeds


def test_seeds_list_json(small_seeds: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cache = tmp_path / "cache"
    assert main(["seeds", "--seeds-dir", str(small_seeds), "--cache-dir", str(cache), "list", "--json"]) == 0
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)["seeds"]}
    assert sorted(rows) == SMALL
    lenet = rows["lenet5"]
    assert lenet["original"]["layers"] == 9 and lenet["original"]["weights"] == 61706
    assert lenet["reduced"]["layers"] <= 9
    for key in ("types", "pairs", "params"):
        assert lenet["reduced"][key] == lenet["original"][key] > 0
    assert len(list(cache.glob("*.json"))) == 2
    assert main(["seeds", "--seeds-dir", str(small_seeds), "--cache-dir", str(cache), "list"]) == 0
    assert "lstm_sine_wave" in capsys.readouterr().out


def test_seeds_add_copies_reduces_and_reports(small_seeds: Path, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    cache = tmp_path / "cache"
    args = ["seeds", "--seeds-dir", str(small_seeds), "--cache-dir", str(cache), "add"]
    source = SEEDS_DIR / "lstm_stock_price.json"
    assert main([*args, str(source)]) == 0
    out = capsys.readouterr().out
    assert "added seed 'lstm_stock_price'" in out and "kept: " in out and "8 -> 6 layers" in out
    assert (small_seeds / "lstm_stock_price.json").read_bytes() == source.read_bytes()
    assert len(list(cache.glob("lstm_stock_price-*.json"))) == 1
    assert main(["seeds", "--seeds-dir", str(small_seeds), "--cache-dir", str(cache), "list", "--json"]) == 0
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)["seeds"]}
    assert rows["lstm_stock_price"]["path"] == str(small_seeds / "lstm_stock_price.json")  # read from the cache
    assert main([*args, str(source)]) == 2  # already there
    assert "already exists" in capsys.readouterr().err
    assert main([*args, str(source), "--force", "--name", "stock2"]) == 0
    assert (small_seeds / "stock2.json").exists()


def test_seeds_add_refuses_unknown_layers(small_seeds: Path, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    custom = {**_item("mine", "MyFancyLayer", {}, "x"), "module": "my_package.layers"}
    path = _keras_json([_input_item(), custom], "mine", tmp_path, "custom")
    assert main(["seeds", "--seeds-dir", str(small_seeds), "add", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("memo: error:") and "MyFancyLayer" in err and len(err.strip().splitlines()) == 1
    assert not (small_seeds / "custom.json").exists()
