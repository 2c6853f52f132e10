"""CRAG-offline on the fake backend: the evaluator's scores and routes (threshold edges included), knowledge
refinement, the BM25 corpora that stand in for web search, and the method end to end."""

from __future__ import annotations

import doctest
import math
import re
from pathlib import Path

import pandas as pd
import pytest

from rpa_lib.data import Dataset
from rpa_lib.evaluation.runner import Job, run_jobs
from rpa_lib.llm import FakeLLM, LLMError, RetryPolicy, Transient
from rpa_lib.llm.reply import Raw, Reply
from rpa_lib.methods import bm25 as bm25_module
from rpa_lib.methods import build_method
from rpa_lib.methods.bm25 import corpus_for, tokenize
from rpa_lib.methods.crag import (
    AMBIGUOUS,
    CORRECT,
    INCORRECT,
    crag_label,
    grade_score,
    relevance,
    route,
    route_counts,
    sentence_groups,
)

FIXTURES = Path(__file__).parent / "fixtures" / "data"
ADA, BRAM = "ada-lindqvist", "bram-okafor"
STORM_Q = "What did you do when the storm broke the lamp's lens?"


def passage_of(prompt: str) -> str:
    """The passage an evaluator prompt asks about."""
    return re.search(r"Passage[^\n]*:\n(.*)\n\nDoes this passage", prompt, re.S).group(1)


def fake(relevant=lambda passage: False, keywords="Ada Lindqvist, storm, lens"):
    """A FakeLLM answering CRAG's prompts: the evaluator by ``relevant(passage)``, the rewrite with ``keywords``,
    the reply with its system prompt (so a test can see what reached it)."""
    def rule(kind, messages, spec):
        last = messages[-1]["content"]
        if kind == "choose":
            return "relevant" if relevant(passage_of(last)) else "irrelevant"
        if "search-engine" in messages[0]["content"]:  # the rewrite (and its re-asks)
            return keywords
        return "SYSTEM:" + messages[0]["content"]
    return FakeLLM(rule)


class ScoredFake(FakeLLM):
    """A fake whose evaluator gives log-scores: ``rule`` returns P(relevant) for an evaluator prompt."""

    def _choose(self, req):
        p = float(self.rule("choose", req.messages, req.options))
        return Raw("relevant" if p >= 0.5 else "irrelevant", 1, 1,
                   scores={"relevant": math.log(p), "irrelevant": math.log1p(-p)})


def scored(p_of):
    return ScoredFake(lambda kind, messages, spec: p_of(passage_of(messages[-1]["content"])) if kind == "choose"
                      else "Ada Lindqvist, storm")


def make(llm, dataset=FIXTURES, **settings):
    """CRAG on the fixtures. The tests written with ``fake`` and ``scored`` script the binary evaluator, so it is
    this helper's default; the graded evaluator (the method's default) is tested below with ``graded``."""
    settings.setdefault("evaluator", "binary")
    return build_method("crag", llm, dataset=dataset, embedder="hash-64", **settings)


def grade_passage(prompt: str) -> str:
    """The passage a graded evaluator prompt asks about."""
    return re.search(r"Passage[^\n]*:\n(.*)\n\nHow much does this passage", prompt, re.S).group(1)


class GradedFake(FakeLLM):
    """A scripted judge for the graded evaluator: ``grade(passage)`` -> "1".."5", or a dict of log-scores (the
    reply then carries them, as a logprobs server's would). Its chat echoes the system prompt."""

    def _choose(self, req):
        out = self.rule("choose", req.messages, req.options)
        if isinstance(out, dict):
            return Raw(max(out, key=out.get), 1, 1, scores=out)
        return Raw(out, 1, 1)


def graded(grade, keywords="Ada Lindqvist, storm"):
    def rule(kind, messages, spec):
        if kind == "choose":
            assert spec == ["1", "2", "3", "4", "5"]
            return grade(grade_passage(messages[-1]["content"]))
        return keywords if "search-engine" in messages[0]["content"] else "SYSTEM:" + messages[0]["content"]
    return GradedFake(rule)


# ---- the evaluator and the routes ----------------------------------------------------------------------------

