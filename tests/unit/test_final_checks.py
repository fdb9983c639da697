"""Fileable by default (issue 38, item 4): which bugs the campaign's final pass checks the minimal script of, in
which order and within which time (pure logic, a fake check and clock); and the report of a campaign where one
bug's script was checked and another's was not: the checked one is ready with its minimal script shown (memo's
repro.py secondary), the other is not ready and named with the command that checks it. No library runs here."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from memo.filing.check import MinimalScript, keep
from memo.filing.final_checks import (CHECK_ESTIMATE_S, CHECK_SHARE, ChecksDone, ScriptTodo, check_order, reserve_s,
                                      run_checks, scripts_to_check, would_be_ready)
from memo.filing.folder import BugFolder
from memo.report import write_report
from memo.report.sections import UNCHECKED
from memo.store import BugRow, CampaignStore
from memo.triage.dedup import update_bugs
from memo.triage.passes import SCRIPT_CHECK_S
from tests.unit.triage_store import HOSTILE, make_campaign

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "bugs"
KERAS_CRASH = "crash-keras-torch-7db6bd8ece"


def _bug(**values: object) -> BugRow:
    fields: dict[str, object] = {"id": "b", "kind": "crash", "library": "onnxruntime", "stage": "execute", "parts": {},
                                 "first_verdict": 1, "first_mutant": 1, "first_seen": 0.0, "last_seen": 0.0,
                                 "occurrences": 1, "bug_dir": "/x", "original_layers": 6, "reduced_layers": 1,
                                 "reduction": {"status": "reduced"}, "reproduces": True}
    fields.update(values)
    return BugRow(**fields)  # type: ignore[arg-type]


def test_a_bug_is_worth_a_check_when_it_would_be_ready_to_file() -> None:
    assert would_be_ready(_bug())
    assert would_be_ready(_bug(reproduces=None)), "its repro.py not checked yet: the minimal script may show it"
    assert not would_be_ready(_bug(reproduces=False)), "repro.py's failure to reproduce decides"
    assert not would_be_ready(_bug(reduced_layers=6)), "not reduced"
    assert not would_be_ready(_bug(reduction={"status": "timeout"})), "its reduction continues in a later pass"
    assert not would_be_ready(_bug(merged_into="a")) and not would_be_ready(_bug(bug_dir=None))
    numeric = _bug(kind="inconsistency")
    assert would_be_ready(numeric, {"truth": {"decision": "confirmed"}}) and would_be_ready(numeric, {})
    assert not would_be_ready(numeric, {"truth": {"decision": "noise"}}), "float noise is never ready"


def test_most_frequent_first_and_the_newest_among_equals() -> None:
    todos = [ScriptTodo("old-rare", Path("a"), 1, 10.0), ScriptTodo("old-frequent", Path("b"), 9, 10.0),
             ScriptTodo("new-frequent", Path("c"), 9, 50.0), ScriptTodo("new-rare", Path("d"), 1, 60.0)]
    assert [todo.bug_id for todo in check_order(todos)] == ["new-frequent", "old-frequent", "new-rare", "old-rare"]


def test_the_checks_keep_a_share_of_the_final_pass_while_bugs_wait_for_reduction() -> None:
    assert reserve_s(2, 600.0) == 2 * CHECK_ESTIMATE_S
    assert reserve_s(100, 600.0) == CHECK_SHARE * 600.0, "reductions still get their share"
    assert reserve_s(100, 600.0, waiting=False) == 600.0 and reserve_s(0, 600.0) == 0.0


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_no_check_starts_with_less_time_left_than_it_needs_and_a_cut_short_one_is_left() -> None:
    clock = FakeClock()
    todos = [ScriptTodo(name, Path(name), 1, 0.0) for name in ("a", "b", "c", "d")]
    until = clock.now + 2 * SCRIPT_CHECK_S + 5

    def check(todo: ScriptTodo, deadline: float) -> bool | None:
        assert deadline == until and deadline - clock.now >= SCRIPT_CHECK_S
        clock.now += SCRIPT_CHECK_S - 1
        return None if todo.bug_id == "b" else todo.bug_id == "a"

    done = run_checks(todos, until, check=check, clock=clock)
    assert (done.checked, done.reproducing) == (1, 1)
    assert done.left == ["b", "c", "d"], "b ran out of time (nothing kept), c and d never started"
    assert clock.now <= until and done.seconds == pytest.approx(2 * (SCRIPT_CHECK_S - 1))


def _campaign(tmp_path: Path) -> tuple[Path, str, str]:
    """A campaign whose two onnxruntime crashes are reduced and reproduce; the first one's minimal script was
    checked (kept in its folder), the second one's was not."""
    directory = tmp_path / "campaigns" / "unit"
    with make_campaign(directory) as store:
        update_bugs(store)
        crashes = sorted((bug for bug in store.triage.load_bugs() if bug.kind == "crash"),
                         key=lambda bug: -bug.occurrences)
        for bug in crashes:
            folder = directory / "bugs" / bug.id
            shutil.copytree(CORPUS / KERAS_CRASH, folder)
            store.triage.update_bug(bug.id, bug_dir=str(folder), original_layers=3, reduced_layers=1,
                                    reduction={"status": "reduced"}, reproduces=True, repro=str(folder / "repro.py"))
        checked, unchecked = crashes[0].id, crashes[1].id
        keep(BugFolder.read(directory / "bugs" / checked),
             MinimalScript(f"import keras\nprint({HOSTILE!r})\n", {"inputs.npz": b"x"}, reproduces=True,
                           versions="keras 3 torch 2", output="keras 3 torch 2\nRuntimeError: Given normalized_shape",
                           source="seeded"))
    return directory, checked, unchecked


