"""LightRAG through the real lightrag-hku package, offline: a FakeLLM answers LightRAG's own extraction prompt (its
``<|#|>`` rows and ``<|COMPLETE|>`` line) and keyword prompt (its JSON), the hash embedder embeds."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import json
import os
import re
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from rpa_lib.data import Dataset
from rpa_lib.evaluation.runner import Job, qa_jobs, run_jobs
from rpa_lib.llm import FakeLLM, LLMFatalError, RetryPolicy, Transient
from rpa_lib.llm.plan import acting_for
from rpa_lib.methods import build_method
from rpa_lib.methods.lightrag import COST_FILE, LightRAGSettings, close_lightrag
from rpa_lib.methods.lightrag_bridge import WordTokenizer, constructor_args, lightrag_modules, query_args
from rpa_lib.splitters import split

FIXTURES = Path(__file__).parent / "fixtures" / "data"
D = "<|#|>"  # LightRAG's tuple delimiter (lightrag.prompt.PROMPTS["DEFAULT_TUPLE_DELIMITER"])
NAMES = {"Ada Lindqvist": "Person", "Varholm": "Location", "Skelde": "Location", "Mira": "Person",
         "Bram Okafor": "Person", "Eskerby": "Location", "Mrs Halloran": "Person", "Kiln Street": "Location"}


@pytest.fixture(autouse=True)
def _fresh_lightrag():
    """Each test opens its workspaces afresh (LightRAG's shared storage is process-wide)."""
    close_lightrag()
    yield
    close_lightrag()


class Script:
    """A FakeLLM rule for LightRAG's prompts; counts what it was asked."""

    def __init__(self, keywords=None, extract=None):
        self.keywords = keywords  # question -> (high, low); default: the question's capitalized words
        self.extract = extract  # input text -> reply; default: the NAMES found in the text
        self.asked: list[str] = []
        self.acting_for: list[str | None] = []  # the character each call was made for
        self.lock = threading.Lock()

    def __call__(self, kind, messages, spec):
        self.acting_for.append(acting_for.get())
        if messages[-1]["content"].startswith("That reply was not valid"):  # our LLM layer's re-ask
            return self(kind, messages[:-2], spec)
        text = "\n".join(m["content"] for m in messages)
        last = messages[-1]["content"]
        if "expert keyword extractor" in text:
            with self.lock:
                self.asked.append("keywords")
            question = re.search(r"User Query: (.*)", last).group(1)
            high, low = self.keywords(question) if self.keywords else (["life"], re.findall(r"[A-Z][a-z]+", question))
            return json.dumps({"high_level_keywords": high, "low_level_keywords": low})
        if "Based on the last extraction task" in last:
            with self.lock:
                self.asked.append("glean")
            return "<|COMPLETE|>"
        if "---Input Text---" in last:
            with self.lock:
                self.asked.append("extract")
            source = last.rsplit("---Input Text---", 1)[1]
            if self.extract:
                return self.extract(source)
            found = [n for n in NAMES if n in source]
            rows = [f"entity{D}{n}{D}{NAMES[n]}{D}{n} appears in the profile." for n in found]
            rows += [f"relation{D}{found[0]}{D}{n}{D}knows{D}{found[0]} knows {n}." for n in found[1:]]
            return "\n".join([*rows, "<|COMPLETE|>"])
        if "Knowledge Graph Specialist" in text:  # a description summary
            return "A merged description."
        return "SYSTEM:" + messages[0]["content"]  # the role-play reply echoes its prompt


def method(script=None, **settings):
    llm = FakeLLM(script or Script(), cache=settings.pop("cache", False))
    return build_method("lightrag", llm=llm, dataset=FIXTURES, **{"embedder": "hash-64", **settings})


def acts(character):
    return {c.id: c for c in split(Dataset(FIXTURES).persona(character), "acts")}


def test_end_to_end_through_build_method_and_run_jobs():
    script = Script()
    m = method(script)
    jobs = qa_jobs(Dataset(FIXTURES), ["ada-lindqvist", "bram-okafor"], per_character=3)
    rows = run_jobs(m, jobs, workers=4, progress=False)  # worker threads, building both characters concurrently
    assert rows.error.isna().all(), rows.error.tolist()
    for _, row in rows.iterrows():
        (item,) = row.context
        assert item["role"] == "graph" and "Knowledge Graph Data (Entity)" in item["text"]
        chunks = acts(row.character)
        assert row.chunk_ids and set(row.chunk_ids) <= set(chunks)
        for cid in row.chunk_ids:  # each chunk id's text is in LightRAG's context (JSON-escaped there)
            assert json.dumps(chunks[cid].text, ensure_ascii=False)[1:-1] in item["text"]
        assert row.llm_calls == 2  # LightRAG's keyword extraction, then the shared role-play reply
        assert row.reply.startswith("SYSTEM:You are ") and "What you know" in row.reply
        cost = row.details["index_cost"]
        assert cost["entities"] >= 2 and cost["relations"] >= 1 and cost["failed_documents"] == 0
        assert cost["documents"] == cost["chunks"] == len(chunks)  # one LightRAG chunk per ACTS chunk
        assert cost["llm_calls"] == 2 * len(chunks)  # extraction + one gleaning per chunk (max_gleaning=1)
        assert row.details["keywords"]["high_level"] == ["life"]
    assert script.asked.count("keywords") == len(jobs)
    assert script.asked.count("extract") == len(acts("ada-lindqvist")) + len(acts("bram-okafor"))
    folder = m.workspace_dir("ada-lindqvist")
    assert folder.parent == Path(os.environ["RPA_CACHE_DIR"]) / "lightrag" / "ada-lindqvist"
    assert (folder / COST_FILE).is_file() and (folder / "graph_chunk_entity_relation.graphml").is_file()
    assert m.index_cost("ada-lindqvist").to_dict() == rows.details.iloc[0]["index_cost"]


def test_lightrags_calls_on_its_event_loop_are_made_for_the_jobs_character():  # replicas route by it
    script = Script()
    jobs = qa_jobs(Dataset(FIXTURES), ["ada-lindqvist", "bram-okafor"], per_character=2)
    rows = run_jobs(method(script), jobs, workers=1, progress=False)  # one job at a time: calls come in job order
    assert rows.error.isna().all(), rows.error.tolist()
    assert {"extract", "keywords"} <= set(script.asked)  # the builds and the queries, on LightRAG's loop
    assert [c for c, _ in itertools.groupby(script.acting_for)] == ["ada-lindqvist", "bram-okafor"]


def test_index_is_built_once_then_reused_in_memory_and_from_disk():
    script = Script()
    m = method(script)
    first = m.context("ada-lindqvist", "Where is Varholm?")
    assert first.details["index"] == "built"
    built = script.asked.count("extract")
    assert m.context("ada-lindqvist", "Who is Mira?").details["index"] == "memory"
    close_lightrag()
    again = method(script).context("ada-lindqvist", "Where is Varholm?")
    assert again.details["index"] == "disk" and script.asked.count("extract") == built
    assert again.items == first.items and again.details["index_cost"] == first.details["index_cost"]
    other = method(script, chunk_token_size=900).context("ada-lindqvist", "Where is Varholm?")
    assert other.details["index"] == "built"  # a setting that changes the index gets its own workspace


def test_llm_calls_go_through_the_llm_cache():
    script = Script()
    m = method(script, cache=True)
    cost = m.index_cost("ada-lindqvist")
    assert cost.llm_calls == script.asked.count("extract") + script.asked.count("glean") and cost.cached_calls == 0
    assert cost.prompt_tokens > 0 and cost.completion_tokens > 0
    close_lightrag()
    import shutil

    shutil.rmtree(m.workspace_dir("ada-lindqvist"))
    asked = len(script.asked)
    rebuilt = method(script, cache=True).index_cost("ada-lindqvist")
    assert len(script.asked) == asked  # every extraction served from our cache
    assert rebuilt.cached_calls == rebuilt.llm_calls == cost.llm_calls
    assert (rebuilt.entities, rebuilt.relations) == (cost.entities, cost.relations)


class NetworkUsed(AssertionError):
    pass


@pytest.fixture
def no_network(monkeypatch):
    """Every way to open a connection raises (and is recorded)."""
    attempts = []

    def refuse(*args, **kwargs):
        attempts.append(args)
        raise NetworkUsed(f"network access: {args[:2]}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    return attempts


def test_no_network_access_while_building_and_querying(no_network, tmp_path, monkeypatch):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "tiktoken"))
    # The guard catches what LightRAG does without our tokenizer: tiktoken downloads its vocabulary.
    from lightrag.utils import TiktokenTokenizer

    with pytest.raises(Exception):  # noqa: B017 (tiktoken wraps the error in its own types)
        TiktokenTokenizer()
    assert no_network
    no_network.clear()
    m = method()
    ctx = m.context("ada-lindqvist", "What happened on Varholm?")
    reply = m.respond("bram-okafor", "Who is Bram Okafor?")
    assert ctx.items and reply.context and not no_network


