"""Standalone reproduction scripts, generated from templates: one *runner* per library (how it loads and
runs the saved model) and one *check* per kind of bug (what the symptom is).

The script depends only on the faulty library and numpy (plus tf2onnx when the conversion is at fault),
reads ``model.keras`` / ``model.onnx``, ``inputs.npz`` and ``expected.npz`` beside it, and exits 0 when the
bug reproduces, 1 when it does not.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import jinja2

from memo import __version__
from memo.backends import CONVERTERS, load_spec
from memo.oracle import Thresholds
from memo.triage.bugdir import EXPECTED_FILE, INPUTS_FILE, MODEL_FILE

ONNX_FILE = "model.onnx"
_ONNX_PATH = 'os.path.join(HERE, "model.onnx")'


@dataclass(frozen=True)
class Recipe:
    """How a script runs one library: runner templates, the call (``{path}``: the ONNX file), set-up."""

    runners: tuple[str, ...]
    call: str
    needs: str
    model_file: str
    environment: dict[str, str] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)


def _keras(backend: str, library: str) -> Recipe:
    return Recipe(("runners/keras.py.j2",), "run_keras()", f"keras, {library}, numpy", MODEL_FILE,
                  {"KERAS_BACKEND": backend})


def _tf2onnx(opset: int | None, static: bool) -> Recipe:
    return Recipe(("runners/tf2onnx.py.j2",), "convert_tf2onnx()", "tf2onnx, tensorflow, keras, onnx, numpy",
                  MODEL_FILE, {"KERAS_BACKEND": "tensorflow"},
                  {"opset": opset, "static_shapes": static, "initializers_as_inputs": static})


RECIPES: dict[str, Recipe] = {
    "keras-tensorflow": _keras("tensorflow", "tensorflow"),
    "keras-jax": _keras("jax", "jax"),
    "keras-torch": _keras("torch", "torch"),
    "onnxruntime": Recipe(("runners/onnxruntime.py.j2",), "run_onnxruntime({path})", "onnxruntime, numpy", ONNX_FILE),
    "onnx2torch": Recipe(("runners/torch_module.py.j2", "runners/onnx2torch.py.j2"), "run_onnx2torch({path})",
                         "onnx2torch, torch, numpy", ONNX_FILE),
    "onnx2pytorch": Recipe(("runners/torch_module.py.j2", "runners/onnx2pytorch.py.j2"), "run_onnx2pytorch({path})",
                           "onnx2pytorch, onnx, torch, numpy", ONNX_FILE),
    "mxnet": Recipe(("runners/mxnet.py.j2",), "run_mxnet({path})", "mxnet 1.9, onnx, numpy", ONNX_FILE),
    "tf2onnx": _tf2onnx(None, False),
    "tf2onnx-opset11": _tf2onnx(11, True),
}
CHECKS = {"crash": "checks/crash.py.j2", "hang": "checks/hang.py.j2", "nan": "checks/nan.py.j2",
          "inconsistency": "checks/inconsistency.py.j2", "shape": "checks/shape.py.j2"}


def supported(library: str) -> bool:
    return library in RECIPES


def script_python(library: str) -> str | None:
    """The interpreter the library needs (MXNet has its own environment); None: the current one."""
    try:
        return getattr(load_spec(library), "python", None)
    except KeyError:
        return None


def _plan(library: str, kind: str, faulty: str) -> tuple[Recipe, list[str], str, list[str]]:
    """(recipe for set-up, runner templates, the call, files the script reads) for a bug's library."""
    recipe = RECIPES[library]
    if library in CONVERTERS and kind != "crash" and kind != "hang":
        # the conversion is wrong: convert, then run the result with a library on that conversion
        consumer = RECIPES[faulty]
        return recipe, [*recipe.runners, *consumer.runners], consumer.call.format(path=recipe.call), [MODEL_FILE]
    files = [recipe.model_file]
    return recipe, list(recipe.runners), recipe.call.format(path=_ONNX_PATH), files


def render_script(*, bug_id: str, kind: str, library: str, faulty: str, symptom: str, input_names: list[str],
                  reference: str, expected_exception: str = "", timeout_s: float = 60.0,
                  thresholds: Thresholds = Thresholds()) -> tuple[str, list[str]]:
    """The script's text and the data files it reads (besides ``inputs.npz``)."""
    recipe, runners, call, files = _plan(library, kind, faulty)
    if kind in ("nan", "inconsistency", "shape"):
        files.append(EXPECTED_FILE)
    environment = jinja2.Environment(loader=jinja2.PackageLoader("memo.triage", "templates"), autoescape=False,
                                     trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
                                     undefined=jinja2.StrictUndefined)
    prefix = " ".join(f"{k}={v}" for k, v in recipe.environment.items())
    text = environment.get_template("repro.py.j2").render(
        bug_id=bug_id, kind=kind, library=library, symptom=symptom, version=__version__,
        command=f"{prefix + ' ' if prefix else ''}python repro.py", needs=recipe.needs,
        files=", ".join([*files, INPUTS_FILE]), environment=recipe.environment, input_names=input_names,
        runners=runners, run_expression=call, check=CHECKS[kind], expected_exception=expected_exception,
        timeout_s=timeout_s, atol=thresholds.atol, rtol=thresholds.rtol, reference=reference, **recipe.params)
    return text, files
