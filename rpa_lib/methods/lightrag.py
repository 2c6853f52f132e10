"""LightRAG (Guo et al. 2024), the graph-based baseline of AMADEUS Table 6, through ``lightrag-hku``
(:mod:`rpa_lib.methods.lightrag_bridge`): each ACTS chunk is one LightRAG document of a per-character workspace,
built once and cached; the answer is LightRAG's retrieved context (``only_need_context``) in the shared role-play
prompt. Not here: LightRAG's answer generation, reranking, multimodal processing, or any network access.
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rpa_lib.embeddings import embed
from rpa_lib.methods import lightrag_bridge as bridge
from rpa_lib.methods.base import AnswerSettings, Context, ContextItem, charged
from rpa_lib.methods.graph_cache import (
    GraphIndexMethod,
    IndexCache,
    IndexCost,
    build_path,
    index_key,
    text_hash,
    write_json,
)
from rpa_lib.methods.registry import register
from rpa_lib.paths import cache_dir
from rpa_lib.splitters import split

MODES = ("local", "global", "hybrid", "naive", "mix")
DOCUMENTS = ("acts", "persona")
COST_FILE = "rpa_index.json"
EMPTY_DATASET = "Query returned empty dataset."  # LightRAG 1.5.7 (operate.py): no entity, relation or chunk passed
_INDEX_SETTINGS = ("documents", "chunk_token_size", "chunk_overlap_token_size", "max_gleaning",  # change an index
                   "max_extraction_records", "max_extraction_entities", "force_llm_summary_on_merge",
                   "summary_max_tokens", "summary_length_recommended", "summary_context_size", "language",
                   "llm_max_tokens", "cosine_threshold", "related_chunk_number", "chunk_pick_method")


@dataclass(frozen=True)
class LightRAGSettings(AnswerSettings):
    """Every value LightRAG reads; defaults are LightRAG 1.5.7's own, unless a comment says otherwise."""

    embedder: str = "minilm"  # our embedder (short name or sentence-transformers id), LightRAG's EmbeddingFunc
    documents: str = "acts"  # what is inserted: "acts" (each ACTS chunk one document) | "persona" (one document)
    # ---- query (QueryParam) ----
    mode: str = "mix"  # local | global | hybrid | naive | mix
    top_k: int = 40  # entities (local) and relations (global) retrieved
    chunk_top_k: int = 20  # chunks retrieved by vector search and kept
    max_entity_tokens: int = 6000  # context budget of the entities, in WordTokenizer tokens
    max_relation_tokens: int = 8000  # context budget of the relations
    max_total_tokens: int = 30000  # whole context budget (LightRAG's prompt, entities, relations, chunks)
    # ---- query, fixed per workspace (part of the index key) ----
    cosine_threshold: float = 0.2  # least cosine similarity of a vector hit (entities, relations, chunks)
    related_chunk_number: int = 5  # chunks taken per entity or relation
    chunk_pick_method: str = "VECTOR"  # how those chunks are chosen: VECTOR (similarity) | WEIGHT
    # ---- index ----
    chunk_token_size: int = 1200  # LightRAG's chunk length, in WordTokenizer tokens (ACTS chunks are shorter)
    chunk_overlap_token_size: int = 100
    max_gleaning: int = 1  # extraction re-asks per chunk ("anything missed?")
    max_extraction_records: int = 100  # entity + relation rows per extraction reply, at most
    max_extraction_entities: int = 40  # entity rows per extraction reply, at most
    force_llm_summary_on_merge: int = 8  # descriptions of one entity before the LLM summarizes them
    summary_max_tokens: int = 1200  # a merged description longer than this is summarized
    summary_length_recommended: int = 600  # the summary length LightRAG asks for
    summary_context_size: int = 12000  # descriptions given to one summary call, at most
    language: str = "English"  # language of extracted names and descriptions
    # ---- our LLM adapter ----
    llm_max_tokens: int = 1024  # max_tokens of LightRAG's LLM calls when it gives none (ours; it has no default)
    llm_timeout: int = 900  # seconds LightRAG waits for one LLM call (LightRAG: 240; a local CPU model is slower)
    llm_max_async: int | None = None  # concurrent LLM calls (None: the LLM's max_workers; LightRAG: 4)
    # ---- ours: the answer's context ----
    budget_chars: int | None = None  # LightRAG's context cut to this many characters at a word (None: no budget)

    def __post_init__(self):
        super().__post_init__()
        for name, choices in (("documents", DOCUMENTS), ("mode", MODES), ("chunk_pick_method", ("VECTOR", "WEIGHT"))):
            if getattr(self, name) not in choices:
                raise ValueError(f"unknown {name} {getattr(self, name)!r}; choose one of {', '.join(choices)}")
        positive = ("top_k", "chunk_top_k", "max_entity_tokens", "max_relation_tokens", "max_total_tokens",
                    "related_chunk_number", "chunk_token_size", "max_extraction_records", "max_extraction_entities",
                    "force_llm_summary_on_merge", "summary_max_tokens", "summary_length_recommended",
                    "summary_context_size", "llm_max_tokens", "llm_timeout")
        bad = [f"{n}={getattr(self, n)}" for n in positive if getattr(self, n) < 1]
        if bad:
            raise ValueError(f"need positive values: {', '.join(bad)}")
        if not 0 <= self.chunk_overlap_token_size < self.chunk_token_size:
            raise ValueError(f"need 0 <= chunk_overlap_token_size < chunk_token_size (got "
                             f"{self.chunk_overlap_token_size}, {self.chunk_token_size})")
        if self.max_gleaning < 0 or (self.llm_max_async is not None and self.llm_max_async < 1):
            raise ValueError(f"need max_gleaning >= 0 and llm_max_async >= 1 or None "
                             f"(got {self.max_gleaning}, {self.llm_max_async})")
        if not -1 <= self.cosine_threshold <= 1:
            raise ValueError(f"cosine_threshold must be in [-1, 1], not {self.cosine_threshold}")


