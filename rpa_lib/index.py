"""Nearest-neighbour search over chunk vectors: an hnswlib cosine index, saved with its metadata and rebuilt or
updated in place when what it was built from changes (:func:`build_or_load`), and exact search to check it.
It does not embed (see ``embeddings``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import struct
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class HnswParams:
    M: int = 32
    ef_construction: int = 200
    ef: int = 128
    seed: int = 100


@dataclass(frozen=True)
class IndexChange:
    """What :func:`build_or_load` did: ``loaded``, ``built`` or ``updated`` (in place: ``added`` slots embedded and
    added, ``deleted`` slots marked deleted), and why."""

    kind: str
    added: int = 0
    deleted: int = 0
    reason: str = ""
    embedded: list[str] = field(default_factory=list, repr=False, compare=False)  # the texts embedded

    def __str__(self) -> str:
        counts = f" (+{self.added} -{self.deleted} chunks)" if self.kind == "updated" else ""
        return f"{self.kind}{counts}" + (f": {self.reason}" if self.reason else "")


class VectorIndex:
    """An hnswlib cosine index; ``ids[slot]`` is each hnswlib label's chunk id (None: deleted)."""

    def __init__(self, dim: int, params: HnswParams = HnswParams()):
        import hnswlib

        self.dim, self.params, self.ids = dim, params, []
        self.change = IndexChange("built")
        self._index = hnswlib.Index(space="cosine", dim=dim)

    @property
    def live(self) -> int:
        return sum(i is not None for i in self.ids)

    def update(self, delete: list[int], vectors: np.ndarray, new_ids: list[str]) -> VectorIndex:
        """Mark the slots ``delete`` deleted and add ``vectors`` under ``new_ids`` in new slots (deleted slots are
        never reused, so a slot's vector never changes)."""
        if len(vectors) != len(new_ids):
            raise ValueError(f"{len(vectors)} vectors but {len(new_ids)} ids")
        for slot in delete:
            if self.ids[slot] is None:
                raise ValueError(f"slot {slot} is already deleted")
            self._index.mark_deleted(slot)
            self.ids[slot] = None
        if len(new_ids):
            first = len(self.ids)
            self._index.resize_index(first + len(new_ids))
            self._index.add_items(np.asarray(vectors, np.float32), np.arange(first, first + len(new_ids)),
                                  num_threads=1)
            self.ids.extend(new_ids)
        return self

    def build(self, vectors: np.ndarray, ids: list[str], threads: int = 1) -> VectorIndex:
        if len(vectors) != len(ids):
            raise ValueError(f"{len(vectors)} vectors but {len(ids)} ids")
        p = self.params
        self._index.init_index(max_elements=max(1, len(ids)), ef_construction=p.ef_construction, M=p.M,
                               random_seed=p.seed)
        if len(ids):
            self._index.add_items(np.asarray(vectors, np.float32), np.arange(len(ids)), num_threads=threads)
        self._index.set_ef(p.ef)
        self.ids = list(ids)
        return self

    def search(self, queries: np.ndarray, k: int) -> tuple[list[list[str]], np.ndarray]:
        """Top-k ids and similarities for each query row, best first, ``k`` capped at the index size; ValueError
        (never a call into hnswlib) when the queries' dimension is not the index's."""
        queries = np.asarray(queries, np.float32)
        if queries.ndim != 2:
            raise ValueError(f"query vectors of shape {queries.shape}: expected a 2-d array, one row per query")
        k = min(check_k(k), self.live)
        if k == 0 or not len(queries):
            return [[] for _ in queries], np.zeros((len(queries), 0), np.float32)
        if queries.shape[1] != self.dim:
            raise ValueError(f"query vectors of shape {queries.shape} for an index of {self.dim}-d vectors: the index "
                             "was built by another embedder; rebuild it (build_or_load(..., dim=...) does)")
        self._index.set_ef(max(self.params.ef, k))
        labels, distances = self._index.knn_query(queries, k=k, num_threads=1)
        return [[self.ids[j] for j in row] for row in labels], 1.0 - distances

    def save(self, folder: Path, meta: dict) -> None:
        """``index.bin`` then ``meta.json``, each written beside and renamed into place, so that another process
        reading the folder meanwhile reads whole files."""
        folder.mkdir(parents=True, exist_ok=True)
        tag = f"{os.getpid()}.{threading.get_ident()}.tmp"
        self._index.save_index(str(folder / f"index.bin.{tag}"))
        os.replace(folder / f"index.bin.{tag}", folder / "index.bin")
        (folder / f"meta.json.{tag}").write_text(json.dumps({**meta, "ids": self.ids}, indent=1))
        os.replace(folder / f"meta.json.{tag}", folder / "meta.json")

    @classmethod
    def load(cls, folder: Path, dim: int, params: HnswParams) -> VectorIndex:
        """The index saved in ``folder``; ValueError, before hnswlib reads it, when ``index.bin`` does not hold as
        many ``dim``-d vectors as ``meta.json`` has ids."""
        meta = json.loads((folder / "meta.json").read_text())
        with open(folder / "index.bin", "rb") as f:  # its header: six size_t fields
            header = f.read(48)
        if len(header) < 48:
            raise ValueError(f"{folder / 'index.bin'} is not an hnswlib index (only {len(header)} bytes)")
        _, _, stored_count, _, label_offset, data_offset = struct.unpack("<6Q", header)
        stored_dim = (label_offset - data_offset) // 4
        if (stored_dim, stored_count) != (dim, len(meta["ids"])):
            raise ValueError(f"{folder / 'index.bin'} holds {stored_count} vectors of {stored_dim} dimensions, "
                             f"expected {len(meta['ids'])} of {dim}")
        index = cls(dim, params)
        index._index.load_index(str(folder / "index.bin"), max_elements=max(1, len(meta["ids"])))
        index._index.set_ef(params.ef)
        index.ids = meta["ids"]
        return index