def test_only_bugs_without_a_kept_check_are_still_to_check(tmp_path: Path) -> None:
    directory, checked, unchecked = _campaign(tmp_path)
    with CampaignStore(directory) as store:
        assert [todo.bug_id for todo in scripts_to_check(store)] == [unchecked]


def test_the_report_shows_the_checked_minimal_script_and_names_the_unchecked_bugs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    directory, checked, unchecked = _campaign(tmp_path)
    data = json.loads(write_report(directory, tmp_path / "r.json", "json").read_text())
    entries = {bug["id"]: bug for bug in data["bugs"]}
    ready = entries[checked]
    assert ready["status"] == "ready to file" and ready["minimal"]["script"].startswith("import keras")
    assert ready["minimal"]["files"] == ["inputs.npz"] and ready["issue_text"].startswith("# [keras-torch]")
    assert entries[unchecked]["status"] == UNCHECKED
    left = data["triage_left"]
    assert left["scripts"] == [unchecked] and left["scripts_command"] == "python -m memo report unit --issue-scripts"
    html = write_report(directory, tmp_path / "r.html").read_text()
    section = html[html.index(f'id="bug-{checked}"'):]
    assert '<pre class="minimal">' in section and HOSTILE not in html and "&lt;script&gt;alert(" in section
    assert section.index('<pre class="minimal">') < section.index("memo's repro.py (attached as well")
    assert 'id="scripts-left"' in html and f'href="#bug-{unchecked}"' in html and left["scripts_command"] in html
    markdown = write_report(directory, tmp_path / "r.md", "markdown").read_text()
    assert f"Not ready for want of a checked minimal script (no time left): {unchecked}" in markdown
    assert f"memo's full repro.py, to attach as well, is `{directory / 'bugs' / checked}/repro.py`" in markdown


def test_a_script_killed_before_it_printed_a_line_decided_nothing_and_is_not_kept(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # c1 (a 3-minute campaign): a check's Python died by SIGBUS in its imports while another process rewrote the
    # shared environment's files; kept as "does not reproduce", the bug would have stayed out of "ready" for good
    import memo.filing.check as check
    from memo.filing.final_checks import check_one
    from memo.filing.script import Candidate

    shutil.copytree(CORPUS / KERAS_CRASH, tmp_path / KERAS_CRASH)
    killed = Candidate("import os, signal\nos.kill(os.getpid(), signal.SIGBUS)\n", {}, "", "seeded")
    monkeypatch.setattr(check, "candidates", lambda folder, deadline=None: [killed])
    result = check.minimal_script(tmp_path / KERAS_CRASH)
    assert result.inconclusive and not result.reproduces and "signal 7" in result.reason
    assert not (tmp_path / KERAS_CRASH / check.MINIMAL_DIR).exists(), "nothing kept: a later check decides"
    todo = ScriptTodo(KERAS_CRASH, tmp_path / KERAS_CRASH, 1, 0.0)
    assert check_one(todo, deadline=1e12) is None
    assert check_one(todo, deadline=0.0) is None, "no time to start one"


def test_checks_before_and_after_the_reductions_add_up() -> None:
    before = ChecksDone(checked=2, reproducing=1, left=["a"], seconds=30.0)
    both = before.then(ChecksDone(checked=1, reproducing=1, left=["b"], seconds=10.0))
    assert (both.checked, both.reproducing, both.left, both.seconds) == (3, 2, ["b"], 40.0)


def test_the_background_triage_checks_a_script_when_idle_within_its_budget(tmp_path: Path) -> None:
    import time

    from memo.triage.background import TriageService

    directory, _, _ = _campaign(tmp_path)
    deadlines: list[float] = []
    ends_by = time.monotonic() + 30.0
    service = TriageService(directory, None, ends_by=ends_by, idle=lambda deadline: deadlines.append(deadline) or True)
    assert service._idle_work() and deadlines[0] <= ends_by, "no idle work past the fuzzing time"
    assert not TriageService(directory, None)._idle_work(), "nothing to do without idle work"

    def failing(deadline: float) -> bool:
        raise RuntimeError("no script")

    assert not TriageService(directory, None, idle=failing)._idle_work()
    with CampaignStore(directory) as store:
        assert any(error.step == "background idle work" for error in store.triage.errors())


def test_a_kept_script_with_files_is_bundled_as_one_zip_the_issue_names(tmp_path: Path) -> None:
    """t55's reader: a tracker takes a .zip, not the .npz and .onnx files a script reads."""
    import zipfile

    from memo.filing.check import attachment_name
    from memo.filing.issue import render_issue

    folder = tmp_path / "crash-openvino-x"
    folder.mkdir()
    (folder / "bug.json").write_text(json.dumps({"id": "crash-openvino-x", "kind": "crash", "library": "openvino",
                                                 "exception": "RuntimeError", "error_message": "it fails"}))
    bug = BugFolder.read(folder)
    checked = MinimalScript("print('openvino 1')\nraise RuntimeError('it fails')\n", {"inputs.npz": b"npz"},
                            reproduces=True, versions="openvino 1")
    keep(bug, checked)
    with zipfile.ZipFile(folder / "minimal" / attachment_name(bug)) as bundle:
        assert sorted(bundle.namelist()) == ["bug_repro.py", "inputs.npz"] and bundle.read("inputs.npz") == b"npz"
    assert f"attached with the script as `{attachment_name(bug)}`" in render_issue(bug, checked)
