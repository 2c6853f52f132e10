"""AMADEUS: top-k ACTS chunks, Guided Selection (Algorithm 1), the Attribute Extractor, then the in-character
response; paper settings are the defaults. Context items: ``knowledge`` (top-k, less any GS-selected chunk, shown
once), ``attribute`` and ``selected``. Not here: the GS walk itself (:mod:`rpa_lib.methods.gs`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from rpa_lib.llm import LLMError
from rpa_lib.methods.base import (
    Call,
    Context,
    ContextItem,
    Method,
    RetrievalSettings,
    charged,
    chunk_items,
    paid,
    traced,
)
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

EXTRACT_FORMATS = ("json", "text")  # AE: structured output, or one free-text call per attribute


@dataclass(frozen=True)
class AmadeusSettings(RetrievalSettings):
    max_iterations: int = 30  # GS: N, chunks examined at most (paper: 30)
    slot_size: int = 2  # GS: K, chunks kept at most (paper: 2)
    window: int | str | None = None  # GS look-ahead: an int, "adaptive" or "adaptive:M"; None: the LLM's lookahead,
    #                                  else 4 on remote APIs, 1 locally
    extract: bool = True  # run the Attribute Extractor
    extract_retries: int = 2  # re-asks when AE's JSON is invalid, before the free-text fallback
    extract_format: str = "json"  # "json" (one structured call, free text if it stays invalid) | "text" (per attribute)
    k: int = 3  # top-k chunks given as knowledge beside GS's; 0: the GS chunks are the only chunks
    min_k: ClassVar[int] = 0

    def __post_init__(self):
        super().__post_init__()
        if self.extract_format not in EXTRACT_FORMATS:
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

    _window = _window_for = None  # the look-ahead policy and the judging LLM it was sized for

    @property
    def selector(self):
        """The LLM of Guided Selection and the Attribute Extractor."""
        return self.gs_llm or self.llm

    @property
    def window(self):
        """GS look-ahead, sized for the LLM that judges (gs_llm is attached after __init__, so not built there).
        One policy object per judging LLM, so an adaptive window learns the judge's yes-rate across walks."""
        judge = self.selector
        if self._window_for is not judge:
            size = getattr(judge, "lookahead", None) or max(1, min(4, getattr(judge, "max_workers", 1)))
            self._window_for, self._window = judge, parse_window(self.settings.window or size)
        return self._window

    def select(self, character: str, question: str) -> tuple[Selection, list[Call]]:
        """Guided Selection alone, and the trace of every judge call it paid for (speculative ones last)."""
        s = self.settings
        name, work = self.dataset.profile(character)
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

        with charged(calls.values()):  # a failed walk: every judge call it paid for, speculative ones included
            selection = guided_selection(ranked, judge, s.max_iterations, s.slot_size, self.window)
        n = selection.examined
        judged = [(i, calls[c.id]) for i, c in enumerate(ranked[:n + selection.speculative]) if c.id in calls]
        trace = [call if i < n else replace(call, purpose="judge-speculative") for i, call in judged]
        return selection, trace

    def attributes(self, character: str, question: str, chunks, calls: list[Call]) -> dict[str, str]:
        """The Attribute Extractor: {"Belief and Value": ..., "Psychological Traits": ...} from the chunks, each call
        it makes traced in ``calls``."""
        name, work = self.dataset.profile(character)
        if self.settings.extract_format == "json":
            reply = traced(calls, "extract", "structured", lambda: self.selector.structured(
                extract_messages(name, work, question, chunks), AE_SCHEMA, max_tokens=200,
                max_retries=self.settings.extract_retries))
            if reply is not None:
                return {label: str(reply.data.get(key, "")).strip() for key, label in AE_KEYS.items()}
        attributes = {}
        for label in AE_KEYS.values():
            text = paid(calls, "extract-text", "chat", lambda label=label: self.selector.chat(
                extract_text_messages(name, work, question, chunks, label), max_tokens=60))
            attributes[label] = text.text.strip()
        return attributes

    def context(self, character: str, question: str) -> Context:
        knowledge = self.search(character, question, self.settings.k) if self.settings.k else []
        selection, calls = self.select(character, question)
        attributes: dict[str, str] = {}
        if self.settings.extract and selection.selected:  # AE reads GS's chunks: with none (GS off) it has nothing
            with charged(calls):  # a failed extraction: GS's calls and its own
                attributes = self.attributes(character, question, selection.selected, calls)
        sources = tuple(c.id for c in selection.selected)
        top_k = len(knowledge)
        knowledge = [c for c in knowledge if c.id not in sources]  # a GS-selected chunk is shown once, as selected
        items = [*chunk_items("knowledge", knowledge),
                 *(ContextItem("attribute", text, sources, label) for label, text in attributes.items()),
                 *chunk_items("selected", selection.selected)]
        details = {"gs_failed": selection.failed, "examined": selection.examined, "speculative": selection.speculative,
                   "speculative_errors": selection.speculative_errors, "attributes": attributes,
                   "selected_in_top_k": top_k - len(knowledge),
                   "extract_fallback": self.settings.extract_format == "json"
                   and any(c.purpose == "extract-text" for c in calls)}
        return Context(items, calls, details)
