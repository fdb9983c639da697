"""`memo run` and `memo backends`: output formats, plugins from the command line, and bad input (exit 2)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from memo.backends import GPU_BACKENDS
from memo.backends.cuda import gpu_unavailable
from memo.backends.result import BackendResult, ExecutionResult, StageResult
from memo.cli import main
from memo.commands.run import print_run
from memo.oracle import Comparison, Verdict
from tests.conftest import EXAMPLES, ROOT

NOOPT_PLUGIN = EXAMPLES / "plugins" / "onnxruntime_noopt.py"


@pytest.mark.integration
def test_run_json_with_a_plugin_from_the_command_line(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "memo", "run", str(EXAMPLES / "conv_net.json"), "--backends",
               "keras-tensorflow,onnxruntime", "--backend-plugin", str(NOOPT_PLUGIN), "--json", "--out",
               str(tmp_path / "artifact")]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    backends = report["result"]["backends"]
    assert list(backends) == ["keras-tensorflow", "onnxruntime", "onnxruntime-noopt", "tf2onnx"]
    assert all(stage["status"] == "ok" for b in backends.values() for stage in b["stages"])
    assert report["verdicts"] == []
    assert report["comparisons"]["onnxruntime-noopt"]["max_abs_diff"] < 1e-4
    assert (tmp_path / "artifact" / "outputs" / "onnxruntime-noopt.npz").exists()
    assert (tmp_path / "artifact" / "onnx" / "model.onnx").exists()


def test_backends_json_lists_versions_without_importing_libraries(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["backends", "--json"]) == 0
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)["backends"]}
    assert {"keras-tensorflow", "keras-jax", "keras-torch", "onnxruntime", "onnx2pytorch", "onnx2torch", "mxnet",
            "tf2onnx", "tf2onnx-opset11"} <= set(rows)
    assert rows["keras-tensorflow"]["reference"] and rows["mxnet"]["consumes"] == "onnx-opset11"
    # the engines one --backends flag away, and the converters only they need, are not run by default
    # (and, on a machine without a GPU, the GPU backends; and the converter that only stands in for tf2onnx)
    gpu = set() if gpu_unavailable() is None else set(GPU_BACKENDS)
    assert {name for name, row in rows.items() if not row["default"]} == {
        "tvm", "torch-compile", "torch-inductor", "litert", "tflite-converter", "keras-export-opset15", *gpu}
    assert all(rows[name]["device"] == "cuda" and (rows[name]["available"] or rows[name]["why_not"])
               for name in GPU_BACKENDS)
    assert rows["keras-export"]["default"] and rows["openvino"]["versions"]["openvino"].startswith("2026.")
    assert rows["mxnet"]["versions"]["numpy"].startswith("1.23") or not rows["mxnet"]["available"]
    probe = ("import sys; from memo.cli import main; main(['backends', '--json']); "
             "sys.stderr.write(str(sorted({'tensorflow', 'torch', 'jax', 'onnxruntime'} & set(sys.modules))))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, check=True)
    assert done.stderr.strip() == "[]"


def test_run_table_shows_each_library_and_the_verdicts(capsys: pytest.CaptureFixture[str]) -> None:
    result = ExecutionResult("/tmp/x", "keras-tensorflow", ["out"], {
        "keras-tensorflow": BackendResult("keras-tensorflow", "keras", stages=[StageResult("execute", "ok", 0.1)]),
        "mxnet": BackendResult("mxnet", "onnx-opset11", stages=[StageResult("convert", "unsupported", 0.2,
                                                                            "NotImplementedError", "Tile")])})
    comparisons = {"onnxruntime": Comparison("onnxruntime", max_abs_diff=1.5e-7, dmad=0.25)}
    print_run("m.json", result, comparisons, [Verdict("unsupported", "mxnet", "convert", "Tile not implemented")])
    out = capsys.readouterr().out
    assert "keras-tensorflow" in out and "unsupported" in out and "convert" in out
    assert "verdict: unsupported mxnet at convert: Tile not implemented" in out


@pytest.mark.parametrize("args, fragment", [
    (["run", "no/such/model.keras"], "no such file"),
    (["run", "{corrupt}", "--backends", "keras-tensorflow"], "not a valid .keras archive"),
    (["run", str(EXAMPLES / "conv_net.json"), "--backends", "keras-tensorflow,caffe"], "unknown backend 'caffe'"),
    (["run", str(EXAMPLES / "conv_net.json"), "--backend-plugin", "{no_backend}"], "defines no `SPEC"),
    (["run", str(EXAMPLES / "conv_net.json"), "--backend-plugin", "{syntax}"], "cannot be parsed"),
    (["run", str(EXAMPLES / "conv_net.json"), "--backend-plugin", "{taken}"], "already taken"),
    (["run", "{lambda}"], "--unsafe"),
])
def test_bad_input_is_one_line_and_exit_2(args: list[str], fragment: str, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    files = {"corrupt": ("model.keras", "not a zip"), "no_backend": ("p1.py", "X = 1\n"),
             "syntax": ("p2.py", "BACKEND = (\n"),
             "taken": ("p3.py", "SPEC = BackendSpec(name='onnxruntime', consumes='onnx', load=f, run=g)\n"),
             "lambda": ("lambda.json", json.dumps({"class_name": "Functional", "config": {
                 "name": "m", "layers": [
                     {"class_name": "InputLayer", "name": "x", "config": {"batch_shape": [None, 2], "name": "x"},
                      "inbound_nodes": []},
                     {"class_name": "Lambda", "name": "code", "config": {"function": "os.system"},
                      "inbound_nodes": [{"args": [{"class_name": "__keras_tensor__",
                                                   "config": {"keras_history": ["x", 0, 0]}}], "kwargs": {}}]}],
                 "input_layers": [["x", 0, 0]], "output_layers": [["code", 0, 0]]}}))}
    resolved = []
    for arg in args:
        if arg.startswith("{"):
            name, text = files[arg.strip("{}")]
            (tmp_path / name).write_text(text)
            arg = str(tmp_path / name)
        resolved.append(arg)
    assert main(resolved) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("memo: error:") and fragment in err
