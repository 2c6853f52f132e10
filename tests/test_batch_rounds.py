"""Batch rounds on the fake backend: a call's round trips answered round by round (a re-ask in the next round),
the final reply in the reply cache under the synchronous key, pending items that are neither failures nor
tables, and the loop that ends when a round has no miss."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pandas as pd
import pytest

from benchmarks.batch_server import BatchServer
from rpa_lib.evaluation.runner import (
    FAILED,
    PENDING,
    FailedItems,
    PendingItems,
    check_failures,
    failed_items,
    run_verdicts,
)
from rpa_lib.experiment import Experiment
from rpa_lib.llm import Budget, BudgetExceeded, FakeLLM, LLMError, RunMode, get_llm, judge_llm
from rpa_lib.llm.batches import run_round
from rpa_lib.llm.openai_backend import OpenAILLM
from rpa_lib.llm.reply import Pending
from rpa_lib.llm.rounds import BatchLLM, answer_engine_lines, read_log, rounds_record, store_results
from rpa_lib.run.plan import batch_rounds, batch_text, batch_total
from rpa_lib.run.profiles import load_profile
from rpa_lib.run.rounds import engine_builder, run_rounds, unfinished_run
from rpa_lib.text import read_jsonl

QUESTION = [{"role": "user", "content": "Who taught you magic?"}]


def ask_why(llm) -> str | None:
    """A question, then a follow-up that needs its answer; the Pending message while one waits for a round."""
    try:
        first = llm.chat(QUESTION)
        llm.chat([*QUESTION, {"role": "assistant", "content": first.text}, {"role": "user", "content": "Why?"}])
    except Pending as exc:
        return str(exc)
    return None


def empty_then_answer(kind, messages, spec):
    """Empty for the first ask, an answer for the re-ask (which says the reply was empty)."""
    return "Flamme did." if "not valid" in messages[-1]["content"] else ""


def one_round(llm: BatchLLM, engine: FakeLLM, store: Path) -> list[dict]:
    """Answer what ``llm`` recorded since the last round with ``engine``; the lines answered."""
    lines = read_jsonl(llm.misses)
    store_results(store, lines, answer_engine_lines(lines, lambda spec: engine, progress=False))
    llm.misses.unlink()
    return lines


def test_a_reask_is_a_round_trip_of_the_next_round_and_the_reply_lands_under_the_sync_key(tmp_path):
    real = FakeLLM(empty_then_answer, cache=tmp_path / "llm.sqlite")
    batch = BatchLLM(real, tmp_path / "store", tmp_path / "misses.jsonl")
    with pytest.raises(Pending):
        batch.chat(QUESTION)
    first = one_round(batch, real, tmp_path / "store")
    with pytest.raises(Pending):  # the first ask is answered (empty): the re-ask waits for round 2
        batch.chat(QUESTION)
    second = one_round(batch, real, tmp_path / "store")
    assert [len(first), len(second)] == [1, 1] and first[0]["custom_id"] != second[0]["custom_id"]
    assert second[0]["engine"]["request"]["messages"][:1] == QUESTION  # the re-ask carries the empty reply
    reply = batch.chat(QUESTION)
    assert reply.text == "Flamme did." and not reply.cached
    again = FakeLLM(empty_then_answer, cache=tmp_path / "llm.sqlite").chat(QUESTION)  # a synchronous run
    assert again.cached and again.text == "Flamme did."


def test_an_openai_line_carries_the_synchronous_body_and_its_result_is_read_by_the_same_code(tmp_path):
    real = OpenAILLM("gpt-4.1", base_url="http://127.0.0.1:9/v1", cache=tmp_path / "llm.sqlite",
                     choose_mode="logprobs")
    batch = BatchLLM(real, tmp_path / "store", tmp_path / "misses.jsonl")
    with pytest.raises(Pending):
        batch.choose(QUESTION, ["Flamme", "Himmel"])
    [line] = read_jsonl(batch.misses)
    assert line["url"] == "/v1/chat/completions" and line["body"]["logprobs"] is True
    assert line["body"]["model"] == "gpt-4.1" and line["server"] == "http://127.0.0.1:9/v1"
    completion = {"id": "c1", "object": "chat.completion", "created": 0, "model": "gpt-4.1",
                  "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                               "message": {"role": "assistant", "content": "Flamme"}}],
                  "usage": {"prompt_tokens": 30, "completion_tokens": 2, "total_tokens": 32}}
    assert store_results(tmp_path / "store", [line], {line["custom_id"]: {"status_code": 200, "body": completion}}) \
        == (1, 0)
    reply = batch.choose(QUESTION, ["Flamme", "Himmel"])
    assert (reply.text, reply.prompt_tokens, reply.completion_tokens) == ("Flamme", 30, 2)
    # the server at 127.0.0.1:9 is never asked: the synchronous call is a cache hit
    assert real.choose(QUESTION, ["Flamme", "Himmel"]).cached


def test_a_failed_line_is_asked_once_more_then_fails_its_call(tmp_path):
    batch = BatchLLM(FakeLLM(), tmp_path / "store", tmp_path / "misses.jsonl")
    for _ in (1, 2):  # the first failure, then the retry of the next round
        with pytest.raises(Pending):
            batch.chat(QUESTION)
        [line] = read_jsonl(batch.misses)
        batch.misses.unlink()
        store_results(tmp_path / "store", [line], {line["custom_id"]: {"error": {"message": "HTTP 500"}}})
    with pytest.raises(LLMError, match="failed 2 times: HTTP 500"):
        batch.chat(QUESTION)


def test_pending_rows_are_not_failures_and_the_record_is_not_written(tmp_path):
    batch = BatchLLM(FakeLLM(), tmp_path / "store", tmp_path / "misses.jsonl")
    done = FakeLLM()  # a judge whose answers are in: one failure among them
    jobs = ["Frieren", "Fern"]
    waiting = run_verdicts(batch, jobs, lambda j: batch.choose([{"role": "user", "content": j}], ["yes", "no"]).text,
                           lambda j: {"item": j}, progress=False)
    failed = run_verdicts(done, jobs, lambda j: 1 / 0 if j == "Fern" else "yes", lambda j: {"item": j},
                          progress=False)
    assert list(waiting.status) == [PENDING, PENDING] and list(failed.status) == ["ok", FAILED]
    with pytest.raises(PendingItems, match="2 item"):
        check_failures(waiting, "ratings")
    listing = failed_items(ratings=waiting, check=failed)
    assert listing.pending.tolist() == [True, True, False]
    with pytest.raises(FailedItems, match="1 item"):
        check_failures(listing[~listing.pending], "table")
    mode = {"batch_store": str(tmp_path / "store"), "batch_misses": str(tmp_path / "misses.jsonl")}
    ex = Experiment("07_judge_agreement", {"run_mode": mode, "results_dir": str(tmp_path / "results"),
                                           "figures_dir": str(tmp_path / "figures")})
    ex.check(pd.concat([waiting, failed.iloc[:1]]), "ratings")  # pending rows counted apart: the notebook goes on
    assert ex.pending == {"ratings": 2}
    with pytest.raises(PendingItems, match="2 ratings"):
        ex.record("charactercraft_table6_kendall")
    assert not list((tmp_path / "results").glob("*.run.json"))


def test_rounds_end_when_a_round_has_no_miss_and_the_record_names_them(tmp_path):
    """A notebook whose second call needs the first's answer: two rounds with a miss each, then one without."""
    store, run_dir = tmp_path / "store", tmp_path / "run"
    executed = []

    def collect(notebook: str, mode: dict, scratch: Path) -> str | None:
        llm = RunMode.of(mode).wrap(FakeLLM())
        executed.append(notebook)
        return ask_why(llm)

    entries = run_rounds(["05_qa_evaluation"], collect, mode="local", store=store, run_dir=run_dir,
                         build=lambda spec: FakeLLM(label=spec.partition(":")[2]), progress=False)
    assert [(e["round"], e["calls"], e["answered"], e["failed"]) for e in entries] == [(1, 1, 1, 0), (2, 1, 1, 0)]
    assert executed == ["05_qa_evaluation"] * 3  # the third round found every answer in
    record = rounds_record(run_dir / "rounds.json", "05_qa_evaluation")
    assert record == {"mode": "local", "rounds": 2, "calls_per_round": [1, 1], "all_calls_per_round": [1, 1],
                      "usd": 0.0, "run_usd": 0.0}
    assert json.loads((run_dir / "rounds.json").read_text())["rounds"][1]["by_notebook"] == {"05_qa_evaluation": 1}


