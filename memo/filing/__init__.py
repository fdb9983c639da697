"""Filing a bug upstream: a minimal script in the blamed library's own idiom, checked to reproduce in a fresh
process, and the issue text in the form its tracker asks for (docs/report.md, "Filing a bug")."""
from __future__ import annotations

from memo.filing.check import MinimalScript, cached_minimal, check_campaign, minimal_script
from memo.filing.issue import issue_text, kept_issue_text

__all__ = ["MinimalScript", "cached_minimal", "check_campaign", "issue_text", "kept_issue_text", "minimal_script"]
