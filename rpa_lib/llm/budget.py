"""A spending limit in dollars for the uncached LLM calls of one run, and the price and token estimates it needs.

A :class:`Budget` is given to an LLM (``get_llm(spec, budget=...)`` or a run mode); each backend round trip holds its
estimated cost first, and :class:`BudgetExceeded` stops the run before the limit is passed (docs/plan_and_budget.md).
Only :func:`price_override` reads a setting (``RPA_PRICE_IN``/``RPA_PRICE_OUT``). This module calls no model and does
not decide what is cached.
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import socket
import threading
from pathlib import Path

from rpa_lib.llm.answers import choice_instruction, schema_instruction, with_instruction
from rpa_lib.llm.inflight import process_gone
from rpa_lib.llm.reply import LLMFatalError
from rpa_lib.llm.usage import FREE_BACKENDS, Price, price_for
from rpa_lib.settings import setting
from rpa_lib.text import write_whole

CHARS_PER_TOKEN = 4  # a rough average for English text with OpenAI's tokenizers
MESSAGE_TOKENS = 4  # what a chat message costs beyond its text (role and separators)


class BudgetExceeded(LLMFatalError):
    """The next call would take the run past its budget; every call made so far is cached."""


def usd(amount: float) -> str:
    """Cents when exact, else more digits. ``usd(1.5) == "$1.50"``, ``usd(0.005) == "$0.005"``"""
    return f"${amount:,.2f}" if round(amount, 2) == amount else f"${amount:,.6g}"


def price_override() -> Price | None:
    """``Price(RPA_PRICE_IN, RPA_PRICE_OUT)`` when both are set, None when neither is; ValueError otherwise."""
    raw_in, raw_out = setting("RPA_PRICE_IN"), setting("RPA_PRICE_OUT")
    if raw_in is None and raw_out is None:
        return None
    if raw_in is None or raw_out is None:
        raise ValueError("set both RPA_PRICE_IN and RPA_PRICE_OUT (dollars per million input / output tokens)")
    return Price(dollars("RPA_PRICE_IN", raw_in), dollars("RPA_PRICE_OUT", raw_out))


def model_price(model: str) -> Price | None:
    """The price of ``model``: ``RPA_PRICE_IN``/``RPA_PRICE_OUT`` when set, else the table's (None: unknown)."""
    return price_override() or price_for(model)


def dollars(name: str, raw: str | float) -> float:
    """A non-negative dollar amount read from setting ``name``; ValueError naming it otherwise."""
    text = str(raw)  # a run mode's value may be of any type: its text is what is read
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f"{name} must be a non-negative number of dollars, got {text!r}")
    return value


def _tokens(chars: int) -> int:
    return math.ceil(chars / CHARS_PER_TOKEN)


def _prompt_tokens(messages: list[dict], sent: str) -> int:
    return _tokens(sum(len(m.get("content") or "") for m in messages) + len(sent)) + MESSAGE_TOKENS * len(messages)


def body_tokens(body: dict, *, most: bool = False) -> tuple[int, int]:
    """(input, output) tokens of a chat-completion body as sent, output at ``max_tokens`` (an upper bound); input at 4
    characters a token, or with ``most`` at most what an OpenAI model reads: a token of its byte-level BPE is at least
    one byte, so the UTF-8 bytes of the messages and the ``response_format`` plus what the chat format adds (3 tokens
    to start the reply). ``body_tokens({"messages": [{"role": "user", "content": "x" * 40}], "max_tokens": 50})``
    ``== (14, 50)``; with ``most=True``: ``(47, 50)``"""
    messages, out = body.get("messages", []), int(body.get("max_tokens") or 0)
    sent = json.dumps(body["response_format"]) if body.get("response_format") else ""
    if not most:
        return _prompt_tokens(messages, sent), out
    size = sum(len((m.get("content") or "").encode()) for m in messages) + len(sent.encode())
    return size + MESSAGE_TOKENS * len(messages) + 3, out


def estimate_tokens(req) -> tuple[int, int]:
    """(input, output) tokens of a request as an OpenAI-compatible server sees it (with the backend's choice or schema
    instruction); output is ``max_tokens`` (an upper bound), for a choice the JSON object naming the longest option.
    ``estimate_tokens(Request("chat", [{"role": "user", "content": "x" * 40}], max_tokens=50)) == (14, 50)``"""
    messages, sent, out = req.messages, "", req.max_tokens
    if req.kind == "choose":
        messages = with_instruction(messages, choice_instruction(req.options or []))
        sent = json.dumps(req.options)
        out = _tokens(len(json.dumps({"answer": max(req.options or [""], key=len)})))
    elif req.kind == "structured":
        messages = with_instruction(messages, schema_instruction(req.schema or {}))
        sent = json.dumps(req.schema)
    return _prompt_tokens(messages, sent), out


