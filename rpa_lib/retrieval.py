"""Retrieval for one character: persona -> chunks -> cached vectors -> cached hnswlib index (under
``index_dir()/<character>/<splitter>/<embedder model id>``) -> ranked chunks. :func:`retriever` is the memoized way
in. It calls no LLM.

Example (not a doctest: it loads the embedder)::

    r = Retriever.for_character("frieren", splitter="acts", embedder="minilm")
    [hit.chunk.context for hit in r.search("Who was your first teacher?", k=2)]
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rpa_lib.data import as_dataset
from rpa_lib.display import hits_html
from rpa_lib.embeddings import Embedder, embed, get_embedder
from rpa_lib.index import VectorIndex, build_or_load, check_k
from rpa_lib.paths import index_dir
from rpa_lib.persona import Persona, load_persona
from rpa_lib.splitters import Chunk, settings_for, split


@dataclass(frozen=True)
class Hit:
    chunk: Chunk
    score: float  # cosine similarity to the query

    def _repr_html_(self) -> str:  # JupyterLab: one table row (rank 1), text folded
        return hits_html([self])


def persona_embedder(persona: Persona, name: str) -> Embedder:
    """The embedder ``name`` for one persona: TF-IDF is fitted on its paragraphs with their heading paths (one
    vocabulary for all splitters and methods); a model embedder is the same for every persona."""
    corpus = [f"{p.context}\n{p.text}" for p in persona.paragraphs] if name == "tfidf" else None
    return get_embedder(name, corpus=corpus)


TIE_MARGIN = 8  # nearest chunks fetched beyond k, so that chunks tied at the k-th place are ordered by position


class Retriever:
    def __init__(self, persona: Persona, chunks: list[Chunk], embedder: Embedder, index: VectorIndex):
        self.persona, self.chunks, self.embedder, self.index = persona, chunks, embedder, index
        self._by_id = {c.id: c for c in chunks}
        self._position = {c.id: n for n, c in enumerate(chunks)}

    @property
    def change(self):
        """What opening the index did (:class:`rpa_lib.index.IndexChange`)."""
        return self.index.change

    @classmethod
    def for_character(cls, slug: str, splitter: str = "acts", embedder: str | Embedder = "minilm", *,
                      characters_dir: Path | None = None, index_root: Path | None = None) -> Retriever:
        if not isinstance(embedder, str) and not hasattr(embedder, "model_id"):
            raise TypeError(f"embedder must be a name ('minilm', 'hash-64', ...) or an Embedder, not "
                            f"{type(embedder).__name__} {embedder!r}")
        persona = load_persona(slug, characters_dir)
        chunks = split(persona, splitter)
        if isinstance(embedder, str):
            embedder = persona_embedder(persona, embedder)
        texts = [c.text for c in chunks]
        safe_model = re.sub(r"[^A-Za-z0-9_.-]+", "_", embedder.model_id)
        folder = Path(index_root or index_dir()) / slug / splitter / safe_model
        s = settings_for(persona, splitter)
        settings = {"chunk_length": s.chunk_length, "overlap": s.overlap, "scope": None}  # None: the splitter's own
        index, _ = build_or_load(folder, lambda: embed(embedder, texts), [c.id for c in chunks], texts,
                                 embedder.model_id, embed_fn=lambda todo: embed(embedder, todo), settings=settings)
        return cls(persona, chunks, embedder, index)

    def search(self, query: str, k: int = 5) -> list[Hit]:
        """The ``k`` chunks most similar to ``query``, best first."""
        if not isinstance(query, str):
            raise TypeError(f"query must be a str (search_many takes a list), not {type(query).__name__} {query!r}")
        return self.search_many([query], k)[0]

    def search_many(self, queries: list[str], k: int = 5) -> list[list[Hit]]:
        if isinstance(queries, str) or not all(isinstance(q, str) for q in queries):
            raise TypeError(f"queries must be a list of str (search takes one), not {queries!r}")
        check_k(k)  # before the queries are embedded
        return self.search_vectors(embed(self.embedder, list(queries), kind="query"), k)

    def search_vectors(self, vectors: np.ndarray, k: int = 5) -> list[list[Hit]]:
        """The ``k`` chunks nearest each query vector, equal scores in document order (so a ranking does not depend
        on how the index was built or updated); an all-zero vector (TF-IDF: no word of the query is known) gets the
        first ``k`` chunks in document order, score 0."""
        ids, scores = self.index.search(vectors, check_k(k) + TIE_MARGIN)  # a tie across the k-th place: below
        first = [c.id for c in self.chunks[:k]]
        out = []
        for row, srow, vector in zip(ids, scores, vectors, strict=True):
            if not vector.any():
                out.append([Hit(self._by_id[i], 0.0) for i in first])
                continue
            ranked = sorted(zip(row, map(float, srow), strict=True), key=lambda h: (-h[1], self._position[h[0]]))
            out.append([Hit(self._by_id[i], s) for i, s in ranked[:k]])
        return out

    def chunk(self, chunk_id: str) -> Chunk | None:
        return self._by_id.get(chunk_id)


_RETRIEVERS: dict[tuple, Retriever] = {}
_RETRIEVERS_LOCK = threading.Lock()


def retriever(slug: str, splitter: str, embedder: str, dataset=None) -> Retriever:
    """The memoized retriever of a character of ``dataset``, renewed when its persona file or index folder changes."""
    ds = as_dataset(dataset)
    path = ds.persona_path(slug)
    stat = path.stat() if path.is_file() else None
    key = (ds, slug, splitter, embedder, stat and (stat.st_size, stat.st_mtime_ns), index_dir())
    with _RETRIEVERS_LOCK:
        if key not in _RETRIEVERS:
            for old in [k for k in _RETRIEVERS if k[:4] == key[:4] and k[5] == key[5]]:
                del _RETRIEVERS[old]  # the same character's retriever for an older version of its persona
            _RETRIEVERS[key] = Retriever.for_character(slug, splitter, embedder, characters_dir=ds.characters_dir)
        return _RETRIEVERS[key]


def clear_retrievers() -> None:
    """Forget every memoized retriever (their indexes stay cached on disk)."""
    with _RETRIEVERS_LOCK:
        _RETRIEVERS.clear()
