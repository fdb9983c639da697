"""A bug the bug database holds as an older reducer reduced it is adopted, reduced again from its adopted model in
the same pass, and its new reduction replaces the database's (issue 38: p40 adopted m40's
crash-keras-export-65a337de54 at 4 layers, which the current reducer takes to one MaxPooling2D). Real MXNet crash
(its importer's KeyError on the Tensordot tf2onnx writes for a Dense on a 3-D tensor), real executor."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from triage_fixtures import BACKENDS, crashing_model, record_campaign  # noqa: E402

from memo.backends.mxnet_backend import MXNET_PYTHON  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600),
              pytest.mark.skipif(not Path(MXNET_PYTHON).exists(), reason=f"no MXNet environment at {MXNET_PYTHON}")]


def test_an_adopted_bug_an_older_reducer_made_is_reduced_again(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from memo.backends.executor import DifferentialExecutor
    from memo.bug_files import read_bug_file, write_bug_file
    from memo.bugdb import BugDatabase, CampaignRef, Sighting, folder_files
    from memo.model.ir import ModelIR
    from memo.triage import dedup, triage_campaign
    from memo.triage.bug_reduction import REDUCER_VERSION
    from memo.triage.materialize import materialize
    from memo.triage.probe import Roles
    from memo.triage.remember import SIGNATURE_PREFIX

    monkeypatch.chdir(tmp_path)  # relative campaign and artifact paths, as `memo fuzz` writes them
    ir = crashing_model()
    with DifferentialExecutor(backends=BACKENDS, timeout_s=60) as executor:
        store = record_campaign(Path("campaigns/t"), Path("mutants"), executor, [ir])
    dedup.update_bugs(store)
    bug = next(row for row in store.triage.load_bugs() if row.kind == "crash")
    # an older memo's record of it: the campaign's whole model, "reduced" by a reducer that recorded no version
    older = tmp_path / "older" / bug.id
    source = Path(str(store.artifact_dirs([bug.first_mutant])[bug.first_mutant]))
    data = materialize(older, source, ir, {"id": bug.id, "kind": bug.kind, "library": bug.library,
                                           "stage": bug.stage or "", "signature": bug.parts},
                       Roles("mxnet", "keras-tensorflow", ()), {})
    write_bug_file(older, {**data, "reduction": {"status": "done", "original_layers": len(ir.body),
                                                 "reduced_layers": len(ir.body)}})
    database = tmp_path / "bugs.sqlite"
    with BugDatabase(database) as db:
        known_id = db.record(Sighting(
            campaign=CampaignRef.of("older", "/older", 1.0), campaign_bug=bug.id, keys=[SIGNATURE_PREFIX + bug.id],
            kind=bug.kind, library=bug.library, stage=bug.stage or "", headline="older headline", occurrences=1,
            versions={}, first_seen=0.0, last_seen=0.0, reduced=True, files=lambda: folder_files(older)))

    summary = triage_campaign(store, time_budget_s=240, bugs_db=database, next_python="none")

    row = store.triage.load_bug(bug.id)
    assert summary.known == 1 and summary.errors == [], summary.errors
    assert row.reduction["status"] == "done" and row.reduction["reducer"] == REDUCER_VERSION, row.reduction
    reduced = ModelIR.loads((Path(str(row.bug_dir)) / "ir.json").read_text())
    assert [layer.class_name for layer in reduced.body] == ["Dense"] and row.reduced_layers == 1 < len(ir.body)
    assert read_bug_file(Path(str(row.bug_dir)))["known_as"] == known_id
    with BugDatabase(database) as db:  # the new reduction replaced the older one, with its headline
        stored = db.files(known_id)
        assert len(ModelIR.loads(stored["ir.json"].decode()).body) == 1
        assert json.loads(stored["bug.json"])["reduction"]["reducer"] == REDUCER_VERSION
        assert db.get(known_id).headline != "older headline"
