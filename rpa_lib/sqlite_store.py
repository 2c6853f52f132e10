"""``connect(path, schema)``: a SQLite connection for a cache file shared by threads and processes (WAL journal,
60 s busy timeout, schema created if missing). It stores nothing itself."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

_OPEN_LOCK = threading.Lock()
OPEN_ATTEMPTS = 50  # x 0.1 s


def connect(path: Path, schema: str, **options) -> sqlite3.Connection:
    """A connection to ``path`` (its folder created) in WAL mode with ``schema`` applied; ``options`` go to
    ``sqlite3.connect``. Opening is serialized in a process and retried across processes ("database is locked")."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with _OPEN_LOCK:
        for attempt in range(OPEN_ATTEMPTS):
            conn = sqlite3.connect(path, timeout=60, **options)
            try:
                conn.execute("PRAGMA busy_timeout = 60000")
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = NORMAL")  # in WAL mode: durable across a killed process
                conn.execute(schema)
                return conn
            except sqlite3.OperationalError as e:
                conn.close()
                if "locked" not in str(e) or attempt == OPEN_ATTEMPTS - 1:
                    raise sqlite3.OperationalError(f"{path}: {e}") from None
                time.sleep(0.1)
