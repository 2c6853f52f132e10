"""Nearest-neighbour search over chunk vectors: an hnswlib cosine index, and exact search to check it.

An index is saved as ``index.bin`` beside ``meta.json`` (its id map, the embedder's model id, the HNSW
parameters and a hash of the indexed texts). :func:`build_or_load` rebuilds, and says so, whenever any of
those differ, so a changed embedder, splitter or persona can never silently reuse a stale index.

Defaults (M=32, ef_construction=200, ef=128, single-threaded build with a fixed seed) give the exact top-k at
the size of one character (hundreds to a few thousand chunks); ``python -m rpa_lib.bench index`` measures
recall at larger sizes. This module does not embed (see ``embeddings``).
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class HnswParams:
    M: int = 32
    ef_construction: int = 200
    ef: int = 128
    seed: int = 100


class VectorIndex:
    """An hnswlib cosine index with string ids. Scores are cosine similarities (1 - cosine distance)."""

    def __init__(self, dim: int, params: HnswParams = HnswParams()):
        import hnswlib

        self.dim, self.params, self.ids = dim, params, []
        self._index = hnswlib.Index(space="cosine", dim=dim)

    def build(self, vectors: np.ndarray, ids: list[str], threads: int = 1) -> VectorIndex:
        if len(vectors) != len(ids):
            raise ValueError(f"{len(vectors)} vectors but {len(ids)} ids")
        p = self.params
        self._index.init_index(max_elements=max(1, len(ids)), ef_construction=p.ef_construction, M=p.M, random_seed=p.seed)
        if len(ids):
            self._index.add_items(np.asarray(vectors, np.float32), np.arange(len(ids)), num_threads=threads)
        self._index.set_ef(p.ef)
        self.ids = list(ids)
        return self

    def search(self, queries: np.ndarray, k: int) -> tuple[list[list[str]], np.ndarray]:
        """Top-k ids and similarities for each query row, best first. ``k`` is capped at the index size."""
        k = min(k, len(self.ids))
        if k == 0:
            return [[] for _ in queries], np.zeros((len(queries), 0), np.float32)
        self._index.set_ef(max(self.params.ef, k))
        labels, distances = self._index.knn_query(np.asarray(queries, np.float32), k=k, num_threads=1)
        return [[self.ids[j] for j in row] for row in labels], 1.0 - distances

    def save(self, folder: Path, meta: dict) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self._index.save_index(str(folder / "index.bin"))
        (folder / "meta.json").write_text(json.dumps({**meta, "ids": self.ids}, indent=1))

    @classmethod
    def load(cls, folder: Path, dim: int, params: HnswParams) -> VectorIndex:
        meta = json.loads((folder / "meta.json").read_text())
        index = cls(dim, params)
        index._index.load_index(str(folder / "index.bin"), max_elements=max(1, len(meta["ids"])))
        index._index.set_ef(params.ef)
        index.ids = meta["ids"]
        return index


def exact_search(matrix: np.ndarray, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Brute-force top-k by cosine similarity (rows normalized): (row indices, similarities), best first."""
    sims = np.asarray(queries, np.float32) @ np.asarray(matrix, np.float32).T
    k = min(k, sims.shape[1])
    part = np.argpartition(-sims, k - 1, axis=1)[:, :k] if k else np.zeros((len(sims), 0), int)
    order = np.take_along_axis(sims, part, axis=1).argsort(axis=1)[:, ::-1]
    top = np.take_along_axis(part, order, axis=1)
    return top, np.take_along_axis(sims, top, axis=1)


def content_hash(ids: list[str], texts: list[str]) -> str:
    h = hashlib.sha256()
    for i, t in zip(ids, texts, strict=True):
        h.update(f"{i}\0{t}\0".encode())
    return h.hexdigest()


def build_or_load(folder: Path, vectors_fn, ids: list[str], texts: list[str], model_id: str,
                  params: HnswParams = HnswParams()) -> tuple[VectorIndex, bool]:
    """Load the index in ``folder`` if it was built from the same texts, model and parameters; else build it.

    ``vectors_fn()`` is called only when building. Returns ``(index, built)``.
    """
    meta = {"model_id": model_id, "params": asdict(params), "content_hash": content_hash(ids, texts), "count": len(ids)}
    meta_path = folder / "meta.json"
    if meta_path.is_file() and (folder / "index.bin").is_file():
        saved = json.loads(meta_path.read_text())
        stale = {k: (saved.get(k), v) for k, v in meta.items() if saved.get(k) != v}
        if not stale:
            return VectorIndex.load(folder, saved["dim"], params), False
        log.warning("rebuilding index %s: %s changed", folder, ", ".join(stale))
    vectors = vectors_fn()
    index = VectorIndex(vectors.shape[1], params).build(vectors, ids)
    index.save(folder, {**meta, "dim": int(vectors.shape[1])})
    return index, True
