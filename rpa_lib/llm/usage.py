"""Running totals of what an LLM spent: calls, cache hits, tokens, time, and an estimated cost in USD.

Cost comes from a small dated price table (standard tier, no batch or cached-input discount: an upper bound); models
not in it cost ``None``, cache hits nothing. This module counts no tokens itself (backends report them) and holds no
credentials: ``to_dict`` is safe to save next to results.
"""

from __future__ import annotations

import json
import math
import re
import threading
import time
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

from rpa_lib.display import FREE

# the calls of the one item a thread is answering (a judge's verdict: rpa_lib.evaluation.runner.run_verdicts), each
# True when it came from the cache; None when no item is being traced
item_calls: ContextVar[list[bool] | None] = ContextVar("rpa_item_calls", default=None)

PRICES_AS_OF = "2025-04-14"  # openai.com/api/pricing on the day gpt-4.1 was released
FREE_BACKENDS = ("local", "llamacpp", "fake")  # run in this process: no dollars


@dataclass(frozen=True)
class Price:
    """USD per million tokens. ``Price(2.00, 8.00).cost(1000, 100) == 0.0028``"""

    input: float
    output: float

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.input + completion_tokens * self.output) / 1e6


PRICES = {
    "gpt-4.1": Price(2.00, 8.00),
    "gpt-4.1-mini": Price(0.40, 1.60),
    "gpt-4.1-nano": Price(0.10, 0.40),
    "gpt-4o": Price(2.50, 10.00),
    "gpt-4o-mini": Price(0.15, 0.60),
}


def price_for(model: str) -> Price | None:
    """The price of ``model`` or of its dated snapshot. ``price_for("gpt-4.1-2025-04-14") == PRICES["gpt-4.1"]``"""
    return PRICES.get(model) or PRICES.get(re.sub(r"-\d{4}-\d{2}-\d{2}$", "", model))


class Usage:
    """Thread-safe totals since creation or ``reset()``. ``calls`` counts every call, cache hits included;
    ``requests`` counts backend round trips that got a reply (re-asks included, and a reply rejected as malformed,
    which is paid for and retried; transport faults not)."""

    def __init__(self, label: str = "", model_id: str = "", price: Price | None = None, free: bool = False):
        self.label, self.model_id, self.price, self.free = label, model_id, price, free
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        with self._lock:
            self.calls = self.cache_hits = self.errors = 0
            self.requests = self.retries = self.reasks = 0
            self.prompt_tokens = self.completion_tokens = 0
            self.call_seconds = 0.0
            self.modes: dict[str, str] = {}  # "choose" / "structured" -> the mode the server was asked in
            self.replies: dict[str, list[int]] = {}  # "choose" / "structured" -> [replies, invalid, coerced]
            self._first, self._last = math.inf, -math.inf  # the first call's start, the last one's end

    def record_call(self, start: float, end: float, *, cached: bool = False, error: bool = False) -> None:
        """One public call that ran from ``start`` to ``end`` (``time.monotonic`` values), also in the trace of the
        item being answered when there is one (:data:`item_calls`)."""
        trace = item_calls.get()
        if trace is not None:
            trace.append(cached)
        with self._lock:
            self.calls += 1
            self.cache_hits += cached
            self.errors += error
            self.call_seconds += end - start
            self._first, self._last = min(self._first, start), max(self._last, end)

    def record_request(self, prompt_tokens: int, completion_tokens: int) -> None:
        with self._lock:
            self.requests += 1
            self.prompt_tokens += prompt_tokens
            self.completion_tokens += completion_tokens

    def record_retry(self, n: int = 1) -> None:
        """``n`` retried faults (a client's retries of one request are recorded together)."""
        with self._lock:
            self.retries += n

    def record_mode(self, kind: str, mode: str) -> None:
        with self._lock:
            self.modes[kind] = mode

    def record_reply(self, kind: str, valid: bool, *, coerced: bool = False) -> None:
        """One reply to a choice or structured request and whether it had the asked shape (before any re-ask);
        ``coerced``: the backend put the top-scoring option in place of no match (logprobs), counted apart."""
        with self._lock:
            counts = self.replies.setdefault(kind, [0, 0, 0])
            counts[0] += 1
            counts[1] += not valid
            counts[2] += coerced

    @property
    def coerced(self) -> int:
        with self._lock:
            return sum(c[2] for c in self.replies.values())

    def record_reask(self) -> None:
        with self._lock:
            self.reasks += 1

    @property
    def wall_seconds(self) -> float:
        """From the start of the first call to the end of the last (concurrent calls overlap)."""
        return max(0.0, self._last - self._first)  # 0 before any call

    @property
    def cost_usd(self) -> float | None:
        return None if self.price is None else self.price.cost(self.prompt_tokens, self.completion_tokens)

    def to_dict(self) -> dict:
        with self._lock:
            out = {
                "label": self.label, "model": self.model_id,
                "calls": self.calls, "cache_hits": self.cache_hits, "errors": self.errors,
                "requests": self.requests, "retries": self.retries, "reasks": self.reasks,
                "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "wall_seconds": round(self.wall_seconds, 3), "call_seconds": round(self.call_seconds, 3),
            }
            replies = {kind: list(counts) for kind, counts in self.replies.items()}
        out["cost_usd"] = None if self.cost_usd is None else round(self.cost_usd, 6)
        out["prices_as_of"] = PRICES_AS_OF if self.price is not None else None
        if self.modes:  # an OpenAI-compatible server: how choices and JSON objects were asked for
            out["modes"] = dict(self.modes)
        if replies:  # per kind: replies from the model, how many were invalid, the valid share, how many coerced
            out["replies"] = {kind: {"replies": n, "invalid": bad, "valid_share": round(1 - bad / n, 4),
                                     "coerced": coerced}
                              for kind, (n, bad, coerced) in sorted(replies.items())}
        out["coerced"] = sum(c[2] for c in replies.values())
        return out

    def summary(self) -> str:
        """One line, e.g. ``gpt-4.1 (openai): 120 calls (80 cached, 0 failed), 12,345 + 2,345 tokens, ...``"""
        d = self.to_dict()
        cost = (f"~${d['cost_usd']:.4f} (prices of {PRICES_AS_OF})" if d["cost_usd"] is not None
                else FREE if self.free else "cost unknown")
        return (f"{d['label'] or d['model']}: {d['calls']} calls ({d['cache_hits']} cached, {d['errors']} failed), "
                f"{d['prompt_tokens']:,} prompt + {d['completion_tokens']:,} completion tokens, "
                f"{d['retries']} retries, {d['reasks']} re-asks, "
                + (f"{d['coerced']} choices coerced from logprobs, " if d["coerced"] else "")
                + f"{d['wall_seconds']:.1f} s, {cost}")

    def __repr__(self) -> str:
        return f"Usage({self.summary()})"


def save_usage(llm, path: str | Path) -> Path:
    """Write ``llm.usage.to_dict()`` (plus the time it was written) as JSON to ``path``; return the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {**llm.usage.to_dict(), "written": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return path
