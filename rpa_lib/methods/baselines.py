"""The baselines of AMADEUS Table 6 that need no outside service: no RAG and Naive RAG.

- ``no_rag``: the role-play prompt with only the character's name and work; what the LLM already knows.
- ``naive_rag``: the top-k chunks most similar to the question as knowledge (default Vanilla chunks, the
  conventional fixed-length splitting; ``splitter="acts"`` isolates what GS and AE add).
"""

from __future__ import annotations

from rpa_lib.methods.base import AnswerSettings, Context, Method, RetrievalSettings, chunk_items


class NoRAG(Method):
    name = "no_rag"
    Settings = AnswerSettings


class NaiveRAG(Method):
    name = "naive_rag"
    Settings = RetrievalSettings

    def context(self, character: str, question: str) -> Context:
        return Context(chunk_items("knowledge", self.search(character, question, self.settings.k)))
