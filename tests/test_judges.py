"""The LLM judges of the QA evaluation on the fake backend: the judge LLM's settings, constrained choices and
their meanings, unparseable verdicts counted as missing (never a default), faults raised, key-point extraction
and its cached file with provenance, and the judge check set."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pandas as pd
import pytest

from rpa_lib.data import Dataset
from rpa_lib.evaluation import judge_prompts as prompts
from rpa_lib.evaluation.judges import (
    FAILED,
    OK,
    UNPARSED,
    check_agreement,
    check_summary,
    judge_acc,
    judge_acc_l,
    judge_check,
    judge_hs,
    judge_id,
    judge_llm,
    label_keypoint,
)
from rpa_lib.evaluation.keypoints import (
    extract_keypoints,
    keypoints_for,
    keypoints_path,
    parse_keypoint_lines,
    prompt_id,
)
from rpa_lib.evaluation.known_quality import CHECKS, judge_check_cases
from rpa_lib.llm import FakeLLM, LLMError, LLMFatalError, LLMNoValidAnswer, RetryPolicy
from rpa_lib.text import read_jsonl


def last_user(messages):
    return next(m["content"] for m in reversed(messages) if m["role"] == "user")


def answering(text):
    """A fake judge that answers ``text`` to every call."""
    return FakeLLM(rule=lambda kind, messages, spec: text, label="fixed")


# ---- the judge LLM ------------------------------------------------------------------------------------------


def test_judge_llm_spec_environment_and_fallback(monkeypatch):
    assert judge_llm("fake:strict").label == "strict"
    assert judge_llm(None, default="fake:agent").label == "agent"  # the role-play LLM's settings
    monkeypatch.setenv("RPA_JUDGE_MODEL", "fake:judge")
    assert judge_llm(None, default="fake:agent").label == "judge"
    assert judge_llm("fake:explicit").label == "explicit"  # an explicit spec wins over the environment
    monkeypatch.setenv("RPA_JUDGE_MODEL", "qwen3-32b")
    monkeypatch.setenv("RPA_JUDGE_BASE_URL", "http://127.0.0.1:9/v1")
    served = judge_llm()
    assert served.model_id == "qwen3-32b" and served.base_url.startswith("http://127.0.0.1:9")
    assert served.label == "qwen3-32b (openai-compatible)"
    monkeypatch.delenv("RPA_JUDGE_MODEL")
    with pytest.raises(ValueError, match="RPA_JUDGE_BASE_URL is set but not RPA_JUDGE_MODEL"):
        judge_llm()


def test_judge_id_is_a_file_name():
    assert judge_id(FakeLLM()) == "fake-fake"
    assert re.fullmatch(r"[A-Za-z0-9._-]+", judge_id(FakeLLM(label="a/b c:d")))


# ---- verdicts -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text, value", [("yes", 1.0), ("No.", 0.0), ("**YES**", 1.0)])
def test_acc_is_a_constrained_yes_or_no(text, value):
    v = judge_acc(answering(text), "Ada", "Where do you live?", "On Varholm.", "I live on Varholm.")
    assert (v.metric, v.value, v.status, v.problem) == ("acc", value, OK, None)
    assert v.answer in ("yes", "no")


@pytest.mark.parametrize("text, value", [("7", 7.0), ("10", 10.0), ("1", 1.0)])
def test_scales_map_options_to_numbers(text, value):
    judge = answering(text)
    assert judge_acc_l(judge, "Ada", "q", "gold", "reply").value == value
    ctx = [{"role": "knowledge", "text": "Ada keeps the light.", "label": "Work"}]
    assert judge_hs(judge, "Ada", "q", ctx, "reply", "gold").value == value


def test_unparseable_verdict_is_a_counted_missing_value_not_a_default():
    judge = answering("I would rather not say")
    for v in (judge_acc(judge, "Ada", "q", "gold", "reply"), judge_acc_l(judge, "Ada", "q", "gold", "reply"),
              label_keypoint(judge, "Ada", "q", "a point", "reply")):
        assert v.status == UNPARSED and v.answer is None and math.isnan(v.value)
        assert "no allowed answer" in v.problem
    assert judge.usage.reasks > 0  # the LLM layer re-asked before giving up


def test_a_fault_is_raised_not_counted_as_unparseable():
    def broken(kind, messages, spec):
        raise RuntimeError("server on fire")

    with pytest.raises(LLMError, match="server on fire") as info:
        judge_acc(FakeLLM(rule=broken), "Ada", "q", "gold", "reply")
    assert not isinstance(info.value, LLMNoValidAnswer)

    def look_alike(kind, messages, spec):  # the type decides, not the text: a fault that reads like no valid answer
        raise LLMError("choose call 'x': no allowed answer after 3 attempts")

    with pytest.raises(LLMError, match="no allowed answer after 3 attempts") as info:
        judge_acc(FakeLLM(rule=look_alike), "Ada", "q", "gold", "reply")
    assert not isinstance(info.value, LLMNoValidAnswer)

    def fatal(kind, messages, spec):
        raise LLMFatalError("HTTP 401")

    with pytest.raises(LLMFatalError):
        judge_acc(FakeLLM(rule=fatal), "Ada", "q", "gold", "reply")


def test_keypoint_labels_are_rageval_labels():
    assert label_keypoint(answering("A"), "Ada", "q", "p", "r").answer == "covered"
    assert label_keypoint(answering("B"), "Ada", "q", "p", "r").answer == "not_covered"
    assert label_keypoint(answering("C"), "Ada", "q", "p", "r").answer == "contradicted"


def test_hs_needs_context():
    with pytest.raises(ValueError, match="no HS"):
        judge_hs(answering("1"), "Ada", "q", [], "reply", "gold")


def test_prompts_spell_out_their_scales_and_what_they_see():
    acc = last_user(prompts.acc_messages("Ada", "Where?", "On Varholm.", "On the island."))
    assert "Correct answer" in acc and "On Varholm." in acc and "yes =" in acc and "no =" in acc
    acc_l = last_user(prompts.acc_l_messages("Ada", "Where?", "On Varholm.", "On the island."))
    for anchor in ("1 = ", "3 = ", "5 = ", "7 = ", "9 = ", "10 = "):
        assert anchor in acc_l
    ctx = [{"role": "knowledge", "text": "Ada lives on Varholm.", "label": "Home"}]
    hs_qa = last_user(prompts.hs_messages("Ada", "Where?", ctx, "On the island.", "On Varholm."))
    assert "[1] (knowledge: Home) Ada lives on Varholm." in hs_qa and "Correct answer" in hs_qa
    assert "1 = every claim of fact" in hs_qa and "10 = " in hs_qa
    hs_interview = last_user(prompts.hs_messages("Ada", "Do you like parties?", ctx, "No."))
    assert "Correct answer" not in hs_interview and "the passages" in hs_interview
    label = last_user(prompts.keypoint_label_messages("Ada", "Where?", "Ada lives on Varholm.", "On the island."))
    assert "A = covered" in label and "B = not covered" in label and "C = contradicted" in label
    for messages in (prompts.acc_messages("Ada", "q", "g", "r"), prompts.keypoint_label_messages("Ada", "q", "k", "r")):
        assert "from elsewhere" in messages[0]["content"]  # judge the texts, not the judge's memory


# ---- key points ----------------------------------------------------------------------------------------------


def test_parse_keypoint_lines():
    assert parse_keypoint_lines("Key points:\n1. Ada keeps the light.\n2) She lives on Varholm.\n\n- Mira.") == [
        "Ada keeps the light.", "She lives on Varholm.", "Mira."]
    assert parse_keypoint_lines("\n".join(f"{i}. p{i}" for i in range(1, 9))) == ["p1", "p2", "p3", "p4", "p5"]
    assert parse_keypoint_lines("  \n") == []


def keypoint_judge(json_reply, lines_reply):
    def rule(kind, messages, spec):
        return json_reply if kind == "structured" else lines_reply

    return FakeLLM(rule=rule, label="kp")


def test_extract_keypoints_json_then_lines_fallback():
    got = extract_keypoints(keypoint_judge({"key_points": ["Ada keeps the light.", "  "]}, "x"), "Ada", "q", "a")
    assert (got.points, got.status, got.format) == (["Ada keeps the light."], OK, "json")
    got = extract_keypoints(keypoint_judge("no json here", "- Ada keeps the light.\n- On Varholm."), "Ada", "q", "a",
                            retries=0)
    assert (got.points, got.status, got.format) == (["Ada keeps the light.", "On Varholm."], OK, "lines")
    assert "no valid JSON" in got.problem  # why the fallback was used
    got = extract_keypoints(keypoint_judge("x", "1. Only this."), "Ada", "q", "a", format="lines")
    assert (got.points, got.format) == (["Only this."], "lines")
    got = extract_keypoints(keypoint_judge("x", "   "), "Ada", "q", "a", format="lines")
    assert got.status == UNPARSED and got.points == []
    with pytest.raises(ValueError, match="format"):
        extract_keypoints(keypoint_judge("x", "y"), "Ada", "q", "a", format="xml")


def test_keypoints_are_cached_with_provenance_and_reused(tmp_path, fixture_data):
    ds = Dataset(fixture_data)
    items = [("ada-lindqvist", q) for q in ds.qa("ada-lindqvist")[:3]]
    calls = []

    def rule(kind, messages, spec):
        calls.append(kind)
        return {"key_points": ["point one", "point two"]}

    judge = FakeLLM(rule=rule, label="kp-judge")
    path = keypoints_path(tmp_path, judge)
    assert path.name == "keypoints_fake-kp-judge.jsonl"
    first = keypoints_for(items, judge, path, {"ada-lindqvist": "Ada"}, progress=False)
    assert first.status.tolist() == [OK] * 3 and not first.reused.any() and first.error.isna().all()
    assert len(calls) == 3
    records = read_jsonl(path)
    assert [r["qa_id"] for r in records] == [q.id for _, q in items]
    r = records[0]
    assert r["key_points"] == ["point one", "point two"] and r["judge"] == "kp-judge"
    assert r["judge_model"] == "fake:kp-judge" and r["prompt"] == prompt_id("json") and r["format"] == "json"
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", r["date"])
    again = keypoints_for(items, judge, path, progress=False)
    assert again.reused.all() and len(calls) == 3  # nothing asked again
    assert again.key_points.tolist() == first.key_points.tolist()
    # an edited gold answer, another prompt format or another judge is extracted anew
    from dataclasses import replace

    edited = [items[0][0], replace(items[0][1], answer="Something else.")]
    assert not keypoints_for([tuple(edited)], judge, path, progress=False).reused.any()
    assert not keypoints_for(items[:1], FakeLLM(rule=rule, label="other"), path, progress=False).reused.any()
    assert len(read_jsonl(path)) == 5


def test_keypoint_faults_are_rows_not_cache(tmp_path, fixture_data):
    ds = Dataset(fixture_data)
    items = [("ada-lindqvist", q) for q in ds.qa("ada-lindqvist")[:2]]

    def rule(kind, messages, spec):
        raise RuntimeError("timeout")

    got = keypoints_for(items, FakeLLM(rule=rule), tmp_path / "kp.jsonl", progress=False)
    assert got.status.tolist() == [FAILED, FAILED] and got.error.str.contains("timeout").all()
    assert read_jsonl(tmp_path / "kp.jsonl") == []


def test_unparseable_extraction_is_stored_and_visible(tmp_path, fixture_data):
    ds = Dataset(fixture_data)
    items = [("bram-okafor", ds.qa("bram-okafor")[0])]
    got = keypoints_for(items, keypoint_judge("x", ""), tmp_path / "kp.jsonl", format="lines", progress=False)
    assert got.status.tolist() == [UNPARSED] and got.key_points.tolist() == [[]] and got.error.isna().all()
    assert json.loads((tmp_path / "kp.jsonl").read_text())["status"] == UNPARSED


# ---- the judge check set -------------------------------------------------------------------------------------


def test_judge_check_cases_construction(fixture_data):
    ds = Dataset(fixture_data)
    chars = ds.characters(None)
    cases = judge_check_cases(ds, chars, 4)
    items = pd.DataFrame(cases).drop_duplicates("item")
    assert len(items) == 4 and items.character.nunique() == 2 and items.attribute.nunique() == 4
    qa = {(c, q.id): q for c in chars for q in ds.qa(c)}
    for case in cases:
        gold = qa[case["character"], case["qa_id"]]
        assert case["gold"] == gold.answer and case["context"] and case["context"][0]["text"] == gold.evidence[0]
        if case["case"] == "gold":
            assert case["reply"] == gold.answer
        elif case["case"] == "other":
            other = next(q for (c, _), q in qa.items() if q.id == case["other_qa"])
            assert not case["other_qa"].startswith(case["character"]) and other.attribute == gold.attribute
            assert case["reply"] == other.answer
        elif case["case"] == "denial":
            assert gold.answer in case["reply"] and "not true" in case["reply"]
        else:
            assert case["case"] == "invented" and case["reply"].startswith(gold.answer)
            assert len(case["reply"]) > len(gold.answer) + 20
    per_item = pd.DataFrame(cases).groupby("item").size()
    assert (per_item == 7).all()  # gold acc, denial acc, gold acc_l, gold hs, invented hs, other acc, other acc_l
    single = judge_check_cases(ds, chars[:1], 2)
    assert {c["case"] for c in single} == {"gold", "denial", "invented"}  # no other character to borrow from


def perfect_judge():
    """Reads the prompt the way a careful judge would, on the check set's constructions."""
    def rule(kind, messages, spec):
        text = last_user(messages)
        gold = re.search(r"Correct answer \(.*?\): (.*)\n", text).group(1)
        reply = re.search(r"response \(in the first person\): (.*)\n", text).group(1)
        if spec == ["yes", "no"]:
            return "yes" if reply == gold else "no"
        if "hallucinated" in text:
            return "1" if reply == gold else "6"
        return "10" if reply == gold else "2"

    return FakeLLM(rule=rule, label="perfect")


