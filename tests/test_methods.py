"""Guided Selection's use in AMADEUS, the three methods and chunk statistics, offline (GS itself: test_gs.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

from rpa_lib.evaluation.chunk_usage import duplication_frequencies, usage_stats, used_chunks
from rpa_lib.evaluation.context import (
    TOKENIZER,
    context_sizes,
    count_tokens,
    matched_budget,
    matched_budgets,
    with_context,
)
from rpa_lib.evaluation.runner import FailedItems, Job, check_failures, failures, qa_jobs, run_jobs
from rpa_lib.llm import FakeLLM
from rpa_lib.methods import (
    METHODS,
    Context,
    ContextItem,
    Method,
    NoRAG,
    RetrievalSettings,
    build_method,
    build_methods,
    method_label,
    register,
)

FIXTURES = Path(__file__).parent / "fixtures" / "data"


def scripted(judge_yes=lambda prompt: "Winter Storm" in prompt, structured=None):
    """A FakeLLM whose judge says yes for chunks matching ``judge_yes`` and whose chat echoes the system prompt."""
    def rule(kind, messages, spec):
        last = messages[-1]["content"]
        if kind == "choose":
            return "yes" if judge_yes(last) else "no"
        if kind == "structured":
            return structured if structured is not None else {"belief_and_value": "duty first", "psychological_traits": "quiet"}
        return "SYSTEM:" + messages[0]["content"]
    return FakeLLM(rule, cache=False)


def make(name, llm, **settings):
    return build_method(name, llm, dataset=FIXTURES, **settings)


def chunks_of(r, role):
    return [item for item in r.context if item.role == role]


def test_no_rag_uses_no_chunks_and_names_the_character_and_work():
    r = make("no_rag", scripted()).respond("ada-lindqvist", "Who are you?")
    assert r.method == "no_rag" and r.context == [] and r.details == {} and r.chunk_ids() == []
    assert "Ada Lindqvist from Test Fixtures" in r.reply and len(r.calls) == 1 and r.calls[0].purpose == "respond"


STORM = "What did you do when the storm broke the lamp's lens?"


def test_naive_rag_gives_top_k_acts_chunks_as_knowledge_and_the_vanilla_variant_is_named():
    m = make("naive_rag", scripted(), embedder="hash-64", k=2)
    r = m.respond("ada-lindqvist", STORM)
    knowledge = chunks_of(r, "knowledge")
    assert len(knowledge) == 2 and all(":acts:" in item.chunk_ids[0] for item in knowledge)  # AMADEUS's pool
    assert r.chunk_ids() == [item.chunk_ids[0] for item in knowledge]
    assert knowledge[0].text in r.reply  # the chunks reached the prompt
    vanilla = make("naive_rag_vanilla", scripted(), embedder="hash-64", k=2)
    r = vanilla.respond("ada-lindqvist", STORM)
    assert r.method == "naive_rag_vanilla" and method_label(r.method) == "Naive RAG (Vanilla)"
    assert all(":vanilla:" in i for i in r.chunk_ids()) and len(r.chunk_ids()) == 2
    assert make("crag", FakeLLM(), embedder="hash-64").settings.splitter == "acts"


def test_naive_rag_at_a_character_budget_fills_it_from_the_ranking():
    top = make("naive_rag", FakeLLM(), embedder="hash-64", k=50).context("ada-lindqvist", STORM).items
    full = sum(len(i.text) for i in top)
    budget = len(top[0].text) + len(top[1].text) // 2
    r = make("naive_rag", FakeLLM(), embedder="hash-64", budget_chars=budget).context("ada-lindqvist", STORM)
    assert [i.chunk_ids for i in r.items] == [i.chunk_ids for i in top[:2]]  # the ranking, the second cut
    assert r.items[0].text == top[0].text and top[1].text.startswith(r.items[1].text)
    assert budget - 30 < sum(len(i.text) for i in r.items) <= budget and r.details["items_in_budget"] == 2
    r = make("naive_rag", FakeLLM(), embedder="hash-64", budget_chars=10 * full).context("ada-lindqvist", STORM)
    assert sum(len(i.text) for i in r.items) == full  # a budget past the persona: every chunk, none cut
    with pytest.raises(ValueError, match="naive_rag_budget.*needs the setting\\(s\\) budget_chars"):
        make("naive_rag_budget", FakeLLM())
    with pytest.raises(ValueError, match="budget_chars must be at least 1"):
        make("naive_rag", FakeLLM(), budget_chars=0)
    assert make("naive_rag_budget", FakeLLM(), budget_chars=900).name == "naive_rag_budget"


def test_amadeus_shows_each_chunk_once():
    m = make("amadeus", scripted(), embedder="hash-64", k=5, max_iterations=30, slot_size=2)
    r = m.context("ada-lindqvist", STORM)
    selected = [i.chunk_ids[0] for i in r.items if i.role == "selected"]
    knowledge = [i.chunk_ids[0] for i in r.items if i.role == "knowledge"]
    top5 = [c.id for c in m.search("ada-lindqvist", STORM, 5)]
    assert selected and set(selected) <= set(top5)  # the storm chunks rank high: GS keeps some of the top-k
    assert not set(selected) & set(knowledge) and knowledge == [c for c in top5 if c not in selected]
    assert r.details["selected_in_top_k"] == len(set(selected) & set(top5))
    texts = [i.text for i in r.items if i.role in ("knowledge", "selected")]
    assert len(texts) == len(set(texts))


def test_context_sizes_and_the_matched_budget():
    methods = build_methods(["no_rag", "naive_rag", "amadeus"], scripted(), dataset=FIXTURES, embedder="hash-64",
                            k=2, max_iterations=6)
    jobs = [Job("ada-lindqvist", "a", STORM), Job("bram-okafor", "b", "Do you like parties?")]
    rows = pd.concat([run_jobs(m, jobs, progress=False) for m in methods], ignore_index=True)
    sizes = context_sizes(rows).set_index("method")
    assert sizes.loc["no_rag", "context_chars"] == 0 and sizes.loc["no_rag", "context_tokens"] == 0
    naive = rows[rows.method == "naive_rag"]
    want = sum(len(c["text"]) for ctx in naive.context for c in ctx) / 2
    assert sizes.loc["naive_rag", "context_chars"] == want and sizes.loc["naive_rag", "questions"] == 2
    assert 0 < sizes.loc["naive_rag", "context_tokens"] < want and sizes.tokenizer.unique().tolist() == [TOKENIZER]
    assert count_tokens(["hello world", ""]) == [2, 0]
    budget = matched_budget(rows, "amadeus")
    assert budget == round(sizes.loc["amadeus", "context_chars"]) and budget > sizes.loc["naive_rag", "context_chars"]
    matched = make("naive_rag_budget", scripted(), embedder="hash-64", budget_chars=budget)
    m_rows = run_jobs(matched, jobs, step="context", progress=False)
    got = context_sizes(m_rows, tokens=False).context_chars.iloc[0]
    assert budget - 40 <= got <= budget  # the control shows as much text as AMADEUS did, to a word
    table = with_context(pd.DataFrame({"method": ["amadeus", "naive_rag"], "acc": [0.5, 0.4]}), sizes.reset_index())
    assert list(table.columns) == ["method", "acc", "context_chars", "context_tokens", "context_items"]
    with pytest.raises(ValueError, match="no answered rows of 'crag'"):
        matched_budget(rows, "crag")


def test_each_question_set_gets_the_budget_amadeus_showed_on_that_set():
    """A pooled mean would give the set where AMADEUS showed less context more than it showed, and the other less."""
    rows = pd.DataFrame({"method": ["amadeus", "amadeus", "amadeus", "naive_rag"], "task": ["QA", "QA", "MBTI", "MBTI"],
                         "context": [[{"text": "a" * 100}], [{"text": "a" * 200}], [{"text": "a" * 900}], []]})
    assert matched_budgets(rows, "task", ["QA", "MBTI", "BFI"]) == {"QA": 150, "MBTI": 900}  # BFI: AMADEUS not run
    assert matched_budget(rows, "amadeus") == 400  # the pooled mean, fair to neither set
    assert matched_budgets(rows, "task", ["QA", "BFI"], given=500) == {"QA": 500, "BFI": 500}


def test_amadeus_runs_gs_then_ae_then_responds_with_both():
    m = make("amadeus", scripted(), embedder="hash-64", k=2, max_iterations=30, slot_size=2)
    r = m.respond("ada-lindqvist", "What did you do when the storm broke the lamp's lens?")
    selected = chunks_of(r, "selected")
    assert not r.details["gs_failed"] and selected and all("Winter Storm" in item.label for item in selected)
    assert r.details["attributes"] == {"Belief and Value": "duty first", "Psychological Traits": "quiet"}
    attributes = chunks_of(r, "attribute")
    assert [a.label for a in attributes] == ["Belief and Value", "Psychological Traits"]
    assert all(a.chunk_ids == tuple(i for s in selected for i in s.chunk_ids) for a in attributes)
    assert "duty first" in r.reply and selected[0].text in r.reply
    purposes = [c.purpose for c in r.calls]
    assert purposes.count("judge") == r.details["examined"] and purposes[-2:] == ["extract", "respond"]


def test_amadeus_gs_failure_falls_back_and_ae_failure_is_recorded_not_fatal():
    llm = scripted(judge_yes=lambda p: False, structured={"wrong": 1})
    m = make("amadeus", llm, embedder="hash-64", max_iterations=5)
    r = m.respond("bram-okafor", "Do you like loud parties?")
    assert r.details["gs_failed"] and len(chunks_of(r, "selected")) == 3 and r.details["examined"] == 5
    assert any(c.purpose == "extract" and c.output.startswith("failed") for c in r.calls)
    # the free-text fallback fills both attributes, one chat call each, and they reach the response
    assert [c.purpose for c in r.calls].count("extract-text") == 2 and r.details["extract_fallback"]
    attributes = r.details["attributes"]
    assert set(attributes) == {"Belief and Value", "Psychological Traits"} and all(attributes.values())
    assert r.reply.startswith("SYSTEM:") and attributes["Belief and Value"][:40] in r.reply


def test_the_gs_window_follows_the_llm_that_judges():
    """The look-ahead is sized for gs_llm, which build_method attaches after the method is made."""
    judge = FakeLLM(max_workers=1)
    judge.lookahead = 8  # as a batch round's LLM asks
    a = build_method("amadeus", FakeLLM(max_workers=1), dataset=FIXTURES, gs_llm=judge, embedder="hash-64")
    assert a.window == 8 and a.window is a.window  # one policy object for the walks
    assert make("amadeus", FakeLLM(max_workers=1)).window == 1


def test_build_method_takes_declared_settings_and_rejects_unknown_ones():
    assert isinstance(make("no_rag", FakeLLM()), NoRAG)
    a = make("amadeus", FakeLLM(), max_iterations=3, slot_size=1, window=2)
    assert (a.settings.max_iterations, a.settings.slot_size, a.window) == (3, 1, 2)
    with pytest.raises(ValueError, match="unknown method 'no_such_method'; registered: .*no_rag, naive_rag, amadeus.*naive_rag_vanilla"):
        build_method("no_such_method", llm=FakeLLM())
    with pytest.raises(ValueError, match=r"method 'no_rag' has no setting 'splitter'; its settings: max_tokens"):
        make("no_rag", FakeLLM(), splitter="acts")
    with pytest.raises(ValueError, match=r"has no setting 'max_iteration'; its settings: embedder, extract, "):
        make("amadeus", FakeLLM(), max_iteration=8)
    with pytest.raises(ValueError, match="unknown splitter 'fixed'"):
        make("naive_rag", FakeLLM(), splitter="fixed")
    with pytest.raises(ValueError, match="slot_size >= 1"):
        make("amadeus", FakeLLM(), slot_size=0)
    # a misspelt embedder is named when the method is built, not as one failed row per question
    with pytest.raises(ValueError, match=r"unknown embedder 'minlm' \(did you mean 'minilm'\?\)"):
        make("crag", FakeLLM(), embedder="minlm")
    assert make("naive_rag", FakeLLM(), embedder="hash-8").settings.embedder == "hash-8"


def test_build_methods_routes_shared_settings_and_rejects_strays():
    no_rag, naive, amadeus = build_methods(["no_rag", "naive_rag", "amadeus"], FakeLLM(), dataset=FIXTURES, k=2,
                                           max_iterations=4, max_tokens=20, window=None)
    assert no_rag.settings.max_tokens == naive.settings.max_tokens == amadeus.settings.max_tokens == 20
    assert naive.settings.k == amadeus.settings.k == 2 and amadeus.settings.max_iterations == 4
    with pytest.raises(ValueError, match="no method of no_rag, naive_rag has the setting\\(s\\) 'max_iterations'"):
        build_methods(["no_rag", "naive_rag"], FakeLLM(), max_iterations=4)
    with pytest.raises(ValueError, match="methods must be a list"):
        build_methods("amadeus", FakeLLM())
    with pytest.raises(ValueError, match="unknown method 'amadeuss'; registered: "):  # not "settings given for ..."
        build_methods(["amadeuss"], FakeLLM(), per_method={"amadeus": {"k": 2}})


def test_build_methods_per_method_settings_override_the_shared_ones_for_that_method_only():
    naive, amadeus = build_methods(["naive_rag", "amadeus"], FakeLLM(), dataset=FIXTURES, k=2,
                                   per_method={"amadeus": {"k": 4, "slot_size": 1}})
    assert naive.settings.k == 2 and amadeus.settings.k == 4 and amadeus.settings.slot_size == 1
    with pytest.raises(ValueError, match="settings given for 'crag', which is not among the methods run"):
        build_methods(["naive_rag"], FakeLLM(), dataset=FIXTURES, per_method={"crag": {"k": 2}})
    with pytest.raises(ValueError, match="method 'naive_rag' has no setting 'slot_size'"):
        build_methods(["naive_rag"], FakeLLM(), dataset=FIXTURES, per_method={"naive_rag": {"slot_size": 1}})


def test_chunk_usage_statistics():
    used = pd.DataFrame([
        {"method": "m", "character": "c", "question_id": "q1", "chunks": ["a", "b"], "gs_failed": False, "error": None},
        {"method": "m", "character": "c", "question_id": "q2", "chunks": ["b", "c", "d"], "gs_failed": True, "error": None},
        {"method": "m", "character": "c", "question_id": "q3", "chunks": [], "gs_failed": None, "error": "LLMError: x"},
    ])
    stats = usage_stats(used, {"c": 8}).iloc[0]
    assert stats.chunks_used == 4 and stats.usage_rate == 0.5 and stats.gs_failure_rate == 0.5 and stats.failed_items == 1
    assert stats.ceiling_rate == 5 / 8  # 5 chunks shown over the answered questions: at most 5 of 8 distinct
    freqs = duplication_frequencies(used, {"c": 8}).set_index("chunk").uses.to_dict()
    assert freqs == {"a": 1, "b": 2, "c": 1, "d": 1}


def test_used_chunks_records_failed_items_and_reads_roles():
    def rule(kind, messages, spec):
        if "Bram" in messages[-1]["content"]:
            raise ValueError("judge exploded")
        return "no"
    m = make("amadeus", FakeLLM(rule, cache=False), embedder="hash-64", max_iterations=3, k=1, extract=False)
    jobs = [Job("ada-lindqvist", "q1", "Hello?"), Job("bram-okafor", "q1", "Hello?")]
    used = used_chunks(m, jobs, roles=["selected"])
    assert len(used) == 2
    ok, bad = used.iloc[0], used.iloc[1]
    assert pd.isna(ok.error) and ok.gs_failed and len(ok.chunks) == 3
    assert "judge exploded" in bad.error and bad.chunks == []
    everything = used_chunks(m, jobs[:1])  # every role: the top-1 knowledge chunk is among the top K+1 fallback
    assert set(everything.chunks[0]) == set(ok.chunks)


def test_a_chunk_cut_to_a_few_words_by_a_budget_is_not_counted_as_used():
    """The budget-matched control ends on a chunk cut at the budget: below MIN_USED_CHARS of its text reached the
    LLM, so usage does not count it; every whole chunk counts."""
    from rpa_lib.evaluation.chunk_usage import MIN_USED_CHARS

    m = make("naive_rag", FakeLLM(cache=False), embedder="hash-64", k=2)
    ranked = m.search("ada-lindqvist", "the lighthouse", 3)
    budget = len(ranked[0].text) + len(ranked[1].text) + 80  # two whole chunks and 80 characters of a third
    control = make("naive_rag_budget", FakeLLM(cache=False), embedder="hash-64", budget_chars=budget)
    used = used_chunks(control, [Job("ada-lindqvist", "q1", "the lighthouse")])
    shown = [i for i in used.context[0] if i["chunk_ids"]]
    assert len(shown) == 3 and len(shown[2]["text"]) < MIN_USED_CHARS < len(ranked[2].text)
    assert used.chunks[0] == [ranked[0].id, ranked[1].id]


def test_run_jobs_keeps_one_row_per_job_with_failures_and_meta():
    def rule(kind, messages, spec):
        if "Bram" in messages[0]["content"]:
            raise ValueError("no answer for Bram")
        return "hello"
    m = make("naive_rag", FakeLLM(rule, cache=True), embedder="hash-64", k=2)
    jobs = [Job("ada-lindqvist", "a1", "Who are you?", {"attribute": "Activity"}),
            Job("bram-okafor", "b1", "Who are you?", {"attribute": "Activity"})]
    rows = run_jobs(m, jobs, progress=False)
    assert list(rows.columns[:5]) == ["method", "character", "question_id", "question", "attribute"]
    ok, bad = rows.iloc[0], rows.iloc[1]
    assert ok.reply == "hello" and len(ok.chunk_ids) == 2 and ok.llm_calls == 1 and pd.isna(ok.error)
    assert [c["role"] for c in ok.context] == ["knowledge", "knowledge"]
    assert pd.isna(bad.reply) and "no answer for Bram" in bad.error and failures(rows).question_id.tolist() == ["b1"]
    again = run_jobs(m, jobs[:1], progress=False)  # a completed call is served from the cache
    assert again.cached_calls[0] == 1
    context_only = run_jobs(m, jobs[:1], step="context", progress=False)
    assert pd.isna(context_only.reply[0]) and context_only.llm_calls[0] == 0


@dataclass(frozen=True)
class EchoSettings(RetrievalSettings):
    prefix: str = ""


def test_a_new_method_is_one_class_with_register_above_it(monkeypatch):
    from rpa_lib.methods import registry

    monkeypatch.setattr(registry, "METHODS", dict(registry.METHODS))  # the test's copy of the registry

    @register  # the one line that registers it
    class EchoFirstChunk(Method):
        """A trivial method, the whole of what adding one takes: a settings dataclass and a context step."""

        name = "echo_first_chunk"
        Settings = EchoSettings

        def context(self, character, question):
            chunk = self.search(character, question, 1)[0]
            return Context([ContextItem("knowledge", self.settings.prefix + chunk.text, (chunk.id,))])

    r = make("echo_first_chunk", scripted(), embedder="hash-64", prefix=">> ").respond("ada-lindqvist", "Lamp?")
    assert r.method == "echo_first_chunk" and r.context[0].text.startswith(">> ") and len(r.chunk_ids()) == 1
    with pytest.raises(ValueError, match="its settings: embedder, k, max_tokens, prefix, splitter"):
        make("echo_first_chunk", scripted(), prefx="!")
    assert "echo_first_chunk" in registry.METHODS and "echo_first_chunk" not in METHODS  # the test's copy only
    with pytest.raises(ValueError, match="a method named 'naive_rag' is already registered \\(NaiveRAG\\)"):
        register(type("Other", (Method,), {"name": "naive_rag"}))
    assert list(METHODS)[:6] == ["no_rag", "naive_rag", "amadeus", "crag", "rolerag", "lightrag"]  # import order


def test_check_failures_fails_a_run_with_failed_items():
    rows = pd.DataFrame([{"method": "m", "character": "c", "question_id": "q1", "error": None},
                         {"method": "m", "character": "c", "question_id": "q2", "error": "LLMError: 401 Unauthorized"}])
    with pytest.raises(FailedItems, match=r"chunk usage: 1 of 2 item\(s\) failed \(allowed share 0\); "
                                          r"first: m c q2: LLMError: 401 Unauthorized"):
        check_failures(rows, "chunk usage")
    check_failures(rows, "chunk usage", max_share=0.5)  # at the threshold: allowed
    check_failures(rows.iloc[:1], "chunk usage")


def test_qa_jobs_spread_a_subset_over_the_attributes():
    from rpa_lib.data import Dataset

    ds = Dataset(FIXTURES)
    jobs = qa_jobs(ds, ["ada-lindqvist"], 3)
    attributes = [j.meta["attribute"] for j in jobs]
    assert len(jobs) == 3 and len(set(attributes)) == 3
    assert [j.id for j in qa_jobs(ds, ["ada-lindqvist"])] == [q.id for q in ds.qa("ada-lindqvist")]


def test_equal_comparison_gives_both_methods_the_same_pool_and_budget():
    from rpa_lib.evaluation.chunk_usage import COMPARISONS, comparison_methods

    judge = scripted(judge_yes=lambda p: "Winter Storm" in p)
    (naive, naive_roles), (amadeus, gs_roles) = comparison_methods("equal", judge, FIXTURES, embedder="hash-64",
                                                                   slot_size=2, max_iterations=10)
    assert naive.settings.splitter == amadeus.settings.splitter == "acts" and naive.settings.k == 2
    assert amadeus.settings.k == 0 and not amadeus.settings.extract and naive_roles is gs_roles is None
    ctx = amadeus.context("ada-lindqvist", "What did you do when the storm broke the lamp's lens?")
    assert {i.role for i in ctx.items} == {"selected"} and len(ctx.items) <= 2
    assert "top-2 ACTS chunks vs AMADEUS on ACTS chunks with top-0 knowledge + GS K=2" in \
        COMPARISONS["equal"].describe(naive, amadeus)
    (naive, _), (amadeus, roles) = comparison_methods("paper-like", judge, FIXTURES, embedder="hash-64")
    assert (naive.settings.splitter, naive.settings.k, roles) == ("acts", 3, ["selected"])  # one pool in both
    used = used_chunks(amadeus, [Job("ada-lindqvist", "q", "What did you do when the storm broke the lamp's lens?")],
                       roles=roles)
    counted, shown = used.chunks[0], [c["chunk_ids"][0] for c in used.context[0]]
    assert set(counted) < set(shown)  # GS's chunks are counted; the context keeps the top-3 shown beside them
    with pytest.raises(ValueError, match="unknown comparison 'fair'"):
        comparison_methods("fair", judge, FIXTURES)


def test_amadeus_ae_text_format_asks_for_free_text_only():
    llm = scripted(structured={"belief_and_value": "never asked", "psychological_traits": "never asked"})
    r = make("amadeus", llm, embedder="hash-64", max_iterations=5, extract_format="text").respond(
        "bram-okafor", "Do you like loud parties?")
    purposes = [c.purpose for c in r.calls]
    assert "extract" not in purposes and purposes.count("extract-text") == 2 and not r.details["extract_fallback"]
    assert all(r.details["attributes"].values()) and "never asked" not in r.reply
    with pytest.raises(ValueError, match="extract_format must be 'json' or 'text'"):
        make("amadeus", FakeLLM(), extract_format="yaml")


def test_a_method_says_for_a_caption_what_it_draws_on_beyond_the_chunk_pool():
    llm = FakeLLM()
    assert [build_method(n, llm).draws_on() for n in ("no_rag", "naive_rag", "crag", "amadeus")] \
        == [None] * 4  # the settings' chunk pool (CRAG's search strips: departures names them)
    assert build_method("rolerag", llm, embedder="hash-64").draws_on() == (
        "RoleRAG builds its graph from vanilla chunks of 2,400 characters with 400 of overlap, the LLM extracting "
        "entities and relations")
    assert "the whole persona as one document" in build_method("lightrag", llm, embedder="hash-64",
                                                               documents="persona").draws_on()


def test_a_budget_matched_control_of_each_method_takes_the_run_settings_it_declares():
    from rpa_lib.evaluation.outcomes import default_pairs
    from rpa_lib.methods import budget_controls, budget_note, build_control
    from rpa_lib.methods.base import ContextItem, within_budget

    methods = ["no_rag", "crag", "amadeus", "naive_rag_budget", "crag_budget", "lightrag_budget", "rolerag_budget"]
    assert budget_controls(methods) == methods[3:]
    control = build_control("lightrag_budget", 700, FakeLLM(), dataset=FIXTURES, embedder="hash-64", k=3,
                            max_iterations=4, per_method={"lightrag_budget": {"mode": "local"}})
    assert (control.name, control.settings.budget_chars, control.settings.mode) == ("lightrag_budget", 700, "local")
    control = build_control("crag_budget", 900, FakeLLM(), dataset=FIXTURES, embedder="hash-64", k=3, per_method={
        "crag": {"search_k": 3, "max_strips": 4}, "crag_budget": {"max_strips": 2}, "amadeus": {"extract_retries": 0}})
    s = control.settings  # CRAG as the run set it up, then the control's own settings
    assert (s.search_k, s.max_strips, s.k, s.embedder, s.budget_chars) == (3, 2, 3, "hash-64", 900)
    shared = {"embedder": "hash-64", "k": 3, "max_iterations": 4, "slot_size": 2, "max_tokens": 32, "extract_retries": 3}
    rolerag = build_methods(["rolerag", "amadeus"], FakeLLM(), dataset=FIXTURES, **shared)[0]
    control = build_control("rolerag_budget", 900, FakeLLM(), dataset=FIXTURES, **shared)
    assert control.cache_key("ada-lindqvist") == rolerag.cache_key("ada-lindqvist")  # the method's graph, not another
    assert ("crag", "crag_budget") in default_pairs("table6_roleplay", methods)
    assert budget_note(["naive_rag_budget", "crag_budget"], "task by task", {"crag_budget": 1500}) == (
        ". naive_rag_budget is Naive RAG filled from its ranking up to AMADEUS's mean context, task by task; "
        "crag_budget is CRAG-offline cut to 1,500 characters; the others run at their own sizes")
    assert budget_note([], "task by task") == ""
    items = [ContextItem("boundary", "note"), ContextItem("graph", "alpha beta"), ContextItem("graph", "gamma")]
    assert [i.text for i in within_budget(items, 4 + 7)] == ["note", "alpha"]  # the note spends its 4 first
    assert [i.text for i in within_budget(items, 4 + 3)] == ["note"]  # no whole word of the first graph item fits
    same = ContextItem("knowledge", "aaaa bbbb")
    assert [i.text for i in within_budget([same, same], 14)] == ["aaaa bbbb", "aaaa"]  # one item twice: each counted
