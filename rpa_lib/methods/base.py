"""The one interface every role-playing method answers through: ``method.respond(character, question)``.

A method is built for a setting (LLM, splitter, embedder, k, ...) and answers any character of the dataset
with a :class:`Response`: the reply, the chunks given as knowledge, the chunks Guided Selection picked, the
extracted attributes, whether GS failed, and a trace of every LLM call (with cache hits). So an experiment
is "characters x questions x method x LLM", and evaluations never need to know which method they talk to.

This module defines the records and the registry; the methods live in ``baselines`` and ``amadeus``.
"""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rpa_lib import paths
from rpa_lib.data import load_labels
from rpa_lib.retrieval import Retriever
from rpa_lib.splitters import Chunk


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


@dataclass
class Response:
    character: str
    question: str
    method: str
    reply: str
    knowledge: list[Chunk] = field(default_factory=list)  # chunks given to the responder as knowledge
    selected: list[Chunk] = field(default_factory=list)  # chunks chosen by Guided Selection (AMADEUS)
    attributes: dict[str, str] = field(default_factory=dict)  # AE output: Belief and Value, Psychological Traits
    gs_failed: bool | None = None  # None when the method has no GS
    examined: int = 0  # chunks GS asked the judge about
    calls: list[Call] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["knowledge"] = [c.id for c in self.knowledge]
        d["selected"] = [c.id for c in self.selected]
        return d


class Method:
    """Base class: subclasses set ``name`` and implement :meth:`respond`."""

    name = "method"

    def respond(self, character: str, question: str) -> Response:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name})"


class RoleplayMethod(Method):
    """Shared plumbing: the LLM, each character's name and work, one retriever per character (lazy), and
    turning LLM replies into trace records."""

    def __init__(self, llm, *, splitter: str = "acts", embedder: str = "minilm", k: int = 3,
                 data_dir: Path | None = None, max_tokens: int = 160):
        self.llm, self.splitter, self.embedder, self.k = llm, splitter, embedder, k
        self.data_dir, self.max_tokens = data_dir, max_tokens
        self._retrievers: dict[str, Retriever] = {}
        self._profiles: dict[str, tuple[str, str]] | None = None
        self._lock = threading.Lock()

    def profile(self, character: str) -> tuple[str, str]:
        """(name, work) of a character, from ``labels.csv``, else the persona's title."""
        with self._lock:
            if self._profiles is None:
                root = Path(self.data_dir) if self.data_dir else paths.DATA_DIR
                rows = load_labels(self.data_dir) if (root / "labels.csv").is_file() else []
                self._profiles = {r["slug"]: (r["name"], r["work"]) for r in rows}
        if character not in self._profiles:
            self._profiles[character] = (self.retriever(character).persona.name, "their story")
        return self._profiles[character]

    def retriever(self, character: str) -> Retriever:
        with self._lock:
            if character not in self._retrievers:
                chars_dir = Path(self.data_dir) / "characters" if self.data_dir else None
                self._retrievers[character] = Retriever.for_character(character, self.splitter, self.embedder,
                                                                      characters_dir=chars_dir)
            return self._retrievers[character]

    @staticmethod
    def trace(purpose: str, reply) -> Call:
        return Call(purpose, reply.kind, reply.cached, reply.prompt_tokens, reply.completion_tokens,
                    round(reply.seconds, 3), reply.text)

    def answer(self, messages: list[dict]) -> tuple[str, Call]:
        """The in-character reply to ``messages`` and its trace record."""
        reply = self.llm.chat(messages, max_tokens=self.max_tokens)
        return reply.text.strip(), self.trace("respond", reply)