def test_a_run_whose_answers_were_all_in_names_its_mode_with_no_round(tmp_path):
    run_rounds(["05_qa_evaluation"], lambda nb, mode, scratch: None, mode="openai", store=tmp_path / "store",
               run_dir=tmp_path / "run", build=FakeLLM, progress=False, key="k1")
    assert rounds_record(tmp_path / "run" / "rounds.json", "05_qa_evaluation") == {
        "mode": "openai", "rounds": 0, "calls_per_round": [], "all_calls_per_round": [], "usd": 0, "run_usd": 0}


def test_a_command_stopped_before_its_first_round_was_logged_goes_on_in_its_folder(tmp_path):
    def interrupted(nb, mode, scratch):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_rounds(["05_qa_evaluation"], interrupted, mode="local", store=tmp_path / "store",
                   run_dir=tmp_path / "runs" / "run-1", build=FakeLLM, progress=False, key="k1")
    assert unfinished_run(tmp_path / "runs", "k1") == tmp_path / "runs" / "run-1"  # not a new folder per start
    assert unfinished_run(tmp_path / "runs", "k2") is None  # another command starts its own


def test_a_notebook_that_stops_without_a_miss_has_failed(tmp_path):
    with pytest.raises(SystemExit, match="02_x: stopped in batch round 1 with no call waiting"):
        run_rounds(["02_x"], lambda nb, mode, scratch: "cell 3 raised KeyError", mode="local", store=tmp_path / "s",
                   run_dir=tmp_path / "r", build=lambda spec: FakeLLM(), progress=False)


