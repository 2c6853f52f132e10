"""Personality evaluation (AMADEUS Tables 4-5): the metric against the paper's printed numbers, letters and
keying, both scorings with scripted evaluators, and failures recorded rather than dropped. Offline, seconds."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from rpa_lib.data import Dimension, load_labels, load_questionnaire
from rpa_lib.evaluation.personality import (
    NO_SCORE,
    TIE,
    dimension_scores,
    evaluator_check,
    interview,
    keyed_rating,
    letter,
    pole_names,
    predicted_types,
    score_expert,
    score_options,
    type_scores,
)
from rpa_lib.evaluation.personality_prompts import expert_messages, option_messages, scale_options
from rpa_lib.llm import FakeLLM
from rpa_lib.methods import Method, Response
from rpa_lib.paper import paper_methods, paper_table, paper_types

# ---- the golden test: type_scores against the paper's printed summaries -----------------------------------------

# Where the printed types and the printed miss counts disagree (data/paper_results/README.md): table, method ->
# {character: (misses recomputed from the printed types, printed misses)}.
DOCUMENTED_ROW_MISMATCHES = {
    ("table4_mbti", "CRAG"): {"Hitori Gotoh": (3, 2)},  # ISTJ vs INFP
    ("table4_mbti", "LightRAG"): {"Tobio Kageyama": (2, 1)},  # INFJ vs ISTJ
}
# The one printed summary that no reading of its own column reproduces although every row agrees: Table 4's
# AMADEUS Avg F1 is printed 0.8244; the printed types give 0.8394 (per dichotomy 0.7964, 0.7, 0.8611, 1.0).
# Its accuracy (0.85) does reproduce. table, method -> (metric, recomputed, printed).
UNEXPLAINED_SUMMARY_MISMATCHES = {("table4_mbti", "AMADEUS"): ("avg_f1", 0.8394, 0.8244)}


def _columns():
    for table in ("table4_mbti", "table5_sloan"):
        rows = paper_table(table)
        for method in paper_methods(rows):
            yield table, method


@pytest.mark.parametrize(("table", "method"), list(_columns()))
def test_type_scores_reproduces_the_papers_printed_summaries(table, method):
    rows = paper_table(table)
    summary = paper_table(f"{table}_summary").set_index("method").loc[method]
    got = type_scores(list(rows[method]), list(rows.GT))
    printed_misses = list(rows[f"{method}_misses"])
    disagree = {c: (m, p) for c, m, p in zip(rows.character, got["misses"], printed_misses) if m != p}
    assert disagree == DOCUMENTED_ROW_MISMATCHES.get((table, method), {})
    if disagree:
        # The printed accuracy follows the printed miss counts; the printed Avg F1 follows the printed types.
        letters = len(rows) * len(rows.GT[0])
        assert summary.accuracy == pytest.approx(1 - sum(printed_misses) / letters, abs=1e-4)
        assert got["accuracy"] != pytest.approx(summary.accuracy, abs=1e-4)
        assert got["avg_f1"] == pytest.approx(summary.avg_f1, abs=1e-4)
    elif (table, method) in UNEXPLAINED_SUMMARY_MISMATCHES:
        metric, recomputed, printed = UNEXPLAINED_SUMMARY_MISMATCHES[table, method]
        assert summary[metric] == pytest.approx(printed, abs=1e-4)
        assert got[metric] == pytest.approx(recomputed, abs=1e-4)
        other = "accuracy" if metric == "avg_f1" else "avg_f1"
        assert got[other] == pytest.approx(summary[other], abs=1e-4)
    else:
        assert got["accuracy"] == pytest.approx(summary.accuracy, abs=1e-4)
        assert got["avg_f1"] == pytest.approx(summary.avg_f1, abs=1e-4)


def test_the_paper_columns_that_agree_fully():
    """Table 5 (all three methods) reproduces exactly; Table 4 does for no column (see the two dicts above)."""
    agree = [(t, m) for t, m in _columns()
             if (t, m) not in DOCUMENTED_ROW_MISMATCHES and (t, m) not in UNEXPLAINED_SUMMARY_MISMATCHES]
    assert agree == [("table5_sloan", "CRAG"), ("table5_sloan", "LightRAG"), ("table5_sloan", "AMADEUS")]


def test_paper_types_match_our_slugs():
    names = {r["slug"]: r["name"] for r in load_labels()}
    table = paper_types(paper_table("table4_mbti"), names)
    assert len(table) == 15 and table.loc["maomao", "GT"] == "INTP"
    # The paper's ground truth is ours.
    assert {s: table.loc[s, "GT"] for s in table.index} == {r["slug"]: r["mbti"] for r in load_labels()}


# ---- type_scores and letters --------------------------------------------------------------------------------------


def test_type_scores_small_example():
    got = type_scores(["ENFP", "INTJ", "ISTP"], ["ENFP", "ENTJ", "INTP"])
    assert got["misses"] == [0, 1, 1]
    assert got["accuracy"] == pytest.approx(10 / 12)
    assert got["full_type_accuracy"] == pytest.approx(1 / 3)
    assert got["accuracy_per_position"] == pytest.approx([2 / 3, 2 / 3, 1, 1])
    # position 0: truth E,E,I / pred E,I,I -> F1(E)=2/3, F1(I)=2/3
    assert got["f1_per_position"][0] == pytest.approx(2 / 3)
    # position 3: only J and P, all right -> 1.0
    assert got["f1_per_position"][3] == 1.0


def test_type_scores_undecided_letters_are_misses_but_no_class():
    got = type_scores([f"E{TIE}FP", f"IS{NO_SCORE}J"], ["ENFP", "ISTJ"])
    assert got["misses"] == [1, 1]
    assert got["f1_per_position"][1] == pytest.approx(0.5)  # N: 0 (missed), S: 1.0; "-" is no class
    with pytest.raises(ValueError):
        type_scores(["ENF"], ["ENFP"])
    with pytest.raises(ValueError):
        type_scores(["ENFP"], ["ENFP", "INTJ"])


def test_letter_and_keying():
    ei = Dimension("EI", "Extraversion / Introversion", "E", "I")
    assert letter(5.5, ei, 4.0) == "E" and letter(2.0, ei, 4.0) == "I"
    assert letter(4.0, ei, 4.0) == TIE and letter(math.nan, ei, 4.0) == NO_SCORE
    assert keyed_rating(2, "low", 7) == 6 and keyed_rating(2, "high", 7) == 2 and keyed_rating(4, "low", 7) == 4
    assert keyed_rating(1, "low", 5) == 5


def test_subset_is_balanced_and_keyed_both_ways():
    q = load_questionnaire("mbti")
    sub = q.subset(8)
    assert len(sub.items) == 8
    for d in q.dimensions:
        keyed = [i.keyed for i in sub.items if i.dimension == d.id]
        assert sorted(keyed) == ["high", "low"]
    assert len(load_questionnaire("bigfive").subset(10).items) == 10
    assert q.subset(None) is q and q.subset(1000) is q
    with pytest.raises(ValueError):
        q.subset(3)


def test_pole_names_from_the_questionnaire_file(fixture_data):
    assert pole_names(load_questionnaire("bigfive"))["NEU"] == ("Limbic", "Calm")
    fixture = load_questionnaire("bigfive", fixture_data)
    assert pole_names(fixture)["EXT"] == ("high Extraversion", "low Extraversion")


def test_prompts_show_the_reply_and_the_scale():
    q = load_questionnaire("mbti")
    item = q.items[0]
    text = option_messages("Frieren", item, "Not really.", q)[-1]["content"]
    assert item.statement in text and item.question in text and "Not really." in text and "7 = strongly agree" in text
    assert scale_options(q) == ["1", "2", "3", "4", "5", "6", "7"]
    text = expert_messages("Frieren", q.dimension("EI"), ("Extraversion", "Introversion"), [(item, "No.")], q)[-1]["content"]
    assert "1 means clearly Introversion" in text and "7 means clearly Extraversion" in text


# ---- interview and scoring with a scripted agent and scripted evaluators -----------------------------------------

TRUTH = {"ada-lindqvist": {"mbti": "ISTJ", "bigfive": "RCOAN"}, "bram-okafor": {"mbti": "ESFP", "bigfive": "SLUAI"}}


class ScriptedAgent(Method):
    """Answers "I AGREE" when agreeing with the item fits the character's true type, else "I DISAGREE";
    raises for the questions in ``fail``."""

    name = "scripted"

    def __init__(self, questionnaires, fail=()):
        self.items = {i.question: (q, i) for q in questionnaires for i in q.items}
        self.fail = set(fail)

    def respond(self, character, question):
        if question in self.fail:
            raise RuntimeError("agent broke")
        q, item = self.items[question]
        dim = q.dimension(item.dimension)
        pos = [d.id for d in q.dimensions].index(dim.id)
        is_high = TRUTH[character][q.name][pos] == dim.high
        agree = is_high == (item.keyed == "high")
        return Response(character, question, self.name, "I AGREE." if agree else "I DISAGREE.")


def _option_rule(kind, messages, spec):
    text = messages[-1]["content"]
    assert kind == "choose"
    return spec[-1] if 'answered: "I AGREE' in text else spec[0]


def _expert_rule(kind, messages, spec):
    """Rates the dimension from the transcript: every answer is one vote toward the pole it shows."""
    assert kind == "structured"
    return {"analysis": "scripted", "score": 4}


@pytest.fixture
def questionnaires(fixture_data):
    return [load_questionnaire("mbti", fixture_data), load_questionnaire("bigfive", fixture_data)]


@pytest.fixture
def names(fixture_data):
    return {r["slug"]: r["name"] for r in load_labels(fixture_data)}


def _types(ratings, q):
    types = predicted_types(dimension_scores(ratings, q), q)
    return dict(zip(types.character, types.predicted))


def test_option_scoring_recovers_the_scripted_types(questionnaires, names):
    agent, evaluator = ScriptedAgent(questionnaires), FakeLLM(rule=_option_rule)
    for q in questionnaires:
        replies = interview(agent, list(TRUTH), q, llm=evaluator, progress=False)
        assert len(replies) == 2 * len(q.items) and replies.error.isna().all()
        assert set(replies.reply) == {"I AGREE.", "I DISAGREE."}
        ratings = score_options(replies, q, evaluator, names, progress=False)
        # low-keyed items are flipped: a character who is high on a dimension disagrees with its low items
        low = ratings.merge(replies[["character", "item", "keyed", "reply"]], left_on=["character", "unit"],
                            right_on=["character", "item"])
        assert (low[low.keyed == "low"].answer + low[low.keyed == "low"].rating == q.points + 1).all()
        assert _types(ratings, q) == {c: TRUTH[c][q.name] for c in TRUTH}
        assert evaluator.usage.calls >= len(ratings)


def test_option_scoring_uses_the_character_name(questionnaires, names):
    seen = []

    def rule(kind, messages, spec):
        seen.append(messages[-1]["content"])
        return spec[0]

    q = questionnaires[0]
    replies = interview(ScriptedAgent(questionnaires), ["ada-lindqvist"], q, llm=FakeLLM(), progress=False)
    score_options(replies, q, FakeLLM(rule=rule), names, progress=False)
    assert all("Ada Lindqvist answered" in s for s in seen)


def test_expert_rating_batches_one_dimension_and_averages(questionnaires, names):
    q = load_questionnaire("mbti")
    q = q.subset(16)  # 4 items a dichotomy, 2 keyed each way
    agent = ScriptedAgent([q])
    batches = []

    def rule(kind, messages, spec):
        """Reads the transcript as an expert would: agreeing with an item keyed high is a vote for the high
        pole, agreeing with one keyed low a vote for the low pole."""
        text = messages[-1]["content"]
        batches.append(text)
        votes = 0
        for item in q.items:
            for answer, sign in (("I AGREE.", 1), ("I DISAGREE.", -1)):
                if f'{item.question}"\nA' in text and f'"{answer}"' in text.split(item.question, 1)[1].split("\n\n")[0]:
                    votes += sign * (1 if item.keyed == "high" else -1)
        return {"analysis": f"{votes} votes", "score": 7 if votes > 0 else 1 if votes < 0 else 4}

    replies = interview(agent, list(TRUTH), q, llm=FakeLLM(), progress=False)
    ratings = score_expert(replies, q, FakeLLM(rule=rule), names, batch_size=3, progress=False)
    # 2 characters x 4 dimensions x ceil(4 / 3) batches
    assert len(ratings) == 16 and len(batches) == 16
    assert set(ratings.unit) == {"b1", "b2"}
    assert ratings[ratings.unit == "b1"].item_ids.str.count(";").eq(2).all()
    assert ratings[ratings.unit == "b2"].item_ids.str.count(";").eq(0).all()
    assert ratings.analysis.notna().all() and ratings.rating.isin([1.0, 7.0]).all()
    scores = dimension_scores(ratings, q)
    assert (scores.n_rated == 2).all() and (scores.n_failed == 0).all()
    assert _types(ratings, q) == {c: TRUTH[c]["mbti"] for c in TRUTH}


def test_expert_rating_on_the_midpoint_gives_no_letter(questionnaires, names):
    q = questionnaires[1]
    replies = interview(ScriptedAgent(questionnaires), ["bram-okafor"], q, llm=FakeLLM(), progress=False)
    ratings = score_expert(replies, q, FakeLLM(rule=lambda k, m, s: {"analysis": "x", "score": 3}), names,
                           progress=False)
    assert _types(ratings, q) == {"bram-okafor": TIE * 5}


def test_a_failing_item_is_recorded_and_excluded_with_a_count(questionnaires, names):
    q = questionnaires[0]
    broken = q.items[0]  # EI, keyed high
    agent = ScriptedAgent(questionnaires, fail={broken.question})
    replies = interview(agent, list(TRUTH), q, llm=FakeLLM(), progress=False)
    assert len(replies) == 2 * len(q.items)  # nothing dropped
    failed = replies[replies.error.notna()]
    assert len(failed) == 2 and failed.reply.isna().all()
    assert failed.error.str.contains("RuntimeError: agent broke").all()
    for score in (lambda r: score_options(r, q, FakeLLM(rule=_option_rule), names, progress=False),
                  lambda r: score_expert(r, q, FakeLLM(rule=_expert_rule), names, batch_size=1, progress=False)):
        ratings = score(replies)
        lost = ratings[ratings.error.notna()]
        assert len(lost) == 2 and lost.error.str.startswith("interview failed: RuntimeError").all()
        ei = dimension_scores(ratings, q).query("dimension == 'EI'")
        assert (ei.n_failed == 1).all() and (ei.n_rated == 1).all()
        types = predicted_types(dimension_scores(ratings, q), q)
        assert (types.n_failed == 1).all()


def test_a_failing_evaluator_call_is_recorded(questionnaires, names):
    q = questionnaires[0]
    replies = interview(ScriptedAgent(questionnaires), ["ada-lindqvist"], q, llm=FakeLLM(), progress=False)

    def rule(kind, messages, spec):
        if q.items[1].statement in messages[-1]["content"]:
            raise ValueError("evaluator broke")
        return _option_rule(kind, messages, spec)

    ratings = score_options(replies, q, FakeLLM(rule=rule), names, progress=False)
    assert len(ratings) == len(q.items)
    bad = ratings[ratings.error.notna()]
    assert list(bad.unit) == [q.items[1].id] and bad.error.str.contains("evaluator broke").all()
    scores = dimension_scores(ratings, q).set_index("dimension")
    assert scores.loc["EI", "n_failed"] == 1 and scores.loc["EI", "letter"] == "I"  # from the remaining item
    # every dimension failed: no letter
    all_bad = ratings.assign(rating=float("nan"), error="x")
    assert predicted_types(dimension_scores(all_bad, q), q).predicted.tolist() == [NO_SCORE * 4]


def test_calibration_with_an_evaluator_without_option_scores_pays_for_no_verdict(questionnaires, names):
    # the fake LLM returns no option scores: each item fails naming why after its content-free baseline call, and
    # the verdict, which calibration could not use, is never asked
    q = questionnaires[0]
    replies = interview(ScriptedAgent(questionnaires), ["ada-lindqvist"], q, llm=FakeLLM(), progress=False)
    evaluator = FakeLLM(rule=_option_rule)
    ratings = score_options(replies, q, evaluator, names, calibrate=True, progress=False)
    assert ratings.error.str.contains("calibration needs option scores").all() and ratings.rating.isna().all()
    assert evaluator.usage.calls == len(q.items)  # one baseline per item, no verdict


def test_interviews_survive_a_csv_round_trip(questionnaires, names, tmp_path):
    q = questionnaires[0]
    replies = interview(ScriptedAgent(questionnaires, fail={q.items[2].question}), list(TRUTH), q, llm=FakeLLM(),
                        progress=False)
    replies.to_csv(tmp_path / "i.csv", index=False)
    back = pd.read_csv(tmp_path / "i.csv")
    ratings = score_options(back, q, FakeLLM(rule=_option_rule), names, progress=False)
    assert ratings.error.notna().sum() == 2 and _types(ratings, q)["ada-lindqvist"][:1] == "I"


def test_interview_with_the_real_methods_on_fixture_data(fixture_data, questionnaires, names):
    from rpa_lib.methods import build_methods

    llm = FakeLLM()
    q = questionnaires[1]
    methods = build_methods(["no_rag", "naive_rag", "amadeus"], llm=llm, dataset=fixture_data, embedder="hash-64", k=2,
                            max_iterations=3, slot_size=1, max_tokens=20)
    for name, method in zip(("no_rag", "naive_rag", "amadeus"), methods, strict=True):
        replies = interview(method, ["ada-lindqvist"], q, llm=llm, progress=False)
        assert replies.error.isna().all(), replies.error.dropna().tolist()
        assert (replies.method == name).all() and replies.reply.str.len().gt(0).all()
        if name == "amadeus":
            assert replies.gs_failed.notna().all() and (replies.examined <= 3).all()
        ratings = score_options(replies, q, llm, names, progress=False)
        types = predicted_types(dimension_scores(ratings, q), q)
        assert len(types.predicted[0]) == 5


def test_evaluator_check_tells_a_reader_from_a_constant_answer():
    q = load_questionnaire("bigfive")
    reader = FakeLLM(rule=lambda k, m, spec: spec[-1] if 'answered: "Yes' in m[-1]["content"] else spec[0])
    check = evaluator_check(q, reader, progress=False)
    assert len(check) == 5 and check.separates.all() and (check.answer_yes == 5).all()
    constant = evaluator_check(q, FakeLLM(rule=lambda k, m, spec: spec[0]), progress=False)
    assert not constant.separates.any()
