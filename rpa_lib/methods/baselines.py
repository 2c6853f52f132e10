"""The baselines of AMADEUS Table 6 that need no outside service: no RAG (the name and work only) and Naive RAG
(the top-k chunks, or the top-ranked chunks up to ``budget_chars`` characters: the budget-matched control). Not
here: choosing the budget (the notebooks measure AMADEUS's context and pass it).
"""

from __future__ import annotations

from dataclasses import dataclass

from rpa_lib.methods.base import AnswerSettings, Context, ContextItem, Method, RetrievalSettings, chunk_items
from rpa_lib.methods.registry import register
from rpa_lib.text import within_budget as texts_within_budget


@dataclass(frozen=True)
class NaiveRAGSettings(RetrievalSettings):
    budget_chars: int | None = None  # characters of chunk text instead of k (None: top-k)

    def __post_init__(self):
        super().__post_init__()
        if self.budget_chars is not None and self.budget_chars < 1:
            raise ValueError(f"budget_chars must be at least 1 (or None for top-k), not {self.budget_chars}")


def within_budget(chunks, budget: int) -> list[ContextItem]:
    """``knowledge`` items of the ranked ``chunks`` up to ``budget`` characters, the last one cut at a word.

    >>> from rpa_lib.splitters import Chunk
    >>> c = [Chunk(f"x:acts:{i}", "x", "acts", t, t, (), 0, len(t)) for i, t in enumerate(["aaaa bbbb", "cc dd ee"])]
    >>> [i.text for i in within_budget(c, 15)]
    ['aaaa bbbb', 'cc dd']
    """
    chunks = list(chunks)
    texts = texts_within_budget([c.text for c in chunks], budget, prefix=_word_prefix)
    items = [ContextItem("knowledge", t, (c.id,), c.context) for c, t in zip(chunks, texts)]
    if texts and not texts[-1] and chunks[len(texts) - 1].text:  # the last one, cut, holds no whole word
        items.pop()
    return items


def _word_prefix(text: str, n: int) -> str:
    head = text[:n + 1]
    return head.rsplit(" ", 1)[0].rstrip() if " " in head else ""


@register
class NoRAG(Method):
    name = "no_rag"
    Settings = AnswerSettings


@register
class NaiveRAG(Method):
    name = "naive_rag"
    Settings = NaiveRAGSettings

    def context(self, character: str, question: str) -> Context:
        s = self.settings
        if s.budget_chars is None:
            return Context(chunk_items("knowledge", self.search(character, question, s.k)))
        ranked = self.search(character, question, len(self.retriever(character).chunks))
        items = within_budget(ranked, s.budget_chars)
        return Context(items, details={"budget_chars": s.budget_chars, "chunks_in_budget": len(items)})