def test_empty_context_is_no_item():
    # Nothing extracted and mode "local" (entities only): LightRAG finds nothing and returns no result.
    m = method(Script(extract=lambda text: "<|COMPLETE|>"), mode="local")
    ctx = m.context("ada-lindqvist", "Where is Varholm?")
    assert ctx.items == [] and ctx.details["empty_context"] and ctx.details["index_cost"]["entities"] == 0
    # No keywords for a long question: LightRAG answers with its "no context" sentence.
    m = method(Script(keywords=lambda q: ([], [])))
    question = "Could you tell me, in your own words, what a perfectly ordinary day looks like for you?"
    response = m.respond("ada-lindqvist", question)
    assert response.context == [] and response.details["empty_context"]
    assert "What you know" not in response.reply  # answered like no_rag
    fail = lightrag_modules().PROMPTS["fail_response"]
    assert fail == "Sorry, I'm not able to provide an answer to that question.[no-context]"
    # A token budget that leaves no room for any chunk: LightRAG says "Query returned empty dataset.", no item.
    m = method(max_total_tokens=50)
    ctx = m.context("ada-lindqvist", "Where is Varholm?")
    assert ctx.items == [] and ctx.details["empty_context"]


def test_unknown_and_invalid_settings_are_rejected():
    with pytest.raises(ValueError, match=r"has no setting 'topk'.*its settings: .*top_k"):
        method(topk=3)
    with pytest.raises(ValueError, match="has no setting 'k'"):
        method(k=3)  # the retrieval methods' k means nothing here
    for bad in ({"mode": "bypass"}, {"documents": "vanilla"}, {"chunk_overlap_token_size": 1200},
                {"chunk_pick_method": "vector"}, {"top_k": 0}, {"cosine_threshold": 2.0}, {"llm_max_async": 0}):
        with pytest.raises(ValueError):
            LightRAGSettings(**bad)


