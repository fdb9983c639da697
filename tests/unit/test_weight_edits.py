"""Recorded weight edits are applied by :mod:`memo.model.weight_edits`, which every artifact writer has without
importing the mutation operators that record them."""
from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

from memo.model.weight_edits import WEIGHT_EDITS
from memo.mutation import mutate
from tests.unit.test_mutation_lemon import conv_net

REPO = Path(__file__).resolve().parents[2]


def test_every_edit_kind_lemon_records_has_an_applier() -> None:
    kinds = {edit["kind"] for operator in ("LEMON-WS", "LEMON-NEB")
             for edit in mutate(conv_net(), operator, random.Random(1), None).ir.weight_edits}
    assert kinds == {"shuffle", "block"} and kinds <= set(WEIGHT_EDITS)


def test_writing_an_artifact_imports_no_mutation_operator() -> None:
    code = ("import sys, memo.artifact\n"
            "from memo.model.weight_edits import WEIGHT_EDITS\n"
            "print(sorted(m for m in sys.modules if m.startswith('memo.mutation')), sorted(WEIGHT_EDITS))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["[]", "['block',", "'shuffle']"]
