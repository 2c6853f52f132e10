"""Honest accounting: every paid call is in its row's trace (Guided Selection's speculative calls too, labelled, and
an exception in one logged and counted; a failed row's calls too), a fault in an optional call fails its row instead
of taking the fallback, a choice coerced from logprobs is counted as coerced (usage, verdicts, judge check, tables,
each call's record), "no valid answer" is its own exception carrying what its attempts spent (as does a fault after
re-asks), ``max_iterations=0`` is not a GS failure, and failed items are named with their cause before a budget is
matched to the rest."""

from __future__ import annotations

import json
import logging
import math
import re
import time
from pathlib import Path

import pandas as pd
import pytest

from benchmarks.mock_server import MockServer
from rpa_lib.display import calls_line
from rpa_lib.evaluation.chunk_usage import used_chunks
from rpa_lib.evaluation.context import matched_budget
from rpa_lib.evaluation.judges import Verdict, check_agreement, check_summary, judge_acc
from rpa_lib.evaluation.personality import interview_rows
from rpa_lib.evaluation.qa import table6
from rpa_lib.evaluation.runner import FailedItems, Job, check_failures, run_jobs, run_verdicts
from rpa_lib.llm import FakeLLM, LLMError, LLMFatalError, LLMNoValidAnswer, RetryPolicy, Transient, get_llm
from rpa_lib.llm.reply import Reply
from rpa_lib.methods import build_method
from rpa_lib.methods.base import Call, Method
from rpa_lib.methods.gs import guided_selection

FIXTURES = Path(__file__).parent / "fixtures" / "data"
NOTEBOOKS = Path(__file__).parent.parent / "notebooks"
ADA = "ada-lindqvist"
STORM = "What did you do when the storm broke the lamp's lens?"
FAST = RetryPolicy(attempts=3, base_delay=0.001, max_delay=0.001)


def user(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]


def judging(answer, *, slow_no: float = 0.0, structured=None) -> FakeLLM:
    """A fake whose GS judge says yes to the Winter Storm chunks and ``answer(prompt)`` (default "no") to the
    others, ``slow_no`` seconds late (so speculative calls are still running when the walk stops)."""
    def rule(kind, messages, spec):
        last = messages[-1]["content"]
        if kind == "choose":
            if "Winter Storm" in last:
                return "yes"
            time.sleep(slow_no)
            return answer(last)
        if kind == "structured":
            return structured if structured is not None else {"belief_and_value": "duty", "psychological_traits": "calm"}
        return "a reply"
    return FakeLLM(rule, cache=False)


def amadeus(llm, **settings):
    return build_method("amadeus", llm, dataset=FIXTURES, embedder="hash-64", **settings)


def totals(calls) -> tuple[int, int, int]:
    return len(calls), sum(c.prompt_tokens for c in calls), sum(c.completion_tokens for c in calls)


def usage_totals(llm) -> tuple[int, int, int]:
    u = llm.usage
    return u.calls, u.prompt_tokens, u.completion_tokens


# ---- every paid call in the row's trace ------------------------------------------------------------------------


def test_a_gs_walk_with_speculative_calls_traces_every_paid_call():
    llm = judging(lambda prompt: "no", slow_no=0.2)
    r = amadeus(llm, window=8, slot_size=2).respond(ADA, STORM)
    purposes = [c.purpose for c in r.calls]
    assert r.details["examined"] == 2 and r.details["speculative"] == 6 and r.details["speculative_errors"] == 0
    assert purposes == ["judge"] * 2 + ["judge-speculative"] * 6 + ["extract", "respond"]
    assert all(c.output == "no" for c in r.calls if c.purpose == "judge-speculative")  # they had finished
    assert totals(r.calls) == usage_totals(llm) and llm.usage.calls == 10  # the trace is the usage record


