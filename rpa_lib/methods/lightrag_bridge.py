"""The bridge between rpa_lib and ``lightrag-hku``: importing it without side effects, running its coroutines on
one shared event loop, and our LLM, embedder and tokenizer as LightRAG sees them, with every LightRAG parameter
passed explicitly so that the environment cannot change it. Not here: what is inserted or asked (the method,
:mod:`rpa_lib.methods.lightrag`), or keeping workspaces.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from rpa_lib.embeddings import embed
from rpa_lib.llm import LLMError, LLMFatalError
from rpa_lib.methods.base import Call, Method


class WordTokenizer:
    """Lossless word-level tokenizer (a word or a punctuation mark with the whitespace before it), ids interned per
    process; thread-safe and shared by deep copies. ``t.decode(t.encode("Hi, you.")) == "Hi, you."``"""

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

    def __deepcopy__(self, memo):  # LightRAG deep-copies its configuration: every copy shares the ids
        return self


_TOKENIZER = WordTokenizer()

_IMPORT_LOCK = threading.Lock()
_LR: SimpleNamespace | None = None


def lightrag_modules() -> SimpleNamespace:
    """The parts of ``lightrag`` this module uses, imported once, with ``os.environ`` put back as it was (LightRAG
    loads the working directory's ``.env``, which may hold API keys)."""
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
                os.environ.update(before)
            _LR = SimpleNamespace(version=lightrag.__version__, LightRAG=LightRAG, QueryParam=QueryParam,
                                  RoleLLMConfig=RoleLLMConfig, DocStatus=DocStatus, EmbeddingFunc=EmbeddingFunc,
                                  Tokenizer=Tokenizer, PROMPTS=PROMPTS, finalize_share_data=finalize_share_data)
        return _LR


class _EventLoop:
    """One asyncio loop in a daemon thread, which :meth:`run` hands a coroutine from any other thread."""

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


def run(coro):
    global _LOOP
    with _LOOP_LOCK:
        if _LOOP is None:
            _LOOP = _EventLoop()
        loop = _LOOP
    return loop.run(coro)


@dataclass
class Session:
    """One build or query: the LLM to call and the calls it made (a context variable, which LightRAG carries into
    the tasks that make its LLM calls)."""

    llm: Any
    max_tokens: int
    calls: list[Call] = field(default_factory=list)
    fatal: BaseException | None = None  # an error no retry gets past, raised again when LightRAG returns


SESSION: contextvars.ContextVar[Session | None] = contextvars.ContextVar("rpa_lightrag_session", default=None)


def llm_func(role: str):
    """LightRAG's LLM function for one of its roles (``extract``, ``keyword``; ``query`` and ``vlm`` go unused)."""

    async def call(prompt: str, system_prompt: str | None = None, history_messages: list | None = None,
                   **kwargs) -> str:
        session = SESSION.get()
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
            session.calls.append(Call.failed(purpose, "chat", e))
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


def embedding_func(embedder):
    async def call(texts: list[str], context: str = "document", **kwargs):
        try:
            return await asyncio.to_thread(embed, embedder, list(texts), "query" if context == "query" else "document")
        except Exception as e:  # a missing model fails every document alike: stop instead of failing them all
            session = SESSION.get()
            if session is not None:
                session.fatal = e
            raise

    return call


def constructor_args(s, folder: Path, workspace: str, embed_func, max_async: int) -> dict:
    """Every LightRAG constructor argument whose default LightRAG would read from the environment, and ours."""
    lr = lightrag_modules()
    roles = {role: lr.RoleLLMConfig(func=llm_func(role), kwargs={}, max_async=max_async, timeout=s.llm_timeout)
             for role in ("extract", "keyword", "query", "vlm")}
    return dict(
        working_dir=str(folder.parent), workspace=workspace, kv_storage="JsonKVStorage",
        vector_storage="NanoVectorDBStorage", graph_storage="NetworkXStorage", doc_status_storage="JsonDocStatusStorage",
        **_retrieval_args(s), related_chunk_number=s.related_chunk_number, kg_chunk_pick_method=s.chunk_pick_method,
        enable_content_headings=False, entity_extract_max_gleaning=s.max_gleaning,
        entity_extract_max_records=s.max_extraction_records, entity_extract_max_entities=s.max_extraction_entities,
        force_llm_summary_on_merge=s.force_llm_summary_on_merge,
        chunk_token_size=s.chunk_token_size, chunk_overlap_token_size=s.chunk_overlap_token_size,
        tokenizer=lr.Tokenizer("rpa-words", _TOKENIZER), tiktoken_model_name="",
        embedding_func=embed_func, embedding_chunk_overlap_token_size=0, embedding_batch_num=32,
        embedding_func_max_async=1,
        embedding_cache_config={"enabled": False, "similarity_threshold": 0.95, "use_llm_check": False},
        default_embedding_timeout=max(600, s.llm_timeout),
        llm_model_func=llm_func("base"), role_llm_configs=roles, llm_model_name="rpa_lib",
        llm_model_max_async=max_async, llm_model_kwargs={}, default_llm_timeout=s.llm_timeout,
        summary_max_tokens=s.summary_max_tokens, summary_context_size=s.summary_context_size,
        summary_length_recommended=s.summary_length_recommended, entity_extraction_use_json=False,
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
        addon_params={"language": s.language, "entity_type_prompt_file": "", "chunker": {
            "chunk_token_size": s.chunk_token_size,
            "fixed_token": {"chunk_token_size": s.chunk_token_size, "chunk_overlap_token_size": s.chunk_overlap_token_size,
                            "split_by_character": None, "split_by_character_only": False}}},
    )


def _retrieval_args(s) -> dict:
    return dict(top_k=s.top_k, chunk_top_k=s.chunk_top_k, max_entity_tokens=s.max_entity_tokens,
                max_relation_tokens=s.max_relation_tokens, max_total_tokens=s.max_total_tokens)


def query_args(s) -> dict:
    """Every QueryParam field: ``only_need_context``, no rerank, no server-side prompt prefix, and our settings."""
    return dict(mode=s.mode, only_need_context=True, only_need_prompt=False, response_type="Multiple Paragraphs",
                stream=False, **_retrieval_args(s), hl_keywords=[], ll_keywords=[], conversation_history=[],
                user_prompt=None, enable_rerank=False, include_references=False, disable_user_prompt_prefix=True)


async def in_session(session: Session, coro):
    """``coro`` awaited as part of ``session`` (a build or a query), raising the session's fatal error after it."""
    token = SESSION.set(session)
    try:
        result = await coro
    finally:
        SESSION.reset(token)
    if session.fatal is not None:
        raise session.fatal
    return result


def shutdown(rags: list) -> None:
    """Finalize the storages of ``rags``, stop the event loop and reset LightRAG's shared storage (call it when no
    LightRAG call is in flight)."""
    global _LOOP
    with _LOOP_LOCK:
        loop, _LOOP = _LOOP, None
    if loop is None:
        return

    async def finalize():
        for rag in rags:
            await rag.finalize_storages()

    try:
        loop.run(finalize())
    finally:
        loop.stop()
        if _LR is not None:
            _LR.finalize_share_data()
