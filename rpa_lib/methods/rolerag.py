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

The graph is stored under ``cache_dir()/rolerag/<character>/`` keyed by the persona's content hash, the
splitting, the LLM's model id, the embedder's model id and the settings that change it; :meth:`RoleRAG.index_cost`
returns what building it took (LLM calls, tokens, seconds, entities, relations, failed calls).

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

import hashlib
import json
import os
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np

from rpa_lib.llm import LLMError
from rpa_lib.methods.base import Call, Context, ContextItem, Method, RetrievalSettings
from rpa_lib.methods.rolerag_prompts import (
    ANALYSIS_SCHEMA,
    ENTITY_TYPES,
    EXTRACT_SCHEMA,
    MERGE_SCHEMA,
    SAME_OPTIONS,
    analysis_messages,
    boundary_note,
    canonical_messages,
    extract_messages,
    hypothetical_messages,
    same_entity_messages,
    summarize_messages,
)
from rpa_lib.splitters import VANILLA_LENGTH, VANILLA_OVERLAP, Chunk, split

GRAPH_VERSION = 1  # bump when a prompt or the build changes, so that no stale graph is reused
CHUNK_LENGTH, CHUNK_OVERLAP = 2400, 400  # characters: RoleRAG's 600 / 100 tokens at ~4 characters a token
_TYPE_ALIASES = {"location": "place", "organisation": "organization", "group": "organization", "item": "object",
                 "character": "person", "people": "person", "hobby": "activity", "interest": "activity",
                 "idea": "concept", "value": "concept", "belief": "concept"}
_SELF = {"i", "me", "myself", "narrator", "the narrator"}


def name_key(name: str) -> str:
    """How names are compared before normalization. ``name_key(" Uncle  Per. ") == "uncle per"``"""
    return " ".join(name.casefold().split()).strip(" .,;:'\"")


def entity_type(text: str | None) -> str:
    """One of ``ENTITY_TYPES``. ``entity_type("Location") == "place"``; unknown types are ``"other"``."""
    t = name_key(text or "")
    t = _TYPE_ALIASES.get(t, t)
    return t if t in ENTITY_TYPES else "other"


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


@dataclass(frozen=True)
class IndexCost:
    """What building one character's graph took. Tokens of failed calls are not known (an LLMError carries none)."""

    character: str
    chunks: int
    llm_calls: int
    cached_calls: int
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    entities: int
    relations: int
    names: int  # distinct names extracted, before normalization
    merged_names: int  # names folded into another by normalization
    failed_extractions: int
    failed_calls: int  # every failed call: extractions, pair checks, canonical names, summaries

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class CharacterGraph:
    """One character's graph: ``node`` is the character's own node."""

    character: str
    node: str
    graph: object  # networkx.Graph
    cost: IndexCost
    source: str  # "built" | "disk"
    vectors: np.ndarray | None = None  # of ``nodes``' texts, computed on first search
    nodes: list[str] = field(default_factory=list)

    def text(self, node: str) -> str:
        data = self.graph.nodes[node]
        return f"{node} ({data['type']}): {data['description']}" if data["description"] else f"{node} ({data['type']})"


@dataclass
class _Name:
    name: str
    types: Counter = field(default_factory=Counter)
    descriptions: list[str] = field(default_factory=list)
    chunks: list[str] = field(default_factory=list)

    def add(self, type_: str, description: str, chunk: str | None) -> None:
        self.types[type_] += 1
        if description and description not in self.descriptions:
            self.descriptions.append(description)
        if chunk and chunk not in self.chunks:
            self.chunks.append(chunk)


class _Tally:
    """The calls an index build makes; a failed call is counted and returns None."""

    def __init__(self):
        self.calls: list[Call] = []
        self.failed: Counter = Counter()

    def ask(self, purpose: str, kind: str, fn):
        try:
            reply = fn()
        except LLMError as e:
            self.failed[purpose] += 1
            self.calls.append(Call(purpose, kind, getattr(e, "cached", False), 0, 0, 0.0, f"failed: {e}"))
            return None
        self.calls.append(Method.trace(purpose, reply))
        return reply


def _joined(descriptions: list[str], limit: int) -> str:
    text = " ".join(descriptions)
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


