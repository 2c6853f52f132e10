"""``FakeLLM``: a deterministic backend for tests and dry runs, answering through a rule
``rule(kind, messages, options_or_schema) -> str | dict | None`` (None: no content) through the same cache, retry,
re-ask and usage machinery as the real backends. A rule may raise ``Transient`` or ``LLMFatalError`` to simulate
faults; tokens are whitespace-separated words. It imitates no real model's wording, and uses no network or randomness.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from typing import Any

from rpa_lib.llm.answers import schema_example
from rpa_lib.llm.base import LLM, Request
from rpa_lib.llm.reply import Raw

Rule = Callable[[str, list[dict], Any], "str | dict | None"]


def _digest(text: str) -> int:
    return int(hashlib.sha256(text.encode("utf-8")).hexdigest()[:8], 16)


def default_rule(kind: str, messages: list[dict], spec: Any) -> str | dict:
    """chat: ``"fake reply <8 hex>"`` from the last user message; choose: the first option named in it (any case),
    else one picked by its hash; structured: ``schema_example(schema)``."""
    last = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
    if kind == "choose":
        named = [o for o in spec if o.lower() in last.lower()]
        return named[0] if named else spec[_digest(last) % len(spec)]
    if kind == "structured":
        return schema_example(spec)
    return f"fake reply {_digest(last):08x}"


def _sampled(messages: list[dict], sample: int) -> list[dict]:
    """``messages`` with `` (sample 2)`` after the last user message, so another run of a repeated experiment gets
    other answers, deterministically (sample 0: as they are)."""
    if not sample:
        return messages
    last = max((i for i, m in enumerate(messages) if m["role"] == "user"), default=len(messages) - 1)
    return [{**m, "content": f"{m['content']} (sample {sample})"} if i == last else m for i, m in enumerate(messages)]


class FakeLLM(LLM):
    """``FakeLLM()`` or ``FakeLLM(rule=lambda kind, messages, spec: "yes")``. Not cached unless ``cache=`` says so
    (two fakes with different rules would share answers)."""

    backend = "fake"

    def __init__(self, rule: Rule | None = None, *, label: str = "fake", cache: Any = False, max_workers: int = 8,
                 delay: float = 0.0, retry=None):
        self.rule = rule or default_rule
        self.delay = delay  # seconds each round trip takes, to exercise concurrency
        self.label, self.model_id = label, f"fake:{label}"
        super().__init__(cache=cache, max_workers=max_workers, retry=retry)

    def _answer(self, req: Request) -> Raw:
        """Every kind of round trip: the rule's answer to the request (options for a choice, else the schema)."""
        if self.delay:
            time.sleep(self.delay)
        spec = req.options if req.kind == "choose" else req.schema
        out = self.rule(req.kind, _sampled(req.messages, req.sample), spec)
        data = out if isinstance(out, dict) else None
        text = json.dumps(out, ensure_ascii=False) if isinstance(out, dict) else "" if out is None else str(out)
        return Raw(text, sum(len(m["content"].split()) for m in req.messages), len(text.split()), data=data)

    _chat = _choose = _structured = _answer
