"""A bug adopted from the bug database gets its repro.py rewritten by the current code (memo.triage.materialize
.refresh_script): an older memo's script may not run on the newest code (Keras on OpenVINO's trainer moved to the
keras-openvino package) where the current one does. The folder is a real recorded bug's (tests/corpus/bugs)."""
from __future__ import annotations

import shutil
from pathlib import Path

from memo.bug_files import read_bug_file
from memo.triage.materialize import refresh_script

CORPUS_BUG = Path(__file__).resolve().parents[1] / "corpus" / "bugs" / "crash-keras-openvino-9b0f948f85"


def test_a_copied_folder_gets_the_current_script_once(tmp_path: Path) -> None:
    folder = Path(shutil.copytree(CORPUS_BUG, tmp_path / CORPUS_BUG.name))
    (folder / "repro.py").write_text("# an older memo's script\n")
    data = read_bug_file(folder)
    assert refresh_script(folder, data)
    text = (folder / "repro.py").read_text()
    assert "def _openvino_trainer" in text and "RandomGrayscale.call()" in text
    assert data["repro_command"] == f"python -m memo repro {data['id']}" and "repro_missing" not in data
    assert not refresh_script(folder, data)  # the current code's script stays as it is


def test_a_training_bug_keeps_its_own_script(tmp_path: Path) -> None:
    folder = Path(shutil.copytree(CORPUS_BUG, tmp_path / CORPUS_BUG.name))
    (folder / "repro.py").write_text("# a training step's script\n")
    data = {**read_bug_file(folder), "kind": "training-inconsistency"}
    assert not refresh_script(folder, data)
    assert (folder / "repro.py").read_text() == "# a training step's script\n"