def test_an_exception_in_a_speculative_call_is_logged_counted_and_in_the_trace(caplog):
    caplog.set_level(logging.WARNING, logger="rpa_lib.methods")
    probe = amadeus(FakeLLM(), window=8, slot_size=2)
    past_the_stop = probe.search(ADA, STORM, 30)[4].text  # the walk stops after the two storm chunks, 0 and 1

    def answer(prompt):
        if past_the_stop in prompt:
            raise RuntimeError("judge server down")
        return "no"

    llm = judging(answer)
    r = amadeus(llm, window=8, slot_size=2).respond(ADA, STORM)
    assert r.details["speculative_errors"] == 1 and not r.details["gs_failed"]
    failed = [c for c in r.calls if c.output.startswith("failed")]
    assert [c.purpose for c in failed] == ["judge-speculative"] and "judge server down" in failed[0].output
    assert "speculative judge call" in caplog.text and "judge server down" in caplog.text
    assert totals(r.calls) == usage_totals(llm) and llm.usage.errors == 1

    def judge(chunk):  # the walk itself: counted, logged, never raised
        if chunk == "e":
            raise RuntimeError("boom")
        return chunk in "ab"
    sel = guided_selection(list("abcdef"), judge, window=6)
    assert sel.selected == ["a", "b"] and sel.speculative == 4 and sel.speculative_errors == 1


def test_the_attribute_extractors_reasks_carry_their_tokens():
    llm = judging(lambda prompt: "no", structured={"wrong": 1})  # never valid JSON: re-asked, then free text
    r = amadeus(llm, window=1, extract_retries=2).respond(ADA, STORM)
    extract = next(c for c in r.calls if c.purpose == "extract")
    assert extract.output.startswith("failed") and extract.prompt_tokens > 0 and extract.completion_tokens > 0
    assert llm.usage.reasks == 2 and totals(r.calls) == usage_totals(llm)


def test_max_iterations_zero_is_gs_off_not_a_gs_failure():
    llm = judging(lambda prompt: "no")
    r = amadeus(llm, max_iterations=0).context(ADA, STORM)
    assert r.details["gs_failed"] is False and r.details["examined"] == 0
    assert not [i for i in r.items if i.role == "selected"] and "judge" not in [c.purpose for c in r.calls]
    # the Attribute Extractor reads GS's chunks: with none it is not asked to extract from an empty list
    assert not [c for c in r.calls if c.purpose.startswith("extract")] and r.details["attributes"] == {}
    assert guided_selection([1, 2, 3], lambda c: True, max_iterations=0).selected == []


# ---- a fault is a failed row, carrying every call it paid for --------------------------------------------------


def faulty(kind_down: str, *, invalid_first: bool = False) -> FakeLLM:
    """``judging``'s answers, except that every ``kind_down`` round trip is a fault that outlasts the retries (after
    one invalid reply when ``invalid_first``, so it is re-asked first)."""
    base, asked = judging(lambda prompt: "no").rule, []

    def rule(kind, messages, spec):
        if kind == kind_down:
            asked.append(kind)
            if invalid_first and len(asked) == 1:
                return "not JSON" if kind == "structured" else "maybe"
            raise Transient("HTTP 503")
        return base(kind, messages, spec)
    return FakeLLM(rule, cache=False, retry=FAST)


def test_a_fault_in_the_attribute_extractor_fails_the_row_instead_of_falling_back():
    llm = faulty("structured")
    rows = run_jobs(amadeus(llm, window=1), [Job(ADA, "q1", STORM)], progress=False)
    assert "failed after 3 attempts: HTTP 503" in rows.error[0] and pd.isna(rows.details[0])
    assert llm.usage.errors == 1 and "extract-text" not in str(rows.to_dict())  # no free-text fallback was asked
    with pytest.raises(FailedItems, match="1 of 1 item"):
        check_failures(rows, "QA")

    def refused(kind, messages, spec):
        if kind == "structured":
            raise LLMFatalError("HTTP 401: refused")
        return judging(lambda prompt: "no").rule(kind, messages, spec)
    with pytest.raises(LLMFatalError, match="HTTP 401"):  # a key refused or a budget spent stops the run, as elsewhere
        run_jobs(amadeus(FakeLLM(refused), window=1), [Job(ADA, "q1", STORM)], progress=False)


