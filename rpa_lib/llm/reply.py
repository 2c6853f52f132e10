"""The records every LLM call returns or raises: ``Reply``, ``Outcome``, ``LLMError``, ``LLMFatalError``,
``LLMNoValidAnswer``, ``Pending`` and the backend-level ``Raw``.

Plain data only: no I/O, no backend knowledge, nothing that could hold a credential.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class LLMError(RuntimeError):
    """Every unrecoverable LLM failure; the message names the call (or item) and the cause. ``cached`` is True when
    the failure was the cached outcome of an identical earlier call (the backend was not asked again)."""

    cached = False


class LLMFatalError(LLMError):
    """A failure that no retry and no other item can get past: the server refused the credentials (HTTP 401), the
    permission (403) or does not know the model or endpoint (404, "model does not exist"), or no API key is set.
    Never retried; ``LLM.map`` stops at the first one. The message names the model and the server (its URL
    without credentials)."""


class LLMNoValidAnswer(LLMError):
    """The model answered every attempt, but never validly: no allowed option, no valid JSON object, or an empty
    chat reply after the re-asks. Its answer to the request (cached like a reply), not a fault: a judge counts it
    as an unparseable verdict. ``prompt_tokens``, ``completion_tokens`` and ``seconds`` are what its attempts cost
    (0 when ``cached``)."""

    prompt_tokens = 0
    completion_tokens = 0
    seconds = 0.0


class Pending(Exception):  # noqa: N818 (a state, not an error: not an LLMError, so no fallback swallows it)
    """A round trip whose answer is not in yet: a batch round will ask it (:mod:`rpa_lib.llm.rounds`). Not a
    failure: the item waiting on it is pending, and the next round answers it."""


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
    """One item of ``LLM.map``: its value, or the error it raised as ``"ExcType: message"`` (``pending``: the
    error is a :class:`Pending`, an answer not in yet, not a failure)."""

    item: Any
    value: Any = None
    error: str | None = None
    pending: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass
class Raw:
    """One backend round trip: the text it produced (or a dict, for the fake) and the tokens it cost."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    data: dict | None = None
    scores: dict[str, float] | None = field(default=None)
    coerced: bool = False  # the text is the top-scoring option put in place of a reply that matched none
