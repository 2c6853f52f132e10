"""Retry a backend round trip on transient faults, with exponential backoff, jitter and ``Retry-After``.

A backend signals "worth trying again" by raising :class:`Transient`; anything else (an ``LLMFatalError`` among
them) is not retried. After ``attempts`` tries the last fault becomes an :class:`LLMError` naming the call. A
backend whose client retries transport faults itself (the ``openai`` package: HTTP 408/409/429/5xx with
``Retry-After``, timeouts, dropped connections, waiting :meth:`RetryPolicy.delay` between tries) raises
:class:`Exhausted` when its client gave up: the same ``LLMError``, never retried again here; what is left to this
module there is what the client cannot see, a 200 whose body is malformed or has no choices. With a per-request timeout ``t``, a call that
meets only timeouts gives up after at most :meth:`RetryPolicy.worst_case` ``(t)`` seconds: ``attempts * t`` plus
the longest backoff (defaults: 6 * 60 + 1 + 2 + 4 + 8 + 16 = 391 s). This module does not know about HTTP or any vendor, and does not re-ask a
model whose answer was well-formed but wrong (that is the re-ask rule in ``base``).
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from rpa_lib.llm.reply import LLMError

log = logging.getLogger("rpa_lib.llm")
T = TypeVar("T")


class Transient(Exception):
    """A fault worth retrying. ``Transient("HTTP 429", retry_after=2.0)``"""

    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


class Exhausted(Exception):
    """A transient fault a backend's own client already retried ``attempts`` times in all: not retried again.
    ``Exhausted("HTTP 500: internal error", attempts=4)``"""

    def __init__(self, message: str, attempts: int):
        super().__init__(message)
        self.attempts = attempts


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to wait. Delay before retry n (1-based): ``base_delay * 2**(n-1)``, capped at
    ``max_delay``, times a random factor in ``[1 - jitter, 1]``; never less than the server's ``Retry-After``
    (itself capped at ``max_retry_after``)."""

    attempts: int = 6  # tries in all, the first included
    base_delay: float = 1.0
    max_delay: float = 30.0
    jitter: float = 0.5
    max_retry_after: float = 120.0

    def delay(self, retry: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``retry`` (1-based). ``RetryPolicy().delay(1)`` is in [0.5, 1]."""
        backoff = min(self.max_delay, self.base_delay * 2 ** (retry - 1)) * (1 - self.jitter * random.random())
        if retry_after is not None:
            backoff = max(backoff, min(retry_after, self.max_retry_after))
        return backoff

    def worst_case(self, timeout: float) -> float:
        """Longest a call can take when every attempt runs into ``timeout`` (no ``Retry-After`` involved):
        ``attempts * timeout`` plus every backoff at its maximum. ``RetryPolicy().worst_case(60) == 391.0``"""
        backoff = sum(min(self.max_delay, self.base_delay * 2 ** (n - 1)) for n in range(1, self.attempts))
        return self.attempts * timeout + backoff


def call_with_retries(
    fn: Callable[[], T],
    policy: RetryPolicy,
    what: str,
    *,
    on_retry: Callable[[], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """``fn()``, retried on :class:`Transient` per ``policy``; then ``LLMError("<what> failed after N attempts: ...")``
    (at once for :class:`Exhausted`, with the attempts its client made)."""
    for attempt in range(1, policy.attempts + 1):
        try:
            return fn()
        except Exhausted as exc:
            error = LLMError(f"{what} failed after {exc.attempts} attempts: {exc}")
            raise error from None  # the client's exception may hold the request (its headers): never chained
        except Transient as exc:
            if attempt >= policy.attempts:
                raise LLMError(f"{what} failed after {attempt} attempts: {exc}") from exc
            wait = policy.delay(attempt, exc.retry_after)
            log.info("%s: %s; retry %d of %d in %.2f s", what, exc, attempt, policy.attempts - 1, wait)
            if on_retry is not None:
                on_retry()
            sleep(wait)
    raise AssertionError("unreachable")
