"""A reproducing bug rerun on the newest code (memo.triage.newest), on a real recorded bug: ONNX Runtime 1.31.1's
Pad-into-MaxPool refusal (tests/corpus/bugs/crash-onnxruntime-53e3373378), which 1.32.0 fixed. Run with an
interpreter that has 1.32 (memo's own), the bug is fixed upstream: stored with the bug and in its folder, listed
in the report's "fixed upstream" section, recorded so in the bug database; run where 1.31.1 is installed, it
still reproduces and is ready to file."""
from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from memo.bug_files import NEWEST_FILE
from memo.bugdb import BugDatabase
from memo.newest import FIXED_UPSTREAM, STILL_REPRODUCES
from memo.report.data import collect
from memo.store import CampaignStore
from memo.triage import triage_campaign
from memo.triage.newest import check_and_store, pending_newest
from memo.triage.remember import record_campaign
from tests.unit.triage_store import make_campaign

CORPUS_BUG = Path(__file__).resolve().parents[1] / "corpus" / "bugs" / "crash-onnxruntime-53e3373378"
RELEASE_PYTHON = Path(os.environ.get("MEMO_RECHECK_OTHER_PYTHON", "/tmp/venv-ort131/bin/python"))


def _campaign_with_reproducing_bug(tmp_path: Path, next_python: str) -> tuple[CampaignStore, str]:
    store = make_campaign(tmp_path / "c")
    config = store.get_meta("config")
    store.set_meta("config", {**config, "next_python": next_python})
    triage_campaign(store, time_budget_s=0.0, next_python="none")  # deduplication only
    bug = next(b for b in store.triage.load_bugs() if b.library == "onnxruntime" and b.kind == "crash")
    folder = Path(shutil.copytree(CORPUS_BUG, tmp_path / "c" / "bugs" / bug.id))
    store.triage.update_bug(bug.id, bug_dir=str(folder), reproduces=True, original_layers=5, reduced_layers=3,
                            reduction={"status": "done"}, repro=str(folder / "repro.py"))
    return store, bug.id


def test_a_bug_the_newest_code_fixed_is_listed_apart_and_recorded(tmp_path: Path) -> None:
    ort = pytest.importorskip("onnxruntime")
    if ort.__version__.startswith("1.31."):
        pytest.skip("memo's own onnxruntime is the release the bug was found on")
    store, bug_id = _campaign_with_reproducing_bug(tmp_path, sys.executable)
    with store:
        assert [b.id for b in pending_newest(store)] == [bug_id]
        entry = next(e for e in collect(store)["bugs"] if e["id"] == bug_id)
        assert entry["section"] == "not-ready" and entry["newest_pending"]
        outcome = check_and_store(store, store.triage.load_bug(bug_id), sys.executable, timeout_s=120)
        assert outcome["result"] == FIXED_UPSTREAM, outcome
        assert outcome["build"].startswith(f"onnxruntime {ort.__version__}, onnx ")
        assert json.loads((tmp_path / "c" / "bugs" / bug_id / NEWEST_FILE).read_text())["result"] == FIXED_UPSTREAM
        assert pending_newest(store) == []
        data = collect(store)
        entry = next(e for e in data["bugs"] if e["id"] == bug_id)
        assert entry["section"] == "fixed-upstream"
        # a run made then names its build alone; one answered from the remembered runs (this machine ran the same
        # script on the same packages before) says so, never as a 0-s rerun
        said = " (memo ran this script on these packages before (its date not recorded); its files and they are " \
               "unchanged)" if outcome.get("remembered") else ""
        assert entry["status"] == f"fixed upstream: no longer reproduces on {outcome['build']}{said}"
        assert data["newest"]["results"][FIXED_UPSTREAM] == 1 and data["newest"]["python"] == sys.executable
        with BugDatabase(tmp_path / "bugs.sqlite") as db:
            record_campaign(db, store)
            known = db.find([f"sig:{bug_id}"])
            assert known is not None and known.status_text() == f"fixed-upstream {outcome['build']}"


@pytest.mark.skipif(not RELEASE_PYTHON.exists(), reason=f"no {RELEASE_PYTHON} (scripts/make_recheck_env.sh)")
def test_a_bug_still_shown_there_is_ready_and_says_on_which_build(tmp_path: Path) -> None:
    store, bug_id = _campaign_with_reproducing_bug(tmp_path, str(RELEASE_PYTHON))
    with store:
        outcome = check_and_store(store, store.triage.load_bug(bug_id), str(RELEASE_PYTHON), timeout_s=120)
        assert outcome["result"] == STILL_REPRODUCES and outcome["build"].startswith("onnxruntime 1.31.1"), outcome
        entry = next(e for e in collect(store)["bugs"] if e["id"] == bug_id)
        assert entry["newest"]["result"] == STILL_REPRODUCES and entry["section"] != "fixed-upstream"
        assert not entry["newest_pending"]