class RoleRAG(Method):
    name = "rolerag"
    Settings = RoleRAGSettings

    def __init__(self, llm, settings=None, dataset=None):
        super().__init__(llm, settings, dataset)
        self._graphs: dict[str, CharacterGraph] = {}
        self._building: dict[str, threading.Lock] = {}

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

    def embedder(self, character: str):
        from rpa_lib.retrieval import persona_embedder

        return persona_embedder(self.dataset.persona(character), self.settings.embedder)

    def cache_key(self, character: str) -> str:
        s = self.settings
        source = self.dataset.persona(character).source
        fields = {"version": GRAPH_VERSION, "persona": hashlib.sha256(source.encode()).hexdigest(),
                  "splitter": s.splitter, "lengths": s.lengths if s.splitter == "vanilla" else None,
                  "llm": f"{self.llm.backend}:{self.llm.model_id}", "embedder": self.embedder(character).model_id,
                  "merge_k": s.merge_k, "merge_similarity": s.merge_similarity, "max_description": s.max_description,
                  "extract_retries": s.extract_retries}
        return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()

    def cache_path(self, character: str, key: str | None = None) -> Path:
        from rpa_lib.paths import cache_dir

        return cache_dir() / "rolerag" / character / f"{(key or self.cache_key(character))[:24]}.json"

    def graph(self, character: str, key: str | None = None) -> CharacterGraph:
        """The character's graph: from memory, from disk, or built now (once, whatever the threads)."""
        key = key or self.cache_key(character)
        with self._lock:
            lock = self._building.setdefault(key, threading.Lock())
        with lock:
            if key not in self._graphs:
                path = self.cache_path(character, key)
                self._graphs[key] = self._load(character, path) or self._build(character, path)
            return self._graphs[key]

    def index_cost(self, character: str) -> IndexCost:
        """What building the character's graph took (building it now if it is not built or cached)."""
        return self.graph(character).cost

    def _load(self, character: str, path: Path) -> CharacterGraph | None:
        import networkx as nx

        if not path.is_file():
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
        graph = nx.node_link_graph(data["graph"], directed=False, multigraph=False, edges="edges")
        return CharacterGraph(character, data["node"], graph, IndexCost(**data["cost"]), "disk")

    def _build(self, character: str, path: Path) -> CharacterGraph:
        import networkx as nx

        s = self.settings
        name, work = self.profile(character)
        started = time.monotonic()
        tally = _Tally()
        chunks = self.chunks(character)
        names: dict[str, _Name] = {name_key(name): _Name(name)}
        names[name_key(name)].add("person", "", None)
        relations: list[tuple[str, str, str, str]] = []

        def mention(raw: str, type_: str, description: str, chunk: str) -> str | None:
            key = name_key(raw)
            if not key:
                return None
            key = name_key(name) if key in _SELF else key
            names.setdefault(key, _Name(" ".join(raw.split()))).add(type_, description.strip(), chunk)
            return key

        for chunk in chunks:
            reply = tally.ask("extract", "structured", lambda c=chunk: self.llm.structured(
                extract_messages(name, work, c.text), EXTRACT_SCHEMA, max_tokens=1000, max_retries=s.extract_retries))
            if reply is None:
                continue
            for e in reply.data.get("entities", []):
                mention(str(e.get("name", "")), entity_type(e.get("type")), str(e.get("description") or ""), chunk.id)
            for r in reply.data.get("relations", []):
                a = mention(str(r.get("source", "")), "other", "", chunk.id)
                b = mention(str(r.get("target", "")), "other", "", chunk.id)
                if a and b and a != b:
                    relations.append((a, b, str(r.get("description") or "").strip(), chunk.id))

        canonical, merged = self._normalize(character, names, tally)  # name key -> node; node -> merged description
        graph = nx.Graph()
        members: dict[str, list[str]] = {}
        for key, node in canonical.items():
            members.setdefault(node, []).append(key)
        for node, keys in members.items():
            types = Counter()
            for k in keys:
                types.update(names[k].types)
            named = [t for t, _ in types.most_common() if t != "other"]
            graph.add_node(node, type=named[0] if named else "other",
                           chunks=list(dict.fromkeys(c for k in keys for c in names[k].chunks)),
                           aliases=[names[k].name for k in keys if names[k].name != node],
                           description=merged.get(node) or self._description(name, node, keys, names, tally))
        for a, b, description, chunk in relations:
            u, v = canonical[a], canonical[b]
            if u == v:
                continue
            if not graph.has_edge(u, v):
                graph.add_edge(u, v, descriptions=[], chunks=[])
            edge = graph.edges[u, v]
            if description and description not in edge["descriptions"]:
                edge["descriptions"].append(description)
            if chunk not in edge["chunks"]:
                edge["chunks"].append(chunk)
        for _, _, edge in graph.edges(data=True):
            edge["description"] = _joined(edge.pop("descriptions"), s.max_description)

        calls = tally.calls
        cost = IndexCost(character, len(chunks), len(calls), sum(c.cached for c in calls),
                         sum(c.prompt_tokens for c in calls), sum(c.completion_tokens for c in calls),
                         round(time.monotonic() - started, 3), graph.number_of_nodes(), graph.number_of_edges(),
                         len(names), len(names) - graph.number_of_nodes(), tally.failed["extract"],
                         sum(tally.failed.values()))
        node = canonical[name_key(name)]
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(json.dumps({"node": node, "cost": cost.to_dict(),
                                   "graph": nx.node_link_data(graph, edges="edges")}, ensure_ascii=False),
                       encoding="utf-8")
        os.replace(tmp, path)
        return CharacterGraph(character, node, graph, cost, "built")

    def _normalize(self, character: str, names: dict[str, _Name], tally: _Tally) -> tuple[dict[str, str], dict[str, str]]:
        """Name key -> node name: candidate pairs by embedding similarity, confirmed by the LLM, merged by
        connected component under one canonical name; and node -> the description the LLM wrote for a group."""
        import networkx as nx

        from rpa_lib.embeddings import embed

        s = self.settings
        name, work = self.profile(character)
        keys = list(names)
        pairs: set[tuple[int, int]] = set()
        if s.merge_k and len(keys) > 1:
            vectors = embed(self.embedder(character), [names[k].name for k in keys])
            sims = vectors @ vectors.T
            for i in range(len(keys)):
                near = [j for j in np.argsort(-sims[i], kind="stable") if j != i][: s.merge_k]
                pairs.update((min(i, j), max(i, j)) for j in near if sims[i, j] >= s.merge_similarity)
        same = nx.Graph()
        same.add_nodes_from(range(len(keys)))
        for i, j in sorted(pairs):
            a, b = names[keys[i]], names[keys[j]]
            reply = tally.ask("same", "choose", lambda a=a, b=b: self.llm.choose(same_entity_messages(
                name, work, a.name, _joined(a.descriptions, 300), b.name, _joined(b.descriptions, 300)), SAME_OPTIONS))
            if reply is not None and reply.text == "same":
                same.add_edge(i, j)
        canonical: dict[str, str] = {}
        merged: dict[str, str] = {}
        for component in sorted((sorted(c) for c in nx.connected_components(same)), key=lambda c: c[0]):
            group = [keys[i] for i in component]
            if len(group) == 1:
                node = names[group[0]].name
            else:
                listed = [names[k].name for k in group]
                facts = [d for k in group for d in names[k].descriptions]
                reply = tally.ask("canonical", "structured", lambda listed=listed, facts=facts: self.llm.structured(
                    canonical_messages(name, work, listed, facts), MERGE_SCHEMA, max_tokens=300,
                    max_retries=s.extract_retries))
                if reply is not None and str(reply.data["name"]).strip():
                    node = " ".join(str(reply.data["name"]).split())
                    merged[node] = str(reply.data["description"]).strip()
                else:  # the name mentioned in most chunks, the longest on a tie
                    node = max(listed, key=lambda n: (len(names[name_key(n)].chunks), len(n)))
            if name_key(name) in group:
                if node in merged:
                    merged[name] = merged.pop(node)
                node = name  # the character keeps the name the dataset gives them
            canonical.update(dict.fromkeys(group, node))
        return canonical, merged

    def _description(self, name: str, node: str, keys: list[str], names: dict[str, _Name], tally: _Tally) -> str:
        """The node's gathered descriptions, summarized by the LLM when longer than ``max_description``."""
        descriptions = list(dict.fromkeys(d for k in keys for d in names[k].descriptions))
        text = " ".join(descriptions)
        if len(text) <= self.settings.max_description:
            return text
        reply = tally.ask("summarize", "chat", lambda: self.llm.chat(summarize_messages(name, node, descriptions),
                                                                      max_tokens=200))
        return reply.text.strip() if reply is not None else _joined(descriptions, self.settings.max_description)

    # ---- answer ---------------------------------------------------------------------------------------------

    def _nearest(self, g: CharacterGraph, character: str, query: str, candidates: list[str], k: int) -> list[str]:
        """The ``k`` candidate nodes whose texts are most similar to ``query``."""
        from rpa_lib.embeddings import embed

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
        g = self.graph(character, key)
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
                calls.append(Call("hypothetical", "chat", False, 0, 0, 0.0, f"failed: {e}"))
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
            calls.append(Call("analyse", "structured", False, 0, 0, 0.0, f"failed: {e}"))
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