def test_our_settings_win_over_the_environment(monkeypatch):
    env = {"TOP_K": "1", "CHUNK_TOP_K": "1", "CHUNK_SIZE": "5", "CHUNK_F_SIZE": "5", "CHUNK_OVERLAP_SIZE": "1",
           "CHUNK_F_OVERLAP_SIZE": "1", "MAX_GLEANING": "3", "SUMMARY_LANGUAGE": "French", "WORKSPACE": "other",
           "ENTITY_EXTRACTION_USE_JSON": "true", "COSINE_THRESHOLD": "0.99", "MAX_ASYNC": "1",
           "EXTRACT_MAX_ASYNC_LLM": "1", "USER_PROMPT_PREFIX": "Answer in French.", "ENABLE_CONTENT_HEADINGS": "true",
           "RERANK_BY_DEFAULT": "true", "SOURCE_IDS_LIMIT_METHOD": "FIFO", "VLM_PROCESS_ENABLE": "true"}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    seen = []
    script = Script()
    m = method(lambda kind, messages, spec: seen.append(messages[0]["content"]) or script(kind, messages, spec))
    ctx = m.context("ada-lindqvist", "Where is Varholm?")
    ws = m.index("ada-lindqvist")
    rag = ws.rag
    assert (rag.workspace, rag.chunk_token_size, rag.chunk_overlap_token_size) == (ws.key, 1200, 100)
    assert (rag.entity_extract_max_gleaning, rag.enable_content_headings, rag.entity_extraction_use_json) == (1, False, False)
    assert (rag.cosine_better_than_threshold, rag.user_prompt_prefix, rag.vlm_process_enable) == (0.2, "", False)
    assert rag.addon_params["language"] == "English" and rag.source_ids_limit_method == "KEEP"
    cost = ctx.details["index_cost"]
    assert cost["chunks"] == cost["documents"] and cost["llm_calls"] == 2 * cost["documents"]
    assert not any("French" in s for s in seen)
    assert ctx.details["retrieved"]["chunks"] > 1  # CHUNK_TOP_K=1 did not apply


def test_every_lightrag_constructor_field_is_set_explicitly():
    """A LightRAG version with a new (perhaps environment-driven) field fails here until it is decided."""
    args = constructor_args(LightRAGSettings(), Path("/nonexistent/ws"), "ws", None, 1)
    left = {"log_level", "log_file_path", "chunking_func", "ollama_server_infos", "_storages_status"}  # no env
    init_fields = {f.name for f in dataclasses.fields(lightrag_modules().LightRAG) if f.init}
    assert init_fields - set(args) == left and set(args) - init_fields == {"addon_params"}  # an InitVar
    assert set(query_args(LightRAGSettings())) == {f.name for f in dataclasses.fields(lightrag_modules().QueryParam)}
    param = method().query_param()
    assert (param.only_need_context, param.enable_rerank, param.top_k) == (True, False, 40)


