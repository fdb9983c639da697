"""An issue text quotes the checked minimal script's own run on the reduced model (title, "Actual", log), never the
campaign's run of the unreduced one, and quotes it without log timestamps or this machine's folders; a retired
library's bug (its spec's upstream) is a record, not a tracker form. No library runs here: the check is given."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from memo.backends import find_spec
from memo.backends.spec import Upstream
from memo.filing.check import MinimalScript
from memo.filing.folder import BugFolder
from memo.filing.issue import render_issue
from memo.filing.observed import local_roots, quoted
from memo.text import without_local_paths, without_timestamps

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "bugs"
KERAS_CRASH = "crash-keras-torch-7db6bd8ece"  # reduced to InputLayer -> LayerNormalization
ENGINE_CRASH = "crash-onnxruntime-53e3373378"
ROOT = local_roots()[0]
VENV = f"{ROOT}/.venv/lib/python3.11/site-packages"

# What the campaign recorded on the unreduced model: another class, its shapes, a timestamp and memo's folders.
UNREDUCED = ("Exception encountered when calling Conv2D.call().\n\nunreduced cause at [12:03:44] "
             f"{ROOT}/campaigns/n1/mutants/77/model.keras of size[2, 64, 64, 512]")
CHECK_OUTPUT = (
    "keras 3.15.1 torch 2.9.0\nTraceback (most recent call last):\n  File \"bug_repro.py\", line 9, in <module>\n"
    f"  File \"{VENV}/keras/src/utils/traceback_utils.py\", line 122, in error_handler\n"
    "RuntimeError: Exception encountered when calling LayerNormalization.call().\n\n"
    "[12:03:44] Given normalized_shape=[4], expected input with shape [*, 4], but got input of size[2, 4, 4, 8] "
    f"(in {VENV}/torch/nn/functional.py)\n\n"
    "Arguments received by LayerNormalization.call():\n  • inputs=torch.Tensor(shape=torch.Size([2, 4, 4, 8]))\n")


def _folder(tmp_path: Path, name: str, **changes: object) -> BugFolder:
    shutil.copytree(CORPUS / name, tmp_path / name)
    info = json.loads((tmp_path / name / "bug.json").read_text())
    info.update(changes)
    (tmp_path / name / "bug.json").write_text(json.dumps(info))
    return BugFolder.read(tmp_path / name)


def test_quoted_output_drops_timestamps_and_local_folders() -> None:
    assert without_timestamps("Error in take0: [11:46:29] ../src/op.h:718: x") == "Error in take0: ../src/op.h:718: x"
    assert without_timestamps("[2026-11-26 11:46:29.123] W ok [a]") == "W ok [a]"
    line = 'File "/work/main/.venv-mxnet/lib/python3.11/site-packages/mxnet/module.py", line 4'
    assert without_local_paths(line) == 'File "site-packages/mxnet/module.py", line 4'
    assert without_local_paths("/opt/memo/campaigns/c/bugs/x", ("/opt/memo",)) == "campaigns/c/bugs/x"
    assert ROOT not in quoted(f"{ROOT}/campaigns/x and [01:02:03] y") and "[01:02:03]" not in quoted("[01:02:03] y")


def test_title_and_actual_come_from_the_checked_run_on_the_reduced_model(tmp_path: Path) -> None:
    folder = _folder(tmp_path, KERAS_CRASH, error_message=UNREDUCED, message=UNREDUCED, layer_class="Conv2D")
    checked = MinimalScript("import keras\n", {}, reproduces=True, versions="keras 3.15.1 torch 2.9.0",
                            output=CHECK_OUTPUT, source="seeded")
    text = render_issue(folder, checked)
    title = text.splitlines()[0]
    # the reduced model has no Conv2D: the class the checked run names, and the cause it states
    assert title.startswith("# [keras-torch] LayerNormalization: RuntimeError: Given normalized_shape=[4]"), title
    actual = next(line for line in text.splitlines() if "Actual:" in line)
    # the exception and its message's first line that states something: no Keras preamble, no arguments, no trace
    assert "Actual: RuntimeError: Given normalized_shape=[4]" in actual and "size[2, 4, 4, 8]" in actual, actual
    assert "Arguments received" not in actual and "Exception encountered" not in actual and "File " not in actual
    assert "unreduced cause" not in text and "Conv2D" not in text and "64, 64" not in text
    assert "[12:03:44]" not in text and ROOT not in text and "(in site-packages/torch/nn/functional.py)" in text


def test_a_note_printed_after_the_message_is_not_the_stated_cause(tmp_path: Path) -> None:
    # JAX prints its traceback-filtering note after the exception (f35: it became the title and the search words)
    note = ("\n--------------------\nFor simplicity, JAX has removed its internal frames from the traceback of the "
            "following exception. Set JAX_TRACEBACK_FILTERING=off to include these.\n")
    folder = _folder(tmp_path, KERAS_CRASH)
    checked = MinimalScript("import keras\n", {}, reproduces=True, versions="keras 3.15.1 torch 2.9.0",
                            output=CHECK_OUTPUT + note, source="seeded")
    text = render_issue(folder, checked)
    assert "For simplicity" not in text and "JAX_TRACEBACK_FILTERING" not in text
    assert text.splitlines()[0].startswith("# [keras-torch] LayerNormalization: RuntimeError: Given normalized_shape")


def test_without_a_reproducing_script_the_campaigns_record_is_labelled_as_such(tmp_path: Path) -> None:
    folder = _folder(tmp_path, KERAS_CRASH, error_message=UNREDUCED, message=UNREDUCED)
    text = render_issue(folder, MinimalScript(reason="the script exited 0 without the bug's symptom (RuntimeError)"))
    assert "as the campaign recorded it on the unreduced model" in text and "unreduced cause" in text
    assert "[12:03:44]" not in text and ROOT not in text


def test_a_retired_librarys_bug_is_a_record_not_a_tracker_form(tmp_path: Path) -> None:
    spec = find_spec("mxnet")
    assert spec is not None and spec.upstream.record_only  # the fact lives in the spec
    assert spec.upstream.filing == "record only: upstream retired, not filed"
    assert Upstream("active", "https://x/issues").filing == "" and Upstream("maintenance").filing == ""
    folder = _folder(tmp_path, ENGINE_CRASH, library="mxnet")
    text = render_issue(folder, MinimalScript(reason="none"))
    assert text.splitlines()[2].startswith("**Record only: upstream retired, not filed** (retired to the Apache Attic")
    assert "File at:" not in text and "github.com/apache/mxnet" not in text and "Search words:" in text
    filed = render_issue(_folder(tmp_path / "ort", ENGINE_CRASH), MinimalScript(reason="none"))
    assert "File at: https://github.com/microsoft/onnxruntime/issues" in filed and "Record only" not in filed


@pytest.mark.parametrize("status", ["retired"])
def test_every_retired_backend_is_record_only(status: str) -> None:
    from memo.backends import BACKENDS, CONVERTERS

    specs = [spec for name in (*BACKENDS, *CONVERTERS) if (spec := find_spec(name)) is not None]
    retired = [spec.name for spec in specs if spec.upstream.status == status]
    assert "mxnet" in retired and all(find_spec(name).upstream.record_only for name in retired)
