"""RAGEval's retrieval metrics (Zhu et al., section 3.5.1): evidence recall and the Effective Information Rate.

For one question: ``gold`` are its evidence strings (the ground-truth references), ``retrieved`` the texts of
the chunks a retriever returned. Evidence strings are split into sentences with pysbd (a maintained
rule-based segmenter), and text is whitespace-normalized (every run of whitespace becomes one space) before any
comparison. A sentence is *found* when it is contained, as a case-sensitive substring, in at least one retrieved
chunk (one chunk, not the concatenation, so a sentence cut in two by a chunk boundary is not found).

- :func:`evidence_recall`: the share of gold references found. By default every gold sentence is one reference
  (``unit="sentence"``); ``unit="reference"`` is RAGEval's equation 1 as printed, where a whole evidence string is
  one reference, recalled when all its sentences are found (each may be in a different chunk, as in RAGEval's
  released code).
- :func:`eir`: words of the found gold sentences over all words of the retrieved chunks (RAGEval's equation 2 and
  its four sentence-level steps).
- :func:`within_budget` (from :mod:`rpa_lib.text`): the ranked chunks cut to a context budget (characters or
  tokens), so splitters whose chunks differ in size are compared on the same amount of retrieved text.

Not done here: no retrieval, no embedding, no LLM; no fuzzy or semantic matching (a paraphrased sentence is not
found); words are whitespace tokens, so languages written without spaces (RAGEval counts Chinese by character)
are not supported.
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
    """The sentences of ``text`` (pysbd), each normalized; empty ones dropped. ``"A b. C d."`` -> ``["A b.", "C d."]``"""
    if not isinstance(text, str):
        raise TypeError(f"evidence and chunks are strings, got {type(text).__name__}")
    return list(_sentences(text, language))


@lru_cache(maxsize=1 << 16)
def _sentences(text: str, language: str) -> tuple[str, ...]:
    """Memoised: Table 1's evidence recall splits each question's evidence once per splitter x embedder x k."""
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


def _found(sentence: str, chunks: list[str]) -> bool:
    return any(sentence in chunk for chunk in chunks)


def _gold_sentences(gold: list[str], language: str) -> list[str]:
    """Every distinct sentence of the evidence strings, in order (a sentence repeated in two strings counts once)."""
    return list(dict.fromkeys(s for text in gold for s in split_sentences(text, language)))


def evidence_recall(gold: str | Sequence[str], retrieved: str | Sequence[str], *, unit: str = "sentence",
                    language: str = "en") -> float:
    """Share of the gold references found in the retrieved chunks (RAGEval Recall, equation 1).

    ``unit="sentence"``: each distinct gold sentence is a reference, found when one chunk contains it.
    ``unit="reference"``: each evidence string is a reference, recalled when every one of its sentences is found.
    No retrieved chunk gives 0.0; no gold reference gives NaN with a warning (recall is undefined).
    ``evidence_recall(["A b. C d."], ["x A b. y"])`` -> ``0.5``
    """
    if unit not in UNITS:
        raise ValueError(f"unit must be one of {UNITS}, got {unit!r}")
    chunks = [normalize(c) for c in _as_list(retrieved, "retrieved chunks")]
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
    """Effective Information Rate (RAGEval equation 2): words of the found gold sentences / words retrieved.

    The numerator follows RAGEval's four steps: split each reference into sentences, keep those found in the
    retrieval, count their words, sum. A sentence repeated across evidence strings is counted once. The
    denominator is the sum of the chunks' word counts (overlapping chunks count their shared words twice, as in
    the paper's sum over retrieved passages). Nothing retrieved gives 0.0, RAGEval's convention, so a retriever
    that returns nothing does not drop out of an average.
    ``eir(["A b. C d."], ["x A b. y"])`` -> ``0.5`` (2 of the 4 words retrieved)
    """
    chunks = [normalize(c) for c in _as_list(retrieved, "retrieved chunks")]
    total = sum(len(c.split()) for c in chunks)
    if total == 0:
        return 0.0
    matched = sum(len(s.split()) for s in _gold_sentences(_as_list(gold, "gold evidence"), language)
                  if _found(s, chunks))
    return matched / total
