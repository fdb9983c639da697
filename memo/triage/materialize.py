"""Filling a bug's folder from an executed artifact: model, input, converted file, expected output,
input/output summary, ``bug.json`` and ``repro.py``."""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np

from memo.artifact_files import ARTIFACT_FILES
from memo.backends.plugins import PluginInfo, read_plugin
from memo.backends.spec import ConverterSpec
from memo.errors import UsageError
from memo.json_types import JsonObject
from memo.kinds import TRAINING_KINDS
from memo.model.build import infer_shapes
from memo.model.ir import ModelIR
from memo.npz_arrays import portable
from memo.store import DB_NAME, CampaignStore
from memo.triage.describe import symptom as symptom_line
from memo.bug_files import EXPECTED_FILE, INPUTS_FILE, IR_FILE, MODEL_FILE, write_bug_file
from memo.triage.bugdir import converted_file
from memo.triage.probe import Roles, read_inputs
from memo.triage.repro import NUMERIC_CHECKS, PLUGIN_FILE, registered, render_script, script_python, supported
from memo.triage.signature import recorded_as
from memo.triage.training_repro import write_training_script


def _consumed_kind(library: str, plugin: PluginInfo | None) -> str:
    spec = registered(library)
    return spec.consumes if spec is not None else plugin.consumes if plugin is not None else "keras"


def campaign_plugins(folder: Path) -> list[str]:
    """The plugin files of the campaign a bug folder (``campaigns/NAME/bugs/BUG``) belongs to, if any."""
    campaign = folder.resolve().parent.parent
    if not (campaign / DB_NAME).exists():
        return []
    try:
        with CampaignStore(campaign) as store:
            return list((store.get_meta("config", {}) or {}).get("plugins") or [])
    except Exception:  # a campaign being written, or an old one: no plugin scripts, never a failed triage
        return []


def find_plugin(library: str, paths: list[str]) -> PluginInfo | None:
    """The plugin among ``paths`` that declares the backend ``library`` (None: a registered backend or none)."""
    if registered(library) is not None:
        return None
    for path in paths:
        try:
            info = read_plugin(path)
        except UsageError:
            continue
        if info.name == library:
            return info
    return None


def _outputs(path: Path) -> list[np.ndarray]:
    """A library's stored outputs, bfloat16 widened to float32 exactly (:func:`memo.npz_arrays.portable`): read back
    raw, a bfloat16 model's reference output failed the folder's summary (long150e: 18 bugs' triage failed with
    "setting an array element with a sequence" and stayed in the backlog)."""
    if not path.exists():
        return []
    with np.load(path, allow_pickle=False) as data:
        return [portable(data[f"out_{i}"]) for i in range(len(data.files))]


def io_summary(inputs: dict[str, np.ndarray], faulty: list[np.ndarray], good: list[np.ndarray],
               names: tuple[str, str]) -> JsonObject:
    """Shapes, ranges and differences of a bug's input and outputs (faulty vs good library)."""
    def stats(array: np.ndarray) -> JsonObject:
        finite = np.asarray(array)[np.isfinite(array)] if np.issubdtype(array.dtype, np.number) else np.zeros(0)
        return {"shape": list(array.shape), "dtype": str(array.dtype),
                "min": float(finite.min()) if finite.size else None, "max": float(finite.max()) if finite.size else None}

    rows = []
    for index in range(max(len(faulty), len(good))):
        row: JsonObject = {"output": index}
        y = faulty[index] if index < len(faulty) else None
        o = good[index] if index < len(good) else None
        row[f"{names[0]} shape"] = list(y.shape) if y is not None else None
        row[f"{names[1]} shape"] = list(o.shape) if o is not None else None
        if y is not None:
            row[f"{names[0]} non-finite"] = int(np.count_nonzero(~np.isfinite(y))) if np.issubdtype(y.dtype, np.floating) else 0
        if o is not None:
            row[f"{names[1]} non-finite"] = int(np.count_nonzero(~np.isfinite(o))) if np.issubdtype(o.dtype, np.floating) else 0
        if y is not None and o is not None and y.shape == o.shape and np.issubdtype(y.dtype, np.number):
            a, b = np.asarray(y, np.float64), np.asarray(o, np.float64)
            finite = np.isfinite(a) & np.isfinite(b)
            diff = np.abs(a[finite] - b[finite])
            row["max |diff|"] = float(diff.max()) if diff.size else 0.0
            row["mean |diff|"] = float(diff.mean()) if diff.size else 0.0
        rows.append(row)
    return {"inputs": [{"name": name, **stats(array)} for name, array in inputs.items()], "outputs": rows}


def _shapes(ir: ModelIR) -> dict[str, list[Any]]:
    try:
        return {name: list(shape) for name, shape in infer_shapes(ir).items()}
    except Exception:  # shapes are decoration; a model Keras rejects has none
        return {}


