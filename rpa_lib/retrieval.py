"""Retrieval for one character: persona -> chunks -> cached vectors -> cached hnswlib index -> ranked chunks.

>>> r = Retriever.for_character("frieren", splitter="acts", embedder="minilm")
>>> [hit.chunk.context for hit in r.search("Who was your first teacher?", k=2)]

The index lives under ``index_dir()/<character>/<splitter>/<embedder model id>`` and is rebuilt when the
chunks, the embedder or the HNSW parameters change. This module does not call any LLM.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rpa_lib.embeddings import Embedder, embed, get_embedder
from rpa_lib.index import HnswParams, VectorIndex, build_or_load
from rpa_lib.persona import Persona, load_persona
from rpa_lib.splitters import Chunk, split


@dataclass(frozen=True)
class Hit:
    chunk: Chunk
    score: float  # cosine similarity to the query


class Retriever:
    def __init__(self, persona: Persona, chunks: list[Chunk], embedder: Embedder, index: VectorIndex):
        self.persona, self.chunks, self.embedder, self.index = persona, chunks, embedder, index
        self._by_id = {c.id: c for c in chunks}

    @classmethod
    def for_character(cls, slug: str, splitter: str = "acts", embedder: str | Embedder = "minilm", *,
                      characters_dir: Path | None = None, params: HnswParams = HnswParams(),
                      index_root: Path | None = None, **split_args) -> Retriever:
        from rpa_lib.paths import index_dir

        persona = load_persona(slug, characters_dir)
        chunks = split(persona, splitter, **split_args)
        if isinstance(embedder, str):
            # TF-IDF is fitted on the persona's paragraphs with their contexts: one vocabulary for all splitters.
            corpus = [f"{p.context}\n{p.text}" for p in persona.paragraphs] if embedder == "tfidf" else None
            embedder = get_embedder(embedder, corpus=corpus)
        texts = [c.text for c in chunks]
        safe_model = re.sub(r"[^A-Za-z0-9_.-]+", "_", embedder.model_id)
        folder = Path(index_root or index_dir()) / slug / splitter / safe_model
        index, _ = build_or_load(folder, lambda: embed(embedder, texts), [c.id for c in chunks], texts,
                                 embedder.model_id, params)
        return cls(persona, chunks, embedder, index)

    def search(self, query: str, k: int = 5) -> list[Hit]:
        """The ``k`` chunks most similar to ``query``, best first."""
        return self.search_many([query], k)[0]

    def search_many(self, queries: list[str], k: int = 5) -> list[list[Hit]]:
        vectors = embed(self.embedder, queries, kind="query")
        ids, scores = self.index.search(vectors, k)
        return [[Hit(self._by_id[i], float(s)) for i, s in zip(row, srow, strict=True)] for row, srow in zip(ids, scores, strict=True)]

    def vectors(self) -> np.ndarray:
        return embed(self.embedder, [c.text for c in self.chunks])
