"""A bug adopted from the bug database gets its repro.py rewritten by the current code (memo.triage.materialize
.refresh_script): an older memo's script may not run on the newest code (Keras on OpenVINO's trainer moved to the
keras-openvino package) where the current one does; a training bug's too. The folders are real recorded bugs'
(tests/corpus/bugs)."""
from __future__ import annotations

import shutil
from pathlib import Path

from memo.bug_files import read_bug_file
from memo.triage.materialize import refresh_script

CORPUS_BUG = Path(__file__).resolve().parents[1] / "corpus" / "bugs" / "crash-keras-openvino-9b0f948f85"
TRAINING_BUG = CORPUS_BUG.parent / "training-inconsistency-keras-jax-3a5ed06add"


def _refreshed(source: Path, tmp_path: Path) -> tuple[Path, dict, str]:
    """A copy of ``source`` holding an older memo's script, refreshed once (it must be rewritten, and only once)."""
    folder = Path(shutil.copytree(source, tmp_path / source.name))
    (folder / "repro.py").write_text("# an older memo's script\n")
    data = read_bug_file(folder)
    assert refresh_script(folder, data)
    text = (folder / "repro.py").read_text()
    assert not refresh_script(folder, data)  # the current code's script stays as it is
    return folder, data, text


def test_a_copied_folder_gets_the_current_script_once(tmp_path: Path) -> None:
    _, data, text = _refreshed(CORPUS_BUG, tmp_path)
    assert "def _openvino_trainer" in text and "RandomGrayscale.call()" in text
    assert data["repro_command"] == f"python -m memo repro {data['id']}" and "repro_missing" not in data


def test_a_training_bug_gets_the_current_training_script(tmp_path: Path) -> None:
    # campaign p40 adopted this bug with m40's script, which judged another array than its own on the newest code
    folder, data, text = _refreshed(TRAINING_BUG, tmp_path)
    assert "training bug training-inconsistency-keras-jax-3a5ed06add" in text and "'grad_0'" in text
    assert data["repro_command"] == f"python {folder / 'repro.py'}"  # not the folder it was copied from