class Budget:
    """``Budget(5.0, ledger)``: at most $5 for the uncached calls of every process that shares ``ledger`` (None:
    this process only). Thread-safe; the ledger file is updated under an exclusive lock, and holds what each process
    has in flight (``held``, by "host:pid"; a process that died on this host holds nothing)."""

    def __init__(self, limit: float, ledger: Path | None = None):
        self.limit, self.ledger = limit, ledger
        self._lock = threading.Lock()
        self._held = 0.0  # estimates of the calls in flight in this process
        self._local = {"spent": 0.0, "calls": 0}

    def __repr__(self) -> str:
        return f"Budget({usd(self.limit)}, ledger={str(self.ledger) if self.ledger else None!r})"

    def _update(self, change=None) -> dict:
        """The ledger, after ``change(ledger)`` when given; under the file lock when there is a file."""
        if self.ledger is None:
            if change is not None:
                change(self._local)
            return dict(self._local)
        self.ledger.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.ledger.with_name(f"{self.ledger.name}.lock"), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            text = self.ledger.read_text(encoding="utf-8") if self.ledger.exists() else ""
            state = json.loads(text) if text.strip() else {"spent": 0.0, "calls": 0}
            if change is not None:
                change(state)
                write_whole(self.ledger, json.dumps({**state, "limit": self.limit}) + "\n")
            return state
        finally:
            os.close(fd)  # releases the lock

    @property
    def spent(self) -> float:
        return self._update()["spent"]

    def _holding(self, state: dict, held: float) -> float:
        """Record that this process holds ``held`` in ``state``; what the other live processes hold."""
        me = f"{socket.gethostname()}:{os.getpid()}"
        holds = {owner: v for owner, v in state.get("held", {}).items() if owner != me and not process_gone(owner)}
        others = sum(holds.values())
        if held > 0:
            holds[me] = held
        state["held"] = holds
        return others

    def hold(self, estimate: float, what: str, *, noun: str = "this call") -> float:
        """Hold ``estimate`` dollars (returned) for ``noun`` until it is settled; BudgetExceeded when that would pass
        the limit with what is spent and what every process sharing the ledger holds."""
        def take(state: dict) -> None:
            others = self._holding(state, self._held + estimate)
            if state["spent"] + others + self._held + estimate > self.limit:
                where = f" (ledger {self.ledger})" if self.ledger else ""
                elsewhere = f" and ${others:.4f} by other processes" if others else ""
                raise BudgetExceeded(
                    f"{what}: budget of {usd(self.limit)} reached: ${state['spent']:.4f} spent on {state['calls']} "
                    f"uncached call(s) in this run{where}, ${self._held:.4f} held by calls in flight here{elsewhere}, "
                    f"and {noun} may cost up to ${estimate:.4f}. Every completed call is cached: run the same command "
                    "again with a larger budget (RPA_BUDGET_USD or budget_usd in the profile) and only the remaining "
                    "calls are paid for; --plan shows how many remain")

        with self._lock:
            self._update(take)
            self._held += estimate
        return estimate

    def hold_started(self, estimate: float) -> float:
        """Hold ``estimate`` dollars for work another process started (a batch still running after a restart), so the
        next :meth:`hold` counts it; never refused: it is paid for whatever this process does."""
        with self._lock:
            self._held += estimate
            self._update(lambda state: self._holding(state, self._held))
        return estimate

    def settle(self, held: float, cost: float | None, calls: int = 1) -> None:
        """Release ``held`` dollars and book ``cost`` (None: nothing, the call failed) for ``calls`` calls."""
        def book(state: dict) -> None:
            self._holding(state, self._held)
            if cost is not None:
                state["spent"] += cost
                state["calls"] += calls

        with self._lock:
            self._held = max(0.0, self._held - held)
            self._update(book)


_SHARED: dict[tuple[float, str | None], Budget] = {}
_SHARED_LOCK = threading.Lock()


def shared_budget(limit: float, ledger: str | Path | None = None) -> Budget:
    """The one :class:`Budget` of a process for ``limit`` and ``ledger``, shared by the LLMs given it."""
    key = (float(limit), str(ledger) if ledger else None)
    with _SHARED_LOCK:
        if key not in _SHARED:
            _SHARED[key] = Budget(float(limit), Path(ledger) if ledger else None)
        return _SHARED[key]


def check_priced(llm, budget: Budget | None) -> Budget | None:
    """The budget that limits ``llm`` (None for a free backend with no price); LLMFatalError for an unpriced model."""
    if budget is None or (llm.price is None and llm.backend in FREE_BACKENDS):
        return None
    if llm.price is None:
        raise LLMFatalError(
            f"the budget is {usd(budget.limit)} but the price of model {llm.model_id!r} is unknown: set RPA_PRICE_IN "
            "and RPA_PRICE_OUT (dollars per million input / output tokens) or unset the budget")
    return budget
