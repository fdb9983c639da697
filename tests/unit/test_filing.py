"""memo.filing on copies of real bug folders (tests/corpus/bugs, from the p20 campaign): each minimal script is
generated, runs in a fresh process with the real library and reproduces the bug; the issue text holds the title,
the versions and the script, in the tracker's form."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from memo.backends import BACKENDS, CONVERTERS, find_spec
from memo.errors import UsageError
from memo.filing import cached_minimal, issue_text, minimal_script
from memo.filing.check import CHECK_FILE, MINIMAL_DIR
from memo.filing.folder import BugFolder
from memo.filing.script import KERAS_ATTACHED, SCRIPT_FILE, _keras_part, candidates
from memo.backends.trackers import GENERIC

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "bugs"
KERAS_CRASH = "crash-keras-torch-7db6bd8ece"  # Keras on torch: LayerNormalization on axis 2 raises
# OpenVINO's ONNX front end fails to convert the Loop tf2onnx writes for an LSTM (campaign n40, 2026-11-27)
ENGINE_CRASH = "crash-openvino-409296f83f"
# ONNX Runtime 1.31 refused a MaxPool whose pad exceeds its kernel; 1.32 (memo's) fixed it: its scripts are generated,
# not run, here (tests/unit/test_bugdb_recheck.py checks the fix)
FIXED_ENGINE_CRASH = "crash-onnxruntime-53e3373378"
NUMERIC = "inconsistency-keras-torch-46585e4668"  # Keras on torch disagrees with TensorFlow (AveragePooling3D)
MAX_LINES = 30


@pytest.fixture(scope="module")
def bugs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("bugs")
    for name in (KERAS_CRASH, ENGINE_CRASH, FIXED_ENGINE_CRASH, NUMERIC):
        shutil.copytree(CORPUS / name, root / name)
    return root


@pytest.mark.parametrize("name, library_import", [(KERAS_CRASH, "import keras"), (ENGINE_CRASH, "import openvino"),
                                                  (NUMERIC, "import keras")])
def test_minimal_script_reproduces_in_a_fresh_process(bugs: Path, name: str, library_import: str) -> None:
    result = minimal_script(bugs / name)
    assert result.reproduces, result.reason + result.output
    assert result.lines < MAX_LINES
    assert library_import in result.text
    assert "memo" not in result.text.replace(f"memo bug {name}", "")  # no memo import, nothing of memo's code
    # run the kept script again ourselves, from its own folder: it exits 1 (the bug shows)
    kept = bugs / name / MINIMAL_DIR
    done = subprocess.run([sys.executable, SCRIPT_FILE], cwd=kept, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    assert result.versions and result.versions.split()[0] in ("keras", "openvino")


def test_keras_script_builds_the_model_in_code(bugs: Path) -> None:
    text = minimal_script(bugs / KERAS_CRASH).text
    assert "keras.layers.LayerNormalization(axis=2)" in text  # the config as keyword arguments, defaults left out
    assert "initializer" not in text and "load_model" not in text


def test_engine_script_builds_the_graph_with_onnx_helper(bugs: Path) -> None:
    first = candidates(BugFolder.read(bugs / FIXED_ENGINE_CRASH))[0]  # the shortest candidate: the graph in code
    assert "helper.make_node('MaxPool'" in first.text and "helper.make_model(" in first.text
    assert "onnx.load" not in first.text and "import onnxruntime" in first.text
    assert set(first.files) <= {"weights.npz", "inputs.npz"}
    result = minimal_script(bugs / ENGINE_CRASH)  # a Loop with a body graph: the converted file itself, attached
    assert result.reproduces and "onnx.load('model.onnx')" in result.text and set(result.files) <= {
        "model.onnx", "inputs.npz"}


def test_numeric_script_compares_with_the_attached_reference(bugs: Path) -> None:
    result = minimal_script(bugs / NUMERIC)
    assert set(result.files) == {"weights.npz", "inputs.npz", "expected.npz"}
    assert "np.testing.assert_allclose" in result.text and "AssertionError" in result.output


def test_an_attached_model_saved_as_localization_probed_it_gives_its_own_outputs_again(tmp_path: Path) -> None:
    # long150e's inconsistency-keras-torch-514c0e6f75: the folder's model.keras had every layer as an output, its
    # ir.json one, and the script compared the first of four outputs with the reduced model's one
    folder = tmp_path / NUMERIC
    shutil.copytree(CORPUS / NUMERIC, folder)
    assert "model.get_layer" not in "\n".join(_keras_part(BugFolder.read(folder), KERAS_ATTACHED).lines)
    with zipfile.ZipFile(CORPUS / NUMERIC / "model.keras") as source, \
            zipfile.ZipFile(folder / "model.keras", "w") as probe:
        for item in source.infolist():
            data = source.read(item)
            if item.filename == "config.json":
                config = json.loads(data)
                config["config"]["output_layers"] = [["input_layer", 0, 0], ["average_pooling3d", 0, 0]]
                data = json.dumps(config).encode()
            probe.writestr(item, data)
    lines = _keras_part(BugFolder.read(folder), KERAS_ATTACHED).lines
    assert lines[-1] == "model = keras.Model(model.inputs, [model.get_layer(n).output for n in ['average_pooling3d']])"


def test_the_check_is_kept_and_reused(bugs: Path) -> None:
    first = minimal_script(bugs / ENGINE_CRASH)
    check = bugs / ENGINE_CRASH / MINIMAL_DIR / CHECK_FILE
    stamp = check.stat().st_mtime_ns
    again = cached_minimal(BugFolder.read(bugs / ENGINE_CRASH))
    assert again is not None and again.text == first.text and again.reproduces
    minimal_script(bugs / ENGINE_CRASH)
    assert check.stat().st_mtime_ns == stamp  # nothing ran again


def test_issue_text_in_the_trackers_form(bugs: Path) -> None:
    text = issue_text(bugs / ENGINE_CRASH)
    title = text.splitlines()[0]
    # the operator OpenVINO names and its message's head (not the location lines and headers before it)
    assert title.startswith("# [openvino] Loop: RuntimeError: The provided loop body graph canonical inputs"), title
    assert "https://github.com/openvinotoolkit/openvino/issues" in text
    assert "### OpenVINO Version and Operating System" in text and "**Framework:** ONNX" in text  # OpenVINO's form
    assert "```python\n" in text and "compile_model(" in text
    assert "openvino 2026." in text  # the versions the script printed when it was checked
    assert "converted by tf2onnx" in text  # the producer of its input
    assert "Search words:" in text and "is%3Aissue" in text


def test_issue_text_of_a_numeric_bug_states_expected_against_actual(bugs: Path) -> None:
    text = issue_text(bugs / NUMERIC)
    assert text.splitlines()[0] == "# [keras-torch] AveragePooling3D: gives wrong results (against keras-tensorflow)"
    assert "### Standalone code to reproduce the issue" in text  # Keras's form
    truth = json.loads((bugs / NUMERIC / "bug.json").read_text()).get("truth") or {}
    if truth.get("errors"):
        assert "error against float64" in text


def test_a_script_that_does_not_reproduce_is_not_shown(tmp_path: Path) -> None:
    folder = tmp_path / KERAS_CRASH
    shutil.copytree(CORPUS / KERAS_CRASH, folder)
    info = json.loads((folder / "bug.json").read_text())
    info["exception"] = "NoSuchError"  # the script's exception is then not the bug's
    (folder / "bug.json").write_text(json.dumps(info))
    result = minimal_script(folder)
    assert not result.reproduces and "NoSuchError" in result.reason
    text = issue_text(folder)
    assert "memo's full `repro.py` is attached" in text and "keras.layers.LayerNormalization" not in text


def test_not_a_bug_folder_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="not a bug folder"):
        issue_text(tmp_path)


def test_every_tracker_has_its_form() -> None:
    upstreams = [spec.upstream for name in (*BACKENDS, *CONVERTERS)
                 if (spec := find_spec(name)) is not None and spec.upstream.tracker]
    assert upstreams and all(upstream.form is not GENERIC for upstream in upstreams)
    forms: dict[str, object] = {}
    assert all(forms.setdefault(upstream.tracker, upstream.form) is upstream.form for upstream in upstreams)


def test_torch_compile_scripts_compile_as_their_backends_do() -> None:
    """The minimal script of a torch.compile bug compiles with the backend's own mode (aot_eager is not inductor)."""
    for name, mode in (("torch-compile", "aot_eager"), ("torch-inductor", "inductor")):
        idiom = find_spec(name).idiom
        assert idiom is not None and f'backend="{mode}", dynamic=False' in "\n".join(idiom.call)
    assert find_spec("torch-inductor-cuda").idiom is None and find_spec("onnx2torch-cuda").idiom is None