def test_the_plan_prices_batch_rounds_at_half_plus_guided_selections_look_ahead():
    row = {"price": [2.0, 8.0], "free": False, "in_tokens": 1_000_000, "out_tokens": 100_000, "choose_in": 400_000,
           "to_pay": 300, "choose_calls": 100, "choose_out": 10_000, "cost": 2.8}
    # half of $2.80, and the choices' half-price $0.44 counted 11% more
    assert batch_total([row]) == pytest.approx(1.4 + 0.11 * 0.44)
    assert batch_total([row, {**row, "price": None, "cost": None}]) is None
    assert batch_total([row, {**row, "price": None, "free": True, "cost": 0.0}]) == batch_total([row])  # in-process
    assert (batch_rounds(30), batch_rounds(4)) == (8, 5)  # the smoke profile (N=4) took 5 rounds
    assert "at most 11 calls beyond a synchronous run's 300 to pay), 52% of the synchronous $2.80; about 8 rounds" \
        in batch_text([row], 30)


def test_a_round_of_openai_lines_goes_to_the_transport_once_per_model_with_the_budget_at_batch_rates(tmp_path):
    real = OpenAILLM("gpt-4.1", base_url="http://127.0.0.1:9/v1", cache=tmp_path / "llm.sqlite")
    sent = []

    def send(lines, *, mode, folder, client, budget, progress):
        sent.append((mode, [sorted(line) for line in lines], budget))
        usage = {"prompt_tokens": 1_000_000, "completion_tokens": 100_000, "total_tokens": 1_100_000}
        return {line["custom_id"]: {"status_code": 200, "body": {
            "id": "c", "object": "chat.completion", "created": 0, "model": "gpt-4.1", "usage": usage,
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "Yes."}}]}}
            for line in lines}

    def collect(notebook, mode, scratch):
        try:
            RunMode.of(mode).wrap(real).chat(QUESTION)
        except Pending as exc:
            return str(exc)
        return None

    budget = Budget(5.0)
    [entry] = run_rounds(["05_qa_evaluation", "07_judge_agreement"], collect, mode="files", store=tmp_path / "s",
                         run_dir=tmp_path / "r", build=FakeLLM, budget=budget, send=send, progress=False)
    # the two notebooks' one request, sent once, with the budget the transport holds and books
    assert sent == [("files", [["body", "custom_id", "method", "url"]], budget)]
    assert entry["by_notebook"] == {"05_qa_evaluation": 1, "07_judge_agreement": 1} and entry["calls"] == 1
    assert entry["usd"] == pytest.approx(1.0 + 0.4)  # gpt-4.1 at $2 / $8 a million tokens, half at batch rates


