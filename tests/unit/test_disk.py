"""Disk use: sizes, a full disk told from other failures, which artifacts a campaign keeps, the budget,
``memo clean``. No library runs here; artifacts are folders of dummy files laid out like real ones."""
from __future__ import annotations

import errno
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from memo.artifact import slim_artifact
from memo.backends.result import ExecutionResult
from memo.campaign import disk
from memo.campaign.disk import DiskBudget
from memo.campaign.progress import disk_line
from memo.cli import main
from memo.diskspace import format_size, is_disk_full, mentions_disk_full, parse_size, tree_bytes
from memo.errors import UsageError
from memo.oracle import Verdict
from memo.oracle.verdict import Failure
from memo.report.data import disk_figures
from memo.store import CampaignStore, MutantRecord
from memo.triage import sign
from tests.unit.triage_store import crash_result

FILES = ("model.keras", "inputs.npz", "model.ir.json", "onnx/model.onnx", "onnx/model.opset11.onnx",
         "outputs/keras-tensorflow.npz", "outputs/onnxruntime.npz", "outputs/mxnet.npz")


@pytest.mark.parametrize(("text", "size"), [("2G", 2 * 2**30), ("500M", 500 * 2**20), ("1.5GB", 3 * 2**29),
                                            ("64k", 65536), ("1 GiB", 2**30), ("123", 123), ("0", 0)])
def test_sizes_parse_in_binary_units(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["banana", "", "2X", "-1G", "G"])
def test_a_bad_size_is_a_usage_error(text: str) -> None:
    with pytest.raises(UsageError, match="--max-disk"):
        parse_size(text)