def test_report_shows_the_kept_issue_text_escaped_and_counts_reproducing_scripts(bugs: Path, tmp_path: Path) -> None:
    from memo.report.data import collect, filing_view
    from memo.report.html import render_html
    from memo.report.markdown import report_markdown
    from memo.store import CampaignStore
    from memo.triage.dedup import update_bugs
    from tests.unit.triage_store import HOSTILE, make_campaign

    minimal_script(bugs / ENGINE_CRASH)
    view = filing_view(bugs / ENGINE_CRASH)
    assert view["minimal"] and view["minimal"]["reproduces"] and view["issue_text"].startswith("# [openvino]")
    assert filing_view(tmp_path) == {"issue_text": "", "minimal": None}  # no bug folder: memo's own text instead
    directory = tmp_path / "campaigns" / "unit"
    with make_campaign(directory) as store:
        update_bugs(store)
    with CampaignStore(directory) as store:
        data = collect(store)
    bug = data["bugs"][0]
    bug.update(view)
    bug["issue_text"] += HOSTILE  # library text inside the issue text stays text
    data["triage"].update(minimal_checked=1, minimal_reproduce=1)
    html = render_html(data)
    assert HOSTILE not in html and "&lt;script&gt;alert(" in html
    assert "1 of 1 minimal scripts reproduce" in html and "Copy issue text" in html
    assert "Its minimal script (" in html
    assert view["issue_text"].splitlines()[0] in report_markdown(data)
    # t62's reader: every entry was headed "ready to file", documented and retired ones too
    bug.update(section="ready", status="ready to file")
    assert "Issue text ready to file" in render_html(data)
    bug.update(section="documented", status="documented difference")
    assert "Issue text, a draft: not ready to file (documented difference)" in render_html(data)
    assert "Issue text ready to file" not in render_html(data)