def test_a_profile_names_its_batch_mode_or_is_refused(tmp_path):
    good, bad = tmp_path / "good.yaml", tmp_path / "bad.yaml"
    good.write_text("defaults:\n  llm: fake\nbatch: local\n")
    bad.write_text("batch: overnight\n")
    assert load_profile(str(good))["batch"] == "local"
    with pytest.raises(SystemExit, match="batch: expected one of local, openai, files, got 'overnight'"):
        load_profile(str(bad))


def test_two_dependent_calls_take_two_openai_batch_rounds_and_then_hit_the_cache(tmp_path):
    """End to end through the OpenAI Batch API protocol: BatchLLM's lines, the round loop, the batch transport and
    the test server (``benchmarks.batch_server``); the final reply lands in the reply cache under the synchronous
    key."""
    with BatchServer() as server:
        real = OpenAILLM("gpt-4.1-mini", base_url=server.base_url, api_key="sk-test", cache=tmp_path / "llm.sqlite")
        entries = run_rounds(["05_qa_evaluation"], lambda nb, mode, scratch: ask_why(RunMode.of(mode).wrap(real)),
                             mode="openai", store=tmp_path / "store", run_dir=tmp_path / "run", build=FakeLLM,
                             send=lambda lines, **options: run_round(lines, poll_seconds=0.01, **options),
                             progress=False)
        assert [(e["calls"], e["answered"]) for e in entries] == [(1, 1), (1, 1)]
        assert len(server.batches) == 2 and all(b["status"] == "completed" for b in server.batches.values())
    # the server is gone: a synchronous call of either is a cache hit
    assert real.chat(QUESTION).cached and real.chat(QUESTION).text == f"echo: {QUESTION[0]['content']}"


def test_each_roles_batch_goes_with_that_roles_credentials_and_no_file_holds_them(tmp_path, monkeypatch):
    """The role-play LLM (OPENAI_API_KEY), GS (RPA_GS_API_KEY) and the judge (credentials in RPA_JUDGE_BASE_URL), one
    model on one server: a batch each, sent as that role's synchronous calls would be."""
    secrets = {"OPENAI_API_KEY": "sk-llm-secret-0123456789", "RPA_GS_API_KEY": "sk-gs-secret-0123456789"}
    with BatchServer() as server:
        judge_url = server.base_url.replace("http://", "http://judge:pw-secret-0123456789@")
        for name, value in {**secrets, "RPA_LLM_BASE_URL": server.base_url, "RPA_GS_BASE_URL": server.base_url,
                            "RPA_JUDGE_MODEL": "gpt-4.1-mini", "RPA_JUDGE_BASE_URL": judge_url}.items():
            monkeypatch.setenv(name, value)

        def collect(notebook, mode, scratch):
            waiting = None
            llms = (get_llm("gpt-4.1-mini", mode=mode), get_llm("gpt-4.1-mini", role="gs", mode=mode),
                    judge_llm(mode=mode))
            for n, llm in enumerate(llms):
                try:  # a question of its own each: the same request would be one line, whoever asks it
                    llm.chat([{"role": "user", "content": f"Who are you, number {n}?"}])
                except Pending as exc:
                    waiting = str(exc)
            return waiting

        entries = run_rounds(["05_qa_evaluation"], collect, mode="openai", store=tmp_path / "store",
                             run_dir=tmp_path / "run", build=FakeLLM, progress=False,
                             send=lambda lines, **options: run_round(lines, poll_seconds=0.01, **options))
        assert [(e["calls"], e["answered"]) for e in entries] == [(3, 3)] and server.created == 3
        basic = base64.b64encode(b"judge:pw-secret-0123456789").decode()
        assert server.authorizations == {f"Bearer {secrets['OPENAI_API_KEY']}", f"Bearer {secrets['RPA_GS_API_KEY']}",
                                         f"Basic {basic}"}
    misses = read_jsonl(tmp_path / "run" / "round-01" / "05_qa_evaluation.misses.jsonl")
    assert [line["role"] for line in misses] == ["RPA_LLM", "RPA_GS", "RPA_JUDGE"]  # the role's name, not its key
    written = [p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()]
    assert not [s for s in [*secrets.values(), "pw-secret-0123456789"] if any(s.encode() in b for b in written)]