def test_relevance_is_the_softmax_difference_else_plus_minus_one():
    assert relevance(Reply("relevant", kind="choose")) == 1.0
    assert relevance(Reply("irrelevant", kind="choose")) == -1.0
    assert relevance(Reply("irrelevant", kind="choose", scores={"relevant": math.log(0.75), "irrelevant": math.log(0.25)})) == 0.5
    assert relevance(Reply("relevant", kind="choose", scores={"relevant": -30.0, "irrelevant": -0.0})) == pytest.approx(-1.0)
    assert relevance(Reply("relevant", kind="choose", scores={"relevant": -1.0})) == 1.0  # one score: no softmax


def test_graded_score_is_the_expected_grade_else_the_chosen_one():
    assert [grade_score(Reply(g, kind="choose")) for g in "12345"] == [-1.0, -0.5, 0.0, 0.5, 1.0]
    even = {g: math.log(0.2) for g in "12345"}
    assert grade_score(Reply("3", kind="choose", scores=even)) == 0.0
    skewed = {"1": math.log(0.5), "2": -math.inf, "3": -math.inf, "4": -math.inf, "5": math.log(0.5)}
    assert grade_score(Reply("1", kind="choose", scores=skewed)) == 0.0  # the expectation, not the argmax
    assert grade_score(Reply("4", kind="choose", scores={"4": -0.1})) == 0.5  # scores for some grades only: the choice


def test_the_graded_evaluator_is_the_default_and_fires_all_three_routes_without_scores():
    assert build_method("crag", FakeLLM(), dataset=FIXTURES).settings.evaluator == "scale"
    with pytest.raises(ValueError, match="unknown evaluator 'soft'; choose one of scale, binary"):
        make(FakeLLM(), evaluator="soft")
    # a scripted judge that gives whole grades (no scores, as a json_schema server): storm passages 4, others low
    fired = {}
    for low in ("2", "1"):  # no chunk about parties: every chunk graded 2 (Ambiguous), then 1 (Incorrect)
        def grade(passage, low=low):
            return "4" if "storm" in passage and not passage.startswith(("Ada Lindqvist:", "Bram Okafor:")) else low
        r = make(graded(grade), evaluator="scale").context(ADA, "Do you like parties?")
        fired[r.details["route"]] = r.details
        assert r.details["evaluator"] == "scale" and set(r.details["chunk_scores"].values()) <= {0.5, -0.5, -1.0}
    r = make(graded(lambda p: "4" if "storm" in p else "1"), evaluator="scale").context(ADA, STORM_Q)
    fired[r.details["route"]] = r.details
    assert set(fired) == {CORRECT, AMBIGUOUS, INCORRECT}
    assert fired[CORRECT]["keywords"] == [] and 0.5 in fired[CORRECT]["chunk_scores"].values()
    assert fired[AMBIGUOUS]["keywords"] and max(fired[AMBIGUOUS]["chunk_scores"].values()) == -0.5
    assert fired[INCORRECT]["keywords"] and set(fired[INCORRECT]["chunk_scores"].values()) == {-1.0}
    # and the counts a notebook reports
    jobs = [Job(ADA, "a", STORM_Q), Job(ADA, "b", "Do you like parties?"), Job(BRAM, "c", "Do you like parties?")]
    rows = run_jobs(make(graded(lambda p: "4" if "storm" in p else "2" if "Bram" in p else "1"), evaluator="scale"),
                    jobs, step="context", progress=False)
    counts = route_counts(rows).iloc[0]
    assert counts.method == "crag" and counts.questions == 3
    assert counts[CORRECT] + counts[AMBIGUOUS] + counts[INCORRECT] == 3 and counts[CORRECT] >= 1
    assert route_counts(rows.assign(details=[{}] * 3)).empty  # no method with routes: no rows


