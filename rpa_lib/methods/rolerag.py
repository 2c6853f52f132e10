"""RoleRAG (Wang, Leung and Shen 2025): a per-character knowledge graph with entity normalization, and
retrieval that knows the character's cognitive boundary.

**Index** (once per character, cached on disk, its cost recorded):

1. Split the persona (default: fixed-length chunks of 2400 characters with 400 overlap, RoleRAG's 600 and 100
   tokens at about four characters a token) and let the LLM extract entities (name, type, description) and
   relations (source, target, description) from each chunk as JSON. A chunk whose extraction stays invalid after
   ``extract_retries`` re-asks is skipped and counted, never fatal (a very small model often fails).
2. Normalize names: embed every distinct name (the method's ``embedder``); each name's ``merge_k`` nearest names
   with cosine similarity >= ``merge_similarity`` are candidate pairs; the LLM confirms each pair (same or
   different); confirmed pairs are joined by connected component (networkx), and the LLM gives each component of
   two or more names one canonical name and one merged description. The character's own name is never renamed.
3. Build an undirected networkx graph: nodes carry a type, a description (descriptions gathered from several
   chunks and longer than ``max_description`` characters are summarized by the LLM) and the chunks they came from;
   edges carry the relations' descriptions (joined, cut at ``max_description``) and chunks.

The graph (built by :mod:`rpa_lib.methods.rolerag_graph`) is stored under ``cache_dir()/rolerag/<character>/``
keyed by the persona's content hash, the splitting, the LLM's model id, the embedder's model id, the settings that
change it and the text of the prompts that build it; :meth:`RoleRAG.index_cost` returns what building it took (LLM
calls, tokens, seconds, entities, relations, failed calls).

**Answer**: the LLM guesses what the answer involves (hypothetical context, RoleRAG's HyDE step), then analyses
the question into entities with a type, a relevance to the character (with a reason) and a specificity, shown
the character's profile (their node's description). Three routes: an entity the character could not know is
named in the boundary note, so the character can decline; a specific entity is looked up by vector search over
the entity descriptions (top ``k``) with its relation to the character; a general entity brings the
character's neighbours of that type (at most ``neighbours``, nearest first). When the analysis fails or finds
nothing, the question itself is searched as one specific entity.

Context items: ``graph`` (the profile, entity descriptions, relations; chunk ids of the chunks they were
extracted from) and, only when the analysis finds an out-of-scope entity, one ``boundary`` note naming it (as
RoleRAG does); the shared role-play prompt shows both as knowledge. Details:
``index`` (built, disk or memory), ``hypothetical``, ``analysis_failed``, ``entities`` (with their route and
the nodes they matched), ``out_of_scope``, ``graph`` (size and failed extractions).

Departures from the paper, each to keep a small local model usable or the cost bounded: a candidate pair is
confirmed by one constrained choice (same / different, always a valid answer) rather than one call per entity
listing its k candidates; a group's canonical name and merged description come from one structured call; a
node's descriptions from several chunks are summarized only past ``max_description`` characters, and relation
descriptions are joined, never summarized.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from pathlib import Path

from rpa_lib.embeddings import embed
from rpa_lib.llm import LLMError
from rpa_lib.methods.base import Call, Context, ContextItem, RetrievalSettings
from rpa_lib.methods.graph_cache import GraphIndexMethod, IndexCache, build_path, index_key, text_hash
from rpa_lib.methods.registry import register
from rpa_lib.methods.rolerag_graph import (
    CharacterGraph,
    GraphBuilder,
    build_prompts,
    entity_type,
    load_graph,
    name_key,
    save_graph,
)
from rpa_lib.methods.rolerag_prompts import ANALYSIS_SCHEMA, analysis_messages, boundary_note, hypothetical_messages
from rpa_lib.paths import cache_dir
from rpa_lib.splitters import VANILLA_LENGTH, VANILLA_OVERLAP, Chunk, split

__all__ = ["RoleRAG", "RoleRAGSettings", "entity_type", "name_key"]

CHUNK_LENGTH, CHUNK_OVERLAP = 2400, 400  # characters: RoleRAG's 600 / 100 tokens at ~4 characters a token



@dataclass(frozen=True)
class RoleRAGSettings(RetrievalSettings):
    splitter: str = "vanilla"
    chunk_length: int | None = None  # vanilla only: None = 2400 characters (RoleRAG: 600 tokens)
    overlap: int | None = None  # vanilla only: None = 400 characters (RoleRAG: 100 tokens)
    merge_k: int = 5  # candidate names per name, from embedding similarity (0: no normalization)
    merge_similarity: float = 0.75  # least cosine similarity of a candidate pair
    neighbours: int = 5  # general entities: the character's neighbours of that type, at most
    hypothetical: bool = True  # guess the answer's context before the query analysis (RoleRAG's HyDE step)
    max_description: int = 800  # characters; a longer gathered description is summarized by the LLM
    extract_retries: int = 2  # re-asks when an extraction's JSON is invalid

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
        """(chunk length, overlap) of the vanilla splitter."""
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

    # ---- index ----------------------------------------------------------------------------------------------

    def chunks(self, character: str) -> list[Chunk]:
        """The chunks extraction reads. Non-default vanilla lengths get their own ids (``<slug>:vanilla-2400-400:0000``),
        so they are never mistaken for the Vanilla chunks of the other methods."""
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
        inputs = {"persona": text_hash(self.dataset.persona(character).source), "splitter": s.splitter,
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
        name, work = self.profile(character)
        g = GraphBuilder(self.llm, self.settings, character, name, work, self.embedder(character)).build(
            self.chunks(character))
        save_graph(g, path)
        return g

    # ---- answer ---------------------------------------------------------------------------------------------

    def _nearest(self, g: CharacterGraph, character: str, query: str, candidates: list[str], k: int) -> list[str]:
        """The ``k`` candidate nodes whose texts are most similar to ``query``."""
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
        name, work = self.profile(character)
        calls: list[Call] = []
        hypothetical = ""
        if s.hypothetical:
            try:
                reply = self.llm.chat(hypothetical_messages(name, work, question), max_tokens=120)
                hypothetical = reply.text.strip()
                calls.append(self.trace("hypothetical", reply))
            except LLMError as e:
                calls.append(Call.failed("hypothetical", "chat", e))
        profile = graph.nodes[me]["description"]
        entities: list[dict] = []
        try:
            reply = self.llm.structured(analysis_messages(name, work, profile, question, hypothetical), ANALYSIS_SCHEMA,
                                        max_tokens=400, max_retries=s.extract_retries)
            calls.append(self.trace("analyse", reply))
            for e in reply.data["entities"]:
                if str(e.get("name", "")).strip():
                    entities.append({"name": " ".join(str(e["name"]).split()), "type": entity_type(e.get("type")),
                                     "relevant": bool(e["relevant"]), "reason": str(e.get("reason") or "").strip(),
                                     "specificity": e["specificity"]})
            failed = False
        except LLMError as e:
            calls.append(Call.failed("analyse", "structured", e))
            failed = True
        if not entities:  # nothing to route: search the question itself
            entities = [{"name": question, "type": "other", "relevant": True, "reason": "", "specificity": "specific",
                         "fallback": True}]

        items: dict[str, ContextItem] = {}

        def add_node(node: str) -> None:
            if node != me and f"entity: {node}" not in items:
                items[f"entity: {node}"] = ContextItem("graph", g.text(node), tuple(graph.nodes[node]["chunks"]),
                                                      f"entity: {node}")

        def add_relation(node: str) -> None:
            label = f"relation: {me} — {node}"
            if graph.has_edge(me, node) and label not in items:
                edge = graph.edges[me, node]
                items[label] = ContextItem("graph", f"{me} — {node}: {edge['description']}", tuple(edge["chunks"]), label)

        if profile:
            items["profile"] = ContextItem("graph", f"{me}: {profile}", tuple(graph.nodes[me]["chunks"]), "profile")
        outside: list[tuple[str, str]] = []
        for e in entities:
            if not e["relevant"]:
                e["route"], e["matched"] = "out_of_scope", []
                outside.append((e["name"], e["reason"]))
            elif e["specificity"] == "general":
                same_type = [n for n in graph.neighbors(me) if graph.nodes[n]["type"] == e["type"]]
                e["route"], e["matched"] = "general", self._nearest(g, character, e["name"], same_type, s.neighbours)
                for node in e["matched"]:
                    add_node(node)
            else:
                e["route"], e["matched"] = "specific", self._nearest(g, character, e["name"], list(graph.nodes), s.k)
                for node in e["matched"]:
                    add_node(node)
                    add_relation(node)
        # RoleRAG informs the LLM of an entity's irrelevance only when the analysis finds one out of scope (paper,
        # section 3.4): no note otherwise.
        boundary = [ContextItem("boundary", boundary_note(name, outside), (), "boundary")] if outside else []
        context_items = [*items.values(), *boundary]
        details = {"index": "memory" if in_memory else g.source, "hypothetical": hypothetical, "analysis_failed": failed,
                   "entities": entities, "out_of_scope": [n for n, _ in outside],
                   "graph": {"entities": g.cost.entities, "relations": g.cost.relations,
                             "failed_extractions": g.cost.failed_extractions}}
        return Context(context_items, calls, details)
