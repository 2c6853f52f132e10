"""Several servers of one model (``RPA_LLM_BASE_URL=http://a:8000/v1,http://b:8000/v1``): which replica gets each
request, and which are set aside (docs/engines_and_servers.md).

A character's calls go to the replica it hashes to (rendezvous hashing), so that server's prefix cache keeps its
persona; other calls go round robin; a replica refusing connections is set aside for :data:`COOL_DOWN` seconds. This
module does not balance by load or health checks, and does not move a request that failed after it was sent.
"""

from __future__ import annotations

import hashlib
import itertools
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from rpa_lib.llm.plan import acting_for

log = logging.getLogger("rpa_lib.llm")

COOL_DOWN = 30.0  # seconds a replica that refused a connection is left out


def split_urls(text: str) -> list[str]:
    """``split_urls("http://a/v1, http://b/v1") == ["http://a/v1", "http://b/v1"]``"""
    return [u.strip() for u in text.split(",") if u.strip()]


class Replicas:
    """``Replicas(["http://a/v1", "http://b/v1"]).order("Frieren")`` -> indexes of ``urls`` to try, best first."""

    def __init__(self, urls: list[str], *, cool_down: float = COOL_DOWN, clock: Callable[[], float] = time.monotonic):
        if not urls:
            raise ValueError("no replica URL")
        self.urls, self.cool_down, self._clock = list(urls), cool_down, clock
        self._aside: dict[int, float] = {}  # replica index -> when it is tried again
        self._turn = itertools.count()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Replicas({self.urls!r})"

    def order(self, character: str | None) -> list[int]:
        """By hash with ``character``, round robin for None; replicas set aside come last, in the same order."""
        now = self._clock()
        with self._lock:
            aside = {i for i, until in self._aside.items() if until > now}
        ranked = range(len(self.urls))
        if character is not None:
            ranked = sorted(ranked, key=lambda i: hashlib.sha256(f"{character}\n{self.urls[i]}".encode()).digest(),
                            reverse=True)
        live, out = [i for i in ranked if i not in aside], [i for i in ranked if i in aside]
        if character is None and live:  # the turn goes round the replicas in use
            first = next(self._turn) % len(live)
            live = live[first:] + live[:first]
        return live + out

    def set_aside(self, index: int, reason: object) -> None:
        """Leave replica ``index`` out for the cool-down; logs when it was in use until now."""
        now = self._clock()
        with self._lock:
            was_in = self._aside.get(index, 0.0) <= now
            self._aside[index] = now + self.cool_down
        if was_in:
            log.warning("replica %s refuses connections (%s): set aside for %g s", self.urls[index], reason,
                        self.cool_down)


def routing_transport(replicas: Replicas, inner: Any) -> Any:
    """An ``httpx2`` transport sending each request (addressed to ``replicas.urls[0]``, the client's base URL) through
    ``inner`` to the first replica of ``replicas.order(acting_for)`` that accepts the connection."""
    import httpx2  # here, so that importing this module imports no httpx2

    base = httpx2.URL(replicas.urls[0])

    class ReplicaTransport(httpx2.BaseTransport):
        def handle_request(self, request: httpx2.Request) -> httpx2.Response:
            below = request.url.raw_path[len(base.raw_path.rstrip(b"/")):].decode("ascii")
            refused: Exception | None = None
            for index in replicas.order(acting_for.get()):
                request.url = httpx2.URL(replicas.urls[index].rstrip("/") + below)
                request.headers["Host"] = request.url.netloc.decode("ascii")
                try:
                    return inner.handle_request(request)
                except httpx2.ConnectError as exc:
                    replicas.set_aside(index, exc)
                    refused = exc
            assert refused is not None
            raise refused

        def close(self) -> None:
            inner.close()

    return ReplicaTransport()