def test_an_engine_given_a_price_is_held_by_the_budget_and_logged_at_its_price(tmp_path, monkeypatch):
    # an in-process engine priced with RPA_PRICE_*: the rounds answered all 20 calls under a budget that stops a
    # synchronous run after a few, booked none, and logged them at half price
    monkeypatch.setenv("RPA_PRICE_IN", "2.0")
    monkeypatch.setenv("RPA_PRICE_OUT", "8.0")
    questions = [[{"role": "user", "content": f"Question {i}: " + "tell me about the lighthouse " * 20}] for i in range(20)]

    def collect(notebook, mode, scratch):
        llm, waiting = RunMode.of(mode).wrap(get_llm("fake", cache=tmp_path / "llm.sqlite")), None
        for q in questions:
            try:
                llm.chat(q, max_tokens=10)
            except Pending as exc:
                waiting = str(exc)
        return waiting

    one = get_llm("fake", cache=False)
    one.chat(questions[0], max_tokens=10)
    price = one.usage.cost_usd  # one call's synchronous price
    budget = Budget(price * 8)
    with pytest.raises(BudgetExceeded):
        run_rounds(["04_personality"], collect, mode="local", store=tmp_path / "s", run_dir=tmp_path / "r",
                   build=engine_builder(budget), budget=budget, progress=False)
    assert 0 < budget.spent <= budget.limit  # the calls made before the limit, booked (was $0: no budget held them)
    # what they answered is kept and logged, so the same command resumes after them and its records count them
    [stopped] = json.loads((tmp_path / "r" / "rounds.json").read_text())["rounds"]
    assert 0 < stopped["answered"] < 20 and stopped["usd"] == pytest.approx(budget.spent, rel=0.05)
    resumed = run_rounds(["04_personality"], collect, mode="local", store=tmp_path / "s", run_dir=tmp_path / "r",
                         build=engine_builder(None), progress=False)
    assert resumed[0]["round"] == 2 and resumed[0]["calls"] == 20 - stopped["answered"]
    # without a budget the round is logged at the engine's own price: there is no batch discount in this process
    (tmp_path / "llm.sqlite").unlink()  # the replies the rounds above stored: asked afresh
    [entry] = run_rounds(["04_personality"], collect, mode="local", store=tmp_path / "s2", run_dir=tmp_path / "r2",
                         build=engine_builder(None), progress=False)[:1]
    assert entry["calls"] == 20 and entry["usd"] == pytest.approx(20 * price, rel=0.05)


