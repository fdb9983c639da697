"""The campaign store: one SQLite database per campaign, the single source for the report and for resume.

Every mutant is written in the same transaction as the campaign state that produced it, so a campaign
killed at any instant (even ``kill -9``) resumes exactly after the last committed mutant: at most the
mutant in flight is lost, never a stored finding. WAL mode lets ``memo report`` read while ``fuzz`` runs.
"""
from __future__ import annotations

import json
import shutil
import sqlite3
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Collection, Iterable, Iterator

from memo.diskspace import tree_bytes
from memo.errors import UsageError
from memo.json_types import JsonObject
from memo.kinds import TRAINING_KINDS
from memo.oracle.verdict import Verdict
from memo.store.records import (CoveragePoint, ExecutionRow, FindingRow, MutantRecord, PendingMutant, Signed,
                                SignedVerdict, SpecialGroup, StoredVerdict, TrainingGroup)
from memo.store.schema import DB_NAME, connect, dict_rows, immediate_transaction
from memo.store.library import LibraryTables
from memo.store.triage import TriageTables

_IN_CHUNK = 500  # ids per "IN (...)" query (SQLite limits the parameters of one statement)

# a verdict with its execution's result and its mutant's IR: what triage and the report read of a finding
_FINDING_SELECT = ("SELECT v.id, v.mutant_id, v.kind, v.backend, v.stage, v.message, v.metrics,"
                   " v.created, e.result, m.ir, e.artifact_dir FROM verdicts v"
                   " LEFT JOIN executions e ON e.mutant_id = v.mutant_id LEFT JOIN mutants m ON m.id = v.mutant_id")


def _placeholders(count: int) -> str:
    return ",".join("?" * count)


def _signed_columns(signed: Signed | None) -> tuple[str | None, str | None]:
    """The ``signature`` and ``parts`` columns of a verdict."""
    if signed is None:
        return None, None
    return signed.signature, json.dumps(signed.parts, sort_keys=True)