def test_sizes_format_readably() -> None:
    assert [format_size(n) for n in (512, 3 * 2**20 // 2, 340 * 2**20, int(1.2 * 2**30))] == \
        ["512 B", "1.5 MB", "340 MB", "1.2 GB"]


def test_a_full_disk_is_told_from_other_failures() -> None:
    assert is_disk_full(OSError(errno.ENOSPC, "No space left on device"))
    assert is_disk_full(OSError(errno.EDQUOT, "Disk quota exceeded"))
    assert is_disk_full(sqlite3.OperationalError("database or disk is full"))
    try:  # a library re-raising the OSError as something else
        try:
            raise OSError(errno.ENOSPC, "write failed")
        except OSError as inner:
            raise ValueError("could not save the model") from inner
    except ValueError as outer:
        assert is_disk_full(outer)
    assert not is_disk_full(OSError(errno.EACCES, "Permission denied"))
    assert not is_disk_full(RuntimeError("shape mismatch"))
    assert mentions_disk_full({"backends": {"x": {"stages": [{"message": "[Errno 28] No space left on device"}]}}})
    assert not mentions_disk_full({"backends": {"x": {"stages": [{"message": "boom", "status": "error"}]}}})


def test_space_warning_is_one_line_only_below_the_budget(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr(disk, "free_bytes", lambda path: int(1.2 * 2**30))
    line = disk.space_warning([tmp_path / "mutants", tmp_path], 2 * 2**30)
    assert line is not None and "\n" not in line
    assert line.startswith("memo: warning: only 1.2 GB free on /") and line.endswith("for a 2.0 GB disk budget")
    assert disk.space_warning([tmp_path], 2**30) is None
    assert disk.space_warning([tmp_path], 0) is None, "no budget, no warning"


# ---------------------------------------------------------------------------- the campaign's artifacts
def _artifact(root: Path, mutant_id: int) -> Path:
    folder = root / str(mutant_id)
    for name in FILES:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(b"x" * 40_000)
    return folder


def _crash(message: str) -> tuple[Verdict, dict[str, Any]]:
    verdict = Verdict(kind="crash", backend="onnxruntime", stage="execute", message=message,
                      failure=Failure("error", "RuntimeError", 0.1))
    return verdict, crash_result(message)


def _execute(store: CampaignStore, budget: DiskBudget, root: Path, message: str) -> tuple[int, bool]:
    """What the pipeline does for one executed mutant with one onnxruntime crash."""
    iteration = store.count_mutants(seeds=True)
    mutant_id = store.add_mutant(MutantRecord(iteration, "s", "NLA", "seed:s", "s", {}, "{}", True, diverse=True))
    folder = _artifact(root, mutant_id)
    verdict, result = _crash(message)
    signed = sign(verdict, ExecutionResult.from_json(result), None)  # as the pipeline signs it when recording it
    assert signed is not None
    keep = budget.admit(mutant_id, folder, [verdict], ExecutionResult.from_json(result), [signed.signature])
    store.add_execution(mutant_id, result, 1.0, str(folder) if keep else None)
    store.add_verdict(mutant_id, verdict, signed)
    if not keep:
        disk.shutil.rmtree(folder)
    return mutant_id, keep


@pytest.fixture
def campaign(tmp_path: Path) -> tuple[CampaignStore, Path]:
    store = CampaignStore(tmp_path / "campaigns" / "c1", create=True)
    store.set_meta("config", {"name": "c1", "seed": 0, "max_disk_bytes": 2**30})
    root = tmp_path / "mutants" / "c1"
    root.mkdir(parents=True)
    store.set_meta("artifacts_root", str(root))
    yield store, root
    store.close()


def test_only_the_first_occurrences_of_a_signature_keep_their_artifact(campaign) -> None:
    store, root = campaign
    budget = DiskBudget(store, root, limit=0, per_signature=2)
    budget.load()
    kept = [_execute(store, budget, root, message)[1]
            for message in ("bad dims for conv_1", "bad dims for dense_7", "bad dims for x_3", "Out of memory")]
    assert kept == [True, True, False, True], "the third 'bad dims' is the same bug: deleted"
    assert sorted(int(p.name) for p in root.iterdir()) == [1, 2, 4]
    assert budget.figures()["kept"] == 3 and budget.figures()["deleted"] == 1
    assert budget.used == tree_bytes(root)

    resumed = DiskBudget(store, root, limit=0, per_signature=2)
    resumed.load()
    assert not _execute(store, resumed, root, "bad dims for y_9")[1], "a resumed campaign counts what was stored"
    assert _execute(store, resumed, root, "Out of memory")[1]


def test_a_kept_artifact_loses_the_files_its_finding_does_not_involve(campaign) -> None:
    store, root = campaign
    budget = DiskBudget(store, root, limit=0)
    mutant_id, kept = _execute(store, budget, root, "boom")
    folder = root / str(mutant_id)
    assert kept
    left = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    assert left == ["inputs.npz", "model.ir.json", "model.keras", "onnx/model.onnx",
                    "outputs/keras-tensorflow.npz", "outputs/onnxruntime.npz"], \
        "onnxruntime's crash needs its ONNX file and the reference's outputs, not MXNet's"
    other = _artifact(root, 99)
    assert slim_artifact(other, kinds={"keras", "onnx-opset11"}, backends={"mxnet"}) > 0
    assert (other / "onnx/model.opset11.onnx").exists() and not (other / "onnx/model.onnx").exists()


def test_over_the_budget_repeats_then_triaged_bugs_go_and_then_the_campaign_must_stop(campaign) -> None:
    store, root = campaign
    budget = DiskBudget(store, root, limit=0, per_signature=2)
    budget.load()
    first_a, _ = _execute(store, budget, root, "bad dims for conv_1")
    second_a, _ = _execute(store, budget, root, "bad dims for dense_7")
    first_b, _ = _execute(store, budget, root, "Out of memory")
    one = budget.kept[first_a].size
    budget.limit = 2 * one + one // 2
    assert budget.enforce(), "the second occurrence of a bug goes first"
    assert store.artifact_dirs([first_a, second_a, first_b]) == {
        first_a: str(root / str(first_a)), second_a: None, first_b: str(root / str(first_b))}
    assert not (root / str(second_a)).exists()

    budget.limit = one + one // 2
    assert not budget.enforce(), "only first occurrences of untriaged bugs are left: nothing may go"
    bug_id = "crash-onnxruntime-0123456789"
    store.triage.replace_occurrences({bug_id: [(1, first_a)]})
    (store.directory / "bugs" / bug_id).mkdir(parents=True)
    assert budget.enforce(), "once its bug has a bug folder, the oldest kept artifact may go"
    assert store.artifact_dirs([first_a])[first_a] is None and (root / str(first_b)).exists()


def test_release_artifact_deletes_the_folder_and_the_record(campaign) -> None:
    store, root = campaign
    budget = DiskBudget(store, root, limit=0)
    mutant_id, _ = _execute(store, budget, root, "boom")
    size = tree_bytes(root / str(mutant_id))
    assert store.release_artifact(mutant_id) == size > 0
    assert store.artifact_dirs([mutant_id, 404]) == {mutant_id: None, 404: None}
    assert store.release_artifact(mutant_id) == 0, "releasing twice frees nothing"


def test_loading_deletes_folders_of_executions_stored_as_not_kept(campaign) -> None:
    store, root = campaign
    budget = DiskBudget(store, root, limit=0)
    _execute(store, budget, root, "boom")
    _execute(store, budget, root, "boom")
    dropped, kept = _execute(store, budget, root, "boom")
    assert not kept
    leftover = _artifact(root, dropped)  # a kill between the commit and the delete
    unexecuted = _artifact(root, 77)     # in flight when killed: re-run on resume, so left alone
    DiskBudget(store, root, limit=0).load()
    assert not leftover.exists() and unexecuted.exists()


def test_clean_frees_artifacts_but_never_the_database_or_bug_folders(campaign, capsys) -> None:
    store, root = campaign
    budget = DiskBudget(store, root, limit=0)
    mutant_id, _ = _execute(store, budget, root, "boom")
    (store.directory / "bugs" / "crash-x").mkdir(parents=True)
    (store.directory / "triage-work" / "c1").mkdir(parents=True)
    size = tree_bytes(root)

    assert main(["clean", str(store.directory), "--dry-run"]) == 0
    assert f"would free {format_size(size)}" in capsys.readouterr().out
    assert (root / str(mutant_id)).exists()

    assert main(["clean", str(store.directory)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"memo clean: freed {format_size(size)}") and out.count("\n") == 1
    assert not root.exists() and not (store.directory / "triage-work").exists()
    assert (store.directory / "campaign.sqlite").exists() and (store.directory / "bugs" / "crash-x").is_dir()
    assert store.artifact_dirs([mutant_id]) == {mutant_id: None}


def test_disk_figures_and_progress_line(campaign) -> None:
    store, root = campaign
    _execute(store, DiskBudget(store, root, limit=0), root, "boom")
    figures = disk_figures(store)
    assert figures["artifacts_kept"] == 1 and figures["artifacts_bytes"] == tree_bytes(root)
    assert figures["budget_bytes"] == 2**30
    assert figures["bytes_per_executed"] == figures["artifacts_bytes"] + figures["campaign_bytes"]
    line = disk_line({"used_bytes": 300 * 2**20, "limit_bytes": 2 * 2**30, "kept": 14, "deleted": 230})
    assert line == "300 MB of 2.0 GB budget in artifacts (14 kept, 230 deleted)"
    assert json.dumps(figures)


def test_ensure_artifact_rebuilds_only_what_is_missing(tmp_path: Path) -> None:
    from memo.artifact import ensure_artifact, prepare_artifact
    from tests.unit.triage_store import model

    ir = model("Dense", "ReLU")
    original = prepare_artifact(ir, tmp_path / "a", seed=3)
    stamp = original.keras_path.stat().st_mtime_ns
    assert ensure_artifact(ir, tmp_path / "a", seed=3).keras_path.stat().st_mtime_ns == stamp, "kept as it is"
    rebuilt = ensure_artifact(ir, tmp_path / "b", seed=3)
    assert rebuilt.inputs_path.read_bytes() == original.inputs_path.read_bytes(), "the same inputs from the seed"
    assert rebuilt.read_ir().dumps() == ir.dumps()
