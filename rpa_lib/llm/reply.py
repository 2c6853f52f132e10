"""The records an LLM call returns or raises, and the backend-level ``Raw``. Plain data: no I/O, no backend
knowledge, nothing that could hold a credential."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


class LLMError(RuntimeError):
    """Every unrecoverable LLM failure, naming the call and the cause; ``cached``: replayed from the cache.
    ``prompt_tokens``, ``completion_tokens`` and ``seconds``: what the call spent before it failed (re-asks included;
    0 when ``cached`` or raised before any round trip)."""

    cached = False
    prompt_tokens = 0
    completion_tokens = 0
    seconds = 0.0


class LLMFatalError(LLMError):
    """A failure no retry or other item gets past (HTTP 401/403/404, unknown model, no API key); ``LLM.map`` stops
    at the first. The message names the model and the server."""


class LLMNoValidAnswer(LLMError):
    """The model answered every attempt, never validly (after the re-asks): cached like a reply, not a fault."""


class Pending(Exception):  # noqa: N818 (a state, not an error: not an LLMError, so no fallback swallows it)
    """A round trip whose answer a later batch round gives (:mod:`rpa_lib.llm.rounds`); not a failure."""


@dataclass(frozen=True)
class Reply:
    """What ``chat``, ``choose`` and ``structured`` return. Tokens and cost are what *this* call spent."""

    text: str  # raw text (choose: the chosen option)
    data: dict | None = None  # structured(): the validated dict
    cached: bool = False  # True: served from the cache, spent no tokens
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    kind: str = "chat"  # "chat" | "choose" | "structured"
    model: str = ""  # the LLM's model_id
    scores: dict[str, float] | None = None  # choose(): log-score per option where the backend gives one
    coerced: bool = False  # choose(): the reply matched no option; ``text`` is the option of the highest score


@dataclass
class Outcome:
    """One item of ``LLM.map``: its value, or its error as ``"ExcType: message"`` (``pending``: a :class:`Pending`)."""

    item: Any
    value: Any = None
    error: str | None = None
    pending: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass
class Raw:
    """One backend round trip: its text (and a dict, for the fake) and the tokens it cost."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    data: dict | None = None
    scores: dict[str, float] | None = None
    coerced: bool = False  # the text is the top-scoring option put in place of a reply that matched none
