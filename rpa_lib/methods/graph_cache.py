"""What LightRAG and RoleRAG share: a per-character index the LLM builds once, its cost record (:class:`IndexCost`),
its cache key (a hash of every input, the prompts' text included) and cache (:class:`IndexCache`: memory, then
disk, then build). Not here: building, storing or querying a graph (each method does), or evicting anything.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Generic, TypeVar

from rpa_lib.methods.base import Method
from rpa_lib.paths import cache_dir
from rpa_lib.retrieval import persona_embedder
from rpa_lib.text import write_whole

T = TypeVar("T")


@dataclass(frozen=True)
class IndexCost:
    """What building one character's index took; the fields after ``relations`` are one method's own."""

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
        """The record :meth:`to_dict` wrote (a field this version lacks is ignored)."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items() if k in known})


def index_key(inputs: dict, prompts: Any) -> str:
    """24 hex digits of a hash of ``inputs`` (persona hash, model ids, settings) and of ``prompts`` (what shapes the
    requests that build the index, the prompts' text included).

    >>> index_key({"k": 1}, ["Extract the entities of {passage}."]) == index_key({"k": 1}, ["Extract the entities."])
    False
    """
    prompt_hash = hashlib.sha256(json.dumps(prompts, sort_keys=True, default=str).encode()).hexdigest()
    return hashlib.sha256(json.dumps({**inputs, "prompts": prompt_hash}, sort_keys=True).encode()).hexdigest()[:24]


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class IndexCache(Generic[T]):
    """Built indexes by key: :meth:`get` returns the one in memory, else ``load()`` (None when there is none), else
    ``build()``, one build per key whatever the threads."""

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
            if (item := load()) is None:  # None, not any falsy index: an empty graph loaded is still loaded
                item = build()
            with self._lock:
                self._items[key] = item
            return item

    def clear(self) -> list[T]:
        """Forget every index, returning those that were held."""
        with self._lock:
            items = list(self._items.values())
            self._items.clear()
            self._building.clear()
        return items


def write_json(path: Path, data: dict, indent: int | None = None) -> None:
    """``path`` written whole or not at all (:func:`~rpa_lib.text.write_whole`)."""
    write_whole(path, json.dumps(data, indent=indent, ensure_ascii=False))


def build_path(llm, path: Path) -> Path:
    """Where an index that ``llm`` builds is stored: ``path``, or for a stand-in LLM (a plan's, whose replies are
    made up) the same place under its ``scratch_dir``, so that no real run loads it."""
    scratch = getattr(llm, "scratch_dir", None)
    if scratch is None:
        return path
    try:
        inside = path.relative_to(cache_dir())
    except ValueError:
        inside = Path(*path.parts[-3:])
    return Path(scratch) / inside


class GraphIndexMethod(Method):
    """A method whose per-character index the LLM builds; a subclass implements :meth:`index` (carrying a ``cost``)
    and :meth:`cache_key`."""

    def embedder(self, character: str):
        """The ``embedder`` setting for this persona (TF-IDF is fitted on its paragraphs)."""
        return persona_embedder(self.dataset.persona(character), self.settings.embedder)

    def index_cost(self, character: str) -> IndexCost:
        """What building the character's index took (building it now if need be)."""
        return self.index(character).cost
