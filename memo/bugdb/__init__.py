"""The bug database: every bug memo found, across campaigns, with its status (new, filed, fixed, won't fix,
duplicate), its reduced model and script, and where it was seen (docs/bugs.md). The only SQL on it is in
:mod:`memo.bugdb.database`; campaigns reach it through :mod:`memo.triage.remember`."""
from __future__ import annotations

from memo.bugdb.database import BugDatabase, parse_id
from memo.bugdb.files import export_bug_files, folder_files
from memo.bugdb.location import default_path, resolve
from memo.bugdb.versions import SCHEMA_VERSION, BugDatabaseVersionError
from memo.bugdb.records import (COLLAPSED_STATUSES, FIXED_UPSTREAM, NEW, OPEN_STATUSES, STATUSES, CampaignRef,
                                KnownBug, Sighting, public_id)

__all__ = ["BugDatabase", "BugDatabaseVersionError", "SCHEMA_VERSION", "COLLAPSED_STATUSES", "FIXED_UPSTREAM", "NEW",
           "CampaignRef", "KnownBug", "OPEN_STATUSES", "STATUSES", "Sighting",
           "default_path", "export_bug_files", "folder_files", "parse_id", "public_id", "resolve"]