def test_interview_rows_keep_the_route_and_the_context_size_for_the_counts():
    from rpa_lib.evaluation.context import context_sizes
    from rpa_lib.evaluation.personality import interview

    m = make(graded(lambda p: "4" if "storm" in p else "1"), evaluator="scale")
    q = Dataset(FIXTURES).questionnaire("mbti", 4)
    rows = interview(m, [ADA], q, llm=m.llm, progress=False)
    assert rows.error.isna().all() and set(rows.route) <= {CORRECT, AMBIGUOUS, INCORRECT}
    counts = route_counts(rows).iloc[0]  # from the route column (interview rows keep no details)
    assert counts.questions == len(rows) == 4 and counts[CORRECT] + counts[AMBIGUOUS] + counts[INCORRECT] == 4
    sizes = context_sizes(rows).iloc[0]  # from the size columns (interview rows keep no texts)
    assert sizes.context_chars == rows.context_chars.mean() and (rows.context_tokens <= rows.context_chars).all()


def test_graded_evaluator_with_log_scores_is_graded_between_the_grades():
    def grade(passage):  # storm chunks: P(4) = P(5) = 0.5 -> expected 4.5 -> 0.75; others: all on grade 2 and 3
        if "storm" in passage:
            return {"1": -math.inf, "2": -math.inf, "3": -math.inf, "4": math.log(0.5), "5": math.log(0.5)}
        return {"1": -math.inf, "2": math.log(0.5), "3": math.log(0.5), "4": -math.inf, "5": -math.inf}
    r = make(graded(grade), evaluator="scale", corpus="none").context(ADA, STORM_Q)
    assert r.details["route"] == CORRECT and set(r.details["chunk_scores"].values()) <= {0.75, -0.25}
    assert {s["score"] for s in r.details["strips"]} <= {0.75, -0.25}


def test_route_thresholds_are_reached_at_equality():
    assert route([0.5, -1.0], 0.5, -0.5) == CORRECT  # exactly at upper
    assert route([0.49, -1.0], 0.5, -0.5) == AMBIGUOUS
    assert route([-0.5, -0.9], 0.5, -0.5) == AMBIGUOUS  # exactly at lower is not below it
    assert route([-0.51, -0.9], 0.5, -0.5) == INCORRECT
    assert route([1.0], 1.0, -1.0) == CORRECT and route([-1.0], 1.0, -1.0) == AMBIGUOUS


@pytest.mark.parametrize(("p", "want"), [(0.75, CORRECT), (0.7499, AMBIGUOUS), (0.25, AMBIGUOUS), (0.2499, INCORRECT)])
def test_scored_evaluator_routes_at_the_threshold_edges(p, want):
    r = make(scored(lambda passage: p), corpus="none").context(ADA, STORM_Q)  # every chunk scores 2p - 1
    assert r.details["route"] == want
    assert set(r.details["chunk_scores"].values()) == {round(2 * p - 1, 6)}


def test_correct_uses_refined_persona_strips_only():
    r = make(fake(lambda p: "storm" in p or "lanterns" in p)).respond(ADA, STORM_Q)
    d = r.details
    assert d["route"] == CORRECT and d["keywords"] == [] and d["corpus"] == "pooled"
    assert len(d["chunk_scores"]) == 3 and 1.0 in d["chunk_scores"].values()
    assert r.items("external") == [] and r.items("knowledge")
    assert all(i.chunk_ids and i.chunk_ids[0] in d["chunk_scores"] for i in r.items("knowledge"))
    assert all("storm" in i.text or "lanterns" in i.text for i in r.items("knowledge"))
    assert r.items("knowledge")[0].text in r.reply  # the strips reached the answer
    purposes = [c.purpose for c in r.calls]
    assert purposes[:3] == ["evaluate"] * 3 and "rewrite" not in purposes and purposes[-1] == "respond"
    assert purposes.count("refine") == d["strips_examined"]


