"""The cached graph index LightRAG and RoleRAG share: memory, then disk, then one build per key; one IndexCost; a
cache key that changes with the text of the prompts that build the index, and only with those."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from rpa_lib.llm import FakeLLM
from rpa_lib.methods import build_method, rolerag_graph
from rpa_lib.methods import rolerag as rolerag_module
from rpa_lib.methods.graph_cache import IndexCache, IndexCost, index_key

FIXTURES = Path(__file__).parent / "fixtures" / "data"
ADA = "ada-lindqvist"


def test_memory_then_disk_then_build_and_one_build_per_key():
    cache, events = IndexCache(), []

    def build(key):
        events.append(f"build {key}")
        time.sleep(0.05)  # long enough for every thread to be waiting on the key's lock
        return f"index {key}"

    threads = [threading.Thread(target=cache.get, args=("a", lambda: None, lambda: build("a"))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert events == ["build a"] and "a" in cache
    assert cache.get("a", lambda: "from disk", lambda: build("a")) == "index a"  # memory first
    assert cache.get("b", lambda: "from disk", lambda: build("b")) == "from disk"  # then disk
    assert events == ["build a"] and sorted(cache.clear()) == ["from disk", "index a"] and "a" not in cache


def test_one_index_cost_for_both_methods():
    rolerag = IndexCost("ada", 3, 10, 2, 1, 500, 80, 1.5, 7, 6, names=9, merged_names=2, failed_extractions=1)
    assert set(rolerag.to_dict()) == {"character", "chunks", "llm_calls", "cached_calls", "failed_calls",
                                      "prompt_tokens", "completion_tokens", "seconds", "entities", "relations",
                                      "names", "merged_names", "failed_extractions"}  # no LightRAG field
    lightrag = IndexCost("ada", 3, 6, 0, 0, 400, 90, 2.0, 5, 4, documents=3, failed_documents=0, errors=("x",),
                         lightrag_version="1.5.7")
    stored = {**lightrag.to_dict(), "errors": ["x"], "a_field_of_a_later_version": 1}  # as JSON gives it back
    assert IndexCost.from_dict(stored) == lightrag and IndexCost.from_dict(rolerag.to_dict()) == rolerag


def test_the_key_hashes_the_prompts_text():
    assert index_key({"k": 1}, ["Extract the entities."]) == index_key({"k": 1}, ["Extract the entities."])
    assert index_key({"k": 1}, ["Extract the entities."]) != index_key({"k": 1}, ["Extract the entities!"])
    assert len(index_key({"k": 1}, [])) == 24


def test_rolerag_key_follows_its_build_prompts_and_not_its_query_prompts(monkeypatch):
    m = build_method("rolerag", FakeLLM(), dataset=FIXTURES, embedder="hash-64")
    key = m.cache_key(ADA)
    monkeypatch.setattr(rolerag_module, "analysis_messages", lambda *a, **k: [{"role": "user", "content": "new"}])
    assert m.cache_key(ADA) == key  # a query prompt does not shape the graph
    extract = rolerag_graph.extract_messages
    monkeypatch.setattr(rolerag_graph, "extract_messages", lambda *a: [*extract(*a), {"role": "user", "content": "+"}])
    assert m.cache_key(ADA) != key and m.cache_path(ADA).name == f"{m.cache_key(ADA)}.json"


def test_lightrag_key_follows_lightrags_prompts(monkeypatch):
    from rpa_lib.methods.lightrag_bridge import lightrag_modules

    m = build_method("lightrag", FakeLLM(), dataset=FIXTURES, embedder="hash-64")
    key = m.cache_key(ADA)
    prompts = lightrag_modules().PROMPTS
    name = next(k for k, v in prompts.items() if isinstance(v, str))
    monkeypatch.setitem(prompts, name, prompts[name] + " (edited)")
    assert m.cache_key(ADA) != key and m.workspace_dir(ADA).name == m.cache_key(ADA)


def test_a_plan_builds_graphs_beside_its_plan_file_and_loads_real_ones(tmp_path, monkeypatch):
    """A plan's stand-in LLM makes its replies up: a graph it builds goes beside the plan file, never to the cache
    a real run loads; a graph a real LLM built is loaded by the stand-in, and costs the plan no call."""
    from rpa_lib.llm import get_llm
    from rpa_lib.methods.graph_cache import build_path
    from rpa_lib.text import read_jsonl

    def planned(name: str):
        (tmp_path / name).mkdir()
        stand_in = get_llm("fake", mode={"plan_file": str(tmp_path / name / "05_qa.plan.jsonl")})
        return build_method("rolerag", stand_in, dataset=FIXTURES, embedder="hash-64")

    stand_in = planned("first")
    stand_in.index(ADA)
    assert not stand_in.cache_path(ADA).exists(), "the plan wrote a made-up graph to the cache"
    scratch = build_path(stand_in.llm, stand_in.cache_path(ADA))
    assert scratch.is_file() and scratch.is_relative_to(tmp_path / "first")
    assert len(read_jsonl(tmp_path / "first" / "05_qa.plan.jsonl")) > 0  # the build's calls are planned

    real = build_method("rolerag", FakeLLM(), dataset=FIXTURES, embedder="hash-64")
    real.index(ADA)
    assert real.cache_path(ADA).is_file() and real.cache_path(ADA) == stand_in.cache_path(ADA)

    again = planned("second")
    assert again.index(ADA).source == "disk" and read_jsonl(tmp_path / "second" / "05_qa.plan.jsonl") == []
