"""``LLM``: the interface every backend shares (chat, choose, structured, map, usage) and its machinery: the cache
and in-flight claims, round trips with retries under an optional budget, validation with bounded re-asks, usage.
A backend implements only ``_chat``, ``_choose`` and ``_structured``, each returning a :class:`Raw` (raising
``Transient`` to be retried, ``LLMFatalError`` to stop). What is cached, and why: docs/design/llm.md. This module
talks to no model and knows no credential.
"""

from __future__ import annotations

import copy
import hashlib
import logging
import numbers
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from rpa_lib.llm.answers import match_option, parse_structured
from rpa_lib.llm.budget import Budget, check_priced, estimate_tokens, price_override
from rpa_lib.llm.cache import open_cache, request_key
from rpa_lib.llm.concurrency import run_map
from rpa_lib.llm.reply import LLMError, LLMFatalError, LLMNoValidAnswer, Outcome, Pending, Raw, Reply
from rpa_lib.llm.retry import Exhausted, RetryPolicy, Transient
from rpa_lib.llm.usage import FREE_BACKENDS, Price, Usage

log = logging.getLogger("rpa_lib.llm")
_ROLES = ("system", "user", "assistant")
_GAVE_UP = {"chat": "empty reply after {n} attempts", "choose": "no allowed answer after {n} attempts: {problem}",
            "structured": "no valid JSON object after {n} attempts: {problem}"}


@dataclass(frozen=True)
class Request:
    """Everything that determines a reply; exactly what the cache key is made of (with backend and model)."""

    kind: str  # "chat" | "choose" | "structured"
    messages: list[dict]
    temperature: float = 0.0
    max_tokens: int = 256
    seed: int = 0
    sample: int = 0
    options: list[str] | None = None
    schema: dict | None = None
    allow_empty: bool = False  # chat: an empty reply is an answer, not a failure


def sample_seed(seed: int, sample: int) -> int:
    """The seed of sample ``sample`` of seed ``seed``. ``sample_seed(7, 0) == 7``"""
    return seed if sample == 0 else int.from_bytes(hashlib.sha256(f"{seed}:{sample}".encode()).digest()[:4], "big") >> 1


def _checked(messages: list[dict]) -> list[dict]:
    if not messages:
        raise ValueError("messages is empty")
    for m in messages:
        if m.get("role") not in _ROLES or not isinstance(m.get("content"), str):
            raise ValueError(f"bad message {m!r}: need role in {_ROLES} and a str content")
    return [{"role": m["role"], "content": m["content"]} for m in messages]


def _call_name(kind: str, name: str | None, messages: list[dict]) -> str:
    """``chat call 'Who are you?'``: ``name``, else the first 60 characters of the last user message."""
    if name is None:
        last = next((m["content"] for m in reversed(messages) if m["role"] == "user"), messages[-1]["content"])
        name = " ".join(last.split())[:60]
    return f"{kind} call {name!r}"


@dataclass
class _Spent:
    """Tokens of every round trip of one call (re-asks included)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0


def _workers(value: Any) -> int:
    """``value`` as a number of concurrent calls; ValueError unless a whole number of 1 or more."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"max_workers must be a whole number of 1 or more, got {value!r}")
    return int(value)


