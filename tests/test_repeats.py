"""Repeated runs (issue 28, item 5): run 0 keeps today's cache keys, run r > 0 has keys and seeds of its own, and
``Experiment.each`` pools the runs so the intervals resample characters with their runs inside."""

from __future__ import annotations

import hashlib
import sqlite3

import pandas as pd
import pytest

from rpa_lib.evaluation import qa
from rpa_lib.evaluation.outcomes import qa_outcomes, summarize
from rpa_lib.evaluation.runner import qa_jobs, run_jobs
from rpa_lib.evaluation.uncertainty import save_paired
from rpa_lib.experiment import Experiment
from rpa_lib.llm import FakeLLM
from rpa_lib.methods import build_method

SCHEMA = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}
# the keys of these three requests as the cache stored them before runs existed (commit eda6452)
TODAY = {"97c8ff47a191dc25b7d364438e2fdfa27635f28585522b9c0422674418a2c7aa",
         "a05d5ac3243d5369414b668d9f9eaedcf1feafa5d21865b452f133d45f9e0f02",
         "e5b43643b2bdf06e1855b21e69de9b2a79b15c418a1e09c8be8371e5aa35299c"}


def hashed_choice(kind, messages, spec):
    """A fake judge that picks an option by the hash of what it reads (the default picks an option the prompt names,
    the same whatever the reply)."""
    return spec[int(hashlib.sha256(messages[-1]["content"].encode()).hexdigest(), 16) % len(spec)]


def ask(llm) -> None:
    llm.chat([{"role": "user", "content": "Who are you?"}], max_tokens=32)
    llm.choose([{"role": "user", "content": "Pick one"}], ["yes", "no"])
    llm.structured([{"role": "user", "content": "Give x"}], SCHEMA)


def stored(path) -> dict[str, int]:
    with sqlite3.connect(path) as conn:
        return {key: sample for key, sample in
                conn.execute("SELECT key, json_extract(request, '$.sample') FROM replies")}


def test_run_0_keeps_todays_keys_and_run_1_has_its_own(tmp_path):
    llm = FakeLLM(cache=tmp_path / "llm.sqlite")
    assert llm.for_repeat(0) is llm
    ask(llm.for_repeat(0))
    assert set(stored(tmp_path / "llm.sqlite")) == TODAY
    second = llm.for_repeat(1)
    ask(second)
    keys = stored(tmp_path / "llm.sqlite")
    assert len(keys) == 6 and {k for k, s in keys.items() if s == 1} == set(keys) - TODAY
    ask(second)  # run 1 again: served from its own keys
    assert llm.usage.calls == 9 and llm.usage.cache_hits == 3  # one usage for every run
    reply = second.chat([{"role": "user", "content": "Who are you?"}], max_tokens=32)
    assert reply.cached and reply.text != llm.chat([{"role": "user", "content": "Who are you?"}], max_tokens=32).text
    with pytest.raises(ValueError):
        llm.for_repeat(-1)


@pytest.fixture
def two_runs(fixture_data):
    """Notebook 05's experiment on the fake backend with ``repeats=2``: No RAG answers two QA questions per
    character in each run, the judge grades ACC_L, pooled by ``Experiment.each``."""
    ex = Experiment("05_qa_evaluation", {"data_dir": str(fixture_data), "llm": "fake", "evaluator_llm": "fake",
                                         "characters": None, "repeats": 2})
    ex.__dict__["judge"] = FakeLLM(hashed_choice)  # the experiment's judge, as its cached property would hold it
    jobs = qa_jobs(ex.dataset, ex.characters, 2)
    gold = qa.gold_answers(ex.dataset, ex.characters)
    names = {c: ex.dataset.profile(c)[0] for c in ex.characters}

    def run(r):
        answers = run_jobs(build_method("no_rag", r.llm, dataset=ex.dataset, max_tokens=16), jobs,
                           progress=False).assign(task=qa.QA_TASK)
        return answers, qa.judge_answers(answers, r.judge, names, gold, metrics=["acc_l"], progress=False)

    return ex, *ex.each(run)


def test_two_runs_are_pooled_with_the_cluster_bootstrap(two_runs):
    ex, answers, verdicts = two_runs
    assert [r.index for r in ex.repeats] == [0, 1] and sorted(verdicts.repeat.unique()) == [0, 1]
    by_run = verdicts.pivot_table(index=["character", "question_id"], columns="repeat", values="value")
    assert len(by_run) == 4 and (by_run[0] != by_run[1]).any()  # the runs differ: run 1 sampled anew
    s = summarize(qa_outcomes(verdicts)).iloc[0]
    # by hand: the score is the mean over every item of every run; with two characters the percentile cluster
    # bootstrap can only draw (a, a), (a, b), (b, a) or (b, b), each a quarter or a half, so its 95% interval runs
    # from one character's mean over both runs to the other's
    per_character = verdicts.groupby("character").value.mean()
    assert s.n_repeats == 2 and s.n_items == 4 and s.n_characters == 2  # items, each with its two runs
    assert s.score == pytest.approx(verdicts.value.mean())
    assert (s.ci_low, s.ci_high) == pytest.approx((per_character.min(), per_character.max()))
    # Table 6 pools them alike, and says how many runs it pooled
    t6 = qa.table6(answers, verdicts, "fake", "fake").iloc[0]
    assert (t6.answers, t6.n_acc_l, t6.n_runs) == (8, 8, 2)
    assert (t6.acc_l, t6.acc_l_low, t6.acc_l_high) == pytest.approx((s.score, s.ci_low, s.ci_high))