@pytest.mark.parametrize("window, calls, requests", [(1, 4, 6), (8, 8, 10)])
def test_a_failed_row_counts_every_call_it_paid_for(window, calls, requests):
    fourth = amadeus(FakeLLM()).search(ADA, STORM, 30)[3].text
    llm = FakeLLM(lambda kind, messages, spec: "perhaps" if fourth in messages[1]["content"] else "no")
    rows = run_jobs(amadeus(llm, window=window), [Job(ADA, "q1", STORM)], progress=False)
    assert "no allowed answer after 3 attempts" in rows.error[0]
    # the 4th judge call re-asked twice; with a look-ahead of 8, the 4 speculative calls past it too
    assert rows.llm_calls[0] == llm.usage.calls == calls and llm.usage.requests == requests
    assert rows.cached_calls[0] == 0 and rows.seconds[0] >= 0
    # and what they took: a method's tokens are read from its own rows (usage adds every method of a run together)
    assert (rows.prompt_tokens[0], rows.completion_tokens[0]) == (llm.usage.prompt_tokens, llm.usage.completion_tokens)

    for down, purposes in [("structured", ["judge", "judge", "extract"]),  # GS chose the 2 storm chunks, then AE
                           ("chat", ["judge", "judge", "extract", "respond"])]:
        llm = faulty(down)
        with pytest.raises(LLMError) as err:
            amadeus(llm, window=1).respond(ADA, STORM)
        assert [c.purpose for c in err.value.calls] == purposes and err.value.calls[-1].output.startswith("failed")
        assert totals(err.value.calls) == usage_totals(llm)
    rows = run_jobs(build_method("no_rag", faulty("chat"), dataset=FIXTURES), [Job(ADA, "q1", STORM)], progress=False)
    assert rows.llm_calls[0] == 1 and rows.error[0].startswith("LLMError")


def test_the_reasks_before_a_fault_carry_their_tokens():
    llm = faulty("structured", invalid_first=True)
    with pytest.raises(LLMError, match="HTTP 503") as err:
        llm.structured(user("Describe Ada."), {"type": "object", "properties": {"a": {"type": "string"}},
                                                "required": ["a"]})
    assert llm.usage.requests == 1 and llm.usage.reasks == 1 and llm.usage.completion_tokens == 2  # "not JSON"
    call = Call.failed("extract", "structured", err.value)
    assert totals([call]) == usage_totals(llm) and call.seconds > 0


# ---- "no valid answer" is a typed exception -------------------------------------------------------------------


def test_no_valid_answer_is_its_own_exception_with_what_it_spent(tmp_path):
    llm = FakeLLM(lambda kind, messages, spec: "maybe", cache=tmp_path / "llm.sqlite")
    with pytest.raises(LLMNoValidAnswer, match="no allowed answer after 3 attempts") as first:
        llm.choose(user("Is Ada calm?"), ["yes", "no"])
    assert not first.value.cached and first.value.prompt_tokens == llm.usage.prompt_tokens > 0
    assert first.value.completion_tokens == 3  # "maybe", three times
    with pytest.raises(LLMNoValidAnswer) as again:  # the cached outcome: the same class, nothing spent
        llm.choose(user("Is Ada calm?"), ["yes", "no"])
    assert again.value.cached and again.value.prompt_tokens == 0
    # the type decides, not the text: tests/test_judges.py raises a look-alike fault through a judge


# ---- a coerced choice is counted as coerced ---------------------------------------------------------------------


