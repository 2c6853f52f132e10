"""LightRAG (Guo et al. 2024), the graph-based baseline of AMADEUS Table 6, run through the ``lightrag-hku`` package.

**Index** (once per character, on disk, its cost recorded): each ACTS chunk of the persona is inserted as one
LightRAG document (id and file path: the chunk id, as LightRAG rejects two documents with one file path), and
LightRAG's own pipeline splits it (one LightRAG chunk per document while ``chunk_token_size`` exceeds the chunk),
extracts entities and relations with its own prompts (plus ``max_gleaning`` re-asks), merges them into its
NetworkX graph and embeds entities, relations and chunks into its NanoVectorDB stores. ACTS chunks rather than
the raw persona text, because then the chunks LightRAG puts in front of the LLM map back exactly to persona chunk
ids (chunk statistics compare across methods) and each chunk carries its heading path into extraction;
``documents="persona"`` inserts the persona text as one document instead (LightRAG chunks it with
``chunk_token_size``; no chunk ids then).

The workspace lives in ``cache_dir()/lightrag/<character>/<key>``, the key a hash of the persona text, the
documents, the LLM's ``model_id``, the embedder's ``model_id``, the LightRAG version and every setting that
changes the index. A build that did not finish (no ``rpa_index.json`` beside LightRAG's files) is removed and
redone. Within one process a workspace is opened once; :func:`close_lightrag` finalizes them all.

**Answer**: ``aquery_llm`` with ``only_need_context=True`` in ``mode`` (default ``mix``): LightRAG's keyword
extraction (one LLM call), then its entities, relations and chunks as one ``graph`` context item (LightRAG's
context text; chunk ids: the ACTS chunks whose text, whole or a piece, is in it), answered by the shared
role-play prompt like every other method. LightRAG's "no context" sentence (``PROMPTS["fail_response"]``) counts
as an empty context: no item. A query that fails inside LightRAG is an error, never an empty context.

**Plumbing**: our LLM layer is LightRAG's LLM function (one async adapter per LightRAG role, running
``llm.chat`` in a worker thread, so every call is cached and counted like any other and traced as a
:class:`~rpa_lib.methods.base.Call`); our embedder is its ``EmbeddingFunc`` (dimension probed from the embedder,
no token limit, so LightRAG never re-splits a chunk for the embedder); :class:`WordTokenizer` is its tokenizer
(LightRAG otherwise builds a tiktoken tokenizer, which downloads its vocabulary). LightRAG's own LLM response
cache is off (our cache serves repeats). Every constructor and query parameter is passed explicitly, so the
environment and any ``.env`` cannot change them (LightRAG reads both when it is imported; this module imports it
lazily and restores ``os.environ`` afterwards). One environment variable is still read at extraction time:
``MAX_EXTRACT_INPUT_TOKENS`` (LightRAG's gleaning guard, default 20480 tokens).

**Async**: every LightRAG coroutine of the process runs on one event loop in a daemon thread
(:class:`_EventLoop`); a caller (a worker thread of ``run_jobs``, or a Jupyter cell whose own loop is running)
submits the coroutine and waits for it. One shared loop rather than one per workspace, because LightRAG's
shared-storage locks are process-wide asyncio locks bound to the loop that first waits on them.

What it does not do: LightRAG's answer generation, reranking, multimodal processing, or any network access.
LightRAG logs to the ``lightrag`` logger at INFO; ``logging.getLogger("lightrag").setLevel("WARNING")`` quiets it.
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import json
import os
import re
import shutil
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from rpa_lib.llm import LLMError, LLMFatalError
from rpa_lib.methods.base import AnswerSettings, Call, Context, ContextItem, Method
from rpa_lib.splitters import split

INDEX_VERSION = 1  # bump when what this module inserts or records changes, so that no stale workspace is reused
MODES = ("local", "global", "hybrid", "naive", "mix")
DOCUMENTS = ("acts", "persona")
COST_FILE = "rpa_index.json"
EMPTY_DATASET = "Query returned empty dataset."  # LightRAG 1.5.7 (operate.py): no entity, relation or chunk passed


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

    def __post_init__(self):
        super().__post_init__()
        if self.documents not in DOCUMENTS:
            raise ValueError(f"unknown documents {self.documents!r}; choose one of {', '.join(DOCUMENTS)}")
        if self.mode not in MODES:
            raise ValueError(f"unknown mode {self.mode!r}; choose one of {', '.join(MODES)}")
        if self.chunk_pick_method not in ("VECTOR", "WEIGHT"):
            raise ValueError(f"chunk_pick_method must be 'VECTOR' or 'WEIGHT', not {self.chunk_pick_method!r}")
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


@dataclass(frozen=True)
class IndexCost:
    """What building one character's LightRAG workspace took. Failed calls spent tokens we cannot see."""

    character: str
    documents: int  # documents inserted
    chunks: int  # LightRAG chunks made from them
    llm_calls: int
    cached_calls: int
    failed_calls: int
    prompt_tokens: int
    completion_tokens: int
    seconds: float  # wall-clock time of the insert
    entities: int  # nodes of LightRAG's graph
    relations: int  # edges of LightRAG's graph
    failed_documents: int  # documents whose extraction failed (LightRAG keeps the others)
    errors: tuple[str, ...] = ()  # the first few failures' messages
    lightrag_version: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


