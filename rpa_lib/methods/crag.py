"""CRAG-offline: Corrective RAG (Yan et al. 2024) with its web search replaced by BM25 over a persona corpus
(:mod:`rpa_lib.methods.bm25`). An LLM evaluator scores the top-k chunks, routes the question (correct, ambiguous,
incorrect) and refines persona and search texts into sentence strips. Every table names it as not a web search
(:attr:`Crag.label`); its departures from CRAG are listed in ``docs/design/methods.md`` and by :func:`departures`.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, field

import pandas as pd

from rpa_lib.methods.base import Call, Context, ContextItem, Method, RetrievalSettings, charged, paid, traced
from rpa_lib.methods.bm25 import CORPORA, CORPUS_WORDS, corpus_for
from rpa_lib.methods.crag_prompts import (
    EVALUATOR_OPTIONS,
    GRADES,
    IRRELEVANT,
    RELEVANT,
    evaluator_messages,
    grade_messages,
    keywords_messages,
)
from rpa_lib.methods.registry import register
from rpa_lib.text import segmenter

CORRECT, INCORRECT, AMBIGUOUS = "correct", "incorrect", "ambiguous"
ROUTES = (CORRECT, AMBIGUOUS, INCORRECT)
EVALUATORS = ("scale", "binary")


def crag_label(corpus: str) -> str:
    """How tables name the method. ``crag_label("others")`` -> ``"CRAG-offline (web search replaced by BM25 over
    the other characters' personas)"``"""
    return f"CRAG-offline (web search replaced by BM25 over {CORPUS_WORDS[corpus]})"


