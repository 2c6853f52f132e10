"""The per-item outcome format, its adapters and the paired comparisons: the issue's re-test of the AMADEUS
paper's printed Tables 4-5 (16 vs 5 discordant MBTI dimensions, 7 vs 3 characters; SLOAN 10 vs 6)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from rpa_lib import paths
from rpa_lib.evaluation.outcomes import (
    COLUMNS,
    compare,
    default_pairs,
    paper_personality_outcomes,
    personality_outcomes,
    qa_outcomes,
    summarize,
)

PAPER = paths.ROOT / "data" / "paper_results"


@pytest.mark.parametrize("questionnaire, name, discordant, p_item, characters, p_character", [
    ("mbti", "table4_mbti", (16, 5), 0.0266, (7, 3), 0.34375),
    ("bigfive", "table5_sloan", (10, 6), 0.4545, (5, 2), 0.453125),
])
def test_paper_tables_4_5_amadeus_against_crag(questionnaire, name, discordant, p_item, characters, p_character):
    out = paper_personality_outcomes(pd.read_csv(PAPER / f"{name}.csv"), questionnaire)
    assert list(out.columns) == COLUMNS and out.character.nunique() == 15
    got = compare(out, {f"{name} (paper)": [("AMADEUS", "CRAG")]}).iloc[0]
    assert (got.only_method, got.only_reference) == discordant
    assert got.p_item == pytest.approx(p_item, abs=5e-5)
    assert (got.characters_better, got.characters_worse) == characters
    assert got.p_character == pytest.approx(p_character)
    assert got.test_item == "exact McNemar (items)" and got.n_characters == 15


def test_personality_outcomes_count_a_tie_as_a_miss():
    types = pd.DataFrame([{"method": "amadeus", "questionnaire": "mbti", "character": "frieren", "predicted": "IN-P",
                           "truth": "INTP", "llm": "m"}])
    out = personality_outcomes(types)
    assert list(out.item) == ["EI", "SN", "TF", "JP"] and list(out.value) == [1, 1, 0, 1]
    assert set(out.table) == {"table4_mbti"} and set(out.outcome) == {"dimension_correct"}


def test_every_adapter_keeps_the_run_of_a_repeated_experiment():
    from rpa_lib.evaluation.outcomes import keypoint_outcomes

    # a second run of a questionnaire or a QA set is not further items: summaries count runs, pairs average them
    types = pd.DataFrame([{"method": m, "questionnaire": "mbti", "character": "frieren", "predicted": p,
                           "truth": "INTP", "repeat": r} for r, p in ((0, "INTP"), (1, "ESFJ")) for m in ("amadeus", "crag")])
    out = personality_outcomes(types)
    assert sorted(out.repeat.unique()) == [0, 1] and summarize(out).n_repeats.tolist() == [2, 2]
    assert compare(out).test_item.iloc[0] == "Wilcoxon signed-rank (items)"  # means over runs are not 0/1
    one_run = personality_outcomes(types.drop(columns="repeat").iloc[:2])
    assert one_run.repeat.tolist() == [0] * 8 and summarize(one_run).n_repeats.tolist() == [1, 1]
    per = pd.DataFrame({"method": "amadeus", "character": "a", "question_id": "q1", "judged": 1, "job_failed": False,
                        "completeness": [1.0, 0.0], "hallucination": 0.0, "irrelevance": 0.0, "repeat": [0, 1]})
    assert sorted(keypoint_outcomes(per).repeat.unique()) == [0, 1]


def test_an_outcome_without_a_character_is_an_error_not_a_cluster_of_its_own():
    from rpa_lib.evaluation.outcomes import human_outcomes

    ratings = pd.DataFrame({"sample_id": ["s1", "s2"], "task": "GS", "rater": "llm-a", "rating": [4, 5]})
    samples = pd.DataFrame({"sample_id": ["s1"], "slug": ["frieren"]})  # s2 is not in the samples file
    with pytest.raises(ValueError, match="1 outcome row\\(s\\) of table2_human_eval have no character, e.g. item 's2'"):
        human_outcomes(ratings, samples)


def verdicts() -> pd.DataFrame:
    rows = []
    for method, right in (("amadeus", [1, 1, 1, 0]), ("naive_rag", [1, 0, 0, 0]), ("naive_rag_budget", [1, 0, 1, 0])):
        for i, v in enumerate(right):
            rows.append({"task": "CharacterRAG", "method": method, "character": "ab"[i % 2], "question_id": f"q{i}",
                         "metric": "acc", "value": float(v), "status": "ok", "llm": "m", "judge": "j", "embedder": "e"})
    rows.append({**rows[-1], "question_id": "q9", "value": None, "status": "failed"})
    return pd.DataFrame(rows)


def test_summarize_and_compare_on_table6_verdicts():
    out = qa_outcomes(verdicts())
    s = summarize(out).set_index("method")
    assert s.score["amadeus"] == 0.75 and s.n_items["amadeus"] == 4 and s.n_characters["amadeus"] == 2
    assert s.n_failed["naive_rag_budget"] == 1 and s.exact_low["amadeus"] < 0.75 < s.exact_high["amadeus"]
    c = compare(out).set_index(["method", "reference"])
    assert set(c.index) == {("naive_rag", "amadeus"), ("naive_rag_budget", "amadeus"), ("naive_rag", "naive_rag_budget")}
    row = c.loc[("naive_rag", "amadeus")]
    assert (row.only_method, row.only_reference, row.difference) == (0, 2, -0.5)
    assert row.p_item == 0.5 and row.p_item_holm == 1.0  # 2 discordant pairs: 2 * 0.5 ** 2; Holm: x3 capped at 1


def test_one_character_gives_no_cluster_interval():
    v = verdicts()
    out = qa_outcomes(v.assign(character="a"))
    s = summarize(out)
    assert s.ci_low.isna().all() and (s.note == "1 character: no cluster interval").all()
    assert math.isnan(compare(out).diff_low.iloc[0])


def test_default_pairs():
    assert default_pairs("table6_roleplay", ["no_rag", "amadeus", "naive_rag", "naive_rag_budget"]) == [
        ("no_rag", "amadeus"), ("naive_rag", "amadeus"), ("naive_rag_budget", "amadeus"), ("naive_rag", "naive_rag_budget")]
    assert default_pairs("table1_similarity", ["Vanilla", "ATS", "ACTS"]) == [("Vanilla", "ACTS"), ("ATS", "ACTS")]
    assert default_pairs("table6_roleplay", ["no_rag"]) == []


def test_budget_and_keypoint_adapters():
    from rpa_lib.evaluation.outcomes import budget_outcomes, keypoint_outcomes

    budgets = pd.DataFrame({"embedder": "e", "splitter": ["vanilla", "acts"] * 2, "character": ["a", "a", "b", "b"],
                            "question": ["q1", "q1", "q2", "q2"], "set": "paper", "unit": "characters", "budget": 500,
                            "recall": [0.5, 1.0, 0.0, 1.0], "all_found": [False, True, False, True]})
    got = compare(budget_outcomes(budgets)).set_index("outcome")
    assert got.method["recall"] == "Vanilla" and got.reference["recall"] == "ACTS"
    assert got.difference["recall"] == -0.75 and (got.only_method["all_found"], got.only_reference["all_found"]) == (0, 2)
    assert got.test_item["all_found"] == "exact McNemar (items)"  # per question all_found is 0/1
    per = pd.DataFrame({"method": "amadeus", "character": ["a", "b"], "question_id": ["q1", "q2"], "judged": [1, 0],
                        "job_failed": False, "completeness": [1.0, 0.0], "hallucination": 0.0, "irrelevance": 0.0})
    kp = keypoint_outcomes(per)
    assert kp[kp.outcome == "completeness"].value.tolist()[0] == 1.0 and kp.value.isna().sum() == 3  # q2: no judged key point


def test_per_character_shares_get_no_mcnemar_and_no_exact_interval():
    # per character all_found is the share of questions fully found: McNemar would count no discordant pair (p = 1)
    from rpa_lib.evaluation.outcomes import evidence_recall_outcomes

    share = [0.2, 0.3, 0.1, 0.25, 0.3, 0.15, 0.2, 0.1]
    per = pd.DataFrame([{"embedder": "e", "splitter": s, "set": "paper", "k": 1, "character": f"c{i}",
                         "recall": v, "all_found": v, "eir_body": v} for i, v in enumerate(share)
                        for s, v in (("Vanilla", v), ("ACTS", v + 0.2))])
    got = compare(evidence_recall_outcomes(per)).set_index("outcome").loc["all_found_share"]
    assert got.test_item == "Wilcoxon signed-rank (items)" and got.only_reference == 8
    assert got.p_item == pytest.approx(0.0078125)  # exact two-sided, 8 of 8 negative
    assert "exact_low" not in summarize(evidence_recall_outcomes(per))
    # shares that happen to be 0 or 1 (every question of a character found, or none) are still shares
    whole = per.assign(all_found=(per.all_found > 0.25).astype(float))
    got = compare(evidence_recall_outcomes(whole)).set_index("outcome").loc["all_found_share"]
    assert got.test_item == "Wilcoxon signed-rank (items)"
    assert "exact_low" not in summarize(evidence_recall_outcomes(whole))


def test_repeats_are_averaged_per_item_before_pairing():
    v = verdicts()
    again = v.assign(value=1.0 - v.value.fillna(0), repeat=1)  # a second run that flips every answer
    out = qa_outcomes(pd.concat([v.assign(repeat=0), again], ignore_index=True))
    s = summarize(out).set_index("method")
    assert s.n_repeats["amadeus"] == 2 and s.score["amadeus"] == 0.5
    row = compare(out).set_index(["method", "reference"]).loc[("naive_rag", "amadeus")]
    assert row.n_pairs == 4 and row.difference == 0 and row.test_item == "Wilcoxon signed-rank (items)"


def test_repeated_runs_of_a_0_1_item_are_one_item_for_the_exact_interval():
    """Ten identical runs of five items are five items: Clopper-Pearson of 5, not of 50 independent answers."""
    base = [1, 0, 1, 1, 0, 1, 1, 0, 1, 1]
    rows = [{"table": "t6", "task": "T", "method": "amadeus", "character": f"c{j // 5}", "item": str(j),
             "repeat": r, "outcome": "acc", "value": float(v)} for r in range(10) for j, v in enumerate(base)]
    one, ten = (summarize(pd.DataFrame([x for x in rows if x["repeat"] < n]).reindex(columns=COLUMNS)).iloc[0]
                for n in (1, 10))
    assert (one.n_items, ten.n_items, ten.n_repeats) == (10, 10, 10)
    assert (ten.exact_low, ten.exact_high) == (one.exact_low, one.exact_high)
    # two runs that disagree on an item: its mean is 0.5, no 0/1 item, no exact interval
    split = pd.DataFrame([x for x in rows if x["repeat"] < 2]).reindex(columns=COLUMNS)
    split.loc[(split.repeat == 1) & (split.item == "0"), "value"] = 0.0
    assert "exact_low" not in summarize(split) or summarize(split).exact_low.isna().all()
