"""A transactional cache of LLM replies in one SQLite file, safe for concurrent threads and processes; the key is
the sha256 of the canonical request (:func:`request_key`), never of a credential. It does not decide what to cache
(``base`` does), expire entries, or store anything but the request and the reply fields.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from pathlib import Path

from rpa_lib.llm.inflight import LEASE, InFlight
from rpa_lib.paths import cache_dir
from rpa_lib.sqlite_store import connect

_SCHEMA = """CREATE TABLE IF NOT EXISTS replies (
    key TEXT PRIMARY KEY, backend TEXT, model TEXT, kind TEXT, request TEXT, reply TEXT, created REAL)"""


def canonical(obj: object) -> str:
    """Stable JSON text of ``obj``: sorted keys, no spaces. ``canonical({"b": 1, "a": 2}) == '{"a":2,"b":1}'``"""
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def request_key(fields: dict) -> str:
    """sha256 hex of the canonical request. ``request_key({"model": "m"})``"""
    return hashlib.sha256(canonical(fields).encode("utf-8")).hexdigest()


class Cache:
    """``Cache(path).get(key)`` -> reply dict or None; ``.put(key, request, reply)``. ``lease``: seconds an in-flight
    claim lives unless renewed; ``claims=False``: each caller sends its own misses."""

    def __init__(self, path: str | Path, *, lease: float = LEASE, claims: bool = True):
        self.path = Path(path)
        self.inflight = InFlight(self.path, lease=lease) if claims else None
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid: int | None = None

    def __repr__(self) -> str:
        return f"Cache({str(self.path)!r})"

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None or self._pid != os.getpid():  # a forked child opens its own connection
            conn = connect(self.path, _SCHEMA, isolation_level=None, check_same_thread=False)
            self._conn, self._pid = conn, os.getpid()
        return self._conn

    def get(self, key: str) -> dict | None:
        with self._lock:
            row = self._connection().execute("SELECT reply FROM replies WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def put(self, key: str, request: dict, reply: dict) -> None:
        row = (key, request.get("backend"), request.get("model"), request.get("kind"),
               canonical(request), canonical(reply), time.time())
        with self._lock:
            self._connection().execute("INSERT OR REPLACE INTO replies VALUES (?, ?, ?, ?, ?, ?, ?)", row)

    def __len__(self) -> int:
        with self._lock:
            return self._connection().execute("SELECT COUNT(*) FROM replies").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None


def open_cache(cache: bool | str | Path | Cache | None) -> Cache | None:
    """``True`` -> ``$RPA_CACHE_DIR/llm.sqlite``, ``False``/``None`` -> none, a path -> that file, a Cache -> itself."""
    if cache is True:
        return Cache(cache_dir() / "llm.sqlite")
    if cache is False or cache is None:
        return None
    return cache if isinstance(cache, Cache) else Cache(cache)