@dataclass
class _Workspace:
    key: str
    rag: Any  # lightrag.LightRAG
    cost: IndexCost
    source: str  # "built" | "disk"


_WORKSPACES: IndexCache[_Workspace] = IndexCache()  # by key: LightRAG's shared storage is per workspace, process-wide


def close_lightrag() -> None:
    """Finalize every open LightRAG workspace, reset LightRAG's process-wide shared storage and stop the event
    loop (the next call starts afresh, from disk). Call it when no LightRAG call is in flight."""
    bridge.shutdown([ws.rag for ws in _WORKSPACES.clear()])


@register
class LightRAG(GraphIndexMethod):
    name = "lightrag"
    Settings = LightRAGSettings

    def draws_on(self) -> str | None:
        inserted = "each ACTS chunk as a document" if self.settings.documents == "acts" else \
            "the whole persona as one document, chunked by LightRAG itself"
        return f"LightRAG builds its graph from {inserted}, the LLM extracting entities and relations"

    def documents(self, character: str) -> list[tuple[str, str, str]]:
        """(id, text, file path) of each document inserted: the ACTS chunks, or the persona as one document."""
        return self._prepared(character)[1]

    def cache_key(self, character: str) -> str:
        persona, _, documents_hash = self._prepared(character)
        lr = bridge.lightrag_modules()
        inputs = {"lightrag": lr.version, "character": character, "persona": text_hash(persona.source),
                  "documents": documents_hash, "llm": self.llm.model_id, "embedder": self.embedder(character).model_id,
                  **{k: getattr(self.settings, k) for k in _INDEX_SETTINGS}}
        return index_key(inputs, lr.PROMPTS)

    def _prepared(self, character: str) -> tuple[Any, list[tuple[str, str, str]], str]:
        """(persona, its documents, their hash), once per persona (splitting it took half of a query's time)."""
        persona = self.dataset.persona(character)
        memo = self.__dict__.setdefault("_documents_of", {})
        held = memo.get(character)
        if held is None or held[0] is not persona:  # another Persona object: the file was edited (or first use)
            if self.settings.documents == "persona":
                docs = [(f"{character}:persona", persona.source, persona.name)]
            else:
                by_text: dict[str, tuple[str, str, str]] = {}  # LightRAG would merge identical documents
                for chunk in split(persona, "acts"):
                    if chunk.text.strip():
                        by_text.setdefault(chunk.text, (chunk.id, chunk.text, chunk.id))
                docs = list(by_text.values())
            held = memo[character] = (persona, docs, text_hash(json.dumps(docs)))
        return held

    def workspace_dir(self, character: str, key: str | None = None) -> Path:
        return cache_dir() / "lightrag" / character / (key or self.cache_key(character))

    def index(self, character: str, key: str | None = None) -> _Workspace:
        """The character's open workspace: from this process, from disk, or built now (once, whatever the threads)."""
        key = key or self.cache_key(character)
        folder = self.workspace_dir(character, key)
        built = build_path(self.llm, folder)
        return _WORKSPACES.get(key, lambda: self._load(character, key, folder) or self._load(character, key, built),
                               lambda: self._build(character, key, built))

    def _load(self, character: str, key: str, folder: Path) -> _Workspace | None:
        cost_file = folder / COST_FILE
        if not cost_file.is_file():
            return None
        rag = self._open(character, key, folder)
        cost = IndexCost.from_dict(json.loads(cost_file.read_text(encoding="utf-8"))["cost"])
        return _Workspace(key, rag, cost, "disk")

    def _build(self, character: str, key: str, folder: Path) -> _Workspace:
        if folder.exists():  # an unfinished build
            shutil.rmtree(folder)
        rag = self._open(character, key, folder)
        try:
            cost = bridge.run(self._insert(character, rag))
        except BaseException:
            bridge.run(rag.finalize_storages())
            raise
        write_json(folder / COST_FILE, {"cost": cost.to_dict(), "settings": asdict(self.settings),
                                        "llm": self.llm.model_id, "embedder": self.embedder(character).model_id},
                   indent=1)
        return _Workspace(key, rag, cost, "built")

    def _open(self, character: str, key: str, folder: Path):
        embedder = self.embedder(character)
        dim = int(embed(embedder, ["dimension probe"]).shape[1])
        max_async = self.settings.llm_max_async or max(1, int(getattr(self.llm, "max_workers", 1) or 1))

        async def open_rag():
            lr = bridge.lightrag_modules()
            embed_func = lr.EmbeddingFunc(embedding_dim=dim, func=bridge.embedding_func(embedder), max_token_size=None,
                                          send_dimensions=False, model_name=None, supports_asymmetric=True)
            try:
                rag = lr.LightRAG(**bridge.constructor_args(self.settings, folder, key, embed_func, max_async))
            except SystemExit as e:  # LightRAG exits on a deprecated environment variable (ENTITY_TYPES)
                raise RuntimeError(f"LightRAG refused to start: {e}") from None
            await rag.initialize_storages()
            return rag

        return bridge.run(open_rag())

    async def _insert(self, character: str, rag) -> IndexCost:
        lr = bridge.lightrag_modules()
        docs = self.documents(character)
        session = bridge.Session(self.llm, self.settings.llm_max_tokens)
        started = time.monotonic()
        await bridge.in_session(session, rag.ainsert([d[1] for d in docs], ids=[d[0] for d in docs],
                                                     file_paths=[d[2] for d in docs]))
        seconds = time.monotonic() - started
        statuses = await rag.doc_status.get_docs_by_statuses([lr.DocStatus.PROCESSED, lr.DocStatus.FAILED])
        failed = [st for st in statuses.values() if st.status == lr.DocStatus.FAILED]
        graph = rag.chunk_entity_relation_graph
        calls = session.calls
        return IndexCost(
            character=character, documents=len(docs),
            chunks=sum(st.chunks_count or 0 for st in statuses.values() if st.status == lr.DocStatus.PROCESSED),
            llm_calls=len(calls), cached_calls=sum(c.cached for c in calls),
            failed_calls=sum(c.output.startswith("failed:") for c in calls),
            prompt_tokens=sum(c.prompt_tokens for c in calls),
            completion_tokens=sum(c.completion_tokens for c in calls), seconds=round(seconds, 3),
            entities=len(await graph.get_all_nodes()), relations=len(await graph.get_all_edges()),
            failed_documents=len(failed), errors=tuple(str(st.error_msg)[:300] for st in failed[:3]),
            lightrag_version=lr.version)

    def query_param(self):
        """LightRAG's QueryParam with every field set (its defaults would come from the environment)."""
        return bridge.lightrag_modules().QueryParam(**bridge.query_args(self.settings))

    def context(self, character: str, question: str) -> Context:
        key = self.cache_key(character)
        in_memory = key in _WORKSPACES
        ws = self.index(character, key)
        session = bridge.Session(self.llm, self.settings.llm_max_tokens)
        with charged(session.calls):  # a failed answer's row still counts the calls it paid for
            result = bridge.run(bridge.in_session(session, ws.rag.aquery_llm(question, self.query_param())))
            metadata = result.get("metadata") or {}
            no_results = (metadata.get("failure_reason") == "no_results"
                          or result.get("message") == EMPTY_DATASET)  # nothing retrieved: an empty context, no error
            if result.get("status") == "failure" and not no_results:  # LightRAG caught an exception and said so
                raise RuntimeError(f"LightRAG query failed: {result.get('message')}")
        text = ((result.get("llm_response") or {}).get("content") or "").strip()
        empty = (no_results or not text or bridge.lightrag_modules().PROMPTS["fail_response"].strip() in text
                 or "[no-context]" in text)
        data = result.get("data") or {}
        known = {d[0] for d in self.documents(character)} if self.settings.documents == "acts" else set()
        docs = (str(c.get("chunk_id", "")).rsplit("-chunk-", 1)[0] for c in data.get("chunks") or [])
        chunk_ids = tuple(dict.fromkeys(doc for doc in docs if doc in known))
        items = [] if empty else [ContextItem("graph", text, chunk_ids, f"lightrag {self.settings.mode}")]
        keywords = metadata.get("keywords") or {}
        details = {"index": "memory" if in_memory else ws.source, "mode": self.settings.mode, "empty_context": empty,
                   "keywords": {"high_level": list(keywords.get("high_level") or []),
                                "low_level": list(keywords.get("low_level") or [])},
                   "retrieved": {"entities": len(data.get("entities") or []),
                                 "relations": len(data.get("relationships") or []),
                                 "chunks": len(data.get("chunks") or [])},
                   "index_cost": ws.cost.to_dict()}
        return self.budgeted(Context(items, session.calls, details))
