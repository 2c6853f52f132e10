"""The ledger of batch rounds (``ledger.sqlite`` in a run's batch folder): rounds, their parts (request files) and
each line's results, every step committed before the next, so a killed run resumes instead of paying twice.

An answer is kept for good (a later round gets it without a request); an error belongs to its round. This module
talks to no server and reads no request file (:mod:`rpa_lib.llm.batches` does).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path

from rpa_lib.llm.reply import LLMFatalError
from rpa_lib.sqlite_store import connect

_SCHEMA = ("CREATE TABLE IF NOT EXISTS rounds (n INTEGER PRIMARY KEY, key TEXT, mode TEXT, done INTEGER, "
           "created REAL)")
_TABLES = (
    "CREATE TABLE IF NOT EXISTS parts (round INTEGER, n INTEGER, custom_ids TEXT, file_id TEXT, batch_id TEXT, "
    "status TEXT, counts TEXT, created REAL, final TEXT, PRIMARY KEY (round, n))",
    "CREATE TABLE IF NOT EXISTS results (round INTEGER, custom_id TEXT, ok INTEGER, result TEXT, part INTEGER, "
    "PRIMARY KEY (round, custom_id))",
    "CREATE INDEX IF NOT EXISTS answered ON results (custom_id, ok)",
)


def round_key(custom_ids: list[str], mode: str) -> str:
    """A round's mode and set of custom ids, hashed. ``round_key(["b", "a"], "x") == round_key(["a", "b"], "x")``"""
    return hashlib.sha256(json.dumps([mode, sorted(custom_ids)]).encode()).hexdigest()


@dataclass
class Part:
    """One request file of a round (``requests-N.jsonl``) and what became of it."""

    round: int
    n: int
    custom_ids: list[str]
    file_id: str | None = None
    batch_id: str | None = None
    status: str = "written"
    counts: dict = field(default_factory=dict)
    created: float = 0.0
    final: str | None = None  # the batch's last status once its results are stored; None while it is live

    @property
    def live(self) -> bool:
        return self.final is None