def test_judge_check_agreement(fixture_data):
    ds = Dataset(fixture_data)
    cases = judge_check_cases(ds, ds.characters(None), 3)
    verdicts, agreement = judge_check(cases, perfect_judge(), progress=False)
    assert set(agreement.check) == set(CHECKS)
    assert (agreement.agreement == 1.0).all() and (agreement.cases == 3).all() and (agreement.undecided == 0).all()
    assert (verdicts.judge == "perfect").all()
    # a judge that always says yes and 5 agrees on the gold answer only
    _, constant = judge_check(cases, answering("yes"), progress=False)
    row = constant.set_index("check")
    assert row.agreement["acc: gold answer"] == 1.0 and row.agreement["acc: denial of the gold answer"] == 0.0
    # an unparseable judge decides nothing: NaN agreement, every case undecided
    _, silent = judge_check(cases, answering("hmm"), progress=False)
    assert silent.agreement.isna().all() and (silent.undecided == silent.cases).all()
    assert "acc: gold answer 0/0 (3 undecided)" in check_summary(silent)


def test_check_agreement_arithmetic():
    rows = []
    for item, (gold_acc, other_acc, gold_l, other_l, plain_hs, invented_hs) in enumerate(
            [(1, 0, 9, 2, 1, 5), (0, 0, 5, 5, 3, 2), (1, 1, np.nan, 3, 2, 4)]):
        for case, metric, value in (("gold", "acc", gold_acc), ("other", "acc", other_acc), ("denial", "acc", 0),
                                    ("gold", "acc_l", gold_l), ("other", "acc_l", other_l), ("gold", "hs", plain_hs),
                                    ("invented", "hs", invented_hs)):
            rows.append({"item": item, "case": case, "metric": metric, "value": value,
                         "status": OK if not np.isnan(value) else UNPARSED})
    got = check_agreement(pd.DataFrame(rows)).set_index("check")
    assert got.loc["acc: gold answer", ["agree", "cases"]].tolist() == [2, 3]
    assert got.loc["acc: another character's answer", "agree"] == 2
    assert got.loc["acc: denial of the gold answer", "agreement"] == 1.0
    assert got.loc["acc_l: gold above another character's", ["agree", "undecided", "agreement"]].tolist() == [1, 1, 0.5]
    assert got.loc["hs: invented addition above plain", "agree"] == 2  # 5 > 1, 2 < 3, 4 > 2