def materialize(folder: Path, source: Path, ir: ModelIR, bug: JsonObject, roles: Roles | None,
                extra: JsonObject) -> JsonObject:
    """Copy what the script needs from the executed artifact ``source`` into ``folder`` and write
    ``bug.json`` and ``repro.py``. Returns the bug.json data.

    A plugin backend's script imports the plugin file, copied beside it; the plugin is looked up in
    ``extra["plugins"]`` (paths), else in the configuration of the campaign the folder belongs to.
    """
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source / ARTIFACT_FILES["keras"], folder / MODEL_FILE)
    shutil.copyfile(source / INPUTS_FILE, folder / INPUTS_FILE)
    (folder / IR_FILE).write_text(ir.dumps())
    library, _stage, _others = recorded_as(bug["library"], bug.get("stage") or "")  # whose code shows it
    kind = bug["kind"]
    faulty = roles.faulty if roles else library
    good = roles.good if roles else None
    spec = registered(library)
    # the backend whose code the script runs: the bug's library, or for a wrong conversion its consumer
    runs = faulty if isinstance(spec, ConverterSpec) and kind in NUMERIC_CHECKS else library
    plugins = list(extra.get("plugins") or []) or (campaign_plugins(folder) if registered(runs) is None else [])
    plugin = find_plugin(runs, plugins)
    consumed = _consumed_kind(runs, plugin)
    if consumed != "keras" and (source / ARTIFACT_FILES[consumed]).exists():
        shutil.copyfile(source / ARTIFACT_FILES[consumed], folder / converted_file(consumed))
    if plugin is not None:
        shutil.copyfile(plugin.path, folder / PLUGIN_FILE)
    good_outputs = _outputs(source / "outputs" / f"{good}.npz") if good else []
    if good_outputs and kind in NUMERIC_CHECKS:  # only their scripts compare outputs (and reference outputs
        # can be tens of MB)
        np.savez(folder / EXPECTED_FILE, **{f"out_{i}": array for i, array in enumerate(good_outputs)})
    inputs = read_inputs(folder / INPUTS_FILE)
    data = {**bug, "reference": good or "", "faulty": faulty, "shapes": _shapes(ir),
            "io": io_summary(inputs, _outputs(source / "outputs" / f"{faulty}.npz"), good_outputs,
                             (faulty, good or "reference")), **{k: v for k, v in extra.items() if k != "plugins"}}
    data["python_library"] = library if spec is not None else runs
    write_script(folder, data, ir, plugin, has_expected=bool(good_outputs))
    write_bug_file(folder, data)
    return data


def write_script(folder: Path, data: JsonObject, ir: ModelIR, plugin: PluginInfo | None, *,
                 has_expected: bool) -> None:
    """Write ``folder``'s ``repro.py`` from its ``bug.json`` facts (``data``, updated with how to run it) by the
    current code; a numeric bug's needs the expected output (``has_expected``). :func:`materialize` writes it so,
    and a bug adopted from the bug database gets its script rewritten so (:func:`refresh_script`): a script an
    older memo wrote may not run on the newest code where the current one does."""
    kind = data["kind"]
    library, stage, _others = recorded_as(data["library"], data.get("stage") or "")
    faulty = data.get("faulty") or library
    runs = faulty if isinstance(registered(library), ConverterSpec) and kind in NUMERIC_CHECKS else library
    plugin_path = plugin.path if plugin else None
    scriptable = supported(library, plugin_path) and (runs == library or supported(runs, plugin_path))
    if scriptable and (kind not in NUMERIC_CHECKS or has_expected):
        text, _files = render_script(
            bug_id=data["id"], kind=kind, library=library, faulty=faulty,
            symptom=symptom_line(data), input_names=[layer.name for layer in ir.input_layers],
            reference=data.get("reference") or "", expected_exception=data.get("exception") or "",
            expected_message=data.get("error_message") or "", expected_stage=stage,
            timeout_s=float(data.get("timeout_s", 60.0)), plugin=plugin_path, plugin_env=plugin.env if plugin else None)
        (folder / "repro.py").write_text(text)
        data.pop("repro_missing", None)
        data["repro_command"] = "python -m memo repro " + data["id"]
        data["python"] = script_python(data["python_library"], plugin.python if plugin else None)
    else:
        data["repro_missing"] = f"no reproduction recipe for {runs}" if not scriptable else \
            "no reference output to compare with"


def refresh_script(folder: Path, data: JsonObject) -> bool:
    """Rewrite the ``repro.py`` of a bug folder copied from the bug database with the current code (a training
    bug's by :mod:`memo.triage.training_repro`: campaign p40's adopted SpectralNormalization bug kept an older
    script that judged another array than its own; a plugin's is kept); whether it was rewritten."""
    if not (folder / IR_FILE).is_file():
        return False
    ir = ModelIR.loads((folder / IR_FILE).read_text())
    before = (folder / "repro.py").read_text() if (folder / "repro.py").is_file() else ""
    if data.get("kind") in TRAINING_KINDS:
        if not data.get("library") or registered(str(data["library"])) is None:
            return False
        write_training_script(folder, data, [layer.name for layer in ir.input_layers])
    elif "python_library" not in data or registered(str(data.get("faulty") or data["python_library"])) is None:
        return False
    else:
        write_script(folder, data, ir, None, has_expected=(folder / EXPECTED_FILE).is_file())
    return (folder / "repro.py").is_file() and (folder / "repro.py").read_text() != before
