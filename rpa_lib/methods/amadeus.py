"""AMADEUS: ACTS chunks, Guided Selection, the Attribute Extractor, then the in-character response.

For a question: retrieve the top-k ACTS chunks (the knowledge), rank the character's chunks by similarity and
run GS with an LLM judge (N = 30 examined at most, K = 2 slots), extract Belief and Value and Psychological
Traits from the selected chunks (AE, structured output), and answer with the knowledge plus the selected
chunks and attributes as the character's attributes. Paper settings are the defaults.

When AE cannot get valid JSON from the LLM after ``extract_retries`` re-asks (a very small local model), it asks
for each attribute in one free-text sentence instead; the failed structured call and the fallback calls are both
in the trace, each with the tokens it spent (the failed call's re-asks included). ``extract=False`` stops after
GS (chunk statistics need no attributes).

The trace holds every judge call GS paid for: the examined chunks' calls (``judge``) in walk order, then the
speculative ones the look-ahead sent past the stop (``judge-speculative``; one that raised is there as failed).

Context items: ``knowledge`` (top-k), ``attribute`` (one per AE attribute, with the selected chunks' ids) and
``selected`` (GS's slot, or its top K+1 fallback). Each chunk is shown once: a GS-selected chunk that is also
among the top-k appears only as ``selected`` (so the knowledge block then holds fewer than k chunks). Details:
``gs_failed``, ``examined``, ``speculative``, ``speculative_errors``, ``attributes``, ``selected_in_top_k`` (how
many selected chunks were among the top-k), ``extract_fallback``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from rpa_lib.llm import LLMError
from rpa_lib.methods.base import Call, Context, ContextItem, Method, RetrievalSettings, chunk_items
from rpa_lib.methods.gs import Selection, guided_selection, parse_window
from rpa_lib.methods.prompts import (
    AE_KEYS,
    AE_SCHEMA,
    JUDGE_OPTIONS,
    extract_messages,
    extract_text_messages,
    judge_messages,
)
from rpa_lib.methods.registry import register


@dataclass(frozen=True)
class AmadeusSettings(RetrievalSettings):
    splitter: str = "acts"
    max_iterations: int = 30  # GS: N, chunks examined at most (paper: 30)
    slot_size: int = 2  # GS: K, chunks kept at most (paper: 2)
    window: int | str | None = None  # GS look-ahead of concurrent judge calls: an int, "adaptive" or "adaptive:M"
    #                                  (rpa_lib.methods.gs); None: the LLM's lookahead (batch rounds: 8), else 4
    #                                  on remote APIs, 1 locally
    extract: bool = True  # run the Attribute Extractor
    extract_retries: int = 2  # re-asks when AE's JSON is invalid, before the free-text fallback
    extract_format: str = "json"  # AE's reply: "json" (one structured call; free text if it stays invalid) or
    #                               "text" (one free-text call per attribute, for models that cannot write JSON)

    k: int = 3  # top-k chunks given as knowledge beside GS's; 0: the GS chunks are the only chunks

    min_k: ClassVar[int] = 0  # k = 0: AMADEUS with GS alone choosing the chunks

    def __post_init__(self):
        super().__post_init__()
        if self.extract_format not in ("json", "text"):
            raise ValueError(f"extract_format must be 'json' or 'text', not {self.extract_format!r}")
        if self.max_iterations < 0 or self.slot_size < 1:
            raise ValueError(f"need max_iterations >= 0 and slot_size >= 1 (got {self.max_iterations}, {self.slot_size})")
        if self.window is not None:
            parse_window(self.window)  # a ValueError naming the valid forms


@register
class Amadeus(Method):
    name = "amadeus"
    Settings = AmadeusSettings

    gs_llm = None  # the LLM of GS and AE (build_method's gs_llm); None: the role-play LLM

    def __init__(self, llm, settings=None, dataset=None):
        super().__init__(llm, settings, dataset)
        # Speculative judging only pays where calls run concurrently (remote APIs); a local model runs one at a time.
        # One policy object per method: an adaptive window learns the judge's yes-rate across walks. In batch rounds
        # the LLM asks for a wide fixed window (its lookahead): one round judges that many chunks of a walk.
        self.window = parse_window(self.settings.window or getattr(llm, "lookahead", None)
                                   or max(1, min(4, getattr(llm, "max_workers", 1))))

    @property
    def selector(self):
        """The LLM that runs Guided Selection and the Attribute Extractor: ``gs_llm``, else the role-play LLM."""
        return self.gs_llm or self.llm

    def select(self, character: str, question: str) -> tuple[Selection, list[Call]]:
        """Guided Selection alone: the selection and the trace of every judge call the walk paid for: those of
        the examined chunks (``judge``), then the speculative ones (``judge-speculative``)."""
        s = self.settings
        name, work = self.profile(character)
        ranked = self.search(character, question, max(s.max_iterations, s.slot_size + 1))
        calls: dict[str, Call] = {}

        def judge(chunk) -> bool:
            try:
                reply = self.selector.choose(judge_messages(name, work, question, chunk), JUDGE_OPTIONS)
            except LLMError as e:  # in the trace with what it spent; raised (a speculative one is only counted)
                calls[chunk.id] = Call.failed("judge", "choose", e)
                raise
            calls[chunk.id] = self.trace("judge", reply)
            return reply.text == "yes"

        selection = guided_selection(ranked, judge, s.max_iterations, s.slot_size, self.window)
        walked = ranked[:selection.examined]
        ahead = ranked[selection.examined:selection.examined + selection.speculative]
        trace = [calls[c.id] for c in walked if c.id in calls]
        trace += [replace(calls[c.id], purpose="judge-speculative") for c in ahead if c.id in calls]
        return selection, trace

    def attributes(self, character: str, question: str, chunks) -> tuple[dict[str, str], list[Call]]:
        """The Attribute Extractor: {"Belief and Value": ..., "Psychological Traits": ...} from the chunks, as
        structured output; one free-text sentence per attribute when the JSON stays invalid, or at once with
        ``extract_format="text"``."""
        name, work = self.profile(character)
        calls = []
        if self.settings.extract_format == "json":
            try:
                reply = self.selector.structured(extract_messages(name, work, question, chunks), AE_SCHEMA, max_tokens=200,
                                            max_retries=self.settings.extract_retries)
                return ({label: str(reply.data.get(key, "")).strip() for key, label in AE_KEYS.items()},
                        [self.trace("extract", reply)])
            except LLMError as e:
                calls.append(Call.failed("extract", "structured", e))
        attributes = {}
        for label in AE_KEYS.values():
            text = self.selector.chat(extract_text_messages(name, work, question, chunks, label), max_tokens=60)
            attributes[label] = text.text.strip()
            calls.append(self.trace("extract-text", text))
        return attributes, calls

    def context(self, character: str, question: str) -> Context:
        knowledge = self.search(character, question, self.settings.k) if self.settings.k else []
        selection, calls = self.select(character, question)
        attributes: dict[str, str] = {}
        if self.settings.extract:
            attributes, extract_calls = self.attributes(character, question, selection.selected)
            calls += extract_calls
        sources = tuple(c.id for c in selection.selected)
        # Each chunk reaches the LLM once: a GS-selected chunk that is also among the top-k is shown only with the
        # selected passages (where its role is the character's), not repeated in the knowledge block.
        repeated = [c for c in knowledge if c.id in sources]
        knowledge = [c for c in knowledge if c.id not in sources]
        items = [*chunk_items("knowledge", knowledge),
                 *(ContextItem("attribute", text, sources, label) for label, text in attributes.items()),
                 *chunk_items("selected", selection.selected)]
        details = {"gs_failed": selection.failed, "examined": selection.examined, "speculative": selection.speculative,
                   "speculative_errors": selection.speculative_errors, "attributes": attributes, "selected_in_top_k": len(repeated), "extract_fallback": self.settings.extract_format == "json" and any(c.purpose == "extract-text" for c in calls)}
        return Context(items, calls, details)