def test_the_verdict_runner_keeps_one_row_per_job_with_its_status():
    """run_verdicts: a Verdict is spread into answer/value/status/problem, a plain value is an ok value, a raised
    error is a failed row with its error; the rows keep the jobs' order and what describe() says."""
    from rpa_lib.evaluation.judges import Verdict
    from rpa_lib.evaluation.runner import run_verdicts

    def verdict(job):
        if job == "boom":
            raise RuntimeError("judge down")
        if job == "plain":
            return 7
        return Verdict("acc", None, math.nan, UNPARSED, "no allowed answer")

    rows = run_verdicts(FakeLLM(), ["plain", "boom", "unparsed"], verdict, lambda job: {"job": job},
                        columns=["job", "answer", "value", "status", "problem", "error"], progress=False)
    assert rows.job.tolist() == ["plain", "boom", "unparsed"]
    assert rows.status.tolist() == [OK, FAILED, UNPARSED] and rows.value.iloc[0] == 7
    assert math.isnan(rows.value.iloc[1]) and "judge down" in rows.error.iloc[1]
    assert rows.problem.iloc[2] == "no allowed answer" and pd.isna(rows.error.iloc[2])
    empty = run_verdicts(FakeLLM(), [], verdict, lambda job: {"job": job}, columns=["job", "value", "status"])
    assert empty.empty and list(empty.columns) == ["job", "value", "status", "llm_calls", "cached_calls"]