def test_an_exception_bug_json_does_not_record_is_read_from_the_message(tmp_path: Path) -> None:
    (tmp_path / "bug.json").write_text(json.dumps({"kind": "crash", "library": "keras-export", "exception": "",
                                                   "error_message": "ValueError: Exception encountered when ..."}))
    assert BugFolder.read(tmp_path).exception == "ValueError"


def test_a_bug_of_keras_front_end_gets_its_script_on_the_reference_backend(tmp_path: Path) -> None:
    # t53: Masking then Softmax fails on every Keras backend (library "keras"): no minimal script was written for it
    from memo.backends import REFERENCE
    from memo.filing.folder import BugFolder
    from memo.filing.script import idiom_for, script_library

    folder = BugFolder(tmp_path, {"id": "crash-keras-x", "kind": "crash", "library": "keras"}, None)
    assert script_library(folder) == REFERENCE and idiom_for(script_library(folder)) is not None


def test_a_minimal_script_says_why_it_sets_its_backends_environment() -> None:
    """t60's reader: a Keras-on-JAX script set XLA_FLAGS without a word on why (the NaN shows without it too)."""
    from memo.filing.script_env import env_lines as _env_lines

    jax = _env_lines("keras-jax")
    assert jax[1].startswith("# XLA_FLAGS: machine code at -O0") and "XLA_FLAGS" in jax[2]
    assert "oneDNN" in _env_lines("keras-tensorflow")[1]
    # t64's reader: a JAX NaN reproduced without -O0: the script a user would write is tried first
    plain = _env_lines("keras-jax", plain=True)
    assert not any("XLA_FLAGS" in line for line in plain)
    from memo.filing.script_env import has_optional_env

    assert has_optional_env("keras-jax") and not has_optional_env("keras-tensorflow")


def test_a_jax_bugs_scripts_try_the_form_without_xla_flags_first(tmp_path: Path) -> None:
    """t64's reader: a keras-jax NaN reproduced without memo's XLA -O0 setting, which its script set unexplained."""
    folder = tmp_path / "jax"
    shutil.copytree(CORPUS / NUMERIC, folder)
    info = json.loads((folder / "bug.json").read_text())
    (folder / "bug.json").write_text(json.dumps({**info, "library": "keras-jax"}))
    scripts = candidates(BugFolder.read(folder))
    assert "XLA_FLAGS" not in scripts[0].text and "XLA_FLAGS" in scripts[1].text
    assert scripts[0].text.splitlines()[-8:] == scripts[1].text.splitlines()[-8:]  # the same call and check
