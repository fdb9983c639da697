"""The bug database with recorded campaigns (p20 and p30, copied without their large files): importing them,
the report's new/known marking and folding, triage adopting a known bug instead of reducing it, and the
``memo bugs`` command (its recheck and issue glue run against stand-ins of the checker and the issue writer)."""
from __future__ import annotations

import json
import shutil
import sys
import types
from pathlib import Path

import pytest

from memo.bugdb import BugDatabase
from memo.cli import main
from memo.report.data import collect
from memo.report.html import render_html
from memo.report.sections import SECTION_RANK
from memo.store import CampaignStore
from memo.triage import triage_campaign
from memo.bug_files import Reduction
from memo.triage.remember import SIGNATURE_PREFIX, record_campaign

RECORDED = Path("/work/main/campaigns")
SMALL_FILE = 1 << 20

pytestmark = pytest.mark.skipif(not (RECORDED / "p20" / "campaign.sqlite").exists()
                                or not (RECORDED / "p30" / "campaign.sqlite").exists(),
                                reason="the recorded campaigns p20 and p30 are not on this machine")


def _copy(name: str, into: Path) -> Path:
    def large(folder: str, names: list[str]) -> list[str]:
        return [n for n in names if (Path(folder) / n).is_file() and (Path(folder) / n).stat().st_size > SMALL_FILE
                and n != "campaign.sqlite"]
    return Path(shutil.copytree(RECORDED / name, into / name, ignore=large))


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("recorded")
    _copy("p20", root)
    _copy("p30", root)
    return root


@pytest.fixture
def campaigns(recorded: Path, tmp_path: Path) -> Path:
    for name in ("p20", "p30"):
        shutil.copytree(recorded / name, tmp_path / name)
    return tmp_path


def _import(database: Path, *directories: Path) -> None:
    with BugDatabase(database) as db:
        for directory in directories:
            with CampaignStore(directory) as store:
                record_campaign(db, store)


def test_import_and_report_new_before_known(campaigns: Path) -> None:
    database = campaigns / "bugs.sqlite"
    _import(database, campaigns / "p30", campaigns / "p20")  # p30 ran first
    with BugDatabase(database) as db:
        bugs = db.bugs()
        keys = [key for bug in bugs for key in bug.keys]
        assert len(keys) == len(set(keys))  # each key, so each root cause, once
        shared = [bug for bug in bugs if len(bug.seen) > 1 and {s.campaign_name for s in bug.seen} == {"p20", "p30"}]
        assert shared, "p20 and p30 share no bug"
        filed = shared[0]
        db.mark(filed.id, "filed", "https://github.com/x/y/issues/1?<script>alert(1)</script>")
    with CampaignStore(campaigns / "p20") as store:
        data = collect(store, database)
    entries = data["bugs"]
    assert all(isinstance(entry["known"], bool) for entry in entries)
    assert data["known"]["seen_again"] == sum(entry["known"] for entry in entries) > 0
    assert data["known"]["new"] == len(entries) - data["known"]["seen_again"] > 0
    for first, second in zip(entries, entries[1:]):  # within a section, new bugs first
        if SECTION_RANK[first["section"]] == SECTION_RANK[second["section"]]:
            assert (first["known"], second["known"]) != (True, False)
    folded = [entry for entry in entries if entry["collapsed"]]
    assert [entry["known_bug"]["id"] for entry in folded] == [filed.id]
    html = render_html(data)
    assert 'id="collapsed-bugs"' in html and "<script>alert(1)" not in html
    assert f"known {filed.id}: filed" in html
    with CampaignStore(campaigns / "p30") as store:
        assert collect(store, database)["known"]["seen_again"] == 0  # p30 was first: nothing known to it