def test_a_choice_coerced_from_logprobs_is_counted_as_coerced(tmp_path):
    with MockServer(lambda body: "Y hard to say") as server:  # matches no option; its first token begins "yes"
        llm = get_llm("openai:small", base_url=server.base_url, api_key="sk-test", cache=tmp_path / "llm.sqlite",
                      retry=FAST, choose_mode="logprobs")
        reply = llm.choose(user("Is Ada calm?"), ["yes", "no"])
        assert reply.text == "yes" and reply.coerced and reply.scores["yes"] > reply.scores["no"]
        usage = llm.usage.to_dict()
        assert usage["coerced"] == 1 and usage["replies"]["choose"] == {"replies": 1, "invalid": 0,
                                                                        "valid_share": 1.0, "coerced": 1}
        assert "1 choices coerced from logprobs" in llm.usage.summary()
        again = llm.choose(user("Is Ada calm?"), ["yes", "no"])
        assert again.cached and again.coerced  # the cache keeps what the reply was
        verdict = judge_acc(llm, "Ada", "Is Ada calm?", "yes", "She is calm.")
        assert verdict.status == "ok" and verdict.value == 1.0 and verdict.coerced
    with MockServer(lambda body: "yes") as server:  # a reply that matches is the model's own answer
        plain = get_llm("openai:small", base_url=server.base_url, api_key="sk-test", cache=False, retry=FAST,
                        choose_mode="logprobs")
        assert not plain.choose(user("Is Ada calm?"), ["yes", "no"]).coerced and plain.usage.coerced == 0
    record = json.loads(json.dumps(usage))  # as a run record saves it
    assert record["coerced"] == 1


def test_a_coerced_choice_is_in_the_calls_trace_cached_or_not(tmp_path):
    class Coercing(FakeLLM):  # every judge reply matched no option; the backend took the best-scored one
        def _choose(self, req):
            raw = super()._choose(req)
            raw.coerced = True
            return raw

    rule = judging(lambda prompt: "no").rule
    cold = amadeus(Coercing(rule, cache=tmp_path / "llm.sqlite"), window=1).respond(ADA, STORM)
    warm_llm = Coercing(rule, cache=tmp_path / "llm.sqlite")
    warm = amadeus(warm_llm, window=1).respond(ADA, STORM)
    for r in (cold, warm):
        assert [c.coerced for c in r.calls] == [c.purpose == "judge" for c in r.calls] and r.calls[0].purpose == "judge"
    assert all(c.cached for c in warm.calls) and warm_llm.usage.coerced == 0  # usage counts fresh answers only
    assert f"({len(warm.calls)} from cache, 2 coerced)" in calls_line(warm.calls)  # the two judge calls
    assert not Method.trace("judge", Reply("yes", kind="choose")).coerced
    job = Job(ADA, "E1", STORM, {"questionnaire": "mbti", "dimension": "EI", "keyed": 1})
    rows = run_jobs(amadeus(Coercing(rule), window=1), [job], progress=False)
    assert rows.coerced_calls[0] == interview_rows(rows).coerced_calls[0] == 2  # saved with the per-item rows


def test_coerced_verdicts_are_counted_in_the_verdict_rows_the_judge_check_and_table6():
    verdicts = {("acc", "gold"): Verdict("acc", "yes", 1.0, "ok", coerced=True),
                ("acc", "other"): Verdict("acc", "no", 0.0, "ok"),
                ("acc", "denial"): Verdict("acc", None, math.nan, "unparsed", "no allowed answer")}
    cases = [{"item": 1, "character": ADA, "qa_id": "q1", "attribute": "Activity", "case": case, "metric": metric,
              "reply": "..."} for metric, case in verdicts]
    rows = run_verdicts(FakeLLM(), cases, lambda c: verdicts[(c["metric"], c["case"])], lambda c: dict(c),
                        progress=False)
    assert rows.coerced.tolist() == [True, False, False] and rows.status.tolist() == ["ok", "ok", "unparsed"]
    agreement = check_agreement(rows).set_index("check")
    assert agreement.loc["acc: gold answer", "coerced"] == 1 and agreement.loc["acc: gold answer", "agree"] == 1
    assert agreement.loc["acc: another character's answer", "coerced"] == 0
    assert "acc: gold answer 1/1 (1 coerced)" in check_summary(agreement.reset_index())
    old = check_agreement(rows.drop(columns="coerced"))  # verdict rows saved before the column: none coerced
    assert old.coerced.sum() == 0 and old.agree.tolist() == agreement.agree.tolist()

    answers = pd.DataFrame([{"task": "CharacterRAG", "method": "amadeus", "error": None}] * 2)
    judged = pd.DataFrame({"task": "CharacterRAG", "method": "amadeus", "metric": "acc", "value": [1.0, math.nan],
                           "status": ["ok", "unparsed"], "coerced": [True, False], "character": ADA,
                           "question_id": ["q1", "q2"]})
    t6 = table6(answers, judged, "llm", "judge")
    assert t6.loc[0, ["n_acc", "unparsed_acc", "coerced_acc"]].tolist() == [1, 1, 1]
    counts = list(t6.columns[t6.columns.get_loc("failed_hs") + 1:][:3])
    assert counts == ["coerced_acc", "coerced_acc_l", "coerced_hs"]  # new columns, after the old counts
    assert table6(answers, judged.drop(columns="coerced"), "llm", "judge").coerced_acc.tolist() == [0]


