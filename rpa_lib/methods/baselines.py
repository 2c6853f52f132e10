"""The baselines of AMADEUS Table 6 that need no outside service: no RAG and Naive RAG.

- ``no_rag``: the role-play prompt with only the character's name and work; what the LLM already knows.
- ``naive_rag``: the top-k chunks most similar to the question as knowledge, from ACTS chunks by default (the
  paper applies ACTS to Naive RAG, and AMADEUS and CRAG draw from the same pool); ``splitter="vanilla"`` is the
  conventional fixed-length splitting (the named variant ``naive_rag_vanilla``).
- ``budget_chars``: instead of k, the top-ranked chunks until their texts hold this many characters; the chunk
  that would cross the budget is cut at the last word boundary inside it (counted in part), so the context is
  the budget (or the whole persona when that is shorter). The named variant ``naive_rag_budget`` is Naive RAG at
  AMADEUS's mean context budget (:func:`rpa_lib.evaluation.context.matched_budget`), the control that tells the
  method from the amount of text it shows.

Not here: choosing the budget (the notebooks measure AMADEUS's context and pass it).
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
    """``knowledge`` items of the ranked ``chunks`` whose texts add up to ``budget`` characters: whole chunks while
    they fit, then the next one cut at its last space within the rest, and no more (dropped when the rest
    holds no whole word): :func:`rpa_lib.text.within_budget`, cut at a word instead of a character.

    >>> from rpa_lib.splitters import Chunk
    >>> c = [Chunk(f"x:acts:{i}", "x", "acts", t, t, (), 0, len(t)) for i, t in enumerate(["aaaa bbbb", "cc dd ee"])]
    >>> [i.text for i in within_budget(c, 15)]
    ['aaaa bbbb', 'cc dd']
    """
    chunks = list(chunks)
    texts = texts_within_budget([c.text for c in chunks], budget, prefix=_word_prefix)
    items = [ContextItem.of_chunk("knowledge", c) for c in chunks[:len(texts)]]
    if texts and texts[-1] != chunks[len(texts) - 1].text:  # the last one was cut
        last = items.pop()
        if texts[-1]:
            items.append(ContextItem("knowledge", texts[-1], last.chunk_ids, last.label))
    return items


def _word_prefix(text: str, n: int) -> str:
    """``text`` cut to at most ``n`` characters at a word boundary ("" when no whole word fits)."""
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
