"""In-flight claims: threads and processes sharing a reply cache send each request once, not once each.

Before a cache miss is sent, its key is claimed in the ``claims`` table of the cache's SQLite file; other callers
missing the same key wait for the stored outcome instead of sending (docs/design/batch_and_budget.md). Expiry times
are wall-clock seconds, so a cache file shared by machines whose clocks differ is not supported. This module does not
decide what a reply is or store one (``base`` and ``cache`` do); it only orders who sends.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from rpa_lib.sqlite_store import connect

log = logging.getLogger("rpa_lib.llm")

LEASE = 30.0  # seconds a claim lives unless renewed; renewed every LEASE / 3 while the call runs
WAIT_LIMIT = 900.0  # seconds a waiter waits for a live claim before it sends anyway
POLL = (0.02, 0.5)  # the first and the longest pause between two looks at the cache

_SCHEMA = "CREATE TABLE IF NOT EXISTS claims (key TEXT PRIMARY KEY, owner TEXT, expires REAL)"
_CLAIM = ("INSERT INTO claims VALUES (?, ?, ?) ON CONFLICT(key) DO UPDATE SET owner = excluded.owner, "
          "expires = excluded.expires WHERE claims.expires < ?")  # a new claim, or one whose lease ran out

T = TypeVar("T")


def process_gone(owner: str) -> bool:
    """Whether ``owner`` (``host:pid``, a ``:nonce`` after it or not) is a process of this machine that no longer
    exists (False when in doubt: another host, another user's process, this process). ``process_gone("elsewhere:1")
    is False``"""
    host, _, rest = owner.partition(":")
    pid = rest.partition(":")[0]
    if host != socket.gethostname() or not pid.isdigit() or int(pid) == os.getpid():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:  # it exists, under another user
        return False
    return False


class InFlight:
    """The claims of one cache file, for one process. ``with InFlight(path).claim(key, lookup) as found:`` yields
    what ``lookup()`` found while another caller held the key (do not send), or None with the key claimed (send,
    store the outcome; the claim is released on leaving the block)."""

    def __init__(self, path: str | Path, *, lease: float = LEASE):
        if not lease > 0:
            raise ValueError(f"lease must be positive seconds, got {lease!r}")
        self.path, self.lease = Path(path), lease
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid: int | None = None
        self._owner = ""
        self._held: set[str] = set()  # keys this process has claimed and not released
        self._renewer: threading.Thread | None = None

    def __repr__(self) -> str:
        return f"InFlight({str(self.path)!r}, lease={self.lease:g})"

    @contextlib.contextmanager
    def claim(self, key: str, lookup: Callable[[], T | None]) -> Iterator[T | None]:
        found, claimed = self._wait(key, lookup)
        try:
            yield found
        finally:
            if claimed:
                self._release(key)

    def _wait(self, key: str, lookup: Callable[[], T | None]) -> tuple[T | None, bool]:
        """(what ``lookup`` found, False) or (None, True: claimed), polling while another caller holds ``key``."""
        deadline, pause = time.monotonic() + WAIT_LIMIT, POLL[0]
        while True:
            if self._try(key):
                found = lookup()  # stored between our last look and the claim: the owner stores, then releases
                if found is not None:
                    self._release(key)
                return found, found is None
            found = lookup()
            if found is not None:
                return found, False
            if time.monotonic() > deadline:
                log.warning("a request claimed by another caller for over %.0f s: sent again (%s)",
                            WAIT_LIMIT, self.path)
                return None, False
            time.sleep(pause)
            pause = min(POLL[1], pause * 1.5)

    def _connection(self) -> sqlite3.Connection:
        """Call under ``_lock``. A forked child opens its own connection and claims as an owner of its own."""
        if self._conn is None or self._pid != os.getpid():
            self._conn = connect(self.path, _SCHEMA, isolation_level=None, check_same_thread=False)
            self._pid, self._held, self._renewer = os.getpid(), set(), None
            self._owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        return self._conn

    def _try(self, key: str) -> bool:
        """Claim ``key`` unless a live claim holds it; True when this caller now holds it."""
        now = time.time()
        with self._lock:
            conn = self._connection()
            row = conn.execute("SELECT expires, owner FROM claims WHERE key = ?", (key,)).fetchone()
            dead = row is not None and process_gone(row[1])
            if row is not None and row[0] >= now and not dead:  # held: no write, so waiters do not queue for it
                return False
            expired = math.inf if dead else now  # a dead owner's claim is taken whatever its lease says
            if conn.execute(_CLAIM, (key, self._owner, now + self.lease, expired)).rowcount != 1:
                return False
            self._held.add(key)
            if self._renewer is None:
                self._renewer = threading.Thread(target=self._renew, name="rpa-claims", daemon=True)
                self._renewer.start()
            return True

    def _release(self, key: str) -> None:
        with self._lock:
            self._held.discard(key)
            self._connection().execute("DELETE FROM claims WHERE key = ? AND owner = ?", (key, self._owner))

    def _renew(self) -> None:
        """Extend this process's claims every third of a lease while it holds any; then the thread ends."""
        me = threading.current_thread()
        while True:
            time.sleep(self.lease / 3)
            with self._lock:
                if self._renewer is not me:  # forked or replaced
                    return
                if not self._held:
                    self._renewer = None
                    return
                self._connection().execute("UPDATE claims SET expires = ? WHERE owner = ?",
                                           (time.time() + self.lease, self._owner))