def test_a_stopped_batch_run_resumed_keeps_the_rounds_it_paid_and_splits_shared_calls(tmp_path, monkeypatch):
    # two notebooks asking one shared question, each then one of its own; round 2 is interrupted, and the same
    # command resumes: its record counts round 1's money too (a new run folder had counted round 2 only)
    monkeypatch.setenv("RPA_PRICE_IN", "2.0")
    monkeypatch.setenv("RPA_PRICE_OUT", "8.0")
    runs, stop = tmp_path / "s" / "runs", {"round 2": True}

    def collect(notebook, mode, scratch):
        if stop["round 2"] and "round-02" in mode["batch_misses"]:
            raise KeyboardInterrupt
        llm = RunMode.of(mode).wrap(get_llm("fake", cache=tmp_path / "llm.sqlite"))
        try:
            first = llm.chat(QUESTION)
            llm.chat([*QUESTION, {"role": "assistant", "content": first.text}, {"role": "user", "content": notebook}])
        except Pending as exc:
            return str(exc)
        return None

    def run(run_dir):
        return run_rounds(["04_personality", "05_qa_evaluation"], collect, mode="local", store=tmp_path / "s",
                          run_dir=run_dir, build=engine_builder(None), progress=False, key="k1")

    with pytest.raises(KeyboardInterrupt):
        run(runs / "run-1")
    assert unfinished_run(runs, "k1") == runs / "run-1" and unfinished_run(runs, "other command") is None
    stop["round 2"] = False
    assert [e["round"] for e in run(unfinished_run(runs, "k1"))] == [2]
    log = json.loads((runs / "run-1" / "rounds.json").read_text())
    assert [r["calls"] for r in log["rounds"]] == [1, 2] and log["key"] == "k1"
    first, second = log["rounds"]
    assert first["usd_by_notebook"]["04_personality"] == pytest.approx(first["usd"] / 2)  # one call asked by both
    records = [rounds_record(runs / "run-1" / "rounds.json", nb) for nb in ("04_personality", "05_qa_evaluation")]
    assert [r["rounds"] for r in records] == [2, 2]
    assert records[0]["run_usd"] == pytest.approx(first["usd"] + second["usd"], abs=1e-6)
    assert records[0]["run_usd"] > first["usd"] > 0
    assert sum(r["usd"] for r in records) == pytest.approx(records[0]["run_usd"], abs=1e-6)  # shares add up


def test_a_round_killed_after_its_answers_came_keeps_its_cost_in_the_log(tmp_path, monkeypatch):
    # a kill right after a round's answers came back (before they are stored): the round it paid is in the log,
    # and the same command asks its calls again in the next round, which is logged too
    monkeypatch.setenv("RPA_PRICE_IN", "2.0")
    monkeypatch.setenv("RPA_PRICE_OUT", "8.0")

    def collect(notebook, mode, scratch):
        return ask_why(RunMode.of(mode).wrap(get_llm("fake", cache=tmp_path / "llm.sqlite")))

    def killed(*args):
        raise KeyboardInterrupt

    def run():
        return run_rounds(["04_personality"], collect, mode="local", store=tmp_path / "s", run_dir=tmp_path / "r",
                          build=engine_builder(None), progress=False)

    monkeypatch.setattr("rpa_lib.run.rounds.store_results", killed)
    with pytest.raises(KeyboardInterrupt):
        run()
    [paid] = json.loads((tmp_path / "r" / "rounds.json").read_text())["rounds"]
    assert paid["round"] == 1 and paid["answered"] == 1 and paid["usd"] > 0
    monkeypatch.undo()
    assert [(e["round"], e["calls"]) for e in run()] == [(2, 1), (3, 1)]  # round 1's call asked again, then the next


def test_a_batch_that_came_back_before_its_round_was_logged_is_logged_when_the_command_resumes(tmp_path,
                                                                                               monkeypatch):
    # a kill after a batch came back and before its round was logged (a batch of another model still waiting, say):
    # the resumed round gets its answers from the transport, with no new batch, and logs what that batch cost
    with BatchServer() as server:
        real = OpenAILLM("gpt-4.1", base_url=server.base_url, api_key="sk-test", cache=tmp_path / "llm.sqlite")

        def run():
            return run_rounds(["05_qa_evaluation"], lambda nb, mode, scratch: ask_why(RunMode.of(mode).wrap(real)),
                              mode="openai", store=tmp_path / "store", run_dir=tmp_path / "run", build=FakeLLM,
                              send=lambda lines, **options: run_round(lines, poll_seconds=0.01, **options),
                              progress=False)

        with monkeypatch.context() as m:
            m.setattr("rpa_lib.run.rounds.line_costs", lambda *args: (_ for _ in ()).throw(KeyboardInterrupt))
            with pytest.raises(KeyboardInterrupt):
                run()
        assert read_log(tmp_path / "run" / "rounds.json")["rounds"] == [] and len(server.batches) == 1
        entries = run()
        assert len(server.batches) == 2  # the question's batch, then the follow-up's: none sent twice
    assert [(e["round"], e["answered"]) for e in entries] == [(1, 1), (2, 1)]
    assert entries[0]["usd"] > 0 and entries[1]["usd"] > 0  # the first batch's cost is in the log
