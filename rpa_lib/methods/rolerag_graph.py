"""RoleRAG's index: extraction, name normalization and the graph of one character, and the graph's file. Not
here: deciding when a graph is built or reused (the method's cache), or searching it (:mod:`rpa_lib.methods.rolerag`).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rpa_lib.embeddings import embed
from rpa_lib.methods.base import Call, traced
from rpa_lib.methods.graph_cache import IndexCost, write_json
from rpa_lib.methods.rolerag_prompts import (
    ENTITY_TYPES,
    EXTRACT_SCHEMA,
    MERGE_SCHEMA,
    SAME_OPTIONS,
    canonical_messages,
    extract_messages,
    same_entity_messages,
    summarize_messages,
)
from rpa_lib.splitters import Chunk

EXTRACT_TOKENS, CANONICAL_TOKENS, SUMMARY_TOKENS = 1000, 300, 200  # max_tokens of the build's calls

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


def _joined(descriptions: list[str], limit: int) -> str:
    text = " ".join(descriptions)
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def build_prompts() -> list:
    """What the build sends, as text (prompts rendered with placeholders, schemas, options, token limits): part of
    the graph's cache key, so that editing any of them builds a new graph."""
    return [extract_messages("{name}", "{work}", "{passage}"), EXTRACT_SCHEMA,
            same_entity_messages("{name}", "{work}", "{a}", "{a description}", "{b}", "{b description}"), SAME_OPTIONS,
            canonical_messages("{name}", "{work}", ["{name 1}", "{name 2}"], ["{description 1}", "{description 2}"]),
            MERGE_SCHEMA, summarize_messages("{name}", "{entity}", ["{description 1}", "{description 2}"]),
            [EXTRACT_TOKENS, CANONICAL_TOKENS, SUMMARY_TOKENS], ENTITY_TYPES, _TYPE_ALIASES, sorted(_SELF)]


def load_graph(character: str, path: Path) -> CharacterGraph | None:
    import networkx as nx

    if not path.is_file():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    graph = nx.node_link_graph(data["graph"], directed=False, multigraph=False, edges="edges")
    return CharacterGraph(character, data["node"], graph, IndexCost.from_dict(data["cost"]), "disk")


def save_graph(g: CharacterGraph, path: Path) -> None:
    import networkx as nx

    write_json(path, {"node": g.node, "cost": g.cost.to_dict(), "graph": nx.node_link_data(g.graph, edges="edges")})


class GraphBuilder:
    """Builds one character's graph with the method's LLM, settings and embedder; every call is kept in ``calls``."""

    def __init__(self, llm, settings, character: str, name: str, work: str, embedder):
        self.llm, self.settings, self.character, self.name, self.work = llm, settings, character, name, work
        self.embedder = embedder
        self.calls: list[Call] = []
        self.failed: Counter = Counter()  # failed calls by purpose

    def ask(self, purpose: str, kind: str, fn):
        """``fn()``'s reply, traced; None when it got no valid answer (counted); any other failure fails the build."""
        reply = traced(self.calls, purpose, kind, fn)
        if reply is None:
            self.failed[purpose] += 1
        return reply

    def build(self, chunks: list[Chunk]) -> CharacterGraph:
        import networkx as nx

        s, name, work = self.settings, self.name, self.work
        started = time.monotonic()
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
            reply = self.ask("extract", "structured", lambda c=chunk: self.llm.structured(
                extract_messages(name, work, c.text), EXTRACT_SCHEMA, max_tokens=EXTRACT_TOKENS,
                max_retries=s.extract_retries))
            if reply is None:
                continue
            for e in reply.data.get("entities", []):
                mention(str(e.get("name", "")), entity_type(e.get("type")), str(e.get("description") or ""), chunk.id)
            for r in reply.data.get("relations", []):
                a = mention(str(r.get("source", "")), "other", "", chunk.id)
                b = mention(str(r.get("target", "")), "other", "", chunk.id)
                if a and b and a != b:
                    relations.append((a, b, str(r.get("description") or "").strip(), chunk.id))

        canonical, merged = self._normalize(names)  # name key -> node; node -> merged description
        graph = nx.Graph()
        members: dict[str, list[str]] = {}
        for key, node in canonical.items():
            members.setdefault(node, []).append(key)
        for node, keys in members.items():
            types = sum((names[k].types for k in keys), Counter())
            named = [t for t, _ in types.most_common() if t != "other"]
            graph.add_node(node, type=named[0] if named else "other",
                           chunks=list(dict.fromkeys(c for k in keys for c in names[k].chunks)),
                           aliases=[names[k].name for k in keys if names[k].name != node],
                           description=merged.get(node) or self._description(node, keys, names))
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

        calls = self.calls
        cost = IndexCost(self.character, len(chunks), len(calls), sum(c.cached for c in calls),
                         sum(self.failed.values()), sum(c.prompt_tokens for c in calls),
                         sum(c.completion_tokens for c in calls), round(time.monotonic() - started, 3),
                         graph.number_of_nodes(), graph.number_of_edges(), names=len(names),
                         merged_names=len(names) - graph.number_of_nodes(), failed_extractions=self.failed["extract"])
        return CharacterGraph(self.character, canonical[name_key(name)], graph, cost, "built")

    def _normalize(self, names: dict[str, _Name]) -> tuple[dict[str, str], dict[str, str]]:
        """Name key -> node (pairs by embedding similarity, confirmed by the LLM, merged by connected component),
        and node -> the description the LLM wrote for a group."""
        import networkx as nx

        s, name, work = self.settings, self.name, self.work
        keys = list(names)
        pairs: set[tuple[int, int]] = set()
        if s.merge_k and len(keys) > 1:
            vectors = embed(self.embedder, [names[k].name for k in keys])
            sims = vectors @ vectors.T
            for i in range(len(keys)):
                near = [j for j in np.argsort(-sims[i], kind="stable") if j != i][: s.merge_k]
                pairs.update((min(i, j), max(i, j)) for j in near if sims[i, j] >= s.merge_similarity)
        same = nx.Graph()
        same.add_nodes_from(range(len(keys)))
        for i, j in sorted(pairs):
            a, b = names[keys[i]], names[keys[j]]
            reply = self.ask("same", "choose", lambda a=a, b=b: self.llm.choose(same_entity_messages(
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
                reply = self.ask("canonical", "structured", lambda listed=listed, facts=facts: self.llm.structured(
                    canonical_messages(name, work, listed, facts), MERGE_SCHEMA, max_tokens=CANONICAL_TOKENS,
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

    def _description(self, node: str, keys: list[str], names: dict[str, _Name]) -> str:
        """The node's gathered descriptions, summarized by the LLM past ``max_description``."""
        descriptions = list(dict.fromkeys(d for k in keys for d in names[k].descriptions))
        text = " ".join(descriptions)
        if len(text) <= self.settings.max_description:
            return text
        reply = self.ask("summarize", "chat", lambda: self.llm.chat(
            summarize_messages(self.name, node, descriptions), max_tokens=SUMMARY_TOKENS))
        return reply.text.strip() if reply is not None else _joined(descriptions, self.settings.max_description)

