"""The baselines of AMADEUS Table 6 that need no outside service: no RAG (the name and work only) and Naive RAG
(the top-k chunks, or the whole ranking cut to ``budget_chars`` characters by :meth:`Method.budgeted`: the
budget-matched control). Not here: choosing the budget (``Experiment.answer_controls`` measures AMADEUS's context
and passes it).
"""

from __future__ import annotations

from dataclasses import dataclass

from rpa_lib.methods.base import AnswerSettings, Context, Method, RetrievalSettings, chunk_items
from rpa_lib.methods.registry import register


@dataclass(frozen=True)
class NaiveRAGSettings(RetrievalSettings):
    budget_chars: int | None = None  # characters of chunk text instead of k (None: top-k)


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
        return self.budgeted(Context(chunk_items("knowledge", ranked)))
