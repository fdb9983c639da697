"""Reproduction scripts: built from the workers' own code, valid standalone Python for every library and
kind; the crash check matches the recorded exception (type and normalized message) or the recorded
signal; bug folders."""
from __future__ import annotations

import inspect
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from memo.backends import BACKENDS, CONVERTERS, load_spec
from memo.backends.spec import ConverterSpec
from memo.triage.inline import Bundle, InlineError
from memo.triage.repro import CHECKS, render_script, supported
from memo.script_exit import expected_death, interpret

NUMERIC = ("nan", "inconsistency", "shape")
LIBRARIES = sorted([*BACKENDS, *CONVERTERS])
PLUGIN_DIR = Path(__file__).resolve().parents[1] / "plugins"


def _render(library: str, kind: str, faulty: str | None = None, **options: object) -> tuple[str, list[str]]:
    options = {"expected_exception": "RuntimeError", **options}
    return render_script(bug_id="b1", kind=kind, library=library, faulty=faulty or library, symptom="it breaks",
                         input_names=["input_1", "input_2"], reference="keras-tensorflow", timeout_s=5,
                         **options)  # type: ignore[arg-type]


def _worker_callables(library: str) -> list[object]:
    spec = load_spec(library)
    if isinstance(spec, ConverterSpec):
        return [spec.load, spec.export]
    return [fn for fn in (spec.convert, spec.load, spec.run) if fn is not None]


@pytest.mark.parametrize("library", LIBRARIES)
def test_a_script_contains_the_workers_own_code_verbatim_and_compiles(library: str) -> None:
    assert load_spec(library).repro is not None and supported(library)
    text, _files = _render(library, "crash")
    compile(text, "repro.py", "exec")
    for fn in _worker_callables(library):
        assert inspect.getsource(inspect.unwrap(fn)) in text, fn
    assert not re.search(r"^\s*(import|from) memo\b", text, re.MULTILINE)  # standalone


@pytest.mark.parametrize("library", LIBRARIES)
@pytest.mark.parametrize("kind", sorted(CHECKS))
def test_every_library_and_check_renders_to_valid_python(library: str, kind: str) -> None:
    faulty = "onnxruntime" if library.startswith("tf2onnx") else library
    text, files = _render(library, kind, faulty)
    compile(text, "repro.py", "exec")
    assert ("expected.npz" in files) == (kind in NUMERIC)
    assert '"input_1", "input_2"' in text