KERAS_OPENVINO_BUG = Path(__file__).resolve().parents[1] / "corpus" / "bugs" / "crash-keras-openvino-9b0f948f85"


def test_a_keras_on_openvino_bug_runs_on_the_newest_code_through_keras_openvino(tmp_path: Path) -> None:
    """keras-nightly loads its OpenVINO backend from the keras-openvino package: the bug's unchanged script runs there
    (RandomGrayscale's symbolic shape on Keras on OpenVINO), and the build it names includes that package."""
    from memo.newest import next_python
    from memo.triage.newest import newest_check

    python = next_python()
    if python is None:
        pytest.skip("no newest-code environment (.venv-next)")
    folder = Path(shutil.copytree(KERAS_OPENVINO_BUG, tmp_path / KERAS_OPENVINO_BUG.name))
    outcome = newest_check(folder, "keras-openvino", python, timeout_s=180)
    # whatever the day's builds do with the bug, the script finds Keras on OpenVINO there (a later keras-nightly that
    # breaks keras-openvino is the builds' affair, reported as "could not run", not memo's missing module)
    assert "No module named 'keras.src.backend.openvino'" not in outcome["detail"], outcome
    assert "keras-nightly" in outcome["build"] and "keras-openvino" in outcome["build"], outcome
    release = newest_check(folder, "keras-openvino", sys.executable, timeout_s=180)
    assert release["result"] == STILL_REPRODUCES, release


@pytest.mark.parametrize("exits, result", [(0, FIXED_UPSTREAM), (1, STILL_REPRODUCES)])
def test_a_bug_whose_repro_cannot_run_on_the_newest_code_is_decided_by_its_minimal_script(
        tmp_path: Path, exits: int, result: str) -> None:
    """t54: a JAX remat crash's repro.py met another error on keras-nightly ("could not run there") while the
    minimal script the issue attaches ran to its end there. The kept minimal script, rerun with the newest-code
    interpreter, decides: exit 0 is fixed, the bug's exception again is still reproducing."""
    import time

    from memo.filing.check import MinimalScript, keep
    from memo.filing.final_checks import newest_by_minimal
    from memo.filing.folder import BugFolder

    store, bug_id = _campaign_with_reproducing_bug(tmp_path, sys.executable)
    with store:
        folder = tmp_path / "c" / "bugs" / bug_id
        exception = json.loads((folder / "bug.json").read_text())["exception"]
        script = (f"import sys\nprint('versions')\nsys.stderr.write('{exception}: the bug\\n' * {exits})\n"
                  f"sys.exit({exits})\n")
        keep(BugFolder.read(folder), MinimalScript(script, reproduces=True))
        could_not = {"result": "error", "detail": "could not run (exit 1): UnexpectedTracerError: ...", "build": "b"}
        store.triage.update_bug(bug_id, newest=could_not)
        assert newest_by_minimal(store, time.monotonic() + 120) == 1
        outcome = store.triage.load_bug(bug_id).newest
        assert outcome["result"] == result and outcome["by"] == "minimal script" and outcome["build"] == "b"
        assert "repro.py could not run there (could not run (exit 1): UnexpectedTracerError" in outcome["detail"]
        assert json.loads((folder / NEWEST_FILE).read_text())["result"] == result
        assert newest_by_minimal(store, time.monotonic() + 120) == 0  # decided: not rerun


def test_the_newest_code_reruns_the_library_the_folder_blames(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """t58: a training bug float64 turned round to TensorFlow was rerun on torch's newest build (the row's library),
    and its issue text quoted "keras-nightly, torch 2.15.0" for a TensorFlow script."""
    import memo.triage.newest as newest

    asked: list[str] = []
    monkeypatch.setattr(newest, "newest_check", lambda folder, library, python, **_: asked.append(library) or {
        "result": STILL_REPRODUCES, "library": library})
    store, bug_id = _campaign_with_reproducing_bug(tmp_path, sys.executable)
    with store:
        bug = store.triage.load_bug(bug_id)
        info = json.loads((Path(bug.bug_dir) / "bug.json").read_text())
        (Path(bug.bug_dir) / "bug.json").write_text(json.dumps({**info, "library": "keras-tensorflow"}))
        check_and_store(store, bug, sys.executable, timeout_s=1)
        (Path(bug.bug_dir) / "bug.json").write_text(json.dumps({**info, "library": "keras"}))  # no backend: the row's
        check_and_store(store, bug, sys.executable, timeout_s=1)
    assert asked == ["keras-tensorflow", "onnxruntime"]
