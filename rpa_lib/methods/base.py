"""The records and the base class every role-playing method shares: :meth:`Method.context` builds what the LLM
will see (context items, calls spent, method-specific details), then :meth:`Method.respond` answers with the one
role-play prompt. :func:`paid`, :func:`traced` and :func:`charged` trace the calls a method makes, a failed answer's
included. :func:`within_budget` cuts a context to a character budget (a budget-matched control's). Building a
method from its settings is :func:`rpa_lib.methods.build_method`'s job.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Iterable
from contextlib import contextmanager
from dataclasses import dataclass, field, fields, replace
from typing import Any, ClassVar, get_args, get_type_hints

from rpa_lib.data import Dataset
from rpa_lib.display import response_html
from rpa_lib.embeddings import check_embedder
from rpa_lib.llm import LLMError, LLMNoValidAnswer
from rpa_lib.methods.prompts import respond_messages
from rpa_lib.retrieval import Retriever, retriever
from rpa_lib.splitters import SPLITTERS, Chunk
from rpa_lib.text import within_budget as texts_within_budget


@dataclass(frozen=True)
class Call:
    """One LLM call made while answering: what it was for, and what it cost."""

    purpose: str  # "judge", "extract", "respond", ...
    kind: str  # "chat" | "choose" | "structured"
    cached: bool
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    output: str  # the reply text (choose: the chosen option)
    coerced: bool = False  # choose: no option matched; the backend took the best-scored one (kept in the cache too)

    @classmethod
    def failed(cls, purpose: str, kind: str, error: Exception) -> Call:
        """The trace of a call that raised ``error``, with what it spent where the error says (re-asks included)."""
        return cls(purpose, kind, bool(getattr(error, "cached", False)), getattr(error, "prompt_tokens", 0),
                   getattr(error, "completion_tokens", 0), round(getattr(error, "seconds", 0.0), 3), f"failed: {error}")


@dataclass(frozen=True)
class ContextItem:
    """One piece of what reached the LLM: its ``role`` (``knowledge``, ``selected``, ``attribute`` or a method's
    own) and the persona chunks it came from (none when it did not come from the persona)."""

    role: str
    text: str
    chunk_ids: tuple[str, ...] = ()
    label: str = ""  # heading path of a chunk, name of an attribute, source of an external passage


@dataclass
class Context:
    items: list[ContextItem] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class Response:
    character: str
    question: str
    method: str
    reply: str
    context: list[ContextItem] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)

    def items(self, *roles: str) -> list[ContextItem]:
        """The context items of these roles (all when none given)."""
        return [c for c in self.context if not roles or c.role in roles]

    def chunk_ids(self, *roles: str) -> list[str]:
        """The distinct persona chunk ids that reached the LLM (of these roles), in order of appearance."""
        return list(dict.fromkeys(i for c in self.items(*roles) for i in c.chunk_ids))

    def _repr_html_(self) -> str:  # JupyterLab: reply, calls, GS/AE details and the context, texts folded
        return response_html(self)


NUMBERS = {int: numbers.Integral, float: numbers.Real}  # a setting typed int takes numpy's integers too


@dataclass(frozen=True)
class AnswerSettings:
    max_tokens: int = 160  # longest reply, in tokens

    def __post_init__(self):
        hints = get_type_hints(type(self))
        for f in fields(self):  # a setting of the wrong type is named here, not met as a TypeError deep in a method
            allowed, value = get_args(hints[f.name]) or (hints[f.name],), getattr(self, f.name)
            if not isinstance(value, tuple(NUMBERS.get(a, a) for a in allowed)) or (
                    isinstance(value, bool) and bool not in allowed):
                kinds = " or ".join("None" if a is type(None) else a.__name__ for a in allowed)
                raise ValueError(f"setting {f.name} must be {kinds}, not {type(value).__name__} {value!r}")
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be at least 1, not {self.max_tokens}")
        if getattr(self, "budget_chars", None) is not None and self.budget_chars < 1:
            raise ValueError(f"budget_chars must be at least 1 (or None: no budget), not {self.budget_chars}")


@dataclass(frozen=True)
class RetrievalSettings(AnswerSettings):
    splitter: str = "acts"  # vanilla | ats | acts (the one pool every method of a table draws from)
    embedder: str = "minilm"  # short name or sentence-transformers model id
    k: int = 3  # chunks retrieved as knowledge
    min_k: ClassVar[int] = 1

    def __post_init__(self):
        super().__post_init__()
        if self.splitter not in SPLITTERS:
            raise ValueError(f"unknown splitter {self.splitter!r}; choose one of {', '.join(SPLITTERS)}")
        check_embedder(self.embedder)
        if self.k < self.min_k:
            raise ValueError(f"k must be at least {self.min_k}, not {self.k}")


class Method:
    """A subclass sets ``name`` and ``Settings`` and implements :meth:`context`; the answer is shared."""

    name: ClassVar[str] = "method"
    Settings: ClassVar[type] = AnswerSettings

    def __init__(self, llm, settings=None, dataset: Dataset | None = None):
        self.llm = llm
        self.settings = settings if settings is not None else self.Settings()
        self.dataset = dataset or Dataset()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.settings})"

    def retriever(self, character: str) -> Retriever:
        """The character's retriever for this method's splitter and embedder."""
        return retriever(character, self.settings.splitter, self.settings.embedder, self.dataset)

    def search(self, character: str, question: str, k: int) -> list[Chunk]:
        return [hit.chunk for hit in self.retriever(character).search(question, k)]

    @staticmethod
    def trace(purpose: str, reply) -> Call:
        return Call(purpose, reply.kind, reply.cached, reply.prompt_tokens, reply.completion_tokens,
                    round(reply.seconds, 3), reply.text, reply.coerced)

    def context(self, character: str, question: str) -> Context:
        """Everything the answer will see, and the calls spent building it (none by default)."""
        return Context()

    def budgeted(self, ctx: Context) -> Context:
        """``ctx`` cut to the setting ``budget_chars`` when the method has one (:func:`within_budget`), with the
        budget in its details; unchanged without one."""
        budget = getattr(self.settings, "budget_chars", None)
        if budget is None:
            return ctx
        items = within_budget(ctx.items, budget)
        return Context(items, ctx.calls, {**ctx.details, "budget_chars": budget, "items_in_budget": len(items)})

    def draws_on(self) -> str | None:
        """For a caption, the text this method draws on when it is not its settings' chunk pool (None: that pool)."""
        return None

    def respond(self, character: str, question: str) -> Response:
        ctx = self.context(character, question)
        name, work = self.dataset.profile(character)
        with charged([*ctx.calls]) as calls:
            reply = paid(calls, "respond", "chat", lambda: self.llm.chat(
                respond_messages(name, work, question, ctx.items), max_tokens=self.settings.max_tokens))
        return Response(character, question, self.name, reply.text.strip(), ctx.items, calls, ctx.details)