def test_incorrect_uses_refined_search_strips_only():
    # persona chunks are all judged irrelevant; search strips (prefixed with a name) about the storm are relevant
    r = make(fake(lambda p: p.startswith(("Ada Lindqvist:", "Bram Okafor:")) and "storm" in p)).context(ADA, STORM_Q)
    d = r.details
    assert d["route"] == INCORRECT and set(d["chunk_scores"].values()) == {-1.0}
    assert d["keywords"] == ["Ada Lindqvist", "storm", "lens"]
    external = [i for i in r.items if i.role == "external"]
    assert external and not [i for i in r.items if i.role == "knowledge"]
    for item in external:  # Ada's own paragraphs: the chunks that hold the strip
        assert item.text.startswith("Ada Lindqvist: ") and item.label.startswith("Ada Lindqvist >")
        assert item.chunk_ids and all(i.startswith(f"{ADA}:acts:") for i in item.chunk_ids)
    chunks = {c.id: c for c in make(fake()).retriever(ADA).chunks}
    first = external[0]
    assert first.text.removeprefix("Ada Lindqvist: ") in chunks[first.chunk_ids[0]].body
    assert [c.purpose for c in r.calls].count("rewrite") == 1


def test_ambiguous_at_the_lower_edge_searches_too():
    # binary verdicts: every chunk scores -1, which is not below lower = -1, so the route is Ambiguous
    r = make(fake(lambda p: p.startswith("Ada Lindqvist:") and "storm" in p), lower=-1.0).context(ADA, STORM_Q)
    d = r.details
    assert d["route"] == AMBIGUOUS and d["keywords"] and set(d["chunk_scores"].values()) == {-1.0}
    assert [i.role for i in r.items] and {i.role for i in r.items} == {"external"}  # no persona strip passed
    assert d["strips_examined"] > len(r.items)


def test_ambiguous_uses_both_sources_persona_first():
    # graded scores: chunks and their strips at P = 0.6 (score 0.2: between the thresholds, above strip_threshold)
    def p_of(passage):
        return (0.9 if "storm" in passage else 0.1) if passage.startswith(("Ada Lindqvist:", "Bram Okafor:")) else 0.6

    r = make(scored(p_of), k=2, max_strips=2).context(ADA, STORM_Q)
    d = r.details
    assert d["route"] == AMBIGUOUS and set(d["chunk_scores"].values()) == {0.2}
    assert [i.role for i in r.items] == ["knowledge", "knowledge", "external", "external"]
    assert [s["score"] for s in d["strips"]] == [0.2, 0.2, 0.8, 0.8]
    assert all("storm" in i.text for i in r.items[2:])


def test_refinement_keeps_the_best_strips_in_reading_order(data_copy):
    persona = data_copy / "characters" / ADA / "persona.md"
    habits = ("### Habits\n\nI write in a notebook. I boil the kettle twice. I check the compass. I tune the violin. "
              "I collect pebbles. I rinse the teapot.\n\n")
    persona.write_text(persona.read_text().replace("## Skill and Expertise", habits + "## Skill and Expertise"))
    p = {"notebook": 0.6, "kettle": 0.95, "compass": 0.1, "violin": 0.9, "pebbles": 0.7, "teapot": 0.99}

    def p_of(passage):
        hits = [w for w in p if w in passage]
        return 0.99 if len(hits) > 1 else p[hits[0]] if hits else 0.01

    m = make(scored(p_of), dataset=data_copy, splitter="ats", k=1, strip_sentences=1, max_strips=3, corpus="none")
    r = m.context(ADA, " ".join(p))
    kept = [i.text for i in r.items]
    assert kept == ["I boil the kettle twice.", "I tune the violin.", "I rinse the teapot."]  # top 3, document order
    assert r.details["strips_examined"] == 6 and [s["score"] for s in r.details["strips"]] == [0.9, 0.8, 0.98]
    # a lower cap keeps fewer; the threshold drops what the evaluator rejects even when there is room
    r = make(scored(p_of), dataset=data_copy, splitter="ats", k=1, strip_sentences=1, max_strips=10, corpus="none").context(ADA, " ".join(p))
    assert len(r.items) == 5 and not any("compass" in i.text for i in r.items)
    r = make(scored(p_of), dataset=data_copy, splitter="ats", k=1, strip_sentences=2, corpus="none").context(ADA, " ".join(p))
    assert r.items[0].text == "I write in a notebook. I boil the kettle twice."


def test_sentence_groups():
    assert sentence_groups("A b. C d. E f.", 2) == ((0, 10), (10, 14))
    assert sentence_groups("", 2) == ()


