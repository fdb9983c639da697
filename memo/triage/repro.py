"""Standalone reproduction scripts, built from the very code memo's workers ran.

A script is a shared frame (``templates/repro.py.j2``: header, environment, one check per kind of bug in
``templates/checks/``) around memo's own code, inlined verbatim by :mod:`memo.triage.inline`:

* the library: a registered backend's or converter's callables (the spec's ``convert``/``load``/``run``,
  or ``load``/``export``) with every helper they use, for each spec that declares a ``repro`` recipe;
  a plugin is not inlined: its file is copied beside the script (``plugin_backend.py``) and imported;
* the worker's reading of inputs and writing of outputs, and its record of a converter's problems;
* the symptom's test: the oracle's functions for nan / inconsistency / shape, and the bug signature's
  message normalization for crashes (same type and normalized message, with every file path the run
  itself decides masked: :mod:`memo.triage.pathmask`), so a script and the campaign cannot disagree on
  what "the same bug" is, wherever the script is run from. A native crash is reproduced by the process dying the same
  way, which :func:`memo.triage.rerun.interpret` accepts.

The script depends only on the library and numpy (plus tf2onnx, TensorFlow and Keras when the conversion
is at fault), reads the files beside it, and exits 0 when the bug reproduces, 1 when it does not.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import jinja2

import memo
from memo import __version__
from memo.backends import load_spec
from memo.backends.plugins import read_plugin
from memo.backends.spec import SPEC_NAME, AnySpec, ConverterSpec
from memo.backends.supervisor import THREAD_VARIABLES
from memo.kinds import BUG_KINDS
from memo.oracle import Thresholds
from memo.bug_files import EXPECTED_FILE, INPUTS_FILE, MODEL_FILE
from memo.triage.bugdir import converted_file
from memo.triage.inline import Bundle
from memo.script_exit import ALARM_SLACK_S, expected_death
from memo.triage.rerun import hang_limit_s
from memo.triage.pathmask import comparable_message

PLUGIN_FILE = "plugin_backend.py"
CHECKS = {kind: f"checks/{kind}.py.j2" for kind in sorted(BUG_KINDS)}  # the symptom's test, per bug kind
NUMERIC_CHECKS = ("nan", "inconsistency", "shape")  # the kinds whose check compares with expected.npz

# memo code every script inlines, beside the library's: (module, name).
_WORKER_IO = (("memo.backends.worker", "_read_inputs"), ("memo.backends.worker", "_write_outputs"))
_CONVERTER_RECORD = ("memo.backends.worker", "_problem_record")
_CHECK_CODE: dict[str, tuple[tuple[str, str], ...]] = {
    "crash": (("memo.triage.pathmask", "comparable_message"), ("memo.backends.failure_cause", "primary_failure")),
    "hang": (),
    "nan": (("memo.oracle.criterion", "nan_problem"),),
    "inconsistency": (("memo.oracle.criterion", "Thresholds"), ("memo.oracle.criterion", "mismatch")),
    "shape": (("memo.oracle.criterion", "shape_problem"),),
}
# Functions the inlined code calls that read memo's registry: the script holds their values as memo had them.
_FROZEN_CODE: tuple[tuple[str, str], ...] = (("memo.backends", "declared_masks"),)
# Imports the frame itself makes (an inlined module's identical import is not repeated).
_FRAME_IMPORTS = frozenset({"import faulthandler", "import os", "import sys", "import tempfile", "import traceback",
                            "from pathlib import Path", "import numpy as np"})


@dataclass(frozen=True)
class _Section:
    title: str
    code: str


def registered(library: str) -> AnySpec | None:
    """The registered spec of ``library`` (None for a plugin or an unknown name)."""
    try:
        return load_spec(library)
    except KeyError:
        return None


def supported(library: str, plugin: Path | None = None) -> bool:
    """Whether memo can write a script for bugs in ``library`` (a plugin: when its file is known)."""
    spec = registered(library)
    return plugin is not None if spec is None else spec.repro is not None


def script_python(library: str, plugin_python: str | None = None) -> str | None:
    """The interpreter the library needs (MXNet has its own environment); None: the current one."""
    spec = registered(library)
    return spec.python if spec is not None else plugin_python


def _requirements(spec: AnySpec) -> list[str]:
    assert spec.repro is not None
    return list(spec.repro.requirements) or [*spec.distributions, "numpy"]


def _library_section(bundle: Bundle, spec: AnySpec, names: tuple[str, ...]) -> _Section:
    """The spec's callables (bound to ``names`` in the script) with everything they use."""
    if isinstance(spec, ConverterSpec):
        callables = [spec.load, spec.export]
        bundle.add(*_CONVERTER_RECORD)
    else:
        callables = [spec.convert, spec.load, spec.run]
    bound = [bundle.add_object(fn) if fn is not None else "None" for fn in callables]
    module = ", ".join(dict.fromkeys(fn.__module__ for fn in callables if fn is not None))
    code = bundle.take() + "\n\n\n# what memo's worker calls, stage by stage\n" + \
        f"{', '.join(names)} = {', '.join(bound)}"
    return _Section(f"{spec.name}: memo's worker code ({module})", code)