def test_a_verdict_row_holds_the_calls_its_verdict_made(tmp_path):
    # a judge's calls are paid like a method's: each verdict row traces them, failed and cached ones too
    from rpa_lib.evaluation.runner import run_verdicts

    judge = FakeLLM(lambda kind, messages, spec: "yes", cache=tmp_path / "llm.sqlite",
                    retry=RetryPolicy(attempts=1, base_delay=0, max_delay=0))
    boom = FakeLLM(lambda kind, messages, spec: (_ for _ in ()).throw(RuntimeError("judge down")),
                   retry=RetryPolicy(attempts=1, base_delay=0, max_delay=0))

    def verdict(job):
        for n in range(job):
            judge.choose([{"role": "user", "content": f"{job} {n}"}], ["yes", "no"])
        if job == 0:
            boom.chat([{"role": "user", "content": "rate"}])
        return 1

    rows = run_verdicts(judge, [2, 0, 3, 2], verdict, lambda job: {"job": job}, workers=1, progress=False)
    assert rows.llm_calls.tolist() == [2, 1, 3, 2] and rows.cached_calls.tolist() == [0, 0, 0, 2]  # 2 asked again
    assert rows.status.tolist() == [OK, FAILED, OK, OK]
    assert judge.usage.calls + boom.usage.calls == rows.llm_calls.sum()