# ---- the BM25 corpora ----------------------------------------------------------------------------------------

def test_corpus_variants():
    ds = Dataset(FIXTURES)
    pooled, others, none = (corpus_for(ds, ADA, v) for v in ("pooled", "others", "none"))
    assert {p.character for p in pooled.passages} == {ADA, BRAM}
    assert {p.character for p in others.passages} == {BRAM} and len(others) < len(pooled)
    assert len(none) == 0 and none.search("storm lens", 5) == []
    assert corpus_for(ds, BRAM, "others").passages[0].character == ADA
    assert all(p.text.startswith(("Ada Lindqvist: ", "Bram Okafor: ")) for p in pooled.passages)
    hits = pooled.search("Ada Lindqvist storm lens", 3)
    assert hits[0].passage.character == ADA and "storm" in hits[0].passage.body and len(hits) == 3
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert all(h.passage.character == BRAM for h in others.search("Ada Lindqvist storm lens", 5))
    with pytest.raises(ValueError, match="unknown corpus 'web'"):
        corpus_for(ds, ADA, "web")


def test_search_over_others_is_noise_without_chunk_ids():
    m = make(fake(lambda p: p.startswith("Bram Okafor:"), keywords="bread, honey, bakery"), corpus="others")
    r = m.context(ADA, "What do you eat for breakfast?")
    assert r.details["route"] == INCORRECT and r.details["label"].endswith("over the other characters' personas)")
    assert r.items and all(i.role == "external" and i.chunk_ids == () and i.text.startswith("Bram Okafor: ")
                           for i in r.items)


def test_tokenize_and_bm25_doctest():
    assert tokenize("The lamp's lens, 4 nights!") == ["lamp", "lens", "nights"]
    assert doctest.testmod(bm25_module).failed == 0


# ---- settings, labels, the runner ----------------------------------------------------------------------------

def test_label_never_calls_it_web_search():
    for corpus in ("pooled", "others", "none"):
        label = make(FakeLLM(), corpus=corpus).label
        assert label == crag_label(corpus) and label.startswith("CRAG-offline (web search replaced by BM25 over ")
    assert make(FakeLLM()).label == "CRAG-offline (web search replaced by BM25 over all characters' personas)"


def test_keywords_are_parsed_and_capped():
    r = make(fake(keywords="1. Ada Lindqvist\n2. storm, lens; reef"), lower=-1.0, upper=1.0).context(ADA, STORM_Q)
    assert r.details["keywords"] == ["Ada Lindqvist", "storm", "lens"]
    r = make(fake(keywords="  "), lower=-1.0, upper=1.0, max_keywords=2).context(ADA, STORM_Q)
    assert r.details["keywords"] == [STORM_Q]  # an empty rewrite falls back to the question (after re-asks)


def test_a_fault_in_the_rewrite_fails_the_answer_with_the_calls_it_paid_for():
    def rule(kind, messages, spec):
        if "search-engine" in messages[0]["content"]:
            raise Transient("HTTP 503")
        return fake().rule(kind, messages, spec)
    llm = FakeLLM(rule, retry=RetryPolicy(attempts=2, base_delay=0.001, max_delay=0.001))
    with pytest.raises(LLMError, match="chat call .*failed after 2 attempts: HTTP 503") as err:
        make(llm, lower=-1.0, upper=1.0).context(ADA, STORM_Q)
    purposes = [c.purpose for c in err.value.calls]  # what the failed row counts: every call it paid for
    assert purposes[:3] == ["evaluate"] * 3 and purposes[-1] == "rewrite" and len(purposes) == llm.usage.calls


def test_unknown_and_invalid_settings_are_rejected():
    with pytest.raises(ValueError, match="has no setting 'uper'; its settings: budget_chars, corpus, embedder, evaluator, k, lower, "):
        make(FakeLLM(), uper=0.4)
    with pytest.raises(ValueError, match="unknown corpus 'web'; choose one of pooled, others, none"):
        make(FakeLLM(), corpus="web")
    with pytest.raises(ValueError, match="lower <= upper"):
        make(FakeLLM(), lower=0.6, upper=0.5)
    with pytest.raises(ValueError, match="upper <= 1"):
        make(FakeLLM(), upper=1.5)
    with pytest.raises(ValueError, match="max_strips must be at least 1"):
        make(FakeLLM(), max_strips=0)