class LLM:
    """The interface. Subclasses set ``backend``, ``label``, ``model_id`` (and ``price``) before ``__init__``."""

    backend = "base"  # backend kind, part of the cache key: "openai" | "local" | "fake"
    label = "llm"  # for figures and tables
    model_id = "base"  # for cache keys; never contains a secret
    max_workers = 1
    price: Price | None = None
    repeat = 0  # the run of a repeated experiment this LLM answers for (for_repeat): added to each request's sample
    scratch_dir = None  # a stand-in whose replies are made up (a plan's) builds indexes here, never in the cache
    scores_choices = False  # does a choice's reply carry each option's score (calibration needs them)?
    lookahead = None  # Guided Selection's look-ahead this LLM asks for (a batch round's: rpa_lib.llm.rounds)
    _keep_causes = True  # chain backend exceptions to our errors (False where they may carry a request or key)

    def __init__(self, *, cache: Any = True, max_workers: int | None = None, retry: RetryPolicy | None = None):
        if max_workers is not None:
            self.max_workers = _workers(max_workers)
        self._cache = open_cache(cache)
        self._inflight = self._cache.inflight if self._cache is not None else None  # claims of cache misses
        self.retry = retry or RetryPolicy()
        self.price = price_override() or self.price  # RPA_PRICE_IN / RPA_PRICE_OUT
        self._budget: Budget | None = None  # with_budget
        self.usage = Usage(self.label, self.model_id, self.price, free=self.backend in FREE_BACKENDS)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.label!r}, cache={self._cache!r})"

    # ---- the public interface -------------------------------------------------------------------------------

    def chat(self, messages: list[dict], *, temperature: float = 0.0, max_tokens: int = 256, seed: int = 0,
             sample: int = 0, name: str | None = None, allow_empty: bool = False, max_retries: int = 2) -> Reply:
        """A free-text reply; a blank one (unless ``allow_empty``) is re-asked up to ``max_retries`` times, then
        :class:`LLMNoValidAnswer`."""
        req = Request("chat", _checked(messages), float(temperature), int(max_tokens), int(seed), sample + self.repeat,
                      allow_empty=allow_empty)  # numbers as one type each: temperature=0 and 0.0 share a cache key
        return self._call(req, name, max_retries)

    def choose(self, messages: list[dict], options: list[str], *, seed: int = 0, sample: int = 0,
               max_retries: int = 2, name: str | None = None) -> Reply:
        """Exactly one of ``options`` (``Reply.text``), re-asking up to ``max_retries`` times, then
        :class:`LLMNoValidAnswer`."""
        options = [str(o) for o in options]
        if not options or len(set(options)) != len(options):
            raise ValueError(f"options must be non-empty and distinct: {options!r}")
        req = Request("choose", _checked(messages), 0.0, 0, int(seed), sample + self.repeat, options=options)
        return self._call(req, name, max_retries)

    def structured(self, messages: list[dict], schema: dict, *, max_tokens: int = 512, max_retries: int = 2,
                   seed: int = 0, sample: int = 0, temperature: float = 0.0, name: str | None = None) -> Reply:
        """A JSON object valid against ``schema`` (``Reply.data``), re-asking up to ``max_retries`` times, then
        :class:`LLMNoValidAnswer`."""
        req = Request("structured", _checked(messages), float(temperature), int(max_tokens), int(seed),
                      sample + self.repeat, schema=schema)
        return self._call(req, name, max_retries)

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any], *, desc: str = "llm", workers: int | None = None,
            progress: bool = True) -> list[Outcome]:
        """``[Outcome(item, fn(item)) ...]``, ``workers`` (None: :attr:`max_workers`) at a time, in order. A failed
        item comes back as an Outcome with ``error``, never raised; only an :class:`LLMFatalError` stops the run."""
        return run_map(fn, items, workers=workers or self.max_workers, desc=desc, progress=progress,
                       stop_on=(LLMFatalError,))

    def with_budget(self, budget: Budget | None) -> LLM:
        """This LLM, its uncached round trips limited by ``budget`` (LLMFatalError when its price is unknown).
        ``get_llm("fake").with_budget(Budget(5.0))``"""
        self._budget = check_priced(self, budget)
        return self

    def for_repeat(self, repeat: int) -> LLM:
        """This LLM answering for run ``repeat`` of a repeated experiment, each request as sample ``repeat``.
        ``get_llm("fake").for_repeat(1).repeat == 1``"""
        if repeat < 0:
            raise ValueError(f"a repeat is a run index, 0 or more: {repeat!r}")
        if repeat == self.repeat:
            return self
        twin = copy.copy(self)  # shares what the runs share: the backend's client or model, cache, usage, budget
        twin.repeat = repeat
        return twin

    def reset_usage(self) -> None:
        self.usage.reset()

    # ---- backend hooks ----------------------------------------------------------------------------------------

    def _chat(self, req: Request) -> Raw:
        raise NotImplementedError

    def _choose(self, req: Request) -> Raw:
        raise NotImplementedError

    def _structured(self, req: Request) -> Raw:
        raise NotImplementedError

    def _key_extra(self) -> dict:
        """Backend settings that change replies; part of the cache key."""
        return {}

    def _most_tokens(self, req: Request) -> tuple[int, int]:
        """(input, output) tokens a round trip of ``req`` is held at under a budget: an estimate here, an upper bound
        where a backend knows what it sends."""
        return estimate_tokens(req)

    def _calling(self, req: Request, fields: dict, key: str, attempts: int) -> None:
        """Told of every call before its cache lookup, allowed ``attempts`` (a dry run's stand-in records it here)."""

    def _scrub(self, text: str) -> str:
        """``text`` with any credential removed; backends that hold one override this."""
        return text

    # ---- machinery --------------------------------------------------------------------------------------------

    def _keys(self, req: Request) -> tuple[dict, str]:
        """(the fields of ``req``'s cache key: backend kind, model id, the request and backend settings; the key),
        listed by hand (``asdict`` is slow: docs/design/llm.md)."""
        fields = {"backend": self.backend, "model": self.model_id, "kind": req.kind, "messages": req.messages,
                  "temperature": req.temperature, "max_tokens": req.max_tokens, "seed": req.seed, "sample": req.sample,
                  "options": req.options, "schema": req.schema, "extra": self._key_extra()}
        if req.allow_empty:
            fields["allow_empty"] = True
        return fields, request_key(fields)

    @staticmethod
    def _failed(fields: dict) -> tuple[dict, str]:
        """The fields and key of the request's failure, stored beside its replies (as :meth:`_fields` orders them)."""
        failed_fields = {**fields, "outcome": "failed"}
        return failed_fields, request_key(failed_fields)

    def _call(self, req: Request, name: str | None, max_retries: int) -> Reply:
        """The cached outcome of ``req``, else that of asking it (claimed first: callers sharing the cache send it
        once), re-asking up to ``max_retries`` times."""
        what = _call_name(req.kind, name, req.messages)
        fields, key = self._keys(req)
        self._calling(req, fields, key, max_retries + 1)
        start = time.monotonic()
        stored = self._stored(fields, key, max_retries + 1)
        if stored is None and self._inflight is not None:
            with self._inflight.claim(key, lambda: self._stored(fields, key, max_retries + 1)) as stored:
                if stored is None:
                    return self._send_and_store(req, what, fields, key, start, max_retries)
        if stored is not None:
            return self._outcome(req, what, start, time.monotonic(), stored)
        return self._send_and_store(req, what, fields, key, start, max_retries)

    def _stored(self, fields: dict, key: str, attempts: int) -> dict | None:
        """The cached reply, else the cached failure (its entry has an ``error``) after at least ``attempts``
        attempts, else None."""
        if self._cache is None:
            return None
        if (hit := self._cache.get(key)) is not None:
            return hit
        miss = self._cache.get(self._failed(fields)[1])
        return miss if miss is not None and miss.get("attempts", 0) >= attempts else None

    def _send_and_store(self, req: Request, what: str, fields: dict, key: str, start: float,
                        max_retries: int) -> Reply:
        """Ask ``req``, store its outcome and return it (or raise its failure)."""
        spent = _Spent()
        try:
            answer = self._ask(req, what, spent, max_retries)
        except Exception as exc:
            end = time.monotonic()
            self.usage.record_call(start, end, error=True)
            if isinstance(exc, LLMError):  # a fault after invalid replies: their round trips were paid for all the same
                exc.prompt_tokens, exc.completion_tokens = spent.prompt_tokens, spent.completion_tokens
                exc.seconds = end - start
            raise
        end = time.monotonic()
        tokens = {"prompt_tokens": spent.prompt_tokens, "completion_tokens": spent.completion_tokens,
                  "seconds": round(end - start, 3)}
        if self._cache is not None and "error" in answer:  # the backend's deterministic answer, stored like a reply
            failed_fields, failed_key = self._failed(fields)
            self._cache.put(failed_key, failed_fields, {**answer, **tokens})
        elif self._cache is not None:
            coerced = {"coerced": True} if answer.get("coerced") else {}  # replies that matched: entries as before
            self._cache.put(key, fields, {"text": answer["text"], "data": answer.get("data"),
                                          "scores": answer.get("scores"), **coerced, **tokens})
        return self._outcome(req, what, start, end, answer, spent)

    def _outcome(self, req: Request, what: str, start: float, end: float, entry: dict,
                 spent: _Spent | None = None) -> Reply:
        """``entry`` as this call's Reply, or its failure raised; ``spent``: what asking cost (None: from the cache)."""
        cached = spent is None
        spent = spent or _Spent()
        self.usage.record_call(start, end, cached=cached, error="error" in entry)
        if "error" in entry:
            error = LLMNoValidAnswer(f"{what}: {entry['error']}")
            error.cached, error.seconds = cached, end - start
            error.prompt_tokens, error.completion_tokens = spent.prompt_tokens, spent.completion_tokens
            raise error
        return Reply(entry["text"], entry.get("data"), cached, spent.prompt_tokens, spent.completion_tokens,
                     end - start, req.kind, self.model_id, entry.get("scores"), bool(entry.get("coerced")))

    def round_trip(self, req: Request, what: str, spent: _Spent | None = None) -> Raw:
        """One uncached round trip of ``req`` with retries (also a batch round's, for an in-process engine), its tokens
        added to ``spent``; a :class:`Transient` fault retried per :attr:`retry`; its failure an LLMError naming the
        call (its class kept for ours; a :class:`Pending` passes). Under a budget each attempt holds the most it can
        cost first, then books what it cost."""
        spent = spent if spent is not None else _Spent()

        def attempt() -> Raw:
            held = raw = None
            if self._budget is not None:
                held = self._budget.hold(self.price.cost(*self._most_tokens(req)), what)
            try:
                raw = getattr(self, f"_{req.kind}")(req)
                return raw
            except (Exhausted, Pending):
                raise
            except Transient as exc:  # a reply rejected as malformed (``paid``) is paid for all the same
                raw = exc.paid
                raise
            except LLMError as exc:  # already ours and scrubbed: name the call, keep the class
                error: LLMError = type(exc)(f"{what}: {self._scrub(str(exc))}")
                cause = None
            except Exception as exc:
                error = LLMError(f"{what}: {self._scrub(f'{type(exc).__name__}: {exc}')}")
                cause = exc if self._keep_causes else None
            finally:
                if held is not None:  # the cost the server reports, else (it reports none) what was held
                    cost = None if raw is None else self.price.cost(raw.prompt_tokens, raw.completion_tokens) or held
                    self._budget.settle(held, cost)
                if raw is not None:
                    spent.prompt_tokens += raw.prompt_tokens
                    spent.completion_tokens += raw.completion_tokens
                    self.usage.record_request(raw.prompt_tokens, raw.completion_tokens)
            raise error from cause  # outside the handler: no implicit chain to what the backend raised

        for n in range(1, self.retry.attempts + 1):
            try:
                return attempt()
            except Exhausted as exc:  # the client's exception may hold the request (its headers): never chained
                raise LLMError(f"{what} failed after {exc.attempts} attempts: {exc}") from None
            except Transient as exc:
                if n >= self.retry.attempts:
                    raise LLMError(f"{what} failed after {n} attempts: {exc}") from exc
                wait = self.retry.delay(n)
                log.info("%s: %s; retry %d of %d in %.2f s", what, exc, n, self.retry.attempts - 1, wait)
                self.usage.record_retry()
                time.sleep(wait)
        raise AssertionError("unreachable")

    def _ask(self, req: Request, what: str, spent: _Spent, max_retries: int) -> dict:
        """Round trips of ``req`` until one is valid, re-asking up to ``max_retries`` times: the answer, else the
        failure (``{"error", "text", "attempts"}``)."""
        valid, asked = getattr(self, f"_valid_{req.kind}"), req
        for attempt in range(max_retries + 1):
            raw = self.round_trip(asked, what, spent)
            answer, problem = valid(req, raw)
            if answer is not None:
                return answer
            if attempt < max_retries:
                self.usage.record_reask()
                again = f"That reply was not valid: {problem}. Please answer again."
                asked = replace(asked, messages=[*asked.messages, {"role": "assistant", "content": raw.text},
                                                 {"role": "user", "content": again}])
        return {"error": _GAVE_UP[req.kind].format(n=max_retries + 1, problem=problem), "text": raw.text,
                "attempts": max_retries + 1}

    def _valid_chat(self, req: Request, raw: Raw) -> tuple[dict | None, str]:
        return ({"text": raw.text} if req.allow_empty or raw.text.strip() else None), "it was empty"

    def _valid_choose(self, req: Request, raw: Raw) -> tuple[dict | None, str]:
        choice = match_option(raw.text, req.options or [])
        self.usage.record_reply("choose", choice is not None, coerced=raw.coerced and choice is not None)
        if choice is None:
            return None, f"{raw.text[:80]!r} is not one of {req.options!r}"
        return {"text": choice, "scores": raw.scores, "coerced": raw.coerced}, ""

    def _valid_structured(self, req: Request, raw: Raw) -> tuple[dict | None, str | None]:
        data, problem = parse_structured(raw.text, req.schema or {}, raw.data)
        self.usage.record_reply("structured", data is not None)
        return ({"text": raw.text, "data": data} if data is not None else None), problem
