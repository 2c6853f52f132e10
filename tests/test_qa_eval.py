"""The QA evaluation (AMADEUS Table 6, RAGEval key points) on the fake backend: which responses get which
verdicts, the table arithmetic on hand-made verdicts, missing values counted, failures reported and raised,
the paper's own Kendall tau from its transcribed table, and notebook 05 through the smoke profile."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pandas as pd
import pytest

from rpa_lib import paths, reproduce
from rpa_lib.data import Dataset
from rpa_lib.evaluation.judges import FAILED, OK, UNPARSED
from rpa_lib.evaluation.keypoints import keypoints_for
from rpa_lib.evaluation.qa import (
    QA_TASK,
    answer_all,
    answer_summary,
    attribute_breakdown,
    attribute_table,
    gold_answers,
    has_context,
    judge_answers,
    keypoint_scores_per_response,
    keypoint_table,
    label_answers,
    qa_items,
    rank_agreement,
    run_caption,
    table6,
    task_jobs,
    verdict_jobs,
)
from rpa_lib.evaluation.runner import FailedItems, check_failures, failed_items
from rpa_lib.llm import FakeLLM
from rpa_lib.methods import build_method, build_methods, paper_name
from rpa_lib.paper import paper_table, table6_beside_paper


@pytest.fixture
def ds(fixture_data):
    return Dataset(fixture_data)


def answer_row(method="naive_rag", character="ada-lindqvist", qid="ada-lindqvist-01", task=QA_TASK, context=True,
               error=None, attribute="Demographic Information", reply="I keep the light."):
    ctx = [{"role": "knowledge", "text": "Ada keeps the lighthouse on Varholm.", "chunk_ids": ["c1"], "label": ""}]
    return {"task": task, "method": method, "character": character, "question_id": qid, "question": "Where?",
            "attribute": attribute, "reply": None if error else reply, "context": (ctx if context else []) if not error else None,
            "chunk_ids": [], "details": {}, "llm_calls": 1, "cached_calls": 0, "seconds": 0.0, "error": error}


# ---- which responses get which verdicts ----------------------------------------------------------------------


def test_verdict_jobs_follow_the_paper(ds):
    gold = gold_answers(ds, ["ada-lindqvist"])
    answers = pd.DataFrame([answer_row("no_rag", context=False), answer_row("naive_rag"),
                            answer_row("amadeus", error="LLMError: boom"),
                            answer_row("naive_rag", qid="E1", task="MBTI", attribute=None)])
    jobs = [(r["method"], r["task"], m) for r, m in verdict_jobs(answers, gold)]
    assert jobs == [("no_rag", QA_TASK, "acc"), ("no_rag", QA_TASK, "acc_l"),  # no context: no HS
                    ("naive_rag", QA_TASK, "acc"), ("naive_rag", QA_TASK, "acc_l"), ("naive_rag", QA_TASK, "hs"),
                    ("naive_rag", "MBTI", "hs")]  # a failed job is never judged; an interview gets HS only
    with pytest.raises(ValueError, match="unknown metric"):
        verdict_jobs(answers, gold, ["acc", "bleu"])
    # against one shared reference, a retrieving method's question it found nothing for is judged on HS too (left
    # out, its HS would rest on the questions it had context for); a method that never retrieves still gets none
    empty = pd.DataFrame([answer_row("no_rag", context=False), answer_row("crag", context=False)])
    hs = [r["method"] for r, m in verdict_jobs(empty, gold, ["hs"], shared_reference=True)]
    assert hs == ["crag"] and verdict_jobs(empty, gold, ["hs"]) == []  # the method's own context: none to judge


def test_has_context(ds):
    llm = FakeLLM()
    assert not has_context(build_method("no_rag", llm, dataset=ds))
    assert has_context(build_method("naive_rag", llm, dataset=ds)) and has_context(build_method("amadeus", llm, dataset=ds))


def test_hs_sees_the_context_and_gold_the_method_had(ds):
    seen = []

    def rule(kind, messages, spec):
        seen.append(messages[-1]["content"])
        return "3"

    gold = gold_answers(ds, ["ada-lindqvist"])
    answers = pd.DataFrame([answer_row("naive_rag"), answer_row("naive_rag", qid="E1", task="BFI", attribute=None)])
    v = judge_answers(answers, FakeLLM(rule=rule, label="j"), {"ada-lindqvist": "Ada"}, gold, metrics=["hs"],
                      progress=False)
    assert v.value.tolist() == [3.0, 3.0] and (v.judge == "j").all()
    assert "Ada keeps the lighthouse on Varholm." in seen[0] and gold["ada-lindqvist", "ada-lindqvist-01"].answer in seen[0]
    assert "Ada keeps the lighthouse on Varholm." in seen[1] and "Correct answer" not in seen[1]


def test_hs_of_two_methods_is_judged_against_the_same_reference_passages(ds):
    """With references, AMADEUS (whose context holds AE's inferred attributes) and Naive RAG are judged against
    the same persona paragraphs: the evidence's paragraph for a QA question, the Psychological Traits and Belief and
    Value sections whole for an interview question (a retriever's top k would be Naive RAG's own context); never
    against the method's own context."""
    from rpa_lib.evaluation.qa import hs_references

    seen = []

    def rule(kind, messages, spec):
        seen.append(messages[-1]["content"])
        return "2"

    gold = gold_answers(ds, ["ada-lindqvist"])
    qa = gold["ada-lindqvist", "ada-lindqvist-01"]
    inferred = [{"role": "attribute", "text": "An inference an LLM wrote.", "chunk_ids": [], "label": "Belief and Value"}]
    rows = [answer_row("naive_rag"), {**answer_row("amadeus"), "context": inferred},
            answer_row("naive_rag", qid="E1", task="BFI", attribute=None),
            {**answer_row("amadeus", qid="E1", task="BFI", attribute=None), "context": inferred}]
    answers = pd.DataFrame(rows).assign(question=["Where?", "Where?", "I like order.", "I like order."])
    refs = hs_references(ds, answers, gold)
    paragraph = next(p.text for p in ds.persona("ada-lindqvist").paragraphs if qa.evidence[0] in " ".join(p.text.split()))
    assert [i["text"] for i in refs["ada-lindqvist", "ada-lindqvist-01"]] == [paragraph]
    personality = [p.text for p in ds.persona("ada-lindqvist").paragraphs
                   if p.attribute in ("Psychological Traits", "Belief and Value")]
    assert [i["text"] for i in refs["ada-lindqvist", "E1"]] == personality and len(personality) >= 2
    judge_answers(answers, FakeLLM(rule=rule, label="j"), {"ada-lindqvist": "Ada"}, gold, references=refs,
                  metrics=["hs"], progress=False)
    by_question: dict[str, list[str]] = {}  # the judge runs in threads: group its prompts by question
    for text in seen:
        by_question.setdefault("Where?" if "Where?" in text else "order", []).append(text.split("Question asked")[0])
    qa_passages, interview_passages = by_question["Where?"], by_question["order"]
    assert len(qa_passages) == len(interview_passages) == 2  # one HS prompt per method
    assert len(set(qa_passages)) == len(set(interview_passages)) == 1 and qa_passages[0] != interview_passages[0]
    assert all("the reference" in p and "inference an LLM wrote" not in p for p in qa_passages + interview_passages)
    assert qa.evidence[0] in " ".join(qa_passages[0].split())


# ---- missing values and failures -----------------------------------------------------------------------------


def test_unparsed_and_failed_verdicts_are_counted_not_scored(ds):
    gold = gold_answers(ds, ["ada-lindqvist"])

    def rule(kind, messages, spec):
        text = messages[-1]["content"]
        if "hallucinated" in text:
            raise RuntimeError("judge server down")
        if spec == ["yes", "no"]:
            reply = re.search(r"response \(in the first person\): (.*)", text)
            return "yes" if reply and "light" in reply.group(1) else "perhaps"
        return "8"

    answers = pd.DataFrame([answer_row("naive_rag", reply="I keep the light."),
                            answer_row("naive_rag", qid="ada-lindqvist-02", reply="No idea."),
                            answer_row("naive_rag", qid="ada-lindqvist-03", error="LLMError: agent down")])
    v = judge_answers(answers, FakeLLM(rule=rule, label="j"), {}, gold, progress=False)
    acc = v[v.metric == "acc"]
    assert acc.status.tolist() == [OK, UNPARSED] and acc.value.iloc[0] == 1.0 and math.isnan(acc.value.iloc[1])
    assert (v[v.metric == "hs"].status == FAILED).all() and v[v.metric == "hs"].error.str.contains("server down").all()
    t = table6(answers, v, "agent-llm", "j").iloc[0]
    assert t.acc == 1.0 and t.n_acc == 1 and t.unparsed_acc == 1  # the unparsed one is not a 0
    assert t.acc_l == 8.0 and t.n_acc_l == 2
    assert math.isnan(t.hs) and t.failed_hs == 2 and t.n_hs == 0
    assert t.answers == 3 and t.failed_answers == 1 and (t.llm, t.judge) == ("agent-llm", "j")
    failed = failed_items(answers=answers, verdicts=v)
    assert failed.part.tolist() == ["answers", "verdicts", "verdicts"]
    with pytest.raises(FailedItems, match=r"run: 3 item\(s\) failed \(1 answers, 2 verdicts\); first: answers .*agent down"):
        check_failures(failed, "run")
    check_failures(failed_items(answers=answers.iloc[:2], verdicts=v[v.status != FAILED]), "run")  # nothing failed


# ---- table arithmetic on hand-made verdicts ------------------------------------------------------------------


def verdict(method, metric, value, status=OK, task=QA_TASK, attribute="Activity", qid="q1"):
    return {"task": task, "method": method, "character": "ada", "question_id": qid, "attribute": attribute,
            "metric": metric, "answer": None, "value": value, "status": status, "problem": None, "error": None,
            "judge": "j"}


def test_table6_arithmetic():
    answers = pd.DataFrame([{"task": QA_TASK, "method": m, "error": None} for m in ("no_rag",) * 4 + ("amadeus",) * 4])
    v = pd.DataFrame([verdict("no_rag", "acc", x) for x in (1, 0, 0, 0)] + [verdict("no_rag", "acc_l", x) for x in (2, 4, 6, 8)]
                     + [verdict("amadeus", "acc", x) for x in (1, 1, 1)] + [verdict("amadeus", "acc", np.nan, UNPARSED)]
                     + [verdict("amadeus", "hs", x) for x in (1, 2)] + [verdict("amadeus", "acc_l", 9)])
    t = table6(answers, v, "L", "J").set_index("method")
    assert t.acc["no_rag"] == 0.25 and t.acc_l["no_rag"] == 5.0 and math.isnan(t.hs["no_rag"])
    assert t.acc["amadeus"] == 1.0 and t.unparsed_acc["amadeus"] == 1 and t.hs["amadeus"] == 1.5
    assert t.paper_method.tolist() == ["w/o RAG", "AMADEUS"]
    tau = rank_agreement(t.reset_index(), "ours")
    assert tau.tau.iloc[0] == pytest.approx(1.0) and tau.acc_order.iloc[0] == "AMADEUS > w/o RAG"


def test_keypoint_scores_and_table_on_hand_made_labels():
    answers = pd.DataFrame([answer_row("naive_rag", qid="q1"), answer_row("naive_rag", qid="q2"),
                            answer_row("naive_rag", qid="q3"), answer_row("naive_rag", qid="q4", error="boom")])
    keypoints = pd.DataFrame([{"character": "ada-lindqvist", "qa_id": q, "key_points": kps}
                              for q, kps in (("q1", ["a", "b", "c", "d"]), ("q2", ["a", "b"]), ("q3", []))])
    rows = []
    for qid, labels in (("q1", ["covered", "contradicted", "not_covered", None]), ("q2", ["covered", "FAIL"])):
        for i, label in enumerate(labels, start=1):
            status = OK if label not in (None, "FAIL") else (UNPARSED if label is None else FAILED)
            rows.append({"task": QA_TASK, "method": "naive_rag", "character": "ada-lindqvist", "question_id": qid,
                         "attribute": "Activity", "kp": i, "key_point": "k", "label": label if status == OK else None,
                         "status": status, "problem": None, "error": "x" if status == FAILED else None, "judge": "j"})
    per = keypoint_scores_per_response(answers, pd.DataFrame(rows), keypoints).set_index("question_id")
    assert per.loc["q1", ["completeness", "hallucination", "irrelevance"]].tolist() == pytest.approx([1 / 3] * 3)
    assert (per.loc["q1", "keypoints"], per.loc["q1", "judged"], per.loc["q1", "unparsed"]) == (4, 3, 1)
    assert per.loc["q2", "completeness"] == 1.0 and per.loc["q2", "failed"] == 1 and per.loc["q2", "judged"] == 1
    assert per.loc["q3", "keypoints"] == 0 and math.isnan(per.loc["q3", "completeness"])
    assert per.loc["q4", "job_failed"]
    t = keypoint_table(per.reset_index(), "L", "J").iloc[0]
    assert t.completeness == pytest.approx((1 / 3 + 1) / 2) and t.hallucination == pytest.approx(1 / 6)
    assert (t.responses, t.scored, t.without_keypoints, t.unparsed_labels, t.failed_labels, t.failed_answers) == (
        4, 2, 1, 1, 1, 1)


def test_attribute_breakdown():
    v = pd.DataFrame([verdict("no_rag", "acc", 1, attribute="Activity"), verdict("no_rag", "acc", 0, attribute="Activity", qid="q2"),
                      verdict("no_rag", "acc", np.nan, UNPARSED, attribute="Belief and Value"),
                      verdict("amadeus", "acc", 1, attribute="Activity"), verdict("amadeus", "acc_l", 7, attribute="Activity"),
                      verdict("amadeus", "hs", 2, task="MBTI", attribute=None)])
    b = attribute_breakdown(v)
    row = b[(b.method == "no_rag") & (b.attribute == "Activity")].iloc[0]
    assert row.acc == 0.5 and row.n == 2
    assert b[(b.method == "no_rag") & (b.attribute == "Belief and Value")].unparsed.iloc[0] == 1
    wide = attribute_table(b, "acc")
    assert wide.columns.tolist() == ["attribute", "no_rag", "amadeus"] and wide.attribute.tolist() == ["Activity", "Belief and Value"]
    assert math.isnan(wide.set_index("attribute").amadeus["Belief and Value"])


# ---- the paper -------------------------------------------------------------------------------------------------


def test_paper_kendall_tau_is_one_for_each_llm():
    """The paper: ACC and ACC_L rank its five methods alike for each LLM (tau = 1), from the transcribed table."""
    tau = rank_agreement(paper_table("table6_roleplay"), "AMADEUS paper")
    assert tau.llm.tolist() == ["GPT-4.1", "Gemma3-27B", "Qwen3-32B"]
    assert tau.tau.tolist() == pytest.approx([1.0, 1.0, 1.0]) and (tau.methods == 5).all()


def test_rank_agreement_of_a_constant_judge_is_undefined():
    t = pd.DataFrame({"task": QA_TASK, "llm": "L", "method": ["a", "b", "c"], "acc": [0.5, 0.5, 0.5], "acc_l": [1, 2, 3]})
    got = rank_agreement(t, "ours").iloc[0]
    assert math.isnan(got.tau) and "constant" in got.note


def test_table6_beside_paper():
    ours = pd.DataFrame([{"task": QA_TASK, "method": "no_rag", "paper_method": "w/o RAG", "llm": "Smol", "acc": 0.25,
                          "acc_l": 3.5, "hs": np.nan, "n_acc": 4, "n_hs": 0},
                         {"task": QA_TASK, "method": "rolerag", "paper_method": "rolerag", "llm": "Smol", "acc": 0.5,
                          "acc_l": 5.0, "hs": 2.0, "n_acc": 4, "n_hs": 4},
                         {"task": "MBTI", "method": "amadeus", "paper_method": "AMADEUS", "llm": "Smol", "acc": np.nan,
                          "acc_l": np.nan, "hs": 1.75, "n_acc": 0, "n_hs": 4}])
    table, long = table6_beside_paper(ours)
    first = table.iloc[0]
    assert (first.method, first.task) == ("w/o RAG", QA_TASK)
    assert (first["ours (Smol) ACC"], first["ours (Smol) ACC_L"], first["ours (Smol) HS"]) == ("25.00%", "3.50", "-")
    assert (first["GPT-4.1 ACC"], first["GPT-4.1 ACC_L"], first["GPT-4.1 HS"]) == ("49.56%", "6.79", "-")
    assert table[(table.method == "AMADEUS") & (table.task == "CharacterRAG")]["Qwen3-32B HS"].iloc[0] == "4.66"
    assert table[(table.method == "AMADEUS") & (table.task == "MBTI")]["ours (Smol) HS"].iloc[0] == "1.75"
    qa_rows = table[table.task == QA_TASK].method.tolist()
    assert qa_rows == ["w/o RAG", "Naive RAG", "LightRAG", "CRAG", "AMADEUS", "rolerag"]  # paper order, then ours
    assert table[table.task == QA_TASK].ours_method.tolist() == ["No RAG", "-", "-", "-", "-", "RoleRAG"]
    assert table.task.tolist().index("MBTI") > qa_rows.__len__() - 1
    assert set(long.source) == {"ours", "AMADEUS paper"} and len(long) == 3 + len(paper_table("table6_roleplay"))
    crag = ours.iloc[:1].assign(method="crag", paper_method="CRAG")  # a stand-in keeps its own name beside the paper's
    assert table6_beside_paper(crag)[0].set_index("method").loc["CRAG"].ours_method.tolist()[0] == "CRAG-offline"
    # with intervals, every score shows its own, printed as the score is
    bounds = {"acc_low": [0.0, 0.25, np.nan], "acc_high": [0.5, 0.75, np.nan], "acc_l_low": [3.0, 4.5, np.nan],
              "acc_l_high": [4.0, 5.5, np.nan], "hs_low": [np.nan, 1.5, 1.25], "hs_high": [np.nan, 2.5, 2.25],
              "n_characters": 2}
    shown = table6_beside_paper(ours.assign(**bounds))[0].set_index(["method", "task"])
    cis = [f"ours (Smol) {s} 95% CI" for s in ("ACC", "ACC_L", "HS")]
    assert shown.loc[("rolerag", QA_TASK), cis].tolist() == ["[25.00%, 75.00%]", "[4.50, 5.50]", "[1.50, 2.50]"]
    assert shown.loc[("w/o RAG", QA_TASK), cis].tolist() == ["[0.00%, 50.00%]", "[3.00, 4.00]", "-"]  # no HS: none
    assert shown.loc[("AMADEUS", "MBTI"), cis].tolist() == ["-", "-", "[1.25, 2.25]"]


def test_paper_names():
    assert [paper_name(m) for m in ("no_rag", "naive_rag", "amadeus", "crag", "lightrag", "rolerag")] == [
        "w/o RAG", "Naive RAG", "AMADEUS", "CRAG", "LightRAG", "RoleRAG"]  # not in the paper: our label


def test_run_caption_names_everything():
    caption = run_caption(2, {"CharacterRAG": 12, "CharacterRAG (multi)": 2}, 3, "SmolLM2", "judge-x", "minilm", 8, 2)
    for part in ("2 characters, questions per method: CharacterRAG 12, CharacterRAG (multi) 2, 3 methods",
                 "GS N=8, K=2", "LLM: SmolLM2", "judge: judge-x", "embedder: minilm"):
        assert part in caption


# ---- a whole run on the fake backend ---------------------------------------------------------------------------


def test_pipeline_on_the_fixture(ds, tmp_path):
    chars = ds.characters(None)
    llm = FakeLLM(label="agent")
    agents = build_methods(["no_rag", "naive_rag"], llm, dataset=ds, embedder="hash-64", k=2, max_tokens=16)
    tasks = task_jobs(ds, chars, 3, {"mbti": 4})
    assert [len(j) for j in tasks.values()] == [6, 8] and list(tasks) == [QA_TASK, "MBTI"]
    answers, timing = answer_all(agents, tasks, llm=llm, save_to=tmp_path / "answers.jsonl", progress=False)
    assert timing[["task", "method"]].values.tolist() == [[QA_TASK, "no_rag"], [QA_TASK, "naive_rag"], ["MBTI", "naive_rag"]]
    saved = [json.loads(line) for line in (tmp_path / "answers.jsonl").read_text().splitlines()]
    assert len(saved) == len(answers) == 6 + 6 + 8 and saved[7]["context"]  # context items kept
    summary = answer_summary(answers)
    assert summary.answers.tolist() == [6, 6, 8] and (summary.failed == 0).all()
    items = qa_items(ds, chars, 3)
    assert [q.id for _, q in items] == answers[(answers.task == QA_TASK) & (answers.method == "no_rag")].question_id.tolist()
    judge = FakeLLM(label="judge")
    names = {c: ds.profile(c)[0] for c in chars}
    kp = keypoints_for(items, judge, tmp_path / "kp.jsonl", names, progress=False)
    verdicts = judge_answers(answers, judge, names, gold_answers(ds, chars), progress=False)
    labels = label_answers(answers, kp, judge, names, progress=False)
    assert len(verdicts) == 6 * 2 + 6 * 3 + 8 and len(labels) == 2 * sum(map(len, kp.key_points))
    t = table6(answers, verdicts, llm.label, judge.label)
    assert t[["task", "method"]].values.tolist() == [[QA_TASK, "no_rag"], [QA_TASK, "naive_rag"], ["MBTI", "naive_rag"]]
    assert t.hs.isna().tolist() == [True, False, False] and t.acc.isna().tolist() == [False, False, True]
    assert failed_items(answers=answers, verdicts=verdicts, labels=labels, keypoints=kp).empty


def test_qa_items_reads_each_qa_file_once_and_asks_what_qa_jobs_asks(ds, monkeypatch):
    # counted where qa_items asks the dataset (Dataset.qa keeps a parsed file, so counting reads could not fail)
    read, reads = ds.qa, []
    monkeypatch.setattr(ds, "qa", lambda slug, *a, **kw: reads.append(slug) or read(slug, *a, **kw))
    chars = ds.characters(None)
    items = qa_items(ds, chars, 3)
    assert sorted(reads) == sorted(chars)  # once a character
    jobs = task_jobs(ds, chars, 3)[QA_TASK]
    assert [(c, q.id, q.question) for c, q in items] == [(j.character, j.id, j.question) for j in jobs]


def test_one_answering_loop_skips_saves_and_keeps_chunk_ids(ds):
    """answer_tasks: a skipped (task, method) asks nothing, on_block sees the rows so far after each block, and the
    rows' chunk ids are Response.chunk_ids (runner.chunk_ids reads them back from a row's context by role)."""
    from rpa_lib.evaluation.runner import answer_tasks, chunk_ids

    llm = FakeLLM()
    agents = build_methods(["no_rag", "naive_rag"], llm, dataset=ds, embedder="hash-64", k=2, max_tokens=16)
    seen = []
    rows, timing = answer_tasks(agents, task_jobs(ds, ["ada-lindqvist"], 2), llm=llm, progress=False,
                                skip=lambda task, m: "skipped" if m.name == "no_rag" else None,
                                on_block=lambda so_far: seen.append(len(so_far)))
    assert set(rows.method) == {"naive_rag"} and seen == [2] and timing.method.tolist() == ["naive_rag"]
    for r in rows.to_dict("records"):
        assert r["chunk_ids"] == chunk_ids(r["context"]) and r["chunk_ids"]
        assert chunk_ids(r["context"], "no such role") == []


def test_notebook_05_is_in_every_profile():
    for profile in ("quick", "paper", "smoke"):
        assert "05_qa_evaluation" in reproduce.load_profile(profile)["notebooks"], profile
    assert (paths.NOTEBOOKS_DIR / "05_qa_evaluation.ipynb").is_file()


def test_the_budget_control_is_matched_task_by_task(fixture_data, capsys):
    """Interview HS rows get Naive RAG at AMADEUS's mean context on the interviews, QA rows at its mean on QA: the
    experiment builds each control as notebook 05 does, from the run's settings."""
    from rpa_lib.evaluation.context import matched_budget
    from rpa_lib.experiment import Experiment

    ex = Experiment("05_qa_evaluation", {"data_dir": str(fixture_data), "llm": "fake", "embedder": "hash-64", "k": 2,
                                         "max_tokens": 16, "max_iterations": 4, "characters": None,
                                         "methods": ["amadeus", "naive_rag_budget"]})
    assert [a.name for a in ex.agents] == ["amadeus"] and ex.controls == ["naive_rag_budget"]
    run = ex.repeats[0]
    tasks = task_jobs(ex.dataset, ex.characters, 2, {"mbti": 4})
    answers, _ = answer_all(run.agents, tasks, llm=run.llm, progress=False)
    built = []

    def answer(control, task):
        built.append((control.name, control.settings.budget_chars, control.settings.embedder, control.settings.k))
        return answer_all([control], {task: tasks[task]}, llm=run.llm, progress=False)

    parts = ex.answer_controls(run, answers, "task", tasks, answer)
    expected = {t: matched_budget(answers[answers.task == t], "amadeus") for t in tasks}
    assert ex.budgets == {(0, "naive_rag_budget"): expected}
    assert built == [("naive_rag_budget", b, "hash-64", 2) for b in expected.values()]  # the run's settings
    rows = pd.concat([r for r, _ in parts], ignore_index=True)
    assert rows.groupby("task").size().to_dict() == {t: len(j) for t, j in tasks.items()}
    assert set(rows.method) == {"naive_rag_budget"} and [t.task.iloc[0] for _, t in parts] == list(tasks)
    assert "naive_rag_budget: characters a question" in capsys.readouterr().out
    given = Experiment("05_qa_evaluation", {**ex.parameters, "method_settings": {"naive_rag_budget": {"budget_chars": 500}}})
    assert len(given.answer_controls(given.repeats[0], answers, "task", tasks, lambda c, t: c.settings.budget_chars)) == len(tasks)
    assert given.budgets == {(0, "naive_rag_budget"): {t: 500 for t in tasks}}
    assert given.budget_note("task by task").endswith("naive_rag_budget is Naive RAG filled from its ranking up to "
                                                      "500 characters; the others run at their own sizes")


def test_a_control_at_a_given_budget_runs_without_amadeus_in_every_run(fixture_data, capsys):
    """No AMADEUS, so GS's settings go to no method (they are left out, not refused), and each run of a repeated
    experiment builds its own control with its own LLM."""
    from rpa_lib.experiment import Experiment

    ex = Experiment("05_qa_evaluation", {"data_dir": str(fixture_data), "llm": "fake", "embedder": "hash-64",
                                         "characters": None, "repeats": 2, "methods": ["naive_rag", "naive_rag_budget"],
                                         "method_settings": {"naive_rag_budget": {"budget_chars": 300}},
                                         "max_iterations": 4, "slot_size": 2, "extract_retries": 2})  # as the notebook
    tasks = task_jobs(ex.dataset, ex.characters, 1)

    def answer(run):
        rows, _ = answer_all(run.agents, tasks, llm=run.llm, progress=False)
        more = ex.answer_controls(run, rows, "task", tasks, lambda control, task: (control.llm.repeat, answer_all(
            [control], {task: tasks[task]}, llm=run.llm, progress=False)[0]))
        return pd.concat([rows, *(r for _, r in more)], ignore_index=True), [repeat for repeat, _ in more]

    (_, repeats0), (rows1, repeats1) = answer(ex.repeats[0]), answer(ex.repeats[1])
    assert [a.name for a in ex.agents] == ["naive_rag"] and (repeats0, repeats1) == ([0], [1])
    assert ex.budgets == {(0, "naive_rag_budget"): {QA_TASK: 300}, (1, "naive_rag_budget"): {QA_TASK: 300}}
    budgeted = rows1[rows1.method == "naive_rag_budget"]
    assert len(budgeted) == len(tasks[QA_TASK]) and budgeted.context.map(lambda c: sum(len(i["text"]) for i in c)).le(300).all()
    with pytest.raises(ValueError, match="03_chunk_usage: the notebook has no methods parameter"):
        len(Experiment("03_chunk_usage", {"data_dir": str(fixture_data), "llm": "fake"}).agents)


def test_the_multi_paragraph_set_is_a_task_of_its_own_with_gold_answers():
    """Table 6 reports the multi-paragraph pairs apart ("CharacterRAG (multi)"), judged like the paper set."""
    from rpa_lib.evaluation.qa import MULTI_TASK, verdict_jobs

    real = Dataset()
    tasks = task_jobs(real, ["frieren"], 2, multi_questions=2)
    assert list(tasks) == [QA_TASK, MULTI_TASK] and [len(j) for j in tasks.values()] == [2, 2]
    assert all(j.meta["set"] == "multi" for j in tasks[MULTI_TASK]) and list(task_jobs(real, ["frieren"], 2)) == [QA_TASK]
    rows = pd.DataFrame([{**answer_row("naive_rag", "frieren", j.id, task=MULTI_TASK)} for j in tasks[MULTI_TASK]])
    assert sorted(m for _, m in verdict_jobs(rows, gold_answers(real, ["frieren"]))) == ["acc", "acc", "acc_l", "acc_l",
                                                                                          "hs", "hs"]