def test_end_to_end_through_run_jobs():
    m = make(fake(lambda p: "storm" in p or "Bram" in p))
    jobs = [Job(ADA, "a", STORM_Q), Job(BRAM, "b", "Do you like parties?")]
    rows = run_jobs(m, jobs, progress=False)
    assert rows.error.isna().all() and list(rows.method) == ["crag", "crag"]
    assert rows.details[0]["route"] == CORRECT and rows.llm_calls[0] > 4
    assert all(r.startswith("SYSTEM:You are ") for r in rows.reply)
    context_only = run_jobs(m, jobs[:1], step="context", progress=False)
    assert context_only.chunk_ids[0] and context_only.reply.isna().all()


def test_search_strips_reach_the_reply_under_their_own_heading_not_as_the_profile():
    # the search runs over every character's persona: its strips were listed as "passages of your profile", so a
    # strip from Bram's persona read as Ada's own
    def p_of(passage):
        return (0.9 if "storm" in passage else 0.1) if passage.startswith(("Ada Lindqvist:", "Bram Okafor:")) else 0.6

    llm = scored(p_of)
    llm.rule = lambda kind, messages, spec: (p_of(passage_of(messages[-1]["content"])) if kind == "choose" else
                                             "SYSTEM:" + messages[0]["content"] if "Stay in character" in
                                             messages[0]["content"] else "Ada Lindqvist, storm")
    r = make(llm, k=2, max_strips=2).respond(ADA, STORM_Q)
    own, _, found = r.reply.partition("Found by a search across characters' profiles")
    assert found and "What you know (passages of your profile)" in own
    external = [i.text for i in r.context if i.role == "external"]
    assert external and all(t in found and t not in own for t in external)


def test_at_a_character_budget_the_context_is_cut_in_its_own_order_after_the_same_calls():
    def p_of(passage):
        return (0.9 if "storm" in passage else 0.1) if passage.startswith(("Ada Lindqvist:", "Bram Okafor:")) else 0.6

    whole = make(scored(p_of), k=2, max_strips=2).context(ADA, STORM_Q)
    texts = [i.text for i in whole.items]
    budget = len(texts[0]) + len(texts[1]) // 2  # the first strip whole, the second cut at a word
    cut = build_method("crag_budget", scored(p_of), dataset=FIXTURES, embedder="hash-64", evaluator="binary", k=2,
                       max_strips=2, budget_chars=budget).context(ADA, STORM_Q)
    got = [i.text for i in cut.items]
    assert len(got) == 2 and got[0] == texts[0] and texts[1].startswith(got[1]) and len(got[1]) < len(texts[1])
    assert budget - 30 < sum(map(len, got)) <= budget and cut.items[1].role == "knowledge"  # persona first, as shown
    assert [c.purpose for c in cut.calls] == [c.purpose for c in whole.calls]  # the cut spends no call and saves none
    assert cut.details["budget_chars"] == budget and cut.details["items_in_budget"] == 2
    assert cut.details["route"] == whole.details["route"] and "budget_chars" not in whole.details
    with pytest.raises(ValueError, match="crag_budget.*needs the setting\\(s\\) budget_chars"):
        build_method("crag_budget", fake(), dataset=FIXTURES, embedder="hash-64")
    with pytest.raises(ValueError, match="budget_chars must be at least 1"):
        make(fake(), budget_chars=0)


def test_a_caption_names_the_control_whose_routes_it_counts():
    from rpa_lib.methods.crag import routes_text

    rows = [{"method": m, "error": None, "details": {"route": r}} for m, r in
            (("crag", AMBIGUOUS), ("crag", CORRECT), ("crag_budget", AMBIGUOUS))]
    assert routes_text(route_counts(pd.DataFrame(rows))) == [
        "CRAG routes correct/ambiguous/incorrect 1/1/0 of 2",
        "CRAG routes (crag_budget) correct/ambiguous/incorrect 0/1/0 of 1"]
