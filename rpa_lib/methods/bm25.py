"""BM25 over persona paragraphs: the offline stand-in for CRAG's web search (:mod:`rpa_lib.methods.crag`). Corpora:
``pooled`` (every character's paragraphs, each prefixed with the character's name), ``others`` (all but the one
asked) and ``none``. It is not a web search and ranks by the words alone.

>>> corpus = BM25Corpus([Passage("a", "Ada: I keep the lamp.", "I keep the lamp.", "Ada", 0, 16),
...                      Passage("b", "Bram: I bake rye bread.", "I bake rye bread.", "Bram", 0, 17)])
>>> [f.passage.character for f in corpus.search("lamp oil", 5)]
['a']
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass

CORPORA = ("pooled", "others", "none")
CORPUS_WORDS = {"pooled": "all characters' personas", "others": "the other characters' personas",
                "none": "an empty corpus"}


@dataclass(frozen=True)
class Passage:
    """One persona paragraph: ``text`` is what is indexed (``"<name>: <body>"``), ``start``/``end`` the body's
    offsets in ``persona.md``."""

    character: str  # the slug whose persona it comes from
    text: str
    body: str
    label: str  # the paragraph's heading path, which starts with the character's name
    start: int
    end: int


@dataclass(frozen=True)
class Found:
    passage: Passage
    score: float  # BM25 score


def tokenize(text: str) -> list[str]:
    """Lower-cased words without English stop words. ``tokenize("The lamp's lens!") == ["lamp", "lens"]``"""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return [w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in ENGLISH_STOP_WORDS and len(w) > 1]


class BM25Corpus:
    """Okapi BM25 (k1 = 1.5, b = 0.75, rank-bm25's defaults) over passages."""

    def __init__(self, passages: list[Passage]):
        from rank_bm25 import BM25Okapi

        self.passages = list(passages)
        tokens = [tokenize(p.text) for p in self.passages]
        self._words = [set(t) for t in tokens]
        # rank-bm25 divides by the corpus size and average length: an empty corpus has no index at all.
        self._bm25 = BM25Okapi(tokens) if any(tokens) else None

    def __len__(self) -> int:
        return len(self.passages)

    def search(self, query: str, k: int = 5) -> list[Found]:
        """The ``k`` best passages sharing at least one word with ``query``, best first (ties: corpus order)."""
        words = tokenize(query)
        if self._bm25 is None or not words or k < 1:
            return []
        # No page without a match: rank-bm25's floored IDF can score a word found in most passages at zero or below.
        scores = self._bm25.get_scores(words)
        matching = [i for i, found in enumerate(self._words) if found.intersection(words)]
        order = sorted(matching, key=lambda i: (-scores[i], i))
        return [Found(self.passages[i], float(scores[i])) for i in order[:k]]


def persona_passages(dataset, slug: str) -> list[Passage]:
    """Every paragraph of one character's persona, prefixed with the character's name."""
    name = dataset.profile(slug)[0]
    return [Passage(slug, f"{name}: {p.text}", p.text, p.context, p.start, p.end)
            for p in dataset.persona(slug).paragraphs]


_CORPORA: dict[tuple, BM25Corpus] = {}
_LOCK = threading.Lock()


def corpus_for(dataset, character: str, variant: str = "pooled") -> BM25Corpus:
    """The search corpus a question to ``character`` sees (memoized; rebuilt when any persona file changes)."""
    if variant not in CORPORA:
        raise ValueError(f"unknown corpus {variant!r}; choose one of {', '.join(CORPORA)}")
    slugs = [] if variant == "none" else [s for s in dataset.slugs() if variant == "pooled" or s != character]
    stats = tuple((s, st.st_mtime_ns, st.st_size) for s in slugs for st in [dataset.persona_path(s).stat()])
    key = (dataset, variant, character if variant == "others" else None, stats)
    with _LOCK:
        if key not in _CORPORA:
            _CORPORA[key] = BM25Corpus([p for s in slugs for p in persona_passages(dataset, s)])
        return _CORPORA[key]