def _plugin_section() -> _Section:
    root = str(Path(memo.__file__).resolve().parents[1])
    code = (f"# The plugin file memo's worker imported. A plugin is written against memo (its BackendSpec), so memo\n"
            f"# must be importable for it; the code in this script does not use memo.\n"
            f"sys.path.insert(0, HERE)\nsys.path.append({root!r})\n"
            f"from plugin_backend import {SPEC_NAME}  # noqa: E402\n\n"
            f"CONVERT, LOAD, RUN = {SPEC_NAME}.convert, {SPEC_NAME}.load, {SPEC_NAME}.run")
    return _Section("the backend plugin (plugin_backend.py)", code)


def render_script(*, bug_id: str, kind: str, library: str, faulty: str, symptom: str, input_names: list[str],
                  reference: str, expected_exception: str = "", expected_message: str = "",
                  expected_stage: str = "", timeout_s: float = 60.0, thresholds: Thresholds = Thresholds(),
                  plugin: Path | None = None, plugin_env: dict[str, str] | None = None) -> tuple[str, list[str]]:
    """The script's text and the files it reads besides ``inputs.npz``.

    ``library`` is the bug's library; ``faulty`` the backend whose outputs show a wrong conversion when
    ``library`` is a converter (the script converts, then runs the conversion there). ``plugin``: the
    plugin file when the backend that runs is a plugin (copied as ``plugin_backend.py``; ``plugin_env``
    its declared environment). ``expected_*``: the exception, message and stage memo recorded for a crash.
    ``timeout_s``: the per-model limit the bug was found under; a hang's script waits twice as long.
    """
    spec = registered(library)
    converter = spec if isinstance(spec, ConverterSpec) else None
    runs = faulty if converter is not None and kind not in ("crash", "hang") else (None if converter else library)
    backend = registered(runs) if runs else None
    if (spec is None and plugin is None) or (spec is not None and spec.repro is None):
        raise ValueError(f"no repro recipe for {library}")
    bundle = Bundle()
    for module, name in _FROZEN_CODE:
        bundle.freeze(module, name)
    for module, name in _WORKER_IO:
        bundle.add(module, name)
    sections = [_Section("memo's worker: reading inputs, writing outputs (memo.backends.worker)", bundle.take())]
    environment: dict[str, str] = {}
    requirements: list[str] = []
    files: list[str] = []
    for part in (converter, backend):
        if part is None:
            continue
        if part.repro is None:
            raise ValueError(f"no repro recipe for {part.name}")
        names = ("CONVERTER_LOAD", "CONVERTER_EXPORT") if isinstance(part, ConverterSpec) else ("CONVERT", "LOAD", "RUN")
        sections.append(_library_section(bundle, part, names))
        for key, value in {**part.env, **part.repro.env}.items():
            if environment.setdefault(key, value) != value:
                raise ValueError(f"{library}: conflicting {key} for the converter and the backend")
        requirements += _requirements(part)
    if runs and backend is None:
        sections.append(_plugin_section())
        environment.update(plugin_env or {})
        requirements.append("numpy")
        files.append(PLUGIN_FILE)
    consumed = _consumed_kind(backend, plugin)
    model_file = MODEL_FILE if converter is not None or consumed == "keras" else converted_file(consumed)
    files.insert(0, model_file)
    for module, name in _CHECK_CODE[kind]:
        bundle.add(module, name)
    sections.append(_Section(f"the symptom's test: memo's own ({', '.join(sorted({m for m, _ in _CHECK_CODE[kind]}))})",
                             bundle.take()))
    if kind in NUMERIC_CHECKS:
        files.append(EXPECTED_FILE)
    death = expected_death({"exception": expected_exception, "error_message": expected_message}) \
        if kind == "crash" else None
    prefix = " ".join(f"{k}={v}" for k, v in environment.items() if k == "KERAS_BACKEND")
    template = jinja2.Environment(loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"), autoescape=False,
                                  trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
                                  undefined=jinja2.StrictUndefined).get_template("repro.py.j2")
    text = template.render(
        bug_id=bug_id, kind=kind, library=library, symptom=symptom, version=__version__,
        command=f"{prefix + ' ' if prefix else ''}python repro.py",
        requirements=" ".join(dict.fromkeys(requirements)), plugin=runs is not None and backend is None,
        files=", ".join([*files, INPUTS_FILE]), environment=environment, thread_variables=list(THREAD_VARIABLES),
        imports=[line for line in bundle.import_lines() if line not in _FRAME_IMPORTS], sections=sections,
        input_names=input_names, converter=converter.name if converter else None, backend=runs is not None,
        model_file=model_file, converted_name=converted_file(converter.produces) if converter else "",
        check=CHECKS[kind], death=death, expected_exception=expected_exception,
        expected_message=comparable_message(expected_message), expected_stage=expected_stage,
        timeout_s=hang_limit_s(timeout_s), alarm_slack_s=ALARM_SLACK_S,
        thresholds=", ".join(f"{k}={v!r}" for k, v in dataclasses.asdict(thresholds).items()), reference=reference)
    return text, files


def _consumed_kind(backend: AnySpec | None, plugin: Path | None) -> str:
    if backend is not None:
        return backend.consumes
    return read_plugin(plugin).consumes if plugin is not None else "keras"
