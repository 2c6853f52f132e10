"""CRAG-offline (web search replaced by BM25 over a persona corpus): Corrective RAG (Yan et al. 2024), as the
AMADEUS paper uses it as a baseline, with the web search swapped for an offline BM25 search.

For a question:

1. Retrieve the top-k persona chunks (as Naive RAG does, from the same ACTS pool by default) and let the
   **retrieval evaluator** score each one in [-1, 1]. ``evaluator="scale"`` (default): the LLM grades how far the
   chunk helps answer the question from 1 to 5 (:func:`~rpa_lib.methods.crag_prompts.grade_messages`); where the
   backend gives a log-score per option (OpenAI-compatible logprobs, the local model) the score is the expected
   grade under the softmax of those scores, else the chosen grade, mapped linearly (1 -> -1, 3 -> 0, 5 -> 1). So
   the score is graded on every backend, a json_schema server included. ``evaluator="binary"``: relevant or
   irrelevant, scored P(relevant) - P(irrelevant) from log-scores, else +1 / -1 (on a backend without scores only
   two actions can fire).
2. Route: **Correct** when some chunk scores >= ``upper``; **Incorrect** when every chunk scores < ``lower``;
   **Ambiguous** otherwise.
3. **Knowledge refinement** (decompose, filter, recompose): cut the text into strips of ``strip_sentences``
   sentences (pysbd), score every strip with the same evaluator, keep the ``max_strips`` best scoring above
   ``strip_threshold``, and put them back in the order they had in the retrieved text (documents in retrieval
   order, strips in reading order), not in score order.
4. **Search** (CRAG's web search; here offline): the LLM rewrites the question as at most ``max_keywords``
   keywords, BM25 (:mod:`rpa_lib.methods.bm25`) returns the top ``search_k`` paragraphs of the ``corpus``
   (``pooled``: every persona, default; ``others``: all but this character's; ``none``: nothing), refined as in 3.
5. Correct answers from the refined persona strips, Incorrect from the refined search strips, Ambiguous from both.

It is **not** a web search, and every table must say so: :attr:`Crag.label` reads
``CRAG-offline (web search replaced by BM25 over all characters' personas)`` (or the corpus in use).

**Against the original** (Yan et al. 2024 and its code, HuskyInSalt/CRAG), each departure named:

- Evaluator: CRAG fine-tunes T5-large to output one score per (question, document), trained towards +1 / -1; we
  have no such model and let the LLM grade on a five-point scale mapped onto [-1, 1] (departure).
- Thresholds: CRAG tunes them per dataset on its evaluator's scores (PopQA upper 0.592, lower -0.995; PubQA 0.5 and
  -0.915). Ours, ``upper = 0.5`` (CRAG's PubQA upper: some chunk graded 4, "mostly", or better) and ``lower = -0.5``
  (every chunk graded 1). On whole grades -0.5 routes exactly as PubQA's -0.915 (a chunk graded 2 scores -0.5,
  which is not below either); with expected grades from log-scores ours is the looser (departure, untuned).
- Strips: CRAG's "excerption" decomposition joins three sentences a strip (as ``strip_sentences = 3`` here); it
  keeps the top 10 strips of retrieved documents (top 3 whole passages in its "selection" mode, the default of
  its scripts) and the top 5 of web pages, whatever their score, joined in score order. Ours keeps at most
  ``max_strips = 5`` of each source, only those scoring above ``strip_threshold = -0.5`` (graded 3, "partly", or
  better), in reading order (departures: a cap that keeps the context near Naive RAG's, a floor so that a strip
  the evaluator rejects is never shown, and reading order so that recomposed text reads as written).

- Documents evaluated: CRAG's evaluator scores the top 10 retrieved documents; ours the top ``k`` chunks of the
  shared pool (3 or 5 in our profiles), so the persona side sees fewer passages (departure, for equal context).
- Search results: CRAG keeps web pages as whole paragraphs in its default scripts; ours cuts the BM25 paragraphs
  into the same sentence strips as the persona chunks and refines them (departure).
- Corpus: the ``pooled`` corpus (default) holds every persona's paragraphs, **this character's own included**, so
  the ambiguous and incorrect routes can bring back the character's own text (unchunked, outside the ACTS pool)
  as well as other characters'; ``others`` leaves the character's own out and ``none`` searches nothing. The
  label and :func:`departures` name the corpus in use.

Context items: ``knowledge`` (refined strips of this character's chunks, with their chunk ids) and ``external``
(refined search strips, prefixed with the name of the character whose persona they come from; chunk ids only
when that is this character: the chunks of this method's splitter that hold the strip). Details: ``route``,
``chunk_scores`` (chunk id -> score), ``keywords``, ``strips`` (those kept: source, label, score, text),
``strips_examined``, ``corpus``, ``label``, ``evaluator``. :func:`route_counts` counts the routes of a run.

Calls are made one after another (``run_jobs`` runs questions concurrently); an evaluator error fails the job.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, field

import pandas as pd

from rpa_lib.llm import LLMError
from rpa_lib.methods.base import Call, Context, ContextItem, Method, RetrievalSettings
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
    upper: float = 0.5  # Correct when some chunk scores >= upper (see the module docstring for why)
    lower: float = -0.5  # Incorrect when every chunk scores < lower
    strip_sentences: int = 3  # sentences per knowledge strip (CRAG's excerption: 3)
    max_strips: int = 5  # strips kept per source at most (CRAG: top 5)
    strip_threshold: float = -0.5  # a strip is kept only when it scores above this
    corpus: str = "pooled"  # pooled | others | none: what BM25 searches instead of the web
    search_k: int = 5  # paragraphs BM25 returns
    max_keywords: int = 3  # keywords of the rewritten query

    def __post_init__(self):
        super().__post_init__()
        if not -1 <= self.lower <= self.upper <= 1:
            raise ValueError(f"need -1 <= lower <= upper <= 1 (got lower={self.lower}, upper={self.upper})")
        if not -1 <= self.strip_threshold < 1:
            raise ValueError(f"strip_threshold must be in [-1, 1), not {self.strip_threshold}")
        if self.evaluator not in EVALUATORS:
            raise ValueError(f"unknown evaluator {self.evaluator!r}; choose one of {', '.join(EVALUATORS)}")
        if self.corpus not in CORPORA:
            raise ValueError(f"unknown corpus {self.corpus!r}; choose one of {', '.join(CORPORA)}")
        for name in ("strip_sentences", "max_strips", "search_k", "max_keywords"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, not {getattr(self, name)}")


def grade_score(reply) -> float:
    """The graded evaluator's score in [-1, 1]: the expected grade under the softmax of the options' log-scores
    when the reply has one for every grade, else the chosen grade; mapped by ``(grade - 3) / 2`` and rounded to 6
    decimals. ``grade_score(Reply("4", kind="choose")) == 0.5``"""
    scores = reply.scores or {}
    if all(g in scores and not math.isnan(scores[g]) for g in GRADES):
        top = max(scores[g] for g in GRADES)
        if not math.isinf(top):
            weights = [math.exp(scores[g] - top) for g in GRADES]
            expected = sum(int(g) * w for g, w in zip(GRADES, weights, strict=True)) / sum(weights)
            return round((expected - 3) / 2, 6)
    return (int(reply.text) - 3) / 2


def relevance(reply) -> float:
    """The binary evaluator's score in [-1, 1]: P(relevant) - P(irrelevant) from the options' log-scores (rounded
    to 6 decimals, so 3:1 odds land on 0.5 exactly), else +1/-1 from the choice."""
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


def sentence_groups(text: str, size: int) -> list[tuple[int, int]]:
    """Spans of ``size`` consecutive sentences (pysbd). ``sentence_groups("A b. C d. E f.", 2)`` -> ``[(0, 10), (10, 14)]``"""
    return list(_sentence_groups(text, size))


@functools.lru_cache(maxsize=4096)  # the same chunks come back for many questions; pysbd was a third of a query
def _sentence_groups(text: str, size: int) -> tuple[tuple[int, int], ...]:
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
    """A retrieved text to refine: its body, how its strips are shown and which persona chunks a span came from."""

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
        if self.settings.evaluator == "scale":
            reply = self.llm.choose(grade_messages(name, work, question, text, source), GRADES)
            calls.append(self.trace(purpose, reply))
            return grade_score(reply)
        reply = self.llm.choose(evaluator_messages(name, work, question, text, source), EVALUATOR_OPTIONS)
        calls.append(self.trace(purpose, reply))
        return relevance(reply)

    def keywords(self, name: str, work: str, question: str, calls: list[Call]) -> list[str]:
        """The rewritten query (at most ``max_keywords``); the question itself when the reply has none."""
        try:
            reply = self.llm.chat(keywords_messages(name, work, question, self.settings.max_keywords), max_tokens=32)
        except LLMError as e:
            calls.append(Call.failed("rewrite", "chat", e))
            return [question]
        calls.append(self.trace("rewrite", reply))
        words = [w.strip(" \t-*•\"'`.") for w in re.split(r"[,;\n]", reply.text)]
        words = [re.sub(r"^\d+[.)]\s*", "", w) for w in words]
        return [w for w in words if w][: self.settings.max_keywords] or [question]

    def refine(self, character: str, question: str, docs: list[_Doc], calls: list[Call]) -> tuple[list[Strip], int]:
        """Decompose, filter, recompose: the kept strips in reading order, and how many strips were scored."""
        s = self.settings
        name, work = self.profile(character)
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
                if text in strips:
                    strips[text].chunk_ids += [i for i in ids if i not in strips[text].chunk_ids]
                    continue
                strips[text] = Strip(text, doc.label, list(ids), doc.source, len(strips))
        for strip in strips.values():
            strip.score = self.evaluate(name, work, question, strip.text, strip.label, "refine", calls)
        passing = [t for t in strips.values() if t.score > s.strip_threshold]
        best = sorted(passing, key=lambda t: (-t.score, t.order))[: s.max_strips]
        return sorted(best, key=lambda t: t.order), len(strips)

    def _holding(self, character: str, start: int, end: int) -> list[str]:
        """This character's chunks (of this method's splitter) that hold the span, else those that overlap it."""
        chunks = self.retriever(character).chunks
        inside = [c.id for c in chunks if c.start <= start and end <= c.end]
        return inside or [c.id for c in chunks if c.start < end and start < c.end]

    def context(self, character: str, question: str) -> Context:
        s = self.settings
        name, work = self.profile(character)
        calls: list[Call] = []
        chunks = self.search(character, question, s.k)
        scores = {c.id: self.evaluate(name, work, question, c.text, c.context, "evaluate", calls) for c in chunks}
        action = route(list(scores.values()), s.upper, s.lower)
        internal: list[Strip] = []
        external: list[Strip] = []
        keywords: list[str] = []
        examined = 0
        if action in (CORRECT, AMBIGUOUS):
            docs = [_Doc(c.body, c.context, "internal", chunk_ids=[c.id]) for c in chunks]
            internal, n = self.refine(character, question, docs, calls)
            examined += n
        if action in (INCORRECT, AMBIGUOUS) and s.corpus != "none":
            keywords = self.keywords(name, work, question, calls)
            names = {}
            docs = []
            for found in corpus_for(self.dataset, character, s.corpus).search(" ".join(keywords), s.search_k):
                p = found.passage
                if p.character not in names:
                    names[p.character] = self.profile(p.character)[0]
                docs.append(_Doc(p.body, p.label, "external", prefix=f"{names[p.character]}: ",
                                 offset=p.start if p.character == character else None))
            external, n = self.refine(character, question, docs, calls)
            examined += n
        items = [*(ContextItem("knowledge", t.text, tuple(t.chunk_ids), t.label) for t in internal),
                 *(ContextItem("external", t.text, tuple(t.chunk_ids), t.label) for t in external)]
        details = {"route": action, "chunk_scores": scores, "keywords": keywords, "strips_examined": examined,
                   "strips": [{"source": t.source, "label": t.label, "score": t.score, "text": t.text,
                               "chunk_ids": list(t.chunk_ids)} for t in [*internal, *external]],
                   "corpus": s.corpus, "label": self.label, "evaluator": s.evaluator}
        return Context(items, calls, details)


OWN_INCLUDED = " (this character's own included)"


def departures(settings: CragSettings) -> str:
    """One line for a caption: how this CRAG departs from the original (see the module docstring).

    >>> departures(CragSettings())[:63]
    'CRAG-offline departs from CRAG: an LLM grades passages 1-5 (not'
    """
    evaluator = ("an LLM grades passages 1-5 (not CRAG's fine-tuned T5)" if settings.evaluator == "scale"
                 else "an LLM says relevant or irrelevant (not CRAG's fine-tuned T5)")
    return (f"CRAG-offline departs from CRAG: {evaluator}; thresholds {settings.upper:g} / {settings.lower:g}, not tuned "
            f"per dataset; strips of {settings.strip_sentences} sentences, at most {settings.max_strips} per source scoring "
            f"above {settings.strip_threshold:g}, in reading order (CRAG: top 10 internal / 5 web strips by score); "
            f"the top {settings.k} chunks evaluated (CRAG: 10 documents); BM25 over {CORPUS_WORDS[settings.corpus]}"
            f"{OWN_INCLUDED if settings.corpus == 'pooled' else ''} instead of web search, its "
            "paragraphs cut into strips (CRAG keeps web pages whole)")


def route_counts(rows: pd.DataFrame) -> pd.DataFrame:
    """How often each CRAG action fired: per method whose rows carry a ``route`` (in their ``details``, or in a
    ``route`` column), the questions answered and the count and share of ``correct``, ``ambiguous`` and
    ``incorrect``."""
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
