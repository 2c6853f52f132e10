"""AMADEUS: ACTS chunks, Guided Selection, the Attribute Extractor, then the in-character response.

For a question: retrieve the top-k ACTS chunks (the knowledge), rank the character's chunks by similarity and
run GS with an LLM judge (N = 30 examined at most, K = 2 slots), extract Belief and Value and Psychological
Traits from the selected chunks (AE, structured output), and answer with the knowledge plus the selected
chunks and attributes as the character's attributes. Paper settings are the defaults.

When AE cannot get valid JSON from the LLM after ``extract_retries`` re-asks (a very small local model), it asks
for each attribute in one free-text sentence instead; the failed structured call and the fallback calls are both
in the trace.
"""

from __future__ import annotations

from rpa_lib.methods.base import Call, Response, RoleplayMethod
from rpa_lib.methods.gs import Selection, guided_selection
from rpa_lib.methods.prompts import (
    AE_KEYS,
    AE_SCHEMA,
    JUDGE_OPTIONS,
    extract_messages,
    extract_text_messages,
    judge_messages,
    respond_messages,
)


class Amadeus(RoleplayMethod):
    name = "amadeus"

    def __init__(self, llm, *, splitter: str = "acts", max_iterations: int = 30, slot_size: int = 2,
                 window: int | None = None, extract: bool = True, extract_retries: int = 2, **settings):
        super().__init__(llm, splitter=splitter, **settings)
        self.max_iterations, self.slot_size, self.extract = max_iterations, slot_size, extract
        self.extract_retries = extract_retries
        # Speculative judging only pays where calls run concurrently (remote APIs); a local model runs one at a time.
        self.window = window or max(1, min(4, getattr(llm, "max_workers", 1)))

    def select(self, character: str, question: str) -> tuple[Selection, list[Call]]:
        """Guided Selection alone (for chunk statistics): the selection and the judge calls' trace."""
        name, work = self.profile(character)
        ranked = [hit.chunk for hit in self.retriever(character).search(question, max(self.max_iterations, self.slot_size + 1))]
        calls: dict[str, Call] = {}

        def judge(chunk) -> bool:
            reply = self.llm.choose(judge_messages(name, work, question, chunk), JUDGE_OPTIONS)
            calls[chunk.id] = self.trace("judge", reply)
            return reply.text == "yes"

        selection = guided_selection(ranked, judge, self.max_iterations, self.slot_size, self.window)
        examined = [calls[c.id] for c in ranked[:selection.examined] if c.id in calls]
        return selection, examined

    def attributes(self, character: str, question: str, chunks) -> tuple[dict[str, str], list[Call]]:
        """The Attribute Extractor: {"Belief and Value": ..., "Psychological Traits": ...} from the chunks, as
        structured output; one free-text sentence per attribute when the JSON stays invalid."""
        from rpa_lib.llm import LLMError

        name, work = self.profile(character)
        try:
            reply = self.llm.structured(extract_messages(name, work, question, chunks), AE_SCHEMA, max_tokens=200,
                                        max_retries=self.extract_retries)
        except LLMError as e:
            calls = [Call("extract", "structured", False, 0, 0, 0.0, f"failed: {e}")]
            attributes = {}
            for label in AE_KEYS.values():
                text = self.llm.chat(extract_text_messages(name, work, question, chunks, label), max_tokens=60)
                attributes[label] = text.text.strip()
                calls.append(self.trace("extract-text", text))
            return attributes, calls
        return {label: str(reply.data.get(key, "")).strip() for key, label in AE_KEYS.items()}, [self.trace("extract", reply)]

    def respond(self, character: str, question: str) -> Response:
        name, work = self.profile(character)
        knowledge = [hit.chunk for hit in self.retriever(character).search(question, self.k)]
        selection, calls = self.select(character, question)
        attributes = {}
        if self.extract:
            attributes, extract_calls = self.attributes(character, question, selection.selected)
            calls += extract_calls
        reply, call = self.answer(respond_messages(
            name, work, question, knowledge, attributes, selection.selected))
        return Response(character, question, self.name, reply, knowledge=knowledge, selected=selection.selected,
                        attributes=attributes, gs_failed=selection.failed, examined=selection.examined,
                        calls=[*calls, call])