@dataclass(frozen=True)
class CragSettings(RetrievalSettings):
    evaluator: str = "scale"  # scale (a grade from 1 to 5: graded on every backend) | binary (relevant / irrelevant)
    upper: float = 0.5  # Correct when some chunk scores >= upper (CRAG's PubQA value)
    lower: float = -0.5  # Incorrect when every chunk scores < lower
    strip_sentences: int = 3  # sentences per knowledge strip (CRAG's excerption: 3)
    max_strips: int = 5  # strips kept per source at most (CRAG: top 5)
    strip_threshold: float = -0.5  # a strip is kept only when it scores above this
    corpus: str = "pooled"  # pooled | others | none: what BM25 searches instead of the web
    search_k: int = 5  # paragraphs BM25 returns
    max_keywords: int = 3  # keywords of the rewritten query
    budget_chars: int | None = None  # context cut to this many characters, in the order given (None: no budget)

    def __post_init__(self):
        super().__post_init__()
        if not -1 <= self.lower <= self.upper <= 1:
            raise ValueError(f"need -1 <= lower <= upper <= 1 (got lower={self.lower}, upper={self.upper})")
        if not -1 <= self.strip_threshold < 1:
            raise ValueError(f"strip_threshold must be in [-1, 1), not {self.strip_threshold}")
        for name, choices in (("evaluator", EVALUATORS), ("corpus", CORPORA)):
            if getattr(self, name) not in choices:
                raise ValueError(f"unknown {name} {getattr(self, name)!r}; choose one of {', '.join(choices)}")
        for name in ("strip_sentences", "max_strips", "search_k", "max_keywords"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, not {getattr(self, name)}")


def grade_score(reply) -> float:
    """The expected grade under the softmax of the options' log-scores (else the chosen grade), mapped by
    ``(grade - 3) / 2`` onto [-1, 1]. ``grade_score(Reply("4", kind="choose")) == 0.5``"""
    scores = reply.scores or {}
    if all(g in scores and not math.isnan(scores[g]) for g in GRADES):
        top = max(scores[g] for g in GRADES)
        if not math.isinf(top):
            weights = [math.exp(scores[g] - top) for g in GRADES]
            expected = sum(int(g) * w for g, w in zip(GRADES, weights, strict=True)) / sum(weights)
            return round((expected - 3) / 2, 6)
    return (int(reply.text) - 3) / 2


def relevance(reply) -> float:
    """P(relevant) - P(irrelevant) from the options' log-scores (rounded so 3:1 odds give 0.5), else +1 / -1."""
    scores = reply.scores or {}
    if RELEVANT in scores and IRRELEVANT in scores:
        diff = scores[RELEVANT] - scores[IRRELEVANT]
        if not math.isnan(diff):
            return round(math.tanh(diff / 2), 6)  # = (e^a - e^b) / (e^a + e^b)
    return 1.0 if reply.text == RELEVANT else -1.0


def route(scores: list[float], upper: float, lower: float) -> str:
    """CRAG's action. ``route([0.5, -1.0], 0.5, -0.5)`` -> ``"correct"`` (a threshold itself counts as reached)."""
    if any(s >= upper for s in scores):
        return CORRECT
    if all(s < lower for s in scores):
        return INCORRECT
    return AMBIGUOUS


@functools.lru_cache(maxsize=4096)  # the same chunks come back for many questions; pysbd was a third of a query
def sentence_groups(text: str, size: int) -> tuple[tuple[int, int], ...]:
    """Spans of ``size`` sentences (pysbd). ``sentence_groups("A b. C d. E f.", 2)`` -> ``((0, 10), (10, 14))``"""
    spans = segmenter("en", spans=True).segment(text)
    return tuple((spans[i].start, spans[min(i + size, len(spans)) - 1].end) for i in range(0, len(spans), size))


@dataclass
class Strip:
    text: str  # as shown to the evaluator and the answer
    label: str
    chunk_ids: list[str]
    source: str  # "internal" | "external"
    order: int  # position in the retrieved text
    score: float = 0.0


@dataclass
class _Doc:
    body: str
    label: str
    source: str
    prefix: str = ""
    chunk_ids: list[str] = field(default_factory=list)  # internal: the persona chunk it is
    offset: int | None = None  # a search hit from this character's persona: where it starts there


@register
class Crag(Method):
    name = "crag"
    Settings = CragSettings

    @property
    def label(self) -> str:
        return crag_label(self.settings.corpus)

    def evaluate(self, name: str, work: str, question: str, text: str, source: str, purpose: str,
                 calls: list[Call]) -> float:
        messages, options, score = ((grade_messages, GRADES, grade_score) if self.settings.evaluator == "scale"
                                    else (evaluator_messages, EVALUATOR_OPTIONS, relevance))
        reply = paid(calls, purpose, "choose",
                     lambda: self.llm.choose(messages(name, work, question, text, source), options))
        return score(reply)

    def keywords(self, name: str, work: str, question: str, calls: list[Call]) -> list[str]:
        """The rewritten query (at most ``max_keywords``); the question itself when the reply has none."""
        reply = traced(calls, "rewrite", "chat", lambda: self.llm.chat(
            keywords_messages(name, work, question, self.settings.max_keywords), max_tokens=32))
        if reply is None:
            return [question]
        words = [w.strip(" \t-*•\"'`.") for w in re.split(r"[,;\n]", reply.text)]
        words = [re.sub(r"^\d+[.)]\s*", "", w) for w in words]
        return [w for w in words if w][: self.settings.max_keywords] or [question]

    def refine(self, character: str, question: str, docs: list[_Doc], calls: list[Call]) -> list[Strip]:
        """Decompose, filter, recompose: the kept strips in reading order (each strip scored is a "refine" call)."""
        s = self.settings
        name, work = self.dataset.profile(character)
        strips: dict[str, Strip] = {}  # by text: a sentence shared by overlapping chunks is scored once
        for doc in docs:
            for start, end in sentence_groups(doc.body, s.strip_sentences):
                raw = doc.body[start:end]
                body = raw.strip()
                if not body:
                    continue
                text = doc.prefix + body
                if doc.offset is None:
                    ids = doc.chunk_ids
                else:
                    at = doc.offset + start + len(raw) - len(raw.lstrip())
                    ids = self._holding(character, at, at + len(body))
                strip = strips.setdefault(text, Strip(text, doc.label, [], doc.source, len(strips)))
                strip.chunk_ids += [i for i in ids if i not in strip.chunk_ids]
        for strip in strips.values():
            strip.score = self.evaluate(name, work, question, strip.text, strip.label, "refine", calls)
        passing = [t for t in strips.values() if t.score > s.strip_threshold]
        best = sorted(passing, key=lambda t: (-t.score, t.order))[: s.max_strips]
        return sorted(best, key=lambda t: t.order)

    def _holding(self, character: str, start: int, end: int) -> list[str]:
        """This character's chunks (of this method's splitter) that hold the span, else those that overlap it."""
        chunks = self.retriever(character).chunks
        inside = [c.id for c in chunks if c.start <= start and end <= c.end]
        return inside or [c.id for c in chunks if c.start < end and start < c.end]

    def context(self, character: str, question: str) -> Context:
        s = self.settings
        name, work = self.dataset.profile(character)
        calls: list[Call] = []
        with charged(calls):  # a failed answer's row still counts the calls it paid for
            chunks = self.search(character, question, s.k)
            scores = {c.id: self.evaluate(name, work, question, c.text, c.context, "evaluate", calls) for c in chunks}
            action = route(list(scores.values()), s.upper, s.lower)
            internal: list[Strip] = []
            external: list[Strip] = []
            keywords: list[str] = []
            if action in (CORRECT, AMBIGUOUS):
                docs = [_Doc(c.body, c.context, "internal", chunk_ids=[c.id]) for c in chunks]
                internal = self.refine(character, question, docs, calls)
            if action in (INCORRECT, AMBIGUOUS) and s.corpus != "none":
                keywords = self.keywords(name, work, question, calls)
                corpus = corpus_for(self.dataset, character, s.corpus)
                hits = [f.passage for f in corpus.search(" ".join(keywords), s.search_k)]
                names = {c: self.dataset.profile(c)[0] for c in {p.character for p in hits}}
                docs = [_Doc(p.body, p.label, "external", prefix=f"{names[p.character]}: ",
                             offset=p.start if p.character == character else None) for p in hits]
                external = self.refine(character, question, docs, calls)
        items = [*(ContextItem("knowledge", t.text, tuple(t.chunk_ids), t.label) for t in internal),
                 *(ContextItem("external", t.text, tuple(t.chunk_ids), t.label) for t in external)]
        details = {"route": action, "chunk_scores": scores, "keywords": keywords,
                   "strips_examined": sum(c.purpose == "refine" for c in calls),
                   "strips": [{"source": t.source, "label": t.label, "score": t.score, "text": t.text,
                               "chunk_ids": list(t.chunk_ids)} for t in [*internal, *external]],
                   "corpus": s.corpus, "label": self.label, "evaluator": s.evaluator}
        return self.budgeted(Context(items, calls, details))


def departures(settings: CragSettings) -> str:
    """One line for a caption: how this CRAG departs from the original."""
    s = settings
    evaluator = "grades passages 1-5" if s.evaluator == "scale" else "says relevant or irrelevant"
    own = " (this character's own included)" if s.corpus == "pooled" else ""
    return (f"CRAG-offline departs from CRAG: an LLM {evaluator} (not CRAG's fine-tuned T5); thresholds {s.upper:g} / "
            f"{s.lower:g}, not tuned per dataset; strips of {s.strip_sentences} sentences, at most {s.max_strips} per "
            f"source scoring above {s.strip_threshold:g}, in reading order (CRAG: top 10 internal / 5 web strips by "
            f"score); the top {s.k} chunks evaluated (CRAG: 10 documents); BM25 over {CORPUS_WORDS[s.corpus]}{own} "
            "instead of web search, its paragraphs cut into strips (CRAG keeps web pages whole)")


def route_counts(rows: pd.DataFrame) -> pd.DataFrame:
    """Per method whose rows carry a ``route`` (in ``details`` or a column): the count and share of each action."""
    out = []
    ok = rows[rows.error.isna()] if "error" in rows else rows
    for method, g in ok.groupby("method", sort=False):
        if "details" in g:
            routes = [d.get("route") for d in g.details if isinstance(d, dict) and d.get("route")]
        else:  # rows that keep the route alone (the interview rows)
            routes = [r for r in g.get("route", pd.Series(dtype=object)) if isinstance(r, str)]
        if not routes:
            continue
        row = {"method": method, "questions": len(routes)}
        for r in ROUTES:
            row[r] = routes.count(r)
            row[f"{r}_share"] = round(routes.count(r) / len(routes), 3)
        out.append(row)
    return pd.DataFrame(out, columns=["method", "questions", *ROUTES, *(f"{r}_share" for r in ROUTES)])


def routes_text(routes: pd.DataFrame) -> list[str]:
    """A caption's count of each method's actions (:func:`route_counts`), a control named after "CRAG routes"."""
    return [f"CRAG routes{'' if r.method == 'crag' else f' ({r.method})'} correct/ambiguous/incorrect "
            f"{r.correct}/{r.ambiguous}/{r.incorrect} of {r.questions}" for r in routes.itertuples()]
