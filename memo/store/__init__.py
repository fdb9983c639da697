"""The campaign database, and the only place in memo that speaks SQL.

:mod:`.schema` (every table, created and migrated on open), :mod:`.records` (the typed rows the store takes
and returns), :mod:`.campaign` (:class:`CampaignStore`: meta, resume state, mutants, executions, verdicts,
findings, coverage history, artifact folders) and :mod:`.triage` (``store.triage``: bugs, occurrences,
localizations, triage errors).
"""
from memo.store.campaign import CampaignStore
from memo.store.records import (BugRow, CoveragePoint, ExecutionRow, FindingRow, LocalizationRow, MutantRecord,
                                PendingMutant, Signed, SignedVerdict, SpecialGroup, StoredVerdict, TriageError)
from memo.store.schema import DB_NAME, SCHEMA_VERSION
from memo.store.triage import TriageTables

__all__ = ["DB_NAME", "SCHEMA_VERSION", "BugRow", "CampaignStore", "CoveragePoint", "ExecutionRow", "FindingRow",
           "LocalizationRow", "MutantRecord", "PendingMutant", "Signed", "SignedVerdict", "SpecialGroup",
           "StoredVerdict", "TriageError", "TriageTables"]
