"""Retrieval for one character: persona -> chunks -> cached vectors -> cached hnswlib index -> ranked chunks.

Example (not run as a doctest: it loads the embedder)::

    r = Retriever.for_character("frieren", splitter="acts", embedder="minilm")
    [hit.chunk.context for hit in r.search("Who was your first teacher?", k=2)]

The index lives under ``index_dir()/<character>/<splitter>/<embedder model id>``. When the persona changes
(paragraphs added, edited or deleted) it is updated in place: only new or changed chunks are embedded and added,
the others marked deleted (:func:`rpa_lib.index.build_or_load`); it is rebuilt when the embedder, the HNSW
parameters or the split settings change (ATS/ACTS: a new longest paragraph l_max redoes the whole split).
``Retriever.change`` says which happened. This module does not call any LLM.

:func:`retriever` is the shared, memoized way in: one retriever per (dataset, character, splitter, embedder),
rebuilt (its index updated) when the persona file changes on disk; :func:`clear_retrievers` empties the memo.
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
from rpa_lib.index import HnswParams, VectorIndex, build_or_load
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
    """The embedder ``name`` for one persona's texts. TF-IDF is fitted on the persona's paragraphs with their
    contexts (one vocabulary for all splitters and methods); a model embedder is the same for every persona."""
    return get_embedder(name, corpus=[f"{p.context}\n{p.text}" for p in persona.paragraphs] if name == "tfidf" else None)


class Retriever:
    def __init__(self, persona: Persona, chunks: list[Chunk], embedder: Embedder, index: VectorIndex):
        self.persona, self.chunks, self.embedder, self.index = persona, chunks, embedder, index
        self._by_id = {c.id: c for c in chunks}

    @property
    def change(self):
        """What opening the index did: loaded, built, or updated in place (:class:`rpa_lib.index.IndexChange`)."""
        return self.index.change

    @classmethod
    def for_character(cls, slug: str, splitter: str = "acts", embedder: str | Embedder = "minilm", *,
                      characters_dir: Path | None = None, params: HnswParams = HnswParams(),
                      index_root: Path | None = None, **split_args) -> Retriever:
        persona = load_persona(slug, characters_dir)
        chunks = split(persona, splitter, **split_args)
        if isinstance(embedder, str):
            embedder = persona_embedder(persona, embedder)
        texts = [c.text for c in chunks]
        safe_model = re.sub(r"[^A-Za-z0-9_.-]+", "_", embedder.model_id)
        folder = Path(index_root or index_dir()) / slug / splitter / safe_model
        s = settings_for(persona, splitter, split_args.get("length"), split_args.get("overlap"),
                         split_args.get("length_function", len))
        settings = {"chunk_length": s.chunk_length, "overlap": s.overlap, "scope": split_args.get("scope")}
        index, _ = build_or_load(folder, lambda: embed(embedder, texts), [c.id for c in chunks], texts,
                                 embedder.model_id, params, embed_fn=lambda todo: embed(embedder, todo),
                                 settings=settings)
        return cls(persona, chunks, embedder, index)

    def search(self, query: str, k: int = 5) -> list[Hit]:
        """The ``k`` chunks most similar to ``query``, best first."""
        return self.search_many([query], k)[0]

    def search_many(self, queries: list[str], k: int = 5) -> list[list[Hit]]:
        """:meth:`search` for each query."""
        return self.search_vectors(embed(self.embedder, queries, kind="query"), k)

    def search_vectors(self, vectors: np.ndarray, k: int = 5) -> list[list[Hit]]:
        """The ``k`` chunks nearest each query vector. A vector of all zeros (TF-IDF: no word of the query is in
        the persona's vocabulary) ties every chunk at 0: it gets the first ``k`` chunks in document order, never an
        arbitrary index order (``not vector.any()`` tells such a query)."""
        ids, scores = self.index.search(vectors, k)
        first = [c.id for c in self.chunks[:k]]
        return [[Hit(self._by_id[i], float(s)) for i, s in zip(row, srow, strict=True)] if vector.any()
                else [Hit(self._by_id[i], 0.0) for i in first]
                for row, srow, vector in zip(ids, scores, vectors, strict=True)]

    def chunk(self, chunk_id: str) -> Chunk | None:
        """The chunk with this id, or None when this retriever has none."""
        return self._by_id.get(chunk_id)

    def vectors(self) -> np.ndarray:
        return embed(self.embedder, [c.text for c in self.chunks])


_RETRIEVERS: dict[tuple, Retriever] = {}
_RETRIEVERS_LOCK = threading.Lock()


def retriever(slug: str, splitter: str, embedder: str, dataset=None) -> Retriever:
    """The memoized retriever of a character of ``dataset`` (a :class:`rpa_lib.data.Dataset`, default the
    repository's data/). The memo key includes the persona file's size and modification time, so an edited
    persona gets new chunks at once, in a notebook session too, and the index folder in use."""
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