class WordTokenizer:
    """Lossless word-level tokenizer for LightRAG: each token is a word or one punctuation mark with the
    whitespace before it. Ids are interned per process (never stored). Thread-safe, and shared by deep copies
    (LightRAG deep-copies its configuration). ``t.decode(t.encode("Hi, you.")) == "Hi, you."``"""

    _PIECES = re.compile(r"\s*\w+|\s*[^\w\s]|\s+")

    def __init__(self):
        self._ids: dict[str, int] = {}
        self._pieces: list[str] = []
        self._lock = threading.Lock()

    def encode(self, content: str) -> list[int]:
        out = []
        for piece in self._PIECES.findall(content):
            i = self._ids.get(piece)
            if i is None:
                with self._lock:
                    i = self._ids.get(piece)
                    if i is None:  # the piece is stored before its id is visible to other threads
                        self._pieces.append(piece)
                        i = self._ids[piece] = len(self._pieces) - 1
            out.append(i)
        return out

    def decode(self, tokens: list[int]) -> str:
        return "".join(self._pieces[t] for t in tokens)

    def __deepcopy__(self, memo):
        return self


_TOKENIZER = WordTokenizer()

# ---- importing LightRAG without its side effects -------------------------------------------------------------

_IMPORT_LOCK = threading.Lock()
_LR: SimpleNamespace | None = None


def _lightrag() -> SimpleNamespace:
    """The parts of ``lightrag`` this module uses, imported once. LightRAG's modules call ``load_dotenv(".env")``
    when imported (the working directory's ``.env``, which may hold API keys); ``os.environ`` is put back as it was."""
    global _LR
    with _IMPORT_LOCK:
        if _LR is None:
            before = dict(os.environ)
            try:
                import lightrag
                import lightrag.kg.json_doc_status_impl  # noqa: F401  (storages LightRAG imports on construction)
                import lightrag.kg.json_kv_impl  # noqa: F401
                import lightrag.kg.nano_vector_db_impl  # noqa: F401
                import lightrag.kg.networkx_impl  # noqa: F401
                import lightrag.operate  # noqa: F401
                import lightrag.rerank  # noqa: F401
                from lightrag.base import DocStatus, QueryParam
                from lightrag.kg.shared_storage import finalize_share_data
                from lightrag.lightrag import LightRAG, RoleLLMConfig
                from lightrag.prompt import PROMPTS
                from lightrag.utils import EmbeddingFunc, Tokenizer
            finally:
                for key in set(os.environ) - set(before):
                    del os.environ[key]
                for key, value in before.items():
                    if os.environ.get(key) != value:
                        os.environ[key] = value
            _LR = SimpleNamespace(version=lightrag.__version__, LightRAG=LightRAG, QueryParam=QueryParam,
                                  RoleLLMConfig=RoleLLMConfig, DocStatus=DocStatus, EmbeddingFunc=EmbeddingFunc,
                                  Tokenizer=Tokenizer, PROMPTS=PROMPTS, finalize_share_data=finalize_share_data)
        return _LR


# ---- the event loop ----------------------------------------------------------------------------------------