# ---- failed items named before anything is computed from the rest ----------------------------------------------


def test_a_judge_that_never_answers_validly_is_named_as_the_cause_not_the_budget():
    never = FakeLLM(lambda kind, messages, spec: "perhaps")  # a judge that never answers "yes" or "no"
    jobs = [Job(ADA, "q1", STORM), Job(ADA, "q2", "Do you like parties?")]
    rows = used_chunks(amadeus(never, max_iterations=6), jobs, desc="GS")
    assert rows.error.notna().all()
    with pytest.raises(FailedItems, match=r"2 of 2 item\(s\) failed.*no allowed answer after 3 attempts.*"
                                          r"failed items: amadeus ada-lindqvist q1, amadeus ada-lindqvist q2"):
        matched_budget(rows, "amadeus")
    with pytest.raises(ValueError, match="no answered rows of 'amadeus'"):  # no rows at all: nothing to name
        matched_budget(rows.iloc[0:0], "amadeus")


@pytest.mark.parametrize("notebook", ["03_chunk_usage", "04_personality", "05_qa_evaluation"])
def test_notebooks_check_failures_before_matching_a_budget(notebook):
    nb = json.loads((NOTEBOOKS / f"{notebook}.ipynb").read_text(encoding="utf-8"))
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    assert code.index('ex.check(') < code.index("ex.answer_controls(")  # the experiment's failure policy


@pytest.mark.parametrize("notebook, by", [("03_chunk_usage", "question_set"), ("04_personality", "questionnaire"),
                                         ("05_qa_evaluation", "task")])
def test_notebooks_match_the_control_per_question_set(notebook, by):
    """Tables 3 to 6 report each question set apart, so the control is matched to AMADEUS on each apart."""
    nb = json.loads((NOTEBOOKS / f"{notebook}.ipynb").read_text(encoding="utf-8"))
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    assert re.search(rf'ex\.answer_controls\(run, \w+, "{by}"', code) and "matched_budget" not in code


@pytest.mark.parametrize("notebook", ["03_chunk_usage", "04_personality", "05_qa_evaluation", "06_human_evaluation",
                                      "07_judge_agreement"])
def test_notebooks_make_no_table_figure_or_run_record_before_their_last_failure_check(notebook):
    """A run with failed items stops after saving its item files and before any table, figure or run record, so a
    failed run never leaves a table computed without its failed items beside the committed ones."""
    nb = json.loads((NOTEBOOKS / f"{notebook}.ipynb").read_text(encoding="utf-8"))
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    last_check = code.rindex("ex.check(")
    outputs = [code.index(call) for call in ("save_table(", "save_figure(", "ex.record(", "save_paired(") if call in code]
    assert outputs and last_check < min(outputs), code[min(outputs) - 200:min(outputs) + 100]


def test_a_rater_named_twice_in_a_panel_counts_every_call_in_the_run_record(tmp_path):
    from rpa_lib.experiment import Experiment

    ex = Experiment("06_human_evaluation", {"data_dir": str(FIXTURES), "llm": "fake", "results_dir": str(tmp_path),
                                            "figures_dir": str(tmp_path)})
    panel = [ex.rater(spec) for spec in ("fake:a", "fake:b", "fake:a")]
    assert panel[0] is panel[2]  # one LLM per spec: a second one under the same name replaced the first's usage
    for rater in panel:
        rater.chat([{"role": "user", "content": "Rate this reply."}])
    usage = json.loads(ex.record("probe").read_text())["usage_by_role"]
    assert {role: u["calls"] for role, u in usage.items()} == {"rater fake:a": 2, "rater fake:b": 1}