def test_a_table_of_two_runs_says_so(two_runs, tmp_path):
    ex, _, verdicts = two_runs
    assert "2 runs" in ex.interval_caption(2)
    written = save_paired(qa_outcomes(verdicts.assign(method="no_rag")), tmp_path)  # one method: caption only
    assert "2 runs" in written["table6_roleplay"]["tex"].read_text()
    one = Experiment("05_qa_evaluation", {"data_dir": ex.dataset.root, "llm": "fake"})
    assert len(one.repeats) == 1 and "runs" not in one.interval_caption(2)
    assert one.each(lambda r: pd.DataFrame({"x": [r.index]})).columns.tolist() == ["x"]  # one run: no repeat column
    with pytest.raises(ValueError, match="05_qa_evaluation: repeats: expected 1 or more, got 0"):
        Experiment("05_qa_evaluation", {"data_dir": ex.dataset.root, "llm": "fake", "repeats": 0})


def test_tables_4_5_list_each_run_and_pool_them(fixture_data):
    from rpa_lib.data import Dataset
    from rpa_lib.paper import per_dimension_accuracy, personality_beside_paper

    ds = Dataset(fixture_data)
    mbti = ds.questionnaire("mbti")
    # Ada (ISTJ) right in run 0, T/F wrong in run 1; Bram (ESFP) J/P wrong in both runs
    types = pd.DataFrame({"questionnaire": "mbti", "method": "amadeus", "character": ["ada-lindqvist", "bram-okafor"] * 2,
                          "predicted": ["ISTJ", "ESFJ", "ISFJ", "ESFJ"], "truth": ["ISTJ", "ESFP"] * 2,
                          "misses": [0, 1, 1, 1], "n_failed": 0, "repeat": [0, 0, 1, 1]})
    table, summary = personality_beside_paper(types, mbti, ds, ds.characters(None), ["amadeus"],
                                              {"llm": "fake", "embedder": "hash", "scoring": "option"})
    assert table.amadeus[0] == "ISTJ (0) / ISFJ (-1)" and table.amadeus[2] == "81.25%"  # 13 of 16 letters
    ours = summary[summary.source == "ours"].iloc[0]
    # by hand: Ada 7 of 8 letters over her two runs, Bram 6 of 8; two characters: the interval runs between them
    assert (ours.n_runs, ours.accuracy_low, ours.accuracy_high) == (2, 0.75, 0.875)
    per_dim = per_dimension_accuracy(types, [mbti], ds, ds.characters(None), ["amadeus"]).set_index("dimension")
    assert per_dim.characters.tolist() == [2] * 4 and per_dim.accuracy.tolist() == [1.0, 1.0, 0.75, 0.5]
    # T/F: Ada right in 1 of 2 runs, Bram in 2 of 2: the cluster bootstrap of two characters runs from 0.5 to 1
    assert per_dim.accuracy_low.tolist()[2:] == [0.5, 0.0] and per_dim.accuracy_high.tolist()[2:] == [1.0, 1.0]
    assert per_dim.letters.tolist() == ["IIEE", "SSSS", "TFFF", "JJJJ"]  # Ada's two runs, then Bram's


def test_judge_agreement_of_two_runs_pairs_each_replys_mean():
    from rpa_lib.evaluation.charactercraft import agreement

    levels = pd.DataFrame({"reply_id": ["r1", "r2", "r3"], "dimension": "pers", "level": [1, 2, 3]})
    verdicts = pd.DataFrame({"reply_id": ["r1", "r2", "r3"] * 2, "mode": "with", "dimension": "pers", "status": "ok",
                             "value": [1, 3, 2, 1, 1, 4], "repeat": [0, 0, 0, 1, 1, 1]})
    got = agreement(verdicts, levels, "ladder").iloc[0]
    assert got.n == 3 and got.tau == pytest.approx(1.0)  # means 1, 2, 3: the levels' order, over three replies
    one = agreement(verdicts[verdicts.repeat == 0].drop(columns="repeat"), levels, "ladder").iloc[0]
    assert one.n == 3 and one.tau == pytest.approx(1 / 3)  # run 0 alone: 1, 3, 2
