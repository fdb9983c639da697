"""The campaign's last line says where its report is, or why it was not written and how to write it."""
from __future__ import annotations

from memo.campaign.progress import summary_line

BASE = {"name": "night", "generated": 3, "executed": 2, "elapsed_s": 60.0, "coverage": {}, "findings": {}}


def test_the_summary_names_the_report_or_says_why_it_is_missing() -> None:
    assert summary_line({**BASE, "report": "reports/night.html"}).endswith("; report: reports/night.html")
    line = summary_line({**BASE, "report": None, "report_error": "UndefinedError: 'dict object' has no attribute"})
    assert line.endswith("; report not written (UndefinedError: 'dict object' has no attribute): "
                         "`python -m memo report night` writes it")