class CampaignStore:
    """A campaign's database. Use as a context manager or call :meth:`close`.

    Triage's tables are reached through :attr:`triage` (a :class:`memo.store.triage.TriageTables`), library
    coverage's through :attr:`library` (a :class:`memo.store.library.LibraryTables`)."""

    def __init__(self, directory: Path, *, create: bool = False) -> None:
        self.directory = Path(directory)
        self.path = self.directory / DB_NAME
        if not create and not self.path.exists():
            raise UsageError(f"no campaign at {self.directory} (expected {self.path})")
        self.directory.mkdir(parents=True, exist_ok=True)
        self._db = connect(self.path)
        self.triage = TriageTables(self._db)
        self.library = LibraryTables(self._db)  # --library-coverage's lines

    # ------------------------------------------------------------------ plumbing
    def __enter__(self) -> "CampaignStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._db.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """All writes inside commit together or not at all."""
        with immediate_transaction(self._db) as db:
            yield db

    def _rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        return dict_rows(self._db, sql, params)

    def _scalar(self, sql: str, params: tuple[Any, ...] = ()) -> int:
        return int(self._db.execute(sql, params).fetchone()[0])

    # ------------------------------------------------------------------ meta and state
    def set_meta(self, key: str, value: Any) -> None:
        self._db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, json.dumps(value)))

    def get_meta(self, key: str, default: Any = None) -> Any:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else default

    def save_state(self, iteration: int, data: JsonObject) -> None:
        self._db.execute("INSERT OR REPLACE INTO state(id, iteration, data) VALUES (1, ?, ?)",
                         (iteration, json.dumps(data)))

    def forget_mutants_after(self, iteration: int) -> int:
        """Delete the mutants generated after ``iteration`` that never went to execution (those a resume from
        the state saved at ``iteration`` generates again); how many."""
        return self._db.execute("DELETE FROM mutants WHERE iteration > ? AND id NOT IN (SELECT mutant_id FROM"
                                " executions)", (iteration,)).rowcount

    def load_state(self) -> tuple[int, JsonObject] | None:
        row = self._db.execute("SELECT iteration, data FROM state WHERE id = 1").fetchone()
        return (row[0], json.loads(row[1])) if row else None

    # ------------------------------------------------------------------ records
    def add_mutant(self, record: MutantRecord) -> int:
        cursor = self._db.execute(
            "INSERT INTO mutants(iteration, slot, operator, parent, seed, lineage, ir, valid, error, diverse, delta,"
            " gen_seconds, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (record.iteration, record.slot, record.operator, record.parent, record.seed, json.dumps(record.lineage),
             record.ir_json, int(record.valid), record.error, int(record.diverse), json.dumps(record.delta),
             record.gen_seconds, time.time()))
        return int(cursor.lastrowid)

    def add_execution(self, mutant_id: int, result: JsonObject, seconds: float,
                      artifact_dir: str | None) -> None:
        self._db.execute("INSERT OR REPLACE INTO executions(mutant_id, result, seconds, artifact_dir) VALUES (?,?,?,?)",
                         (mutant_id, json.dumps(result), seconds, artifact_dir))

    def add_verdict(self, mutant_id: int, verdict: Verdict, signed: Signed | None = None) -> int:
        """Store a verdict; ``signed``: its finding's signature and parts, computed as it is recorded
        (:func:`memo.triage.dedup.sign`; None for a verdict that is no finding)."""
        cursor = self._db.execute(
            "INSERT INTO verdicts(mutant_id, kind, backend, stage, message, metrics, created, signature, parts)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (mutant_id, verdict.kind, verdict.backend, verdict.stage, verdict.message, verdict.metrics_text(),
             time.time(), *(_signed_columns(signed))))
        return int(cursor.lastrowid)

    def add_coverage_point(self, elapsed: float, iteration: int, generated: int, executed: int,
                           counts: dict[str, tuple[int, int]]) -> None:
        primary = {name: counts.get(name, (0, 0))[0] for name in ("types", "pairs", "params")}
        extra = {name: list(value) for name, value in counts.items()}
        self._db.execute(
            "INSERT INTO coverage_history(elapsed, iteration, generated, executed, types, pairs, params, extra)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (elapsed, iteration, generated, executed, primary["types"], primary["pairs"], primary["params"],
             json.dumps(extra)))

    # ------------------------------------------------------------------ mutants
    def count_mutants(self, *, valid: bool | None = None, diverse: bool | None = None, seeds: bool = False) -> int:
        """Stored mutants, the campaign's seeds only with ``seeds``; ``valid``/``diverse``: only those (not)."""
        conditions, params = ["1"], []
        if not seeds:
            conditions.append("operator != 'seed'")
        for column, wanted in (("valid", valid), ("diverse", diverse)):
            if wanted is not None:
                conditions.append(f"{column} = ?")
                params.append(int(wanted))
        return self._scalar(f"SELECT COUNT(*) FROM mutants WHERE {' AND '.join(conditions)}", tuple(params))

    def unexecuted_mutants(self, execute_all: bool) -> list[PendingMutant]:
        """Stored mutants the campaign runs (diverse ones and seeds; every valid one with ``execute_all``)
        that have no execution yet, in order."""
        condition = "diverse = 1" if not execute_all else "valid = 1"
        return [PendingMutant(*row) for row in self._db.execute(
            f"SELECT id, iteration, operator, ir FROM mutants WHERE ({condition} OR operator = 'seed')"
            " AND ir IS NOT NULL AND id NOT IN (SELECT mutant_id FROM executions) ORDER BY id")]

    # ------------------------------------------------------------------ executions
    def count_executions(self, *, with_artifact: bool = False) -> int:
        """Stored executions; ``with_artifact``: only those whose artifact folder is still kept."""
        where = " WHERE artifact_dir IS NOT NULL" if with_artifact else ""
        return self._scalar("SELECT COUNT(*) FROM executions" + where)

    def executions(self, limit: int | None = None) -> Iterator[ExecutionRow]:
        """Executions by mutant id, streamed (a long campaign's results are hundreds of megabytes)."""
        sql = "SELECT mutant_id, result, artifact_dir FROM executions ORDER BY mutant_id"
        params: tuple[Any, ...] = ()
        if limit is not None:
            sql, params = sql + " LIMIT ?", (int(limit),)
        for mutant_id, result, directory in self._db.execute(sql, params):
            yield ExecutionRow(mutant_id, result, directory)

    def execution_folders(self) -> Iterator[tuple[int, str | None]]:
        """(mutant id, artifact folder or None) of every execution, by mutant id, streamed, without its result."""
        yield from self._db.execute("SELECT mutant_id, artifact_dir FROM executions ORDER BY mutant_id")

    def executed_models(self) -> Iterator[tuple[str, ExecutionRow]]:
        """Every execution with its mutant's IR (JSON), by mutant id, streamed: what a resumed campaign
        learns again (:class:`memo.campaign.known.KnownOutcomes`)."""
        sql = ("SELECT m.ir, e.mutant_id, e.result, e.artifact_dir FROM executions e"
               " JOIN mutants m ON m.id = e.mutant_id WHERE m.ir IS NOT NULL ORDER BY e.mutant_id")
        for ir, mutant_id, result, directory in self._db.execute(sql):
            yield ir, ExecutionRow(mutant_id, result, directory)

    def executed_mutants(self) -> Iterator[tuple[str, str, ExecutionRow]]:
        """(operator, IR JSON, execution) of every executed mutant (seeds excluded), by mutant id, streamed:
        what the report's generation figures count."""
        sql = ("SELECT m.operator, m.ir, e.mutant_id, e.result, e.artifact_dir FROM executions e"
               " JOIN mutants m ON m.id = e.mutant_id WHERE m.iteration >= 0 AND m.ir IS NOT NULL ORDER BY e.mutant_id")
        for operator, ir, mutant_id, result, directory in self._db.execute(sql):
            yield operator, ir, ExecutionRow(mutant_id, result, directory)

    def operator_counts(self) -> dict[str, tuple[int, int]]:
        """Operator -> (mutants generated, diverse ones), seeds excluded."""
        sql = ("SELECT operator, COUNT(*), SUM(diverse) FROM mutants WHERE iteration >= 0"
               " GROUP BY operator ORDER BY operator")
        return {op: (int(n), int(d or 0)) for op, n, d in self._db.execute(sql)}

    def execution(self, mutant_id: int) -> ExecutionRow | None:
        """One mutant's stored execution (None: not executed yet)."""
        row = self._db.execute("SELECT mutant_id, result, artifact_dir FROM executions WHERE mutant_id = ?",
                               (mutant_id,)).fetchone()
        return ExecutionRow(*row) if row else None

    # ------------------------------------------------------------------ verdicts and findings
    def verdicts(self, kinds: tuple[str, ...] | None = None, *, mutant_id: int | None = None) -> list[StoredVerdict]:
        """Stored verdicts (of ``kinds``; of one mutant), in the order they were stored."""
        conditions, params = [], []
        if kinds:
            conditions.append(f"kind IN ({_placeholders(len(kinds))})")
            params.extend(kinds)
        if mutant_id is not None:
            conditions.append("mutant_id = ?")
            params.append(mutant_id)
        where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
        return [StoredVerdict.from_row(*row) for row in self._db.execute(
            f"SELECT id, mutant_id, kind, backend, stage, message, metrics, created FROM verdicts{where} ORDER BY id",
            tuple(params))]

    def signed_verdicts(self, kinds: Iterable[str], *, mutant_id: int | None = None) -> list[SignedVerdict]:
        """Every verdict of ``kinds`` (of one mutant) with the signature and parts stored with it (None where not
        signed yet), by id: what deduplication and a campaign's start read instead of computing them again."""
        ordered = sorted(kinds)
        where, params = f"kind IN ({_placeholders(len(ordered))})", tuple(ordered)
        if mutant_id is not None:
            where, params = where + " AND mutant_id = ?", (*params, mutant_id)
        return [SignedVerdict.from_row(*row) for row in self._db.execute(
            "SELECT id, mutant_id, kind, backend, stage, created, signature, parts FROM verdicts"
            f" WHERE {where} ORDER BY id", params)]

    def verdict_message(self, verdict_id: int) -> str:
        """One stored verdict's message ("" if there is no such verdict)."""
        row = self._db.execute("SELECT message FROM verdicts WHERE id = ?", (verdict_id,)).fetchone()
        return str(row[0]) if row else ""

    def unsigned_findings(self, kinds: Iterable[str]) -> list[FindingRow]:
        """The findings of ``kinds`` stored without a signature (a store from before signatures were stored)."""
        ordered = sorted(kinds)
        return [FindingRow.from_row(*row) for row in self._db.execute(
            _FINDING_SELECT + f" WHERE v.kind IN ({_placeholders(len(ordered))}) AND v.signature IS NULL ORDER BY v.id",
            tuple(ordered))]

    def sign_verdicts(self, signed: dict[int, Signed]) -> None:
        """Store the signature and parts of each verdict id (what :meth:`add_verdict` stores with a new one)."""
        self._db.executemany("UPDATE verdicts SET signature = ?, parts = ? WHERE id = ?",
                             [(*_signed_columns(value), verdict_id) for verdict_id, value in signed.items()])

    def mutant_irs(self, mutant_ids: Iterable[int]) -> dict[int, str | None]:
        """The stored IR (JSON) of each mutant (None: none stored)."""
        return self._by_id("SELECT id, ir FROM mutants WHERE id", mutant_ids)

    def _by_id(self, select: str, ids: Iterable[int]) -> dict[int, str | None]:
        """``{id: value}`` for ``select`` (two columns, ending in the id column) ``IN`` the ids, in chunks; None for an
        id no row has."""
        wanted = list(dict.fromkeys(int(i) for i in ids))
        found: dict[int, str | None] = dict.fromkeys(wanted)
        for start in range(0, len(wanted), _IN_CHUNK):
            chunk = wanted[start:start + _IN_CHUNK]
            found.update(self._db.execute(f"{select} IN ({_placeholders(len(chunk))})", chunk).fetchall())
        return found

    def verdict_counts(self) -> dict[str, int]:
        """``{kind: verdicts}``."""
        return dict(self._db.execute("SELECT kind, COUNT(*) FROM verdicts GROUP BY kind").fetchall())

    def finding_counts(self, kinds: Collection[str]) -> dict[str, int]:
        """``{backend: verdicts of these kinds}``."""
        marks = ",".join("?" * len(kinds))
        return dict(self._db.execute(f"SELECT backend, COUNT(*) FROM verdicts WHERE kind IN ({marks}) GROUP BY backend",
                                     tuple(kinds)).fetchall())

    def special_groups(self) -> list[SpecialGroup]:
        """Findings on models whose NaN/Inf was injected on purpose, per library, most frequent first."""
        return [SpecialGroup(library=library, count=count, example=example) for library, count, example in
                self._db.execute("SELECT backend, COUNT(*) AS count, MIN(message) FROM verdicts"
                                 " WHERE kind = 'special' GROUP BY backend ORDER BY count DESC")]

    def training_groups(self) -> list[TrainingGroup]:
        """Findings of the training check (``memo fuzz --train-share``), per kind, library and stage, most frequent
        first."""
        return [TrainingGroup(kind=kind, library=library, stage=stage, count=count, example=example)
                for kind, library, stage, count, example in self._db.execute(
                    "SELECT kind, backend, stage, COUNT(*) AS count, MIN(message) FROM verdicts WHERE kind IN"
                    f" ({_placeholders(len(TRAINING_KINDS))}) GROUP BY kind, backend, stage ORDER BY count DESC",
                    tuple(sorted(TRAINING_KINDS)))]

    def finding(self, verdict_id: int) -> FindingRow | None:
        """One verdict with its execution result, mutant IR and artifact folder."""
        row = self._db.execute(_FINDING_SELECT + " WHERE v.id = ?", (verdict_id,)).fetchone()
        return FindingRow.from_row(*row) if row else None

    def findings(self, kinds: Iterable[str]) -> list[FindingRow]:
        """Every verdict of ``kinds`` with its execution result, mutant IR and artifact folder, by id."""
        ordered = sorted(kinds)
        return [FindingRow.from_row(*row) for row in self._db.execute(
            _FINDING_SELECT + f" WHERE v.kind IN ({_placeholders(len(ordered))}) ORDER BY v.id", tuple(ordered))]

    # ------------------------------------------------------------------ coverage
    def coverage_history(self) -> list[CoveragePoint]:
        sql = ("SELECT id, elapsed, iteration, generated, executed, types, pairs, params, extra FROM coverage_history"
               " ORDER BY id")
        return [CoveragePoint(id=row_id, elapsed=elapsed, iteration=iteration, generated=generated, executed=executed,
                              types=types, pairs=pairs, params=params, extra=extra)
                for row_id, elapsed, iteration, generated, executed, types, pairs, params, extra
                in self._db.execute(sql)]

    # ------------------------------------------------------------------ artifacts on disk
    def artifact_dirs(self, mutant_ids: Iterable[int]) -> dict[int, str | None]:
        """The stored artifact folder of each mutant (None: deleted, never kept, or not executed)."""
        return self._by_id("SELECT mutant_id, artifact_dir FROM executions WHERE mutant_id", mutant_ids)

    def stored_artifact_dirs(self, limit: int) -> list[str]:
        """Up to ``limit`` distinct artifact folders still recorded as kept (where the artifacts lie)."""
        return [row[0] for row in self._db.execute(
            "SELECT DISTINCT artifact_dir FROM executions WHERE artifact_dir IS NOT NULL LIMIT ?", (int(limit),))]

    def artifact_roots(self) -> list[Path]:
        """The campaign's artifact folders (``mutants/NAME``): the one it recorded (older campaigns: guessed like
        triage does) and those its stored artifacts lie in. A folder is only ever a root if it is named after
        the campaign and does not contain the campaign."""
        name = (self.get_meta("config", {}) or {}).get("name") or self.get_meta("campaign_name") or self.directory.name
        recorded = self.get_meta("artifacts_root")
        bases = (Path.cwd(), self.directory.resolve().parent.parent)
        candidates = [recorded] if recorded else [str(base / "mutants" / name) for base in bases]
        candidates += [str(Path(directory).parent) for directory in self.stored_artifact_dirs(limit=50)]
        campaign = self.directory.resolve()
        roots: list[Path] = []
        for candidate in candidates:
            if not candidate:
                continue
            root = Path(candidate).resolve()
            if root.name == name and root.is_dir() and not campaign.is_relative_to(root) and root not in roots:
                roots.append(root)
        return roots

    def mutants_without_artifact(self) -> set[int]:
        """Executed mutants whose artifact folder is recorded as gone (or was never kept)."""
        return {row[0] for row in self._db.execute("SELECT mutant_id FROM executions WHERE artifact_dir IS NULL")}

    def release_artifact(self, mutant_id: int) -> int:
        """Delete a mutant's artifact folder and record it as gone; returns the bytes freed (0 if none).

        The folder goes first: on a full disk the database update may need the space it frees. A folder
        deleted without the update is harmless, since readers check that the folder still exists and
        :func:`memo.artifact.ensure_artifact` rebuilds it from the stored IR.
        """
        directory = self.artifact_dirs([mutant_id])[int(mutant_id)]
        if directory is None:
            return 0
        freed = tree_bytes(Path(directory))
        shutil.rmtree(directory, ignore_errors=True)
        self._db.execute("UPDATE executions SET artifact_dir = NULL WHERE mutant_id = ?", (int(mutant_id),))
        return freed

    def clear_artifact_dirs(self) -> int:
        """Record every artifact folder as gone (after ``memo clean`` deleted them); returns how many."""
        return self._db.execute("UPDATE executions SET artifact_dir = NULL WHERE artifact_dir IS NOT NULL").rowcount