class Ledger:
    """``Ledger(folder)``: the rounds, parts and results recorded in ``folder/ledger.sqlite``."""

    def __init__(self, folder: Path):
        self.path = Path(folder) / "ledger.sqlite"
        try:
            self._conn = connect(self.path, _SCHEMA)
            with self._conn:
                for statement in _TABLES:
                    self._conn.execute(statement)
        except sqlite3.OperationalError as exc:  # locked for minutes, or not openable: the file may be sound
            raise LLMFatalError(f"{self.path}: cannot open the batch ledger ({exc})") from None
        except sqlite3.DatabaseError as exc:  # not a database, or one cut short
            raise LLMFatalError(f"{self.path}: cannot read the batch ledger ({exc}). It records the batches started "
                                "from this folder: move it aside only once none of them runs (a new ledger would "
                                "submit their requests again, paid twice)") from None

    def __repr__(self) -> str:
        return f"Ledger({str(self.path)!r})"

    def close(self) -> None:
        self._conn.close()

    def open_round(self, key: str, mode: str) -> int:
        """The number of the unfinished round asked for ``key`` (a restart resumes it), else of a new round."""
        row = self._conn.execute("SELECT n FROM rounds WHERE key = ? AND done = 0 ORDER BY n DESC",
                                 (key,)).fetchone()
        if row is not None:
            return row[0]
        with self._conn:
            return self._conn.execute("INSERT INTO rounds (key, mode, done, created) VALUES (?, ?, 0, ?)",
                                      (key, mode, time.time())).lastrowid

    def finish_round(self, n: int) -> None:
        """Mark round ``n`` as returned: the same request asked again is a new round."""
        with self._conn:
            self._conn.execute("UPDATE rounds SET done = 1 WHERE n = ?", (n,))

    def parts(self, round_n: int) -> list[Part]:
        rows = self._conn.execute("SELECT round, n, custom_ids, file_id, batch_id, status, counts, created, final "
                                  "FROM parts WHERE round = ? ORDER BY n", (round_n,)).fetchall()
        return [Part(r[0], r[1], json.loads(r[2]), r[3], r[4], r[5], json.loads(r[6] or "{}"), r[7], r[8])
                for r in rows]

    def started_elsewhere(self, round_n: int) -> list[Part]:
        """The live parts whose batch was started, of the unfinished rounds other than ``round_n`` (a run stopped
        while they ran, then started with other requests)."""
        rows = self._conn.execute("SELECT n FROM rounds WHERE done = 0 AND n != ? ORDER BY n", (round_n,)).fetchall()
        return [part for (n,) in rows for part in self.parts(n) if part.live and part.batch_id is not None]

    def add_part(self, round_n: int, custom_ids: list[str]) -> Part:
        """A new part of round ``round_n`` holding ``custom_ids``, numbered after the round's last part."""
        with self._conn:
            n = self._conn.execute("SELECT COALESCE(MAX(n), 0) + 1 FROM parts WHERE round = ?",
                                   (round_n,)).fetchone()[0]
            part = Part(round_n, n, list(custom_ids), created=time.time())
            self._conn.execute("INSERT INTO parts VALUES (?, ?, ?, NULL, NULL, ?, '{}', ?, NULL)",
                               (round_n, n, json.dumps(part.custom_ids), part.status, part.created))
        return part

    def update(self, part: Part, **fields: object) -> None:
        """Set ``fields`` (file_id, batch_id, status, counts) on ``part`` and in the ledger; ValueError for another."""
        if unknown := sorted(set(fields) - {"file_id", "batch_id", "status", "counts"}):
            raise ValueError(f"Ledger.update: unknown field(s) {', '.join(unknown)}; known: file_id, batch_id, status, "
                             "counts")
        for name, value in fields.items():
            setattr(part, name, value)
        stored = {k: json.dumps(v) if k == "counts" else v for k, v in fields.items()}
        with self._conn:
            self._conn.execute(f"UPDATE parts SET {', '.join(f'{k} = ?' for k in stored)} WHERE round = ? AND n = ?",
                               (*stored.values(), part.round, part.n))

    def collect(self, part: Part, results: dict[str, dict], final: str) -> None:
        """Store ``part``'s ``results`` by custom id and mark it finished as ``final``, in one transaction."""
        rows = [(part.round, cid, int("error" not in result), json.dumps(result), part.n)
                for cid, result in results.items()]
        with self._conn:
            self._conn.executemany("INSERT OR REPLACE INTO results VALUES (?, ?, ?, ?, ?)", rows)
            self._conn.execute("UPDATE parts SET final = ?, status = ? WHERE round = ? AND n = ?",
                               (final, final, part.round, part.n))
        part.final = part.status = final

    def results(self, round_n: int, custom_ids: list[str]) -> dict[str, dict]:
        """The results of ``custom_ids`` in round ``round_n``, or answered by any earlier round."""
        query = ("SELECT result FROM results WHERE custom_id = ? AND (round = ? OR ok = 1) "
                 "ORDER BY ok DESC, round DESC LIMIT 1")
        rows = ((cid, self._conn.execute(query, (cid, round_n)).fetchone()) for cid in custom_ids)
        return {cid: json.loads(row[0]) for cid, row in rows if row is not None}

    def rounds(self) -> list[dict]:
        """Every round: ``{"round", "mode", "done", "parts": [Part, ...], "results": {custom_id: result}}``."""
        out = []
        for n, mode, done in self._conn.execute("SELECT n, mode, done FROM rounds ORDER BY n").fetchall():
            rows = self._conn.execute("SELECT custom_id, result FROM results WHERE round = ?", (n,)).fetchall()
            out.append({"round": n, "mode": mode, "done": bool(done), "parts": self.parts(n),
                        "results": {cid: json.loads(result) for cid, result in rows}})
        return out