def chunk_items(role: str, chunks: Iterable[Chunk]) -> list[ContextItem]:
    return [ContextItem(role, c.text, (c.id,), c.context) for c in chunks]


KEPT_WHOLE = ("boundary",)  # roles of notes, not knowledge: a budget never cuts them (their text still counts)


def within_budget(items: Iterable[ContextItem], budget: int) -> list[ContextItem]:
    """The items in the order given while their texts fit ``budget`` characters, the first that does not cut at a
    word (dropped if no whole word fits); a note (:data:`KEPT_WHOLE`) is kept whole and spends the budget first (a
    note longer than the budget is still shown whole). A cut item keeps the chunk ids of the whole item.

    >>> items = [ContextItem("knowledge", "aaaa bbbb"), ContextItem("knowledge", "cc dd ee")]
    >>> [i.text for i in within_budget(items, 15)]
    ['aaaa bbbb', 'cc dd']
    """
    items = list(items)
    notes = sum(len(i.text) for i in items if i.role in KEPT_WHOLE)
    texts = iter(texts_within_budget([i.text for i in items if i.role not in KEPT_WHOLE], max(0, budget - notes),
                                     prefix=_word_prefix))
    out = []
    for item in items:
        if item.role in KEPT_WHOLE:
            out.append(item)
        elif (text := next(texts, None)) is not None and (text or not item.text):  # a cut with no whole word: dropped
            out.append(replace(item, text=text))
    return out


def _word_prefix(text: str, n: int) -> str:
    head = text[:n + 1]
    return head.rsplit(" ", 1)[0].rstrip() if " " in head else ""


@contextmanager
def charged(calls: Iterable[Call]):
    """On an exception, the calls in ``calls`` go on it as ``error.calls``, ahead of those an inner block put there,
    so that a failed answer's row still counts every call it paid for (:func:`~rpa_lib.evaluation.runner.run_jobs`).
    Each list is charged once, by the block that owns it: ``with charged(calls): paid(calls, ...)``."""
    try:
        yield calls
    except Exception as e:
        e.calls = [*calls, *getattr(e, "calls", ())]
        raise


def paid(calls: list[Call], purpose: str, kind: str, call: Callable[[], Any]):
    """``call()``'s reply, its trace appended to ``calls``, failed or not (an LLMError is traced, then raised)."""
    try:
        reply = call()
    except LLMError as e:
        calls.append(Call.failed(purpose, kind, e))
        raise
    calls.append(Method.trace(purpose, reply))
    return reply


def traced(calls: list[Call], purpose: str, kind: str, call: Callable[[], Any]):
    """:func:`paid`, but None when the model gave no valid answer (after its re-asks): the case a fallback is for.
    Any other failure (a fault that outlasted the retries, a refused key, a spent budget) is raised: the row fails."""
    try:
        return paid(calls, purpose, kind, call)
    except LLMNoValidAnswer:
        return None
