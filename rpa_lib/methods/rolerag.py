"""RoleRAG (Wang, Leung and Shen 2025): a per-character knowledge graph with normalized entity names (built once by
:mod:`rpa_lib.methods.rolerag_graph`, cached on disk), and retrieval that knows the character's cognitive boundary:
the question's entities are routed as out of scope (a boundary note), specific (vector search) or general (the
character's neighbours of that type). Its departures from the paper: ``docs/design/methods.md``.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from pathlib import Path

from rpa_lib.embeddings import embed
from rpa_lib.methods.base import Context, ContextItem, RetrievalSettings, charged, traced
from rpa_lib.methods.graph_cache import GraphIndexMethod, IndexCache, build_path, index_key, text_hash
from rpa_lib.methods.registry import register
from rpa_lib.methods.rolerag_graph import (
    CharacterGraph,
    GraphBuilder,
    build_prompts,
    entity_type,
    load_graph,
    save_graph,
)
from rpa_lib.methods.rolerag_prompts import ANALYSIS_SCHEMA, analysis_messages, boundary_note, hypothetical_messages
from rpa_lib.paths import cache_dir
from rpa_lib.splitters import VANILLA_LENGTH, VANILLA_OVERLAP, Chunk, split

CHUNK_LENGTH, CHUNK_OVERLAP = 2400, 400  # characters: RoleRAG's 600 / 100 tokens at ~4 characters a token


@dataclass(frozen=True)
class RoleRAGSettings(RetrievalSettings):
    splitter: str = "vanilla"
    chunk_length: int | None = None  # vanilla only: None = CHUNK_LENGTH
    overlap: int | None = None  # vanilla only: None = CHUNK_OVERLAP
    merge_k: int = 5  # candidate names per name, from embedding similarity (0: no normalization)
    merge_similarity: float = 0.75  # least cosine similarity of a candidate pair
    neighbours: int = 5  # general entities: the character's neighbours of that type, at most
    hypothetical: bool = True  # guess the answer's context before the query analysis (RoleRAG's HyDE step)
    max_description: int = 800  # characters; a longer gathered description is summarized by the LLM
    extract_retries: int = 2  # re-asks when an extraction's JSON is invalid
    budget_chars: int | None = None  # context cut to this many characters, the boundary note kept whole (None: no budget)

    def __post_init__(self):
        super().__post_init__()
        if self.splitter != "vanilla" and (self.chunk_length is not None or self.overlap is not None):
            raise ValueError(f"{self.splitter} derives its chunk length from the persona; chunk_length and overlap "
                             f"apply to the vanilla splitter only")
        length, overlap = self.lengths
        if not 0 <= overlap < length:
            raise ValueError(f"need 0 <= overlap < chunk_length (got {overlap}, {length})")
        if self.merge_k < 0 or self.neighbours < 0 or self.extract_retries < 0 or self.max_description < 100:
            raise ValueError(f"need merge_k, neighbours, extract_retries >= 0 and max_description >= 100 (got "
                             f"{self.merge_k}, {self.neighbours}, {self.extract_retries}, {self.max_description})")
        if not -1 <= self.merge_similarity <= 1:
            raise ValueError(f"merge_similarity must be in [-1, 1], not {self.merge_similarity}")

    @property
    def lengths(self) -> tuple[int, int]:
        return (CHUNK_LENGTH if self.chunk_length is None else self.chunk_length,
                CHUNK_OVERLAP if self.overlap is None else self.overlap)


@register
class RoleRAG(GraphIndexMethod):
    name = "rolerag"
    Settings = RoleRAGSettings

    def __init__(self, llm, settings=None, dataset=None):
        super().__init__(llm, settings, dataset)
        self._graphs: IndexCache[CharacterGraph] = IndexCache()
        self._lock = threading.Lock()  # one thread embeds a graph's node texts; the others wait for them

    def draws_on(self) -> str | None:
        s = self.settings
        chunks = (f"{s.splitter} chunks of {s.lengths[0]:,} characters with {s.lengths[1]:,} of overlap"
                  if s.splitter == "vanilla" else f"{s.splitter} chunks")
        return f"RoleRAG builds its graph from {chunks}, the LLM extracting entities and relations"

    def chunks(self, character: str) -> list[Chunk]:
        """The chunks extraction reads; non-default vanilla lengths get ids of their own
        (``<slug>:vanilla-2400-400:0000``)."""
        persona = self.dataset.persona(character)
        if self.settings.splitter != "vanilla":
            return split(persona, self.settings.splitter)
        length, overlap = self.settings.lengths
        chunks = split(persona, "vanilla", length=length, overlap=overlap)
        if (length, overlap) == (VANILLA_LENGTH, VANILLA_OVERLAP):
            return chunks
        return [replace(c, id=f"{character}:vanilla-{length}-{overlap}:{i:04d}") for i, c in enumerate(chunks)]

    def cache_key(self, character: str) -> str:
        s = self.settings
        # the profile (labels.csv's name and work) is in the extraction prompts and names the character's node
        inputs = {"persona": text_hash(self.dataset.persona(character).source),
                  "profile": list(self.dataset.profile(character)), "splitter": s.splitter,
                  "lengths": s.lengths if s.splitter == "vanilla" else None,
                  "llm": f"{self.llm.backend}:{self.llm.model_id}", "embedder": self.embedder(character).model_id,
                  "merge_k": s.merge_k, "merge_similarity": s.merge_similarity, "max_description": s.max_description,
                  "extract_retries": s.extract_retries}
        return index_key(inputs, build_prompts())

    def cache_path(self, character: str, key: str | None = None) -> Path:
        return cache_dir() / "rolerag" / character / f"{key or self.cache_key(character)}.json"

    def index(self, character: str, key: str | None = None) -> CharacterGraph:
        """The character's graph: from memory, from disk, or built now (once, whatever the threads)."""
        key = key or self.cache_key(character)
        path = self.cache_path(character, key)
        built = build_path(self.llm, path)
        return self._graphs.get(key, lambda: load_graph(character, path) or load_graph(character, built),
                                lambda: self._build(character, built))

    def _build(self, character: str, path: Path) -> CharacterGraph:
        name, work = self.dataset.profile(character)
        g = GraphBuilder(self.llm, self.settings, character, name, work, self.embedder(character)).build(
            self.chunks(character))
        save_graph(g, path)
        return g

    def _nearest(self, g: CharacterGraph, character: str, query: str, candidates: list[str], k: int) -> list[str]:
        if not candidates or k < 1:
            return []
        embedder = self.embedder(character)
        with self._lock:
            if g.vectors is None:
                g.nodes = list(g.graph.nodes)
                g.vectors = embed(embedder, [g.text(n) for n in g.nodes])
        index = {n: i for i, n in enumerate(g.nodes)}
        q = embed(embedder, [query], kind="query")[0]
        sims = {n: float(g.vectors[index[n]] @ q) for n in candidates}
        return sorted(candidates, key=lambda n: (-sims[n], index[n]))[:k]

    def context(self, character: str, question: str) -> Context:
        s = self.settings
        key = self.cache_key(character)
        in_memory = key in self._graphs
        g = self.index(character, key)
        graph, me = g.graph, g.node
        name, work = self.dataset.profile(character)
        profile = graph.nodes[me]["description"]
        with charged([]) as calls:  # a failed answer's row still counts the calls it paid for
            reply = traced(calls, "hypothetical", "chat", lambda: self.llm.chat(
                hypothetical_messages(name, work, question), max_tokens=120)) if s.hypothetical else None
            hypothetical = reply.text.strip() if reply else ""
            reply = traced(calls, "analyse", "structured", lambda: self.llm.structured(
                analysis_messages(name, work, profile, question, hypothetical), ANALYSIS_SCHEMA, max_tokens=400,
                max_retries=s.extract_retries))
        failed = reply is None
        entities = [] if failed else [
            {"name": " ".join(str(e["name"]).split()), "type": entity_type(e.get("type")),
             "relevant": bool(e["relevant"]), "reason": str(e.get("reason") or "").strip(),
             "specificity": e["specificity"]} for e in reply.data["entities"] if str(e.get("name", "")).strip()]
        if not entities:  # nothing to route: search the question itself
            entities = [{"name": question, "type": "other", "relevant": True, "reason": "", "specificity": "specific",
                         "fallback": True}]

        items: dict[str, ContextItem] = {}  # by label: each entity and relation once

        def add(label: str, text: str, chunks: list[str]) -> None:
            items.setdefault(label, ContextItem("graph", text, tuple(chunks), label))

        if profile:
            add("profile", f"{me}: {profile}", graph.nodes[me]["chunks"])
        outside: list[tuple[str, str]] = []
        for e in entities:
            if not e["relevant"]:
                e["route"], e["matched"] = "out_of_scope", []
                outside.append((e["name"], e["reason"]))
            elif e["specificity"] == "general":
                same_type = [n for n in graph.neighbors(me) if graph.nodes[n]["type"] == e["type"]]
                e["route"], e["matched"] = "general", self._nearest(g, character, e["name"], same_type, s.neighbours)
            else:
                e["route"], e["matched"] = "specific", self._nearest(g, character, e["name"], list(graph.nodes), s.k)
            for node in e["matched"]:
                if node != me:
                    add(f"entity: {node}", g.text(node), graph.nodes[node]["chunks"])
                if e["route"] == "specific" and graph.has_edge(me, node):
                    edge = graph.edges[me, node]
                    add(f"relation: {me} — {node}", f"{me} — {node}: {edge['description']}", edge["chunks"])
        # A boundary note only when an entity is out of scope (RoleRAG, section 3.4).
        boundary = [ContextItem("boundary", boundary_note(name, outside), (), "boundary")] if outside else []
        context_items = [*items.values(), *boundary]
        details = {"index": "memory" if in_memory else g.source, "hypothetical": hypothetical, "analysis_failed": failed,
                   "entities": entities, "out_of_scope": [n for n, _ in outside],
                   "graph": {"entities": g.cost.entities, "relations": g.cost.relations,
                             "failed_extractions": g.cost.failed_extractions}}
        return self.budgeted(Context(context_items, calls, details))