def test_importing_lightrag_leaves_the_environment_as_it_was(tmp_path):
    (tmp_path / ".env").write_text("RPA_LIGHTRAG_PROBE=leaked\nOPENAI_API_KEY=sk-from-dotenv\n")
    code = ("import os; from rpa_lib.methods.lightrag_bridge import lightrag_modules; lightrag_modules(); "
            "print(os.environ.get('RPA_LIGHTRAG_PROBE'), os.environ.get('OPENAI_API_KEY'))")
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["None", "None"]


def test_works_from_a_running_event_loop():
    m = method()

    async def notebook_cell():  # a Jupyter kernel runs cells inside its own running loop
        asyncio.get_running_loop()
        return m.respond("ada-lindqvist", "Where is Varholm?")

    response = asyncio.run(notebook_cell())
    assert response.context and response.reply


def test_a_failed_extraction_is_counted_and_the_rest_kept():
    def extract(text):
        return None if "Winter Storm" in text else f"entity{D}Varholm{D}Location{D}An island.\n<|COMPLETE|>"

    m = method(Script(extract=extract))
    cost = m.index_cost("ada-lindqvist")
    storm = [c for c in acts("ada-lindqvist").values() if "Winter Storm" in c.text]
    assert cost.failed_documents == cost.failed_calls == len(storm) >= 1 and "empty reply" in cost.errors[0]
    assert cost.entities == 1 and cost.documents == cost.chunks + len(storm) == len(acts("ada-lindqvist"))
    assert m.context("ada-lindqvist", "Where is Varholm?").items


def test_a_fatal_error_stops_the_build_and_leaves_no_index():
    def extract(text):
        raise LLMFatalError("the server refused the credentials")

    m = method(Script(extract=extract))
    with pytest.raises(LLMFatalError, match="refused the credentials"):
        m.context("ada-lindqvist", "Where is Varholm?")
    assert not (m.workspace_dir("ada-lindqvist") / COST_FILE).exists()
    close_lightrag()
    assert method().context("ada-lindqvist", "Where is Varholm?").details["index"] == "built"


def test_a_failed_query_is_a_failed_row_that_counts_the_calls_it_paid_for():
    down = threading.Event()

    def keywords(question):
        if down.is_set():
            raise Transient("HTTP 503")
        return ["life"], ["Varholm"]

    llm = FakeLLM(Script(keywords=keywords), retry=RetryPolicy(attempts=2, base_delay=0.001, max_delay=0.001))
    m = build_method("lightrag", llm=llm, dataset=FIXTURES, embedder="hash-64")
    m.index("ada-lindqvist")  # built first: the index is a one-off cost, outside the row
    down.set()
    llm.reset_usage()
    rows = run_jobs(m, [Job("ada-lindqvist", "q1", "Where is Varholm?")], progress=False)
    assert "failed after 2 attempts: HTTP 503" in rows.error[0] and rows.llm_calls[0] == llm.usage.calls == 1


def test_persona_as_one_document():
    m = method(documents="persona")
    ctx = m.context("ada-lindqvist", "Where is Varholm?")
    assert ctx.details["index_cost"]["documents"] == 1 and ctx.items and ctx.items[0].chunk_ids == ()


def test_word_tokenizer_is_lossless():
    t = WordTokenizer()
    for text in ["Hi, you.", "  two  spaces\n\nand lines ", "naïve café — 東京 ok?", ""]:
        assert t.decode(t.encode(text)) == text
    assert len(t.encode("I keep the lamp.")) == 5


def test_at_a_character_budget_the_context_is_cut_at_a_word_from_the_same_graph():
    script = Script()
    whole = method(script).context("ada-lindqvist", "What keeps you awake at night?")
    built = script.asked.count("extract")
    budgeted = build_method("lightrag_budget", llm=FakeLLM(script, cache=False), dataset=FIXTURES, embedder="hash-64",
                            budget_chars=300)
    cut = budgeted.context("ada-lindqvist", "What keeps you awake at night?")
    (w,), (c,) = whole.items, cut.items
    assert len(w.text) > 300 and w.text.startswith(c.text) and 250 < len(c.text) <= 300
    assert c.chunk_ids == w.chunk_ids and cut.details["budget_chars"] == 300
    assert script.asked.count("extract") == built  # the budget is no index setting: the graph built once serves both