def test_triage_adopts_a_known_bug_instead_of_reducing_it(campaigns: Path) -> None:
    database = campaigns / "bugs.sqlite"
    _import(database, campaigns / "p30")
    with BugDatabase(database) as db, CampaignStore(campaigns / "p20") as store:
        candidates = [bug for bug in store.triage.load_bugs() if bug.merged_into is None and bug.bug_dir
                      and (known := db.find([SIGNATURE_PREFIX + bug.id])) is not None and known.reduced
                      and {"repro.py", "ir.json", "model.keras", "bug.json"} <= set(db.files(known.id))]
        assert candidates, "no p20 bug is known, reduced, from p30"
        bug, known_id = candidates[0], db.find([SIGNATURE_PREFIX + candidates[0].id]).id
        shutil.rmtree(campaigns / "p20" / "bugs" / bug.id)
        store.triage.update_bug(bug.id, bug_dir=None, reduction={}, reduced_layers=None, repro=None)
    with CampaignStore(campaigns / "p20") as store:
        summary = triage_campaign(store, time_budget_s=0.0, bugs_db=database)
        row = store.triage.load_bug(bug.id)
    assert summary.known >= 1
    assert row.reduction["status"].startswith(f"known: {known_id}") and Reduction.of(row.reduction) is Reduction.KNOWN
    folder = campaigns / "p20" / "bugs" / bug.id
    assert (folder / "repro.py").exists() and json.loads((folder / "bug.json").read_text())["known_as"] == known_id
    with BugDatabase(database) as db:  # the pass recorded p20's bugs: the adopted one as a sighting of the known
        assert "p20" in db.get(known_id).campaigns


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_bugs_command(campaigns: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    database = str(campaigns / "bugs.sqlite")
    code, out, _ = _cli(capsys, "bugs", "--bugs-db", database, "import", str(campaigns / "p20"))
    assert code == 0 and "bug(s) recorded" in out
    code, out, _ = _cli(capsys, "bugs", "--bugs-db", database, "list", "--json")
    listed = json.loads(out)
    assert code == 0 and listed and all({"id", "status", "library", "kind", "campaigns"} <= set(b) for b in listed)
    assert all(b["campaigns"] == ["p20"] for b in listed)
    first = listed[0]["id"]
    code, out, _ = _cli(capsys, "bugs", "--bugs-db", database, "mark", first, "wontfix", "documented", "behaviour")
    assert code == 0 and out.strip() == f"{first}: wontfix documented behaviour"
    code, out, _ = _cli(capsys, "bugs", "--bugs-db", database, "list", "--json", "--status", "wontfix")
    assert [b["id"] for b in json.loads(out)] == [first]
    code, out, _ = _cli(capsys, "bugs", "--bugs-db", database, "show", first)
    assert code == 0 and "wontfix documented behaviour" in out and "seen      p20" in out
    code, out, _ = _cli(capsys, "bugs", "--bugs-db", database, "export", "--format", "markdown")
    assert out.splitlines()[0].startswith("| id | library | kind | headline |") and len(out.splitlines()) == 2 + len(listed)
    for argv, message in ((("show", "M-9999"), "no bug M-9999"), (("show", "nonsense"), "not a bug id"),
                          (("import", str(campaigns / "missing")), "no campaign at"),
                          (("mark", first, "filed"), "needs its URL")):
        code, out, err = _cli(capsys, "bugs", "--bugs-db", database, *argv)
        assert code == 2 and message in err and len(err.strip().splitlines()) == 1
    code, _, err = _cli(capsys, "bugs", "--bugs-db", str(campaigns / "absent.sqlite"), "list")
    assert code == 2 and "no bug database at" in err

    # recheck and issue are glue: a stand-in checker says every onnxruntime-family bug is fixed
    def recheck_folder(folder: Path, *, python: str | None = None, timeout_s: float = 120.0) -> object:
        library = json.loads((folder / "bug.json").read_text())["library"]
        result = "fixed" if library.startswith("onnxruntime") else "reproduces"
        return types.SimpleNamespace(result=result, detail=f"checked {folder.name}", seconds=0.1,
                                     versions={"onnxruntime": "9.9.9", "numpy": "2.0"})
    def recheck_all(folders: list[Path], *, python: str | None = None, timeout_s: float = 120.0, jobs: int = 2):
        assert jobs == 2 and python is None
        return [(folder, recheck_folder(folder)) for folder in folders]
    monkeypatch.setitem(sys.modules, "memo.bugdb.recheck", types.SimpleNamespace(recheck_all=recheck_all))
    code, out, _ = _cli(capsys, "bugs", "--bugs-db", database, "recheck", "--json")
    verdicts = json.loads(out)
    assert code == 0 and {v["id"] for v in verdicts} == {b["id"] for b in listed if b["id"] != first}
    assert all(v["result"] in ("reproduces", "fixed", "error") for v in verdicts)
    fixed = [v["id"] for v in verdicts if v["result"] == "fixed"]
    with BugDatabase(Path(database)) as db:
        assert all(db.get(bug_id).status_text() == "fixed onnxruntime 9.9.9" for bug_id in fixed)

    def issue_text(folder: Path) -> str:
        return f"# issue for {json.loads((folder / 'bug.json').read_text())['id']}\n{sorted(p.name for p in folder.iterdir())}"
    monkeypatch.setitem(sys.modules, "memo.filing", types.SimpleNamespace(issue_text=issue_text))
    code, out, _ = _cli(capsys, "bugs", "--bugs-db", database, "issue", first)
    assert code == 0 and out.startswith(f"# issue for {listed[0]['origin']}") and "repro.py" in out


def test_report_command_json_marks_every_bug(campaigns: Path, capsys: pytest.CaptureFixture[str]) -> None:
    database = campaigns / "bugs.sqlite"
    _import(database, campaigns / "p30")
    out = campaigns / "p20.json"
    code, printed, _ = _cli(capsys, "report", str(campaigns / "p20"), "--bugs-db", str(database), "--format", "json",
                            "-o", str(out))
    data = json.loads(out.read_text())
    assert code == 0 and printed.strip() == str(out)
    assert data["bugs"] and all(bug["known"] in (True, False) for bug in data["bugs"])
    assert data["known"]["database"] == str(database) and data["known"]["seen_again"] > 0
    with BugDatabase(database) as db:  # the report's triage pass recorded p20 too
        assert any("p20" in bug.campaigns for bug in db.bugs())
    code, _, err = _cli(capsys, "report", str(campaigns / "absent"))
    assert code == 2 and "no campaign at" in err