def test_scripts_define_everything_without_memo(tmp_path: Path) -> None:
    """Executing each script's definitions (not its check) in an interpreter where memo cannot be imported."""
    paths = []
    for library in LIBRARIES:
        for kind in ("crash", "inconsistency"):
            faulty = "mxnet" if library == "tf2onnx-opset11" else "onnxruntime" if library == "tf2onnx" else library
            path = tmp_path / f"{library}-{kind}.py"
            path.write_text(_render(library, kind, faulty)[0])
            paths.append(str(path))
    code = ("import runpy, sys\nsys.modules['memo'] = None\n"
            "for path in sys.argv[1:]:\n    runpy.run_path(path, run_name='repro')\n")
    done = subprocess.run([sys.executable, "-c", code, *paths], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_keras_scripts_pin_their_backend_and_run_jax_jitted() -> None:
    jax, files = _render("keras-jax", "crash")
    assert 'os.environ["KERAS_BACKEND"] = "jax"' in jax and files == ["model.keras"]
    assert jax.index("KERAS_BACKEND") < jax.index("import numpy")
    assert "_COMPILED_CALLS = {\"jax\": _jax_call, \"openvino\": _openvino_call}" in jax and "_zero_initializers()" in jax
    ort, files = _render("onnxruntime", "inconsistency")
    assert files == ["model.onnx", "expected.npz"] and "import keras" not in ort


def test_a_conversion_bug_runs_memos_freeze_and_export_without_catching_errors() -> None:
    text, files = _render("tf2onnx-opset11", "inconsistency", "mxnet")
    assert files == ["model.keras", "expected.npz"]
    assert "CONVERTER_LOAD, CONVERTER_EXPORT = _freeze, _export_opset11" in text
    assert "CONVERT, LOAD, RUN = _convert, _load, _run" in text and "class _Bound" in text
    assert "from_function(function" not in text  # memo's capture-free freeze, not tf2onnx's convenience path
    crash, files = _render("tf2onnx", "crash")
    assert files == ["model.keras"] and 'os.environ["TF2ONNX_CATCH_ERRORS"] = "FALSE"' in crash
    assert "_export_default" in crash and "CONVERT, LOAD, RUN" not in crash


def test_the_oracle_and_the_signature_are_inlined_not_copied() -> None:
    from memo import oracle
    from memo.oracle import criterion
    from memo.triage.signature import normalize_message

    text, _ = _render("onnxruntime", "inconsistency")
    assert inspect.getsource(oracle.mismatch) in text and inspect.getsource(oracle.Thresholds) in text
    for kind, check in (("nan", criterion.nan_problem), ("shape", criterion.shape_problem)):
        script, _ = _render("onnxruntime", kind)
        assert inspect.getsource(check) in script and f"{check.__name__}(" in script.split(inspect.getsource(check))[1]
    crash, _ = _render("onnxruntime", "crash")
    assert inspect.getsource(normalize_message) in crash


def test_a_name_two_libraries_need_differently_is_refused() -> None:
    bundle = Bundle()
    bundle.add("memo.backends.keras_common", "_run")  # reads _COMPILED_CALLS
    with pytest.raises(InlineError):
        bundle._bind("_COMPILED_CALLS", ("elsewhere", "_COMPILED_CALLS"))


def test_exit_status_interpretation() -> None:
    assert interpret(0, {}) is True and interpret(1, {}) is False and interpret(2, {}) is None
    assert interpret(-11, {"exception": "signal 11"}) is True and interpret(-6, {"exception": "signal 11"}) is False
    assert interpret(None, {}) is None
    assert interpret(None, {"kind": "hang"}, timed_out=True) is None and interpret(None, {}, timed_out=True) is None
    died = {"exception": "WorkerDied", "error_message": "worker process killed by signal 8 (SIGFPE)"}
    assert expected_death(died) == ("signal", 8) and interpret(-8, died) is True and interpret(-11, died) is False
    exited = {"exception": "WorkerDied", "error_message": "worker process exited with code 3"}
    assert interpret(3, exited) is True and expected_death({"exception": "ValueError"}) is None


# ---------------------------------------------------------------------------- plugins and the crash check
def _plugin_bug(tmp_path: Path, body: str, **options: object) -> tuple[Path, dict[str, object]]:
    """A bug folder for a plugin whose ``run`` executes ``body`` (its repro.py imports the plugin file)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    plugin = tmp_path / "raising_plugin.py"
    plugin.write_text("import os\nimport signal\n\nfrom memo.backends import BackendSpec\n\n\n"
                      f"def run(path, inputs):\n    {body}\n\n\n"
                      "SPEC = BackendSpec(name='raiser', consumes='keras', load=str, run=run)\n")
    folder = tmp_path / "bug"
    folder.mkdir()
    np.savez(folder / "inputs.npz", input_1=np.zeros((2, 3), np.float32), input_2=np.ones((2, 3), np.float32))
    (folder / "model.keras").write_bytes(b"")
    (folder / "plugin_backend.py").write_text(plugin.read_text())
    text, files = render_script(bug_id="b1", kind="crash", library="raiser", faulty="raiser", symptom="it breaks",
                                input_names=["input_1", "input_2"], reference="", plugin=plugin,
                                **options)  # type: ignore[arg-type]
    assert files == ["model.keras", "plugin_backend.py"]
    (folder / "repro.py").write_text(text)
    return folder, {"kind": "crash", "exception": options.get("expected_exception"),
                    "error_message": options.get("expected_message")}


def _run_script(folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "repro.py"], cwd=folder, capture_output=True, text=True, timeout=60)


def test_a_crash_reproduces_only_with_the_same_type_and_normalized_message(tmp_path: Path) -> None:
    folder, _ = _plugin_bug(tmp_path, "raise ValueError('bad axis 3 in conv2d_7 at /tmp/a/b.py')",
                            expected_exception="ValueError", expected_message="bad axis 1 in conv2d_2 at /x/y/z.py",
                            expected_stage="execute")
    done = _run_script(folder)
    assert done.returncode == 0, done.stdout + done.stderr
    script = (folder / "repro.py").read_text()
    (folder / "repro.py").write_text(script.replace('EXPECTED_TYPE = "ValueError"', 'EXPECTED_TYPE = "KeyError"'))
    done = _run_script(folder)
    assert done.returncode == 1 and "ValueError" in done.stdout and "KeyError" in done.stdout
    (folder / "repro.py").write_text(script.replace("bad axis N", "no such axis N"))
    assert _run_script(folder).returncode == 1


def test_a_native_crash_reproduces_by_dying_with_its_signal(tmp_path: Path) -> None:
    folder, bug = _plugin_bug(tmp_path, "os.kill(os.getpid(), signal.SIGABRT)", expected_exception="WorkerDied",
                              expected_message="worker process killed by signal 6 (SIGABRT)")
    done = _run_script(folder)
    assert done.returncode == -6 and interpret(done.returncode, bug) is True
    raising, bug = _plugin_bug(tmp_path / "other", "raise ValueError('no')", expected_exception="WorkerDied",
                               expected_message="worker process killed by signal 6 (SIGABRT)")
    done = _run_script(raising)
    assert done.returncode == 1 and interpret(done.returncode, bug) is False


def test_materialize_writes_a_complete_bug_folder(tmp_path: Path) -> None:
    from memo.artifact import prepare_artifact
    from memo.model.ir import Layer, ModelIR
    from memo.triage.materialize import materialize
    from memo.triage.probe import Roles

    ir = ModelIR([Layer("input", "InputLayer", {"batch_shape": [None, 4], "dtype": "float32"}),
                  Layer("dense", "Dense", {"units": 3}, ["input"])], ["dense"])
    artifact = prepare_artifact(ir, tmp_path / "artifact", seed=0)
    (tmp_path / "artifact" / "outputs").mkdir()
    np.savez(artifact.outputs_path("keras-tensorflow"), out_0=np.zeros((2, 3), np.float32))
    np.savez(artifact.outputs_path("keras-jax"), out_0=np.full((2, 3), 0.5, np.float32))
    bug = {"id": "inconsistency-keras-jax-1", "kind": "inconsistency", "library": "keras-jax", "stage": "execute"}
    data = materialize(tmp_path / "bug", artifact.directory, ir, bug,
                       Roles("keras-jax", "keras-tensorflow", ("keras-tensorflow", "keras-jax")), {"layer": "dense"})
    names = sorted(path.name for path in (tmp_path / "bug").iterdir())
    assert names == ["bug.json", "expected.npz", "inputs.npz", "ir.json", "model.keras", "repro.py"]
    assert data["io"]["outputs"][0]["max |diff|"] == pytest.approx(0.5)
    assert json.loads((tmp_path / "bug" / "bug.json").read_text())["repro_command"].endswith("inconsistency-keras-jax-1")
    assert 'KERAS_BACKEND"] = "jax"' in (tmp_path / "bug" / "repro.py").read_text()


def test_materialize_copies_a_plugin_and_scripts_it(tmp_path: Path) -> None:
    from memo.artifact import prepare_artifact
    from memo.model.ir import Layer, ModelIR
    from memo.triage.materialize import materialize

    ir = ModelIR([Layer("input", "InputLayer", {"batch_shape": [None, 4], "dtype": "float32"}),
                  Layer("dense", "Dense", {"units": 3}, ["input"])], ["dense"])
    artifact = prepare_artifact(ir, tmp_path / "artifact", seed=0)
    bug = {"id": "crash-numpy-echo-1", "kind": "crash", "library": "numpy-echo", "stage": "execute",
           "exception": "ValueError", "error_message": "boom"}
    data = materialize(tmp_path / "bug", artifact.directory, ir, bug, None,
                       {"plugins": [str(PLUGIN_DIR / "numpy_echo.py")]})
    assert (tmp_path / "bug" / "plugin_backend.py").read_text() == (PLUGIN_DIR / "numpy_echo.py").read_text()
    assert data["repro_command"] and "plugins" not in data
    done = _run_script(tmp_path / "bug")
    assert done.returncode == 1 and "ran without an exception" in done.stdout, done.stdout + done.stderr