def check_k(k) -> int:
    """``k``, the number of nearest neighbours, as an int; TypeError or ValueError naming it when it is not a whole
    number of 0 or more (a negative ``k`` would cut a ranking from its end). ``check_k(3) == 3``"""
    if isinstance(k, bool) or not isinstance(k, int | np.integer):
        raise TypeError(f"k must be an int, not {type(k).__name__} {k!r}")
    if k < 0:
        raise ValueError(f"k must be 0 or more, not {k}")
    return int(k)


def exact_search(matrix: np.ndarray, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Brute-force top-k by cosine similarity (rows normalized): (row indices, similarities), best first."""
    sims = np.asarray(queries, np.float32) @ np.asarray(matrix, np.float32).T
    k = min(check_k(k), sims.shape[1])
    part = np.argpartition(-sims, k - 1, axis=1)[:, :k] if k else np.zeros((len(sims), 0), int)
    order = np.take_along_axis(sims, part, axis=1).argsort(axis=1)[:, ::-1]
    top = np.take_along_axis(part, order, axis=1)
    return top, np.take_along_axis(sims, top, axis=1)


def content_hash(ids: list[str], texts: list[str]) -> str:
    h = hashlib.sha256()
    for i, t in zip(ids, texts, strict=True):
        h.update(f"{i}\0{t}\0".encode())
    return h.hexdigest()


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def build_or_load(folder: Path, vectors_fn, ids: list[str], texts: list[str], model_id: str,
                  params: HnswParams = HnswParams(), dim: int | None = None, *, embed_fn=None,
                  settings: dict | None = None, max_changed: float = 0.5) -> tuple[VectorIndex, bool]:
    """``(index, built)``: the index in ``folder`` if it was built from the same texts, model, parameters (and
    ``dim``), else one built from ``vectors_fn()``. With ``embed_fn(texts) -> vectors``, an index whose texts differ
    but whose ``settings`` (the split's) do not is updated in place when at most ``max_changed`` of the chunks are
    new. ``index.change`` says what happened."""
    if len(ids) != len(texts):
        raise ValueError(f"{len(ids)} ids but {len(texts)} texts")
    if len(set(ids)) != len(ids):
        raise ValueError(f"ids must be distinct; repeated: {sorted({i for i in ids if ids.count(i) > 1})[:5]}")
    meta = {"model_id": model_id, "params": asdict(params), "content_hash": content_hash(ids, texts),
            "count": len(ids)}
    if settings is not None:
        meta["settings"] = settings
    meta_path = folder / "meta.json"
    reason = "no saved index"
    if meta_path.is_file() and (folder / "index.bin").is_file():
        try:
            saved = json.loads(meta_path.read_text())
            stale = [k for k, v in meta.items() if saved.get(k) != v]
            if dim is not None and saved.get("dim") != dim:
                stale.append(f"dim ({saved.get('dim')} -> {dim})")
            if not stale:
                index = VectorIndex.load(folder, saved["dim"], params)
                index.change = IndexChange("loaded")
                return index, False
            if embed_fn is not None and set(stale) <= {"content_hash", "count"} and "hashes" in saved:
                index = _update(folder, saved, params, ids, texts, embed_fn, max_changed)
                if index is not None:
                    by_id = {i: text_hash(t) for i, t in zip(ids, texts, strict=True)}
                    hashes = [None if i is None else by_id[i] for i in index.ids]
                    index.save(folder, {**meta, "dim": index.dim, "hashes": hashes})
                    log.info("updated index %s in place: %s", folder, index.change)
                    return index, False
                reason = f"more than {max_changed:.0%} of the chunks changed"
            elif "settings" in stale:
                reason = (f"the split settings changed ({saved.get('settings')} -> {settings}): the whole split is "
                          "redone")
            else:
                reason = f"{', '.join(stale)} changed"
        except (ValueError, KeyError, TypeError, RuntimeError) as e:  # JSON, header or hnswlib errors
            reason = f"the saved one is unreadable ({e})"
        log.warning("rebuilding index %s: %s", folder, reason)
    vectors = np.asarray(vectors_fn(), np.float32)
    if vectors.ndim != 2 and len(ids):
        raise ValueError(f"vectors_fn gave an array of shape {vectors.shape}, expected one row per id")
    if dim is not None and len(ids) and vectors.shape[1] != dim:
        raise ValueError(f"vectors_fn gave {vectors.shape[1]}-d vectors, expected {dim}")
    index = VectorIndex(vectors.shape[1], params).build(vectors, ids)
    index.change = IndexChange("built", len(ids), 0, reason, embedded=list(texts))
    index.save(folder, {**meta, "dim": int(vectors.shape[1]), "hashes": [text_hash(t) for t in texts]})
    return index, True


def _update(folder: Path, saved: dict, params: HnswParams, ids: list[str], texts: list[str], embed_fn,
            max_changed: float) -> VectorIndex | None:
    """The saved index updated to hold exactly ``texts`` under ``ids``; None when too much changed to bother."""
    free: dict[str, list[int]] = {}  # text hash -> live saved slots holding it
    for slot, h in enumerate(saved["hashes"]):
        if h is not None:
            free.setdefault(h, []).append(slot)
    if len(saved["hashes"]) != len(saved["ids"]):
        raise ValueError(f"{folder / 'meta.json'}: {len(saved['hashes'])} hashes for {len(saved['ids'])} slots")
    keep: dict[int, str] = {}  # saved slot -> its new chunk id
    todo: list[int] = []  # positions in ids/texts to embed and add
    for n, (chunk_id, text) in enumerate(zip(ids, texts, strict=True)):
        slots = free.get(text_hash(text))
        if slots:
            keep[slots.pop(0)] = chunk_id
        else:
            todo.append(n)
    if len(todo) > max_changed * max(1, len(ids)):
        return None
    index = VectorIndex.load(folder, saved["dim"], params)
    delete = [slot for slot, i in enumerate(index.ids) if i is not None and slot not in keep]
    for slot, chunk_id in keep.items():
        index.ids[slot] = chunk_id
    vectors = embed_fn([texts[n] for n in todo]) if todo else np.zeros((0, index.dim), np.float32)
    index.update(delete, vectors, [ids[n] for n in todo])
    index.change = IndexChange("updated", len(todo), len(delete), embedded=[texts[n] for n in todo])
    return index
