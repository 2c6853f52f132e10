"""What LightRAG and RoleRAG share: a per-character index that the LLM builds once and a cache that keeps it.

- :class:`IndexCost`: what building one character's index took (one record for both methods).
- :class:`GraphIndexMethod`: the base of a method with such an index: its persona embedder, its cache key and
  :meth:`~GraphIndexMethod.index_cost`.
- :func:`index_key`: the cache key, a hash of every input that changes the index, the text of the prompts that
  build it included, so that editing a prompt makes a new key by itself (no version number to bump).
- :class:`IndexCache`: per key, memory, then disk, then build; one build per key whatever the threads.
- :func:`write_json`: a file written whole or not at all (another process never reads half a graph).
- :func:`build_path`: where an index is built; a plan's stand-in LLM builds into its own scratch folder.

What it does not do: build, store or query a graph (each method does, with its own storage), or evict anything.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Generic, TypeVar

from rpa_lib.methods.base import Method
from rpa_lib.paths import cache_dir
from rpa_lib.retrieval import persona_embedder

T = TypeVar("T")


@dataclass(frozen=True)
class IndexCost:
    """What building one character's index took. Tokens of failed calls are not known (an LLMError carries none).
    The fields after ``relations`` are one method's own; :meth:`to_dict` leaves out those a method does not set."""

    character: str
    chunks: int  # chunks extraction read (LightRAG: the chunks it made of the documents)
    llm_calls: int
    cached_calls: int
    failed_calls: int  # every failed call
    prompt_tokens: int
    completion_tokens: int
    seconds: float  # wall-clock time of the build
    entities: int  # nodes of the graph
    relations: int  # edges of the graph
    # ---- LightRAG ----
    documents: int | None = None  # documents inserted
    failed_documents: int | None = None  # documents whose extraction failed (LightRAG keeps the others)
    errors: tuple[str, ...] | None = None  # the first few failures' messages
    lightrag_version: str | None = None
    # ---- RoleRAG ----
    names: int | None = None  # distinct names extracted, before normalization
    merged_names: int | None = None  # names folded into another by normalization
    failed_extractions: int | None = None

    def to_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None}

    @classmethod
    def from_dict(cls, data: dict) -> IndexCost:
        """The record :meth:`to_dict` wrote (lists read back as tuples; a field this version lacks is ignored)."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items() if k in known})


def index_key(inputs: dict, prompts: Any) -> str:
    """24 hex digits of a hash of ``inputs`` (persona hash, model ids, settings) and of ``prompts`` (the text of the
    prompts that build the index, rendered, with anything else that shapes the requests).

    >>> index_key({"k": 1}, ["Extract the entities of {passage}."]) == index_key({"k": 1}, ["Extract the entities."])
    False
    """
    prompt_hash = hashlib.sha256(json.dumps(prompts, sort_keys=True, default=str).encode()).hexdigest()
    return hashlib.sha256(json.dumps({**inputs, "prompts": prompt_hash}, sort_keys=True).encode()).hexdigest()[:24]


def text_hash(text: str) -> str:
    """sha256 of a text, for the inputs of :func:`index_key`."""
    return hashlib.sha256(text.encode()).hexdigest()


class IndexCache(Generic[T]):
    """Built indexes by key: :meth:`get` returns the one in memory, else ``load()`` (from disk; None when there is
    none), else ``build()``; two threads asking for one key wait for one build."""

    def __init__(self):
        self._items: dict[str, T] = {}
        self._building: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()

    def __contains__(self, key: str) -> bool:
        with self._lock:
            return key in self._items

    def get(self, key: str, load: Callable[[], T | None], build: Callable[[], T]) -> T:
        with self._lock:
            lock = self._building.setdefault(key, threading.Lock())
        with lock:
            with self._lock:
                if key in self._items:
                    return self._items[key]
            item = load()
            if item is None:
                item = build()
            with self._lock:
                self._items[key] = item
            return item

    def clear(self) -> list[T]:
        """Forget every index (the next :meth:`get` loads from disk); returns those that were held."""
        with self._lock:
            items = list(self._items.values())
            self._items.clear()
            self._building.clear()
        return items


def write_json(path: Path, data: dict, indent: int | None = None) -> None:
    """``path`` written whole or not at all: a temporary file beside it, then renamed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(json.dumps(data, indent=indent, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, path)


def build_path(llm, path: Path) -> Path:
    """Where an index that ``llm`` builds is stored: ``path`` (in the cache folder), or, for a stand-in LLM whose
    replies are made up (a plan's: its ``scratch_dir``), the same place under that folder, so that no real run
    ever loads an index built from them. Indexes are looked up at ``path`` first (a real index costs a plan no
    calls), then here."""
    scratch = getattr(llm, "scratch_dir", None)
    if scratch is None:
        return path
    try:
        inside = path.relative_to(cache_dir())
    except ValueError:
        inside = Path(*path.parts[-3:])
    return Path(scratch) / inside


class GraphIndexMethod(Method):
    """A method whose per-character index the LLM builds (LightRAG, RoleRAG). A subclass implements
    :meth:`index` (the character's index, from :class:`IndexCache`, carrying a ``cost``) and :meth:`cache_key`."""

    def embedder(self, character: str):
        """The method's ``embedder`` setting for this persona (TF-IDF fitted on its paragraphs)."""
        return persona_embedder(self.dataset.persona(character), self.settings.embedder)

    def cache_key(self, character: str) -> str:
        raise NotImplementedError

    def index(self, character: str, key: str | None = None):
        raise NotImplementedError

    def index_cost(self, character: str) -> IndexCost:
        """What building the character's index took (building it now if it is not built or cached)."""
        return self.index(character).cost
