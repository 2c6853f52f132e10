"""The baselines of AMADEUS Table 6 that need no outside service: no RAG and Naive RAG.

- ``no_rag``: the role-play prompt with only the character's name and work; what the LLM already knows.
- ``naive_rag``: the top-k chunks most similar to the question as knowledge (default Vanilla chunks, the
  conventional fixed-length splitting; pass ``splitter="acts"`` to isolate GS and AE).

CRAG and LightRAG need web search and a graph store and live elsewhere.
"""

from __future__ import annotations

from rpa_lib.methods.base import Response, RoleplayMethod
from rpa_lib.methods.prompts import respond_messages


class NoRAG(RoleplayMethod):
    name = "no_rag"

    def respond(self, character: str, question: str) -> Response:
        name, work = self.profile(character)
        reply, call = self.answer(respond_messages(name, work, question))
        return Response(character, question, self.name, reply, calls=[call])


class NaiveRAG(RoleplayMethod):
    name = "naive_rag"

    def __init__(self, llm, *, splitter: str = "vanilla", **settings):
        super().__init__(llm, splitter=splitter, **settings)

    def retrieve(self, character: str, question: str):
        return [hit.chunk for hit in self.retriever(character).search(question, self.k)]

    def respond(self, character: str, question: str) -> Response:
        name, work = self.profile(character)
        knowledge = self.retrieve(character, question)
        reply, call = self.answer(respond_messages(name, work, question, knowledge))
        return Response(character, question, self.name, reply, knowledge=knowledge, calls=[call])