class _EventLoop:
    """One asyncio loop in a daemon thread; :meth:`run` runs a coroutine on it from any other thread and waits."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="rpa-lightrag-loop", daemon=True)
        self.thread.start()

    def run(self, coro):
        if threading.current_thread() is self.thread:
            coro.close()
            raise RuntimeError("a LightRAG call from inside LightRAG's own event loop would wait for itself")
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result()
        except BaseException:  # an interrupt in a notebook: stop the coroutine too
            future.cancel()
            raise

    def stop(self) -> None:
        async def cancel_all():
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self.loop.shutdown_default_executor()

        self.run(cancel_all())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.loop.close()


_LOOP: _EventLoop | None = None
_LOOP_LOCK = threading.Lock()


def _run(coro):
    global _LOOP
    with _LOOP_LOCK:
        if _LOOP is None:
            _LOOP = _EventLoop()
        loop = _LOOP
    return loop.run(coro)


# ---- our LLM and embedder, as LightRAG sees them -----------------------------------------------------------


@dataclass
class _Session:
    """One build or query: the LLM to call, and the calls it made (set in a context variable, which LightRAG
    carries into the tasks and queue workers that make its LLM calls)."""

    llm: Any
    max_tokens: int
    calls: list[Call] = field(default_factory=list)
    fatal: BaseException | None = None  # an error no retry gets past, raised again when LightRAG returns


_SESSION: contextvars.ContextVar[_Session | None] = contextvars.ContextVar("rpa_lightrag_session", default=None)


def _llm_func(role: str):
    """LightRAG's LLM function for one of its roles (``extract``: extraction, gleaning and description summaries;
    ``keyword``: query keywords; ``query`` and ``vlm`` are never called with ``only_need_context``)."""

    async def call(prompt: str, system_prompt: str | None = None, history_messages: list | None = None,
                   **kwargs) -> str:
        session = _SESSION.get()
        if session is None:
            raise RuntimeError("LightRAG called the LLM outside a build or a query of rpa_lib")
        messages = [{"role": "system", "content": system_prompt}] if system_prompt else []
        messages += [{"role": m["role"], "content": m["content"]} for m in history_messages or []
                     if m.get("role") in ("user", "assistant") and isinstance(m.get("content"), str)]
        messages.append({"role": "user", "content": prompt})
        purpose = {"keyword": "keywords", "extract": "glean" if history_messages else
                   "extract" if system_prompt else "summarize"}.get(role, role)
        max_tokens = kwargs.get("max_tokens") or session.max_tokens
        try:
            reply = await asyncio.to_thread(session.llm.chat, messages, max_tokens=max_tokens,
                                            name=f"lightrag {purpose}")
        except LLMError as e:
            session.calls.append(Call(purpose, "chat", getattr(e, "cached", False), 0, 0, 0.0, f"failed: {e}"))
            if isinstance(e, LLMFatalError):
                session.fatal = e
            raise
        except Exception as e:  # a fault in our own code: never turned into a failed document
            session.calls.append(Call(purpose, "chat", False, 0, 0, 0.0, f"failed: {type(e).__name__}: {e}"))
            session.fatal = e
            raise
        session.calls.append(Method.trace(purpose, reply))
        return reply.text

    return call


def _embedding_func(embedder):
    from rpa_lib.embeddings import embed

    async def call(texts: list[str], context: str = "document", **kwargs):
        try:
            return await asyncio.to_thread(embed, embedder, list(texts), "query" if context == "query" else "document")
        except Exception as e:  # a missing model fails every document alike: stop instead of failing them all
            session = _SESSION.get()
            if session is not None:
                session.fatal = e
            raise

    return call


# ---- workspaces --------------------------------------------------------------------------------------------


@dataclass
class _Workspace:
    key: str
    folder: Path
    rag: Any  # lightrag.LightRAG
    cost: IndexCost
    source: str  # "built" | "disk"


_WORKSPACES: dict[str, _Workspace] = {}  # by key: LightRAG's shared storage is per workspace name, process-wide
_BUILDING: dict[str, threading.Lock] = {}
_WORKSPACES_LOCK = threading.Lock()


def close_lightrag() -> None:
    """Finalize every open LightRAG workspace, reset LightRAG's process-wide shared storage and stop the event
    loop (the next call starts afresh, from disk). Call it when no LightRAG call is in flight."""
    global _LOOP
    with _WORKSPACES_LOCK:
        workspaces = list(_WORKSPACES.values())
        _WORKSPACES.clear()
        _BUILDING.clear()
    with _LOOP_LOCK:
        loop, _LOOP = _LOOP, None
    if loop is None:
        return

    async def finalize():
        for ws in workspaces:
            await ws.rag.finalize_storages()

    try:
        loop.run(finalize())
    finally:
        loop.stop()
        if _LR is not None:
            _LR.finalize_share_data()


def _constructor_args(s: LightRAGSettings, folder: Path, workspace: str, embedding_func, max_async: int) -> dict:
    """Every LightRAG constructor argument whose default LightRAG would read from the environment, and ours."""
    lr = _lightrag()
    roles = {role: lr.RoleLLMConfig(func=_llm_func(role), kwargs={}, max_async=max_async, timeout=s.llm_timeout)
             for role in ("extract", "keyword", "query", "vlm")}
    return dict(
        working_dir=str(folder.parent), workspace=workspace,
        kv_storage="JsonKVStorage", vector_storage="NanoVectorDBStorage", graph_storage="NetworkXStorage",
        doc_status_storage="JsonDocStatusStorage",
        top_k=s.top_k, chunk_top_k=s.chunk_top_k, max_entity_tokens=s.max_entity_tokens,
        max_relation_tokens=s.max_relation_tokens, max_total_tokens=s.max_total_tokens,
        related_chunk_number=s.related_chunk_number, kg_chunk_pick_method=s.chunk_pick_method,
        enable_content_headings=False,
        entity_extract_max_gleaning=s.max_gleaning, entity_extract_max_records=s.max_extraction_records,
        entity_extract_max_entities=s.max_extraction_entities,
        force_llm_summary_on_merge=s.force_llm_summary_on_merge,
        chunk_token_size=s.chunk_token_size, chunk_overlap_token_size=s.chunk_overlap_token_size,
        tokenizer=lr.Tokenizer("rpa-words", _TOKENIZER), tiktoken_model_name="",
        embedding_func=embedding_func, embedding_chunk_overlap_token_size=0, embedding_batch_num=32,
        embedding_func_max_async=1, embedding_cache_config={"enabled": False, "similarity_threshold": 0.95,
                                                            "use_llm_check": False},
        default_embedding_timeout=max(600, s.llm_timeout),
        llm_model_func=_llm_func("base"), role_llm_configs=roles, llm_model_name="rpa_lib",
        llm_model_max_async=max_async, llm_model_kwargs={}, default_llm_timeout=s.llm_timeout,
        summary_max_tokens=s.summary_max_tokens, summary_context_size=s.summary_context_size,
        summary_length_recommended=s.summary_length_recommended,
        entity_extraction_use_json=False,
        rerank_model_func=None, rerank_model_max_async=1, default_rerank_timeout=30, min_rerank_score=0.0,
        vector_db_storage_cls_kwargs={"cosine_better_than_threshold": s.cosine_threshold},
        cosine_better_than_threshold=s.cosine_threshold,
        enable_llm_cache=False, enable_llm_cache_for_entity_extract=False, vlm_process_enable=False,
        max_parallel_insert=max_async, max_parallel_parse_native=1, max_parallel_parse_mineru=1,
        max_parallel_parse_docling=1, max_parallel_analyze=1, queue_size_parse=20, queue_size_analyze=100,
        queue_size_insert=4, pipeline_scheduling_page_size=500, pipeline_require_strict_storage_reads=False,
        max_pending_documents=0, max_graph_nodes=1000, max_source_ids_per_entity=200,
        max_source_ids_per_relation=200, source_ids_limit_method="KEEP", max_file_paths=75,
        file_path_more_placeholder="truncated", auto_manage_storages_states=False, user_prompt_prefix="",
        addon_params={
            "language": s.language, "entity_type_prompt_file": "",
            "chunker": {"chunk_token_size": s.chunk_token_size,
                        "fixed_token": {"chunk_token_size": s.chunk_token_size,
                                        "chunk_overlap_token_size": s.chunk_overlap_token_size,
                                        "split_by_character": None, "split_by_character_only": False}},
        },
    )


def _query_args(s: LightRAGSettings) -> dict:
    """Every QueryParam field: ``only_need_context``, no rerank, no server-side prompt prefix, and our settings."""
    return dict(mode=s.mode, only_need_context=True, only_need_prompt=False, response_type="Multiple Paragraphs",
                stream=False, top_k=s.top_k, chunk_top_k=s.chunk_top_k, max_entity_tokens=s.max_entity_tokens,
                max_relation_tokens=s.max_relation_tokens, max_total_tokens=s.max_total_tokens, hl_keywords=[],
                ll_keywords=[], conversation_history=[], user_prompt=None, enable_rerank=False,
                include_references=False, disable_user_prompt_prefix=True)


class LightRAG(Method):
    name = "lightrag"
    Settings = LightRAGSettings

    # ---- index ----------------------------------------------------------------------------------------------

    def documents(self, character: str) -> list[tuple[str, str, str]]:
        """(id, text, file path) of each document inserted: the ACTS chunks, or the persona as one document."""
        persona = self.dataset.persona(character)
        if self.settings.documents == "persona":
            return [(f"{character}:persona", persona.source, persona.name)]
        docs, seen = [], set()
        for chunk in split(persona, "acts"):
            if chunk.text.strip() and chunk.text not in seen:  # LightRAG would merge identical documents
                seen.add(chunk.text)
                docs.append((chunk.id, chunk.text, chunk.id))
        return docs

    def embedder(self, character: str):
        from rpa_lib.retrieval import persona_embedder

        return persona_embedder(self.dataset.persona(character), self.settings.embedder)

    def cache_key(self, character: str) -> str:
        s = self.settings
        fields = {"version": INDEX_VERSION, "lightrag": _lightrag().version, "character": character,
                  "persona": hashlib.sha256(self.dataset.persona(character).source.encode()).hexdigest(),
                  "documents": hashlib.sha256(json.dumps(self.documents(character)).encode()).hexdigest(),
                  "llm": self.llm.model_id, "embedder": self.embedder(character).model_id,
                  **{k: getattr(s, k) for k in (
                      "documents", "chunk_token_size", "chunk_overlap_token_size", "max_gleaning",
                      "max_extraction_records", "max_extraction_entities", "force_llm_summary_on_merge",
                      "summary_max_tokens", "summary_length_recommended", "summary_context_size", "language",
                      "llm_max_tokens", "cosine_threshold", "related_chunk_number", "chunk_pick_method")}}
        return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:24]

    def workspace_dir(self, character: str, key: str | None = None) -> Path:
        from rpa_lib.paths import cache_dir

        return cache_dir() / "lightrag" / character / (key or self.cache_key(character))

    def index_cost(self, character: str) -> IndexCost:
        """What building the character's workspace took (building it now if it is not built or cached)."""
        return self._workspace(character).cost

    def _workspace(self, character: str, key: str | None = None) -> _Workspace:
        """The character's open workspace: from this process, from disk, or built now (once, whatever the threads).
        A workspace already open under another cache folder has the same key, hence the same content, and is used."""
        key = key or self.cache_key(character)
        with _WORKSPACES_LOCK:
            lock = _BUILDING.setdefault(key, threading.Lock())
        with lock:
            with _WORKSPACES_LOCK:
                if key in _WORKSPACES:
                    return _WORKSPACES[key]
            embedder = self.embedder(character)
            from rpa_lib.embeddings import embed

            dim = int(embed(embedder, ["dimension probe"]).shape[1])
            ws = _run(self._open(character, key, self.workspace_dir(character, key), embedder, dim))
            with _WORKSPACES_LOCK:
                _WORKSPACES[key] = ws
            return ws

    async def _open(self, character: str, key: str, folder: Path, embedder, dim: int) -> _Workspace:
        lr = _lightrag()
        s = self.settings
        cost_file = folder / COST_FILE
        if folder.exists() and not cost_file.is_file():  # an unfinished build
            shutil.rmtree(folder)
        embedding_func = lr.EmbeddingFunc(embedding_dim=dim, func=_embedding_func(embedder), max_token_size=None,
                                          send_dimensions=False, model_name=None, supports_asymmetric=True)
        max_async = s.llm_max_async or max(1, int(getattr(self.llm, "max_workers", 1) or 1))
        try:
            rag = lr.LightRAG(**_constructor_args(s, folder, key, embedding_func, max_async))
        except SystemExit as e:  # LightRAG exits on a deprecated environment variable (ENTITY_TYPES)
            raise RuntimeError(f"LightRAG refused to start: {e}") from None
        await rag.initialize_storages()
        if cost_file.is_file():
            data = json.loads(cost_file.read_text(encoding="utf-8"))
            cost = IndexCost(**{**data["cost"], "errors": tuple(data["cost"]["errors"])})
            return _Workspace(key, folder, rag, cost, "disk")
        try:
            cost = await self._build(character, rag, lr)
        except BaseException:
            await rag.finalize_storages()
            raise
        tmp = cost_file.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"cost": cost.to_dict(), "settings": asdict(s), "llm": self.llm.model_id,
                                   "embedder": embedder.model_id}, indent=1, ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, cost_file)
        return _Workspace(key, folder, rag, cost, "built")

    async def _build(self, character: str, rag, lr) -> IndexCost:
        docs = self.documents(character)
        session = _Session(self.llm, self.settings.llm_max_tokens)
        token = _SESSION.set(session)
        started = time.monotonic()
        try:
            await rag.ainsert([d[1] for d in docs], ids=[d[0] for d in docs], file_paths=[d[2] for d in docs])
        finally:
            _SESSION.reset(token)
        seconds = time.monotonic() - started
        if session.fatal is not None:
            raise session.fatal
        statuses = await rag.doc_status.get_docs_by_statuses([lr.DocStatus.PROCESSED, lr.DocStatus.FAILED])
        failed = [st for st in statuses.values() if st.status == lr.DocStatus.FAILED]
        graph = rag.chunk_entity_relation_graph
        calls = session.calls
        return IndexCost(
            character=character, documents=len(docs),
            chunks=sum(st.chunks_count or 0 for st in statuses.values() if st.status == lr.DocStatus.PROCESSED),
            llm_calls=len(calls), cached_calls=sum(c.cached for c in calls),
            failed_calls=sum(c.output.startswith("failed:") for c in calls),
            prompt_tokens=sum(c.prompt_tokens for c in calls), completion_tokens=sum(c.completion_tokens for c in calls),
            seconds=round(seconds, 3), entities=len(await graph.get_all_nodes()), relations=len(await graph.get_all_edges()),
            failed_documents=len(failed), errors=tuple(str(st.error_msg)[:300] for st in failed[:3]),
            lightrag_version=lr.version)

    # ---- answer ---------------------------------------------------------------------------------------------

    def query_param(self):
        """LightRAG's QueryParam with every field set (its defaults come from the environment)."""
        return _lightrag().QueryParam(**_query_args(self.settings))

    def context(self, character: str, question: str) -> Context:
        key = self.cache_key(character)
        with _WORKSPACES_LOCK:
            in_memory = key in _WORKSPACES
        ws = self._workspace(character, key)
        session = _Session(self.llm, self.settings.llm_max_tokens)
        result = _run(_query(ws.rag, question, self.query_param(), session))
        if session.fatal is not None:
            raise session.fatal
        llm_response = result.get("llm_response") or {}
        no_results = ((result.get("metadata") or {}).get("failure_reason") == "no_results"
                      or result.get("message") == EMPTY_DATASET)  # nothing retrieved: an empty context, not an error
        if result.get("status") == "failure" and not no_results:  # LightRAG caught an exception and said so
            raise RuntimeError(f"LightRAG query failed: {result.get('message')}")
        text = (llm_response.get("content") or "").strip()
        empty = no_results or not text or _lightrag().PROMPTS["fail_response"].strip() in text or "[no-context]" in text
        data = result.get("data") or {}
        known = {d[0] for d in self.documents(character)} if self.settings.documents == "acts" else set()
        chunk_ids = [] if empty else list(dict.fromkeys(
            doc for c in data.get("chunks") or [] if (doc := str(c.get("chunk_id", "")).rsplit("-chunk-", 1)[0]) in known))
        items = [] if empty else [ContextItem("graph", text, tuple(chunk_ids), f"lightrag {self.settings.mode}")]
        keywords = (result.get("metadata") or {}).get("keywords") or {}
        details = {"index": "memory" if in_memory else ws.source, "mode": self.settings.mode, "empty_context": empty,
                   "keywords": {"high_level": list(keywords.get("high_level") or []),
                                "low_level": list(keywords.get("low_level") or [])},
                   "retrieved": {"entities": len(data.get("entities") or []),
                                 "relations": len(data.get("relationships") or []),
                                 "chunks": len(data.get("chunks") or [])},
                   "index_cost": ws.cost.to_dict()}
        return Context(items, session.calls, details)


async def _query(rag, question: str, param, session: _Session) -> dict:
    token = _SESSION.set(session)
    try:
        return await rag.aquery_llm(question, param)
    finally:
        _SESSION.reset(token)
