"""When to retry a backend round trip: :class:`Transient` faults (``LLM.round_trip`` retries them) and
:class:`RetryPolicy`, its exponential backoff with jitter.

Transport faults are the ``openai`` client's to retry (waiting :meth:`RetryPolicy.delay`); a backend raises
:class:`Exhausted` once its client gave up. This module does not know HTTP and does not re-ask a model whose answer
was well-formed but wrong (``base`` does).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from rpa_lib.llm.reply import Raw


class Transient(Exception):
    """A fault worth retrying, such as a 200 whose body is malformed; ``paid``: such a reply, which the server billed,
    with the tokens it reports (0: unknown). ``Transient("response has no choices")``"""

    def __init__(self, message: str, paid: Raw | None = None):
        super().__init__(message)
        self.paid = paid


class Exhausted(Exception):
    """A fault the backend's own client already tried ``attempts`` times: not retried again.
    ``Exhausted("HTTP 500: internal error", attempts=4)``"""

    def __init__(self, message: str, attempts: int):
        super().__init__(message)
        self.attempts = attempts


@dataclass(frozen=True)
class RetryPolicy:
    """Delay before retry n: ``base_delay * 2**(n-1)`` capped at ``max_delay``, times a random factor in
    ``[1 - jitter, 1]``, never less than the server's ``Retry-After`` (capped at ``max_retry_after``)."""

    attempts: int = 6  # tries in all, the first included
    base_delay: float = 1.0
    max_delay: float = 30.0
    jitter: float = 0.5
    max_retry_after: float = 120.0

    def delay(self, retry: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry ``retry`` (1-based). ``RetryPolicy().delay(1)`` is in [0.5, 1]."""
        backoff = min(self.max_delay, self.base_delay * 2 ** (retry - 1)) * (1 - self.jitter * random.random())
        if retry_after is not None:
            backoff = max(backoff, min(retry_after, self.max_retry_after))
        return backoff

    def worst_case(self, timeout: float) -> float:
        """Longest a call takes when every attempt times out: ``attempts * timeout`` plus every backoff at its
        maximum. ``RetryPolicy().worst_case(60) == 391.0``"""
        backoff = sum(min(self.max_delay, self.base_delay * 2 ** (n - 1)) for n in range(1, self.attempts))
        return self.attempts * timeout + backoff
