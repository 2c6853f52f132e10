"""RAGEval's retrieval metrics (Zhu et al., section 3.5.1): evidence recall and the Effective Information Rate.

Evidence is split into sentences (pysbd) and all text whitespace-normalized; a sentence is *found* when one
retrieved chunk contains it verbatim. No retrieval, no LLM, no fuzzy matching; words are whitespace tokens, so
languages written without spaces are not supported.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from functools import lru_cache

from rpa_lib.text import segmenter, within_budget  # noqa: F401  (within_budget: re-exported)

UNITS = ("sentence", "reference")


def normalize(text: str) -> str:
    """Collapse every run of whitespace into one space and strip. ``normalize(" a\\n b ")`` -> ``"a b"``"""
    return " ".join(text.split())


def split_sentences(text: str, language: str = "en") -> list[str]:
    """The normalized, non-empty sentences of ``text`` (pysbd). ``"A b. C d."`` -> ``["A b.", "C d."]``"""
    if not isinstance(text, str):
        raise TypeError(f"evidence and chunks are strings, got {type(text).__name__}")
    return list(_sentences(text, language))


@lru_cache(maxsize=1 << 16)
def _sentences(text: str, language: str) -> tuple[str, ...]:
    # memoised: Table 1's evidence recall splits each question's evidence once per splitter x embedder x k
    sentences = (normalize(s) for s in segmenter(language).segment(normalize(text))) if text.strip() else ()
    return tuple(s for s in sentences if s)


def _as_list(texts: str | Sequence[str], what: str) -> list[str]:
    if isinstance(texts, str):
        return [texts]
    texts = list(texts)
    bad = [type(t).__name__ for t in texts if not isinstance(t, str)]
    if bad:
        raise TypeError(f"{what} must be strings, got {', '.join(sorted(set(bad)))}")
    return texts


@lru_cache(maxsize=1 << 15)
def _chunk(text: str) -> tuple[str, int]:
    # memoised: a retrieved chunk, normalized, and its words; the same chunks come back for many questions and for
    # both metrics (Table 1 scores about 100,000 retrievals)
    text = normalize(text)
    return text, len(text.split())


def _found(sentence: str, chunks: list[str]) -> bool:
    return any(sentence in chunk for chunk in chunks)


def _gold_sentences(gold: list[str], language: str) -> list[str]:
    return list(dict.fromkeys(s for text in gold for s in split_sentences(text, language)))


def evidence_recall(gold: str | Sequence[str], retrieved: str | Sequence[str], *, unit: str = "sentence",
                    language: str = "en") -> float:
    """Share of the gold references found (RAGEval equation 1): each distinct sentence (``unit="sentence"``) or each
    evidence string, all of its sentences found (``"reference"``); NaN without gold evidence.
    ``evidence_recall(["A b. C d."], ["x A b. y"])`` -> ``0.5``"""
    if unit not in UNITS:
        raise ValueError(f"unit must be one of {UNITS}, got {unit!r}")
    chunks = [_chunk(c)[0] for c in _as_list(retrieved, "retrieved chunks")]
    gold = _as_list(gold, "gold evidence")
    if unit == "sentence":
        hits = [_found(s, chunks) for s in _gold_sentences(gold, language)]
    else:
        references = [split_sentences(text, language) for text in gold]
        hits = [all(_found(s, chunks) for s in sentences) for sentences in references if sentences]
    if not hits:
        warnings.warn("evidence recall is undefined without gold evidence; returning NaN", RuntimeWarning,
                      stacklevel=2)
        return float("nan")
    return sum(hits) / len(hits)


def eir(gold: str | Sequence[str], retrieved: str | Sequence[str], *, language: str = "en") -> float:
    """Effective Information Rate (RAGEval equation 2): words of the distinct found gold sentences over the words of
    all retrieved chunks; 0.0 when nothing is retrieved. ``eir(["A b. C d."], ["x A b. y"])`` -> ``0.5``"""
    pairs = [_chunk(c) for c in _as_list(retrieved, "retrieved chunks")]
    total = sum(n for _, n in pairs)
    if total == 0:
        return 0.0
    chunks = [c for c, _ in pairs]
    matched = sum(len(s.split()) for s in _gold_sentences(_as_list(gold, "gold evidence"), language)
                  if _found(s, chunks))
    return matched / total
