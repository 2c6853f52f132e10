"""``reproduce --plan`` (calls, cached calls, tokens and dollars before a run) and the spending budget
(a run mode's ``budget_usd``, from ``RPA_BUDGET_USD`` or a profile: a run stops cleanly before it would spend more,
and a re-run pays only for the rest).

Offline: the fake backend, the mock server and the smoke profile's fixture data. The end-to-end tests start
notebook kernels (a few seconds each).
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from pathlib import Path

import nbformat
import pytest

from benchmarks.mock_server import MockServer
from rpa_lib import paths
from rpa_lib.llm import PRICES, FakeLLM, LLMFatalError, LLMNoValidAnswer, RetryPolicy, get_llm
from rpa_lib.llm.base import Request
from rpa_lib.llm.budget import Budget, BudgetExceeded, estimate_tokens, model_price
from rpa_lib.llm.plan import PlanLLM
from rpa_lib.run import reproduce
from rpa_lib.run.plan import character_sample, plan_rows, plan_table
from rpa_lib.text import read_jsonl

FAST = RetryPolicy(attempts=2, base_delay=0.001, max_delay=0.001)


def user(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]


def cache_rows(path) -> int:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT COUNT(*) FROM replies").fetchone()[0]


# ---------------------------------------------------------------- prices and token estimates


def test_estimate_tokens_counts_characters_and_takes_max_tokens_as_output():
    assert estimate_tokens(Request("chat", user("x" * 40), max_tokens=50)) == (10 + 4, 50)
    prompt, out = estimate_tokens(Request("choose", user("x" * 40), options=["yes", "no"]))
    assert prompt > 14  # the instruction naming the options and the options sent as a schema count too
    assert out == len('{"answer": "yes"}') // 4 + 1


def test_prices_from_the_table_an_override_or_unknown(monkeypatch):
    assert model_price("gpt-4.1") == PRICES["gpt-4.1"] and (PRICES["gpt-4.1"].input, PRICES["gpt-4.1"].output) == (2, 8)
    assert (PRICES["gpt-4.1-mini"].input, PRICES["gpt-4.1-mini"].output) == (0.40, 1.60)
    assert model_price("qwen3-32b") is None
    monkeypatch.setenv("RPA_PRICE_IN", "1.5")
    with pytest.raises(ValueError, match="set both RPA_PRICE_IN and RPA_PRICE_OUT"):
        model_price("gpt-4.1")
    monkeypatch.setenv("RPA_PRICE_OUT", "3")
    assert (model_price("qwen3-32b").input, model_price("qwen3-32b").output) == (1.5, 3.0)
    assert FakeLLM().price.cost(1_000_000, 1_000_000) == 4.5  # the override prices every backend
    monkeypatch.setenv("RPA_PRICE_OUT", "-1")
    with pytest.raises(ValueError, match="RPA_PRICE_OUT must be a non-negative number"):
        model_price("gpt-4.1")


def call(model: str, key: str, cached: bool, tokens_in: int, tokens_out: int, price, free: bool = False) -> dict:
    return {"label": model, "model": model, "server": None, "price": price, "free": free, "kind": "chat", "key": key,
            "cached": cached, "in": tokens_in, "out": tokens_out}


def test_plan_rows_count_cached_repeats_and_price_known_and_unknown():
    gpt = [2.0, 8.0]
    rows = plan_rows({
        "03_a": [call("gpt-4.1", "k1", False, 500_000, 50_000, gpt), call("gpt-4.1", "k2", True, 9, 9, gpt),
                 call("gpt-4.1", "k1", False, 500_000, 50_000, gpt)],  # k1 again: cached by the first by then
        "04_b": [call("gpt-4.1", "k1", False, 500_000, 50_000, gpt), call("gpt-4.1", "k3", False, 500_000, 50_000, gpt),
                 call("qwen3", "k4", False, 1000, 100, None)],
    })
    a, b_gpt, b_qwen = rows
    assert (a["calls"], a["cached"], a["repeats"], a["to_pay"]) == (3, 1, 1, 1)
    assert (a["in_tokens"], a["out_tokens"]) == (500_000, 50_000)
    assert a["cost"] == pytest.approx(500_000 * 2e-6 + 50_000 * 8e-6)  # $1.40
    assert (b_gpt["repeats"], b_gpt["to_pay"], b_gpt["cost"]) == (1, 1, pytest.approx(1.40))
    assert b_qwen["cost"] is None and b_qwen["in_tokens"] == 1000
    text = plan_table(rows, ["01_x", "03_a", "04_b"], {"01_x": "no LLM calls"})
    assert "01_x" in text and "no LLM calls" in text and "estimate" in text and "Guided Selection" in text
    assert re.search(r"03_a .*gpt-4\.1 .* 3 +1 +1 +1 +500,000 +50,000 +\$1\.40", text)
    assert re.search(r"04_b .*qwen3 .*1,000 +100 +price unknown", text)
    assert re.search(r"total .* 6 +1 +2 +3 .*price unknown", text)
    assert "model qwen3 (qwen3): price unknown (set RPA_PRICE_IN and RPA_PRICE_OUT): tokens only" in text
    known = plan_table([a], ["03_a"])
    assert re.search(r"total .*\$1\.40", known) and "$2.00 / $8.00 per million" in known
    # a model run in this process costs nothing: the plan of a judge at an API beside it has a total
    local = plan_rows({"05_c": [call("local:smollm2", "k5", False, 1000, 100, None, free=True)]})
    assert local[0]["cost"] == 0
    mixed = plan_table([a, *local], ["03_a", "05_c"])
    assert re.search(r"05_c .*local:smollm2 .*1,000 +100 +\$0\.00", mixed) and re.search(r"total .*\$1\.40", mixed)
    assert "model local:smollm2 (local:smollm2): runs in this process, no API cost: tokens only" in mixed


# ---------------------------------------------------------------- the stand-in LLM


def test_the_stand_in_keys_like_the_real_backend_reads_its_cache_and_calls_nothing(tmp_path, monkeypatch):
    cache = tmp_path / "llm.sqlite"
    with MockServer() as server:
        real = get_llm("openai:gpt-4.1", base_url=server.base_url, api_key="sk-test", cache=cache, retry=FAST)
        first = real.chat(user("first question"), max_tokens=40)
        real.choose(user("pick one"), ["red", "blue"])
        asked = server.requests
        stand_in = get_llm("openai:gpt-4.1", base_url=server.base_url, api_key="sk-test", cache=cache,
                           mode={"plan_file": str(tmp_path / "plan.jsonl")})
        assert isinstance(stand_in, PlanLLM) and stand_in.label == real.label and stand_in.max_workers == 8
        again = stand_in.chat(user("first question"), max_tokens=40)
        stand_in.choose(user("pick one"), ["red", "blue"])
        new = stand_in.structured(user("a new one"), {"type": "object", "properties": {"a": {"type": "string"}}})
        stand_in.chat(user("a second new one " + "y" * 400), max_tokens=100)
        assert server.requests == asked, "the plan called the model"
    assert again.text == first.text and again.cached  # the cached reply: the run follows the path it took
    assert isinstance(new.data, dict)
    assert cache_rows(cache) == 2, "the plan wrote to the reply cache"
    records = read_jsonl(tmp_path / "plan.jsonl")
    assert [r["cached"] for r in records] == [True, True, False, False]
    assert [r["kind"] for r in records] == ["chat", "choose", "structured", "chat"]
    assert {r["model"] for r in records} == {"gpt-4.1"} and records[0]["price"] == [2.0, 8.0]
    assert records[0]["server"] == server.base_url and records[3]["out"] == 100
    assert records[3]["in"] == estimate_tokens(Request("chat", user("a second new one " + "y" * 400)))[0]


def test_a_failure_cached_after_fewer_attempts_is_planned_as_paid(tmp_path):
    """A failure stored after one attempt is replayed only to a call allowing no more; one allowing three is sent
    again by the run, so the plan counts it to pay."""
    real = FakeLLM(lambda kind, messages, spec: "maybe", cache=tmp_path / "llm.sqlite")  # never one of the options
    with pytest.raises(LLMNoValidAnswer):
        real.choose(user("yes or no?"), ["yes", "no"], max_retries=0)
    plan = PlanLLM(real, tmp_path / "plan.jsonl")
    for retries in (0, 2):
        with pytest.raises(LLMNoValidAnswer):
            plan.choose(user("yes or no?"), ["yes", "no"], max_retries=retries)
    assert [r["cached"] for r in read_jsonl(tmp_path / "plan.jsonl")] == [True, False]


@pytest.mark.parametrize("spec, mode, scored", [("local", None, True), ("fake", None, False),
                                               ("openai:m", "logprobs", True), ("openai:m", None, False)])
def test_a_dry_run_scores_a_choice_where_the_real_model_would(tmp_path, monkeypatch, spec, mode, scored):
    """Calibration needs each option's score: a dry run stands in with made-up scores for a model that scores its
    choices (the embedded engine), so a plan of a calibrated judge goes on as the run would; none for one that does
    not (the fake, a server not in the logprobs mode), whose run stops at calibration too."""
    from dataclasses import replace

    from rpa_lib.evaluation.calibration import baseline_scores
    from rpa_lib.methods.crag import GRADES, grade_score

    monkeypatch.setenv("RPA_LLM_BASE_URL", "http://127.0.0.1:9/v1")  # never reached: a dry run sends nothing
    if mode:
        monkeypatch.setenv("RPA_LLM_CHOOSE_MODE", mode)
    plan = PlanLLM(get_llm(spec, cache=False), tmp_path / "plan.jsonl")
    if scored:
        assert set(baseline_scores(plan, user("rate it: N/A"), ["1", "2", "3"])) == {"1", "2", "3"}
        graded = plan.choose(user("grade it: 4"), list(GRADES))  # as sure as its text: CRAG's dry run keeps its path
        assert graded.scores and grade_score(graded) == grade_score(replace(graded, scores=None)) == 0.5
    else:
        with pytest.raises(ValueError, match="calibration needs option scores.*logprobs choose mode"):
            baseline_scores(plan, user("rate it: N/A"), ["1", "2", "3"])
    assert {r["kind"] for r in read_jsonl(tmp_path / "plan.jsonl")} == {"choose"}  # planned, no model loaded


# ---------------------------------------------------------------- the plan of a profile, end to end


def test_a_fast_plan_is_within_5_percent_of_the_exact_plan(capsys, notebooks_in_this_process):
    """The fast plan dry-runs the notebooks whose calls are a sum over characters on 3 of the 15 characters (spread
    over the persona sizes) and scales by 5; the exact plan dry-runs all 15. Calls, calls to pay and tokens agree
    within 5% for every notebook and model. (The dry runs run one at a time in this process: their counts are the
    kernels', and a kernel's own cost is not what is measured.)"""
    profile = str(Path(__file__).parent / "fixtures" / "profiles" / "plan_sample.yaml")
    books = ["03", "04", "05", "07"]
    exact = reproduce.plan(profile, books, workers=1, exact=True)
    fast = reproduce.plan(profile, books, workers=1)
    printed = capsys.readouterr().out
    assert ("A fast plan: 03_chunk_usage, 04_personality, 05_qa_evaluation, 07_judge_agreement dry-run on 3 "
            "characters (anya-forger, nina-iseri, edward-elric;") in printed and "on 3 of 15 characters" in printed
    assert [(r["notebook"], r["model"]) for r in fast] == [(r["notebook"], r["model"]) for r in exact]
    for e, f in zip(exact, fast, strict=True):
        assert (e["scaled"], f["scaled"]) == (1.0, 5.0)
        for key in ("calls", "to_pay", "in_tokens", "out_tokens"):
            assert abs(f[key] - e[key]) <= 0.05 * e[key], (e["notebook"], key, e[key], f[key])


def test_a_question_asked_by_the_explorer_notebook_is_counted_by_the_plan(tmp_path, fixture_data,
                                                                          notebooks_in_this_process):
    """Notebook 00 answers a profile's ``question`` headlessly: its calls are the plan's like every notebook's (a dry
    run, never a call the plan does not show)."""
    profile = tmp_path / "asks.yaml"
    profile.write_text(f"defaults: {{llm: fake, data_dir: {fixture_data}}}\nnotebooks:\n  00_explore:\n"
                       "    {character: ada-lindqvist, methods: [no_rag], question: 'Who are you?'}\n")
    (row,) = reproduce.plan(str(profile), ["00"], workers=1)
    assert (row["notebook"], row["calls"]) == ("00_explore", 1)  # No RAG's one answer


def test_a_dry_run_draws_no_figure(tmp_path, fixture_data):
    """Its numbers come from the stand-in and its files are thrown away: no PDF, PNG or CSV, the figure closed."""
    import matplotlib.pyplot as plt
    import pandas as pd

    from rpa_lib.experiment import Experiment

    for mode, written in (({"plan_file": str(tmp_path / "plan.jsonl")}, []), ({}, ["f.csv", "f.pdf", "f.png"])):
        ex = Experiment("05_qa_evaluation", {"data_dir": str(fixture_data), "llm": "fake", "run_mode": mode,
                                             "figures_dir": str(tmp_path / f"figures-{len(mode)}")})
        fig = plt.figure()
        ex.save_figure(fig, "f", data=pd.DataFrame({"x": [1]}))
        assert sorted(p.name for p in ex.figures.glob("*")) == written
        assert plt.fignum_exists(fig.number) == bool(written)
        plt.close(fig)


def test_the_sample_spreads_over_persona_sizes():
    sizes = {f"c{i:02d}": 1000 + 10 * i for i in range(15)}
    assert character_sample(sizes, 3) == ["c02", "c07", "c12"]  # the middle of each third
    assert character_sample(sizes, 20) == sorted(sizes)  # fewer characters than the sample: all of them


def test_plan_is_a_command_line_option():
    with pytest.raises(SystemExit, match="no notebook matches --only 99"):
        reproduce.main(["--plan", "--profile", "smoke", "--notebooks", "99"])


# ---------------------------------------------------------------- the budget


def budgeted(tmp_path, limit: float, ledger: str) -> dict:
    """The run mode of a run with a budget of ``limit`` dollars kept in ``tmp_path/ledger``."""
    return {"budget_usd": limit, "budget_ledger": str(tmp_path / ledger)}


def test_budget_stops_the_run_across_threads_and_a_rerun_pays_only_the_rest(tmp_path, monkeypatch):
    cache = tmp_path / "llm.sqlite"
    questions = [f"question {i} " + "word " * 500 for i in range(20)]
    # one call: 502 prompt tokens and 1 completion token at $2 / $8 per million: $0.001012; it holds the most it
    # can cost, at least 2,511 input tokens (one a byte) and 16 output tokens: $0.00515
    with MockServer(answer=lambda body: "ok", latency=0.01) as server:
        llm = get_llm("openai:gpt-4.1", base_url=server.base_url, api_key="sk-test", cache=cache, retry=FAST,
                      max_workers=4, mode=budgeted(tmp_path, 0.012, "first.json"))
        with pytest.raises(BudgetExceeded) as err:
            llm.map(lambda q: llm.chat(user(q), max_tokens=16).text, questions, desc="interviews", progress=False)
        assert isinstance(err.value, LLMFatalError)
        message = str(err.value)
        assert message.startswith("interviews: stopped at item ") and "budget of $0.012 reached" in message
        assert "spent on" in message and "run the same command again with a larger budget" in message
        first = server.requests
        spent = Budget(0.012, tmp_path / "first.json").spent
        assert 0 < first < 20 and cache_rows(cache) == first
        assert spent == pytest.approx(first * 0.001012) and spent <= 0.012

        llm = get_llm("openai:gpt-4.1", base_url=server.base_url, api_key="sk-test", cache=cache, retry=FAST,
                      max_workers=4, mode=budgeted(tmp_path, 1.0, "second.json"))
        outcomes = llm.map(lambda q: llm.chat(user(q), max_tokens=16).text, questions, progress=False)
        assert all(o.ok for o in outcomes)
        assert server.requests - first == 20 - first  # the calls of the first run came from the cache
        assert Budget(1.0, tmp_path / "second.json").spent == pytest.approx((20 - first) * 0.001012)


def test_calls_in_flight_near_the_limit_never_take_the_budget_past_it():
    # each reply is 11 words, within the choice's max_tokens (16 + 3) but past a guess from the longest option, and
    # each prompt counts more tokens than 4 characters a token would say: holds at the estimate would book more
    with MockServer(answer=lambda body: "yes" + " indeed" * 10, latency=0.05) as server:
        budget = Budget(0.004)
        llm = get_llm("openai:gpt-4.1", base_url=server.base_url, api_key="sk-test", cache=False, retry=FAST,
                      max_workers=8, choose_mode="text").with_budget(budget)
        questions = [f"question {i} " + "a " * 200 for i in range(20)]
        with pytest.raises(BudgetExceeded):
            llm.map(lambda q: llm.choose(user(q), ["yes", "no"]).text, questions, progress=False)
        assert server.requests > 1 and 0 < budget.spent <= 0.004


HOLDER = """
import sys
from pathlib import Path
from rpa_lib.llm.budget import Budget
Budget(1.0, Path(sys.argv[1])).hold(0.9, "the other process")
print("held", flush=True)
sys.stdin.read()  # holds until killed
"""


def test_processes_sharing_a_ledger_count_each_others_holds_and_a_dead_one_holds_nothing(tmp_path):
    import subprocess
    import sys

    ledger = tmp_path / "budget.json"
    other = subprocess.Popen([sys.executable, "-c", HOLDER, str(ledger)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        assert other.stdout.readline().strip() == "held"
        here = Budget(1.0, ledger)
        with pytest.raises(BudgetExceeded, match=r"\$0.9000 by other processes"):
            here.hold(0.2, "this process")
        held = here.hold(0.1, "this process")  # within the limit with the other's hold
    finally:
        other.kill()
        other.wait()
    here.settle(held, 0.1)
    here.settle(here.hold(0.85, "after the other died"), 0.0)  # a killed process holds nothing
    assert here.spent == pytest.approx(0.1) and json.loads(ledger.read_text())["held"] == {}


def test_an_interrupt_while_the_ledger_is_written_keeps_what_it_booked_before(tmp_path, monkeypatch):
    import rpa_lib.llm.budget as budget_module

    ledger = tmp_path / "budget.json"
    budget = Budget(1.0, ledger)
    budget.settle(budget.hold(0.3, "a call"), 0.25)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(budget_module.json, "dumps", interrupted)  # Ctrl-C while the new ledger is being written
    with pytest.raises(KeyboardInterrupt):
        budget.hold(0.3, "the next call")
    monkeypatch.undo()
    assert json.loads(ledger.read_text())["spent"] == pytest.approx(0.25)
    assert Budget(1.0, ledger).spent == pytest.approx(0.25)


def test_a_model_with_no_price_is_refused_under_a_budget_and_free_backends_are_not_limited(tmp_path, monkeypatch):
    mode = budgeted(tmp_path, 1.0, "ledger.json")
    with pytest.raises(LLMFatalError, match=r"price of model 'qwen3-32b' is unknown: set RPA_PRICE_IN and RPA_PRICE_OUT"):
        get_llm("openai:qwen3-32b", base_url="http://127.0.0.1:9/v1", cache=False, mode=mode)
    assert get_llm("fake", cache=False, mode=mode)._budget is None
    monkeypatch.setenv("RPA_PRICE_IN", "0.5")
    monkeypatch.setenv("RPA_PRICE_OUT", "1")
    assert get_llm("openai:qwen3-32b", base_url="http://127.0.0.1:9/v1", cache=False, mode=mode)._budget is not None


def test_reproduce_refuses_to_start_when_a_notebook_model_has_no_price(tmp_path, monkeypatch):
    monkeypatch.setenv("RPA_LLM_MODEL", "openai:qwen3-32b")
    monkeypatch.setenv("RPA_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("RPA_BUDGET_USD", "2")
    before = dict(os.environ)
    with pytest.raises(SystemExit, match=r"03_chunk_usage: cannot run under the budget: .*'qwen3-32b' is unknown"):
        reproduce.run("paper", ["03"], output_dir=tmp_path / "out")
    assert not (tmp_path / "out").exists()
    assert dict(os.environ) == before  # the profile's env (its judge) is not left behind for later tests


@pytest.mark.parametrize("notebook, setting", [("03_chunk_usage", "gs_llm: openai:my-served-model"),
                                               ("06_human_evaluation", "rater_models: [fake, my-served-model]")])
def test_reproduce_checks_the_price_of_every_llm_a_notebook_declares(tmp_path, notebook, setting):
    """Not only the role-play LLM and the judge: GS's own LLM and the rater panel's would stop the run midway."""
    profile = tmp_path / "served.yaml"
    profile.write_text(f"defaults: {{llm: fake, evaluator_llm: fake}}\nbudget_usd: 1\nnotebooks:\n  {notebook}: {{{setting}}}\n")
    with pytest.raises(SystemExit, match=rf"{notebook}: cannot run under the budget: .*'my-served-model' is unknown"):
        reproduce.run(str(profile), [notebook[:2]], output_dir=tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_budget_usd_in_a_profile_is_checked(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "PROFILES_DIR", tmp_path)
    (tmp_path / "bad.yaml").write_text("budget_usd: -3\n")
    with pytest.raises(SystemExit, match="budget_usd: expected a non-negative number of dollars, got -3"):
        reproduce.load_profile("bad")
    (tmp_path / "good.yaml").write_text("budget_usd: 2.5\n")
    assert reproduce.budget_of(reproduce.load_profile("good")) == 2.5
    monkeypatch.setenv("RPA_BUDGET_USD", "1")  # the environment wins
    assert reproduce.budget_of(reproduce.load_profile("good")) == 1.0


def write_notebook(path, code: str) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    params = nbformat.v4.new_code_cell("results_dir = None  # where to write\nrun_mode = {}  # what reproduce passes")
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_code_cell(code)]
    nbformat.write(nb, path)


ASK = """from rpa_lib.llm import get_llm
llm = get_llm("fake", mode=run_mode)
def ask(i):
    return llm.chat([{{"role": "user", "content": "{name} question %d " % i + "word " * 100}}], max_tokens=10).text
{run}
print(llm.usage.summary())"""


def test_budget_is_shared_by_the_notebooks_of_a_run_and_a_rerun_resumes_from_the_cache(tmp_path, monkeypatch,
                                                                                        capsys):
    books = tmp_path / "notebooks"
    books.mkdir()
    write_notebook(books / "01_first.ipynb", ASK.format(name="first", run="for i in range(10):\n    ask(i)"))
    write_notebook(books / "02_second.ipynb",
                   ASK.format(name="second", run="llm.map(ask, range(10), progress=False)"))
    monkeypatch.setattr(paths, "NOTEBOOKS_DIR", books)
    monkeypatch.setattr(paths, "PROFILES_DIR", tmp_path)
    (tmp_path / "tiny.yaml").write_text("description: two notebooks of fake calls\nbudget_usd: 1.5\n")
    # the fake counts words: 103 prompt + 3 completion tokens a call, at $1000 per million: $0.106 a call
    monkeypatch.setenv("RPA_PRICE_IN", "1000")
    monkeypatch.setenv("RPA_PRICE_OUT", "1000")

    with pytest.raises(SystemExit) as info:
        reproduce.run("tiny", output_dir=tmp_path / "out")
    assert info.value.code == 1
    captured = capsys.readouterr()
    assert "[1/2] 01_first: ok" in captured.out and "[2/2] 02_second: FAILED" in captured.out
    assert re.search(r"raised BudgetExceeded: .*budget of \$1\.50 reached: \$1\.\d+ spent on 1\d uncached call",
                     captured.err)
    spent = float(re.search(r"budget: \$([\d.]+) of \$1\.50 spent", captured.out).group(1))
    paid_first = round(spent / 0.106)
    assert 10 < paid_first < 20 and spent <= 1.5

    monkeypatch.setenv("RPA_BUDGET_USD", "5")  # the environment overrides the profile
    reproduce.run("tiny", output_dir=tmp_path / "out")
    out = capsys.readouterr().out
    spent = float(re.search(r"budget: \$([\d.]+) of \$5\.00 spent", out).group(1))
    assert spent == pytest.approx((20 - paid_first) * 0.106)  # only the calls the first run did not make


def test_a_run_mode_is_declared_and_a_typo_is_an_error():
    """The run mode reaches a notebook as its run_mode parameter: known keys only, amounts checked, {} runs normally."""
    from rpa_lib.llm import RunMode

    assert RunMode.of(None) == RunMode.of({}) == RunMode()
    assert RunMode.of({"budget_usd": "2.5"}).budget_usd == 2.5
    with pytest.raises(ValueError, match=r"run_mode: unknown key\(s\) \['plan'\]; known: \['plan_file', 'budget_usd'"):
        RunMode.of({"plan": "x.jsonl"})
    with pytest.raises(ValueError, match="run_mode budget_usd must be a non-negative number of dollars"):
        RunMode.of({"budget_usd": -1})
    assert get_llm("fake", mode=RunMode()).__class__ is FakeLLM  # the default wraps nothing


def test_a_call_under_auto_holds_the_most_any_mode_it_may_fall_back_to_can_cost(monkeypatch):
    """Under auto a call may end in any mode of its chain, each with a body of its own (the schema in the format and
    the prompt, or an example in the prompt alone): the hold covers the largest; a fixed mode holds its own body's
    bound."""
    from rpa_lib.llm.budget import body_tokens
    from rpa_lib.llm.modes import CHAINS

    schema = {"type": "object", "properties": {f"field_{i}": {"type": "string", "description": "a long description " * 3}
                                               for i in range(8)}, "required": [f"field_{i}" for i in range(8)]}
    req = Request("structured", user("Describe the character."), max_tokens=200, schema=schema)
    auto = get_llm("openai:gpt-4.1", base_url="http://127.0.0.1:9/v1", api_key="sk-test", cache=False)
    bounds = [body_tokens(auto.body(req, mode), most=True) for mode in CHAINS["structured"]]
    assert len(set(bounds)) > 1  # the bodies differ
    assert auto._most_tokens(req) == (max(i for i, _ in bounds), max(o for _, o in bounds))
    real = auto.body
    monkeypatch.setattr(auto, "body", lambda req, mode: {**real(req, mode), "messages": user("x" * 9000)}
                        if mode == "text" else real(req, mode))  # the last mode with the longest body
    assert auto._most_tokens(req)[0] == body_tokens(auto.body(req, "text"), most=True)[0] > bounds[0][0]
    monkeypatch.undo()
    fixed = get_llm("openai:gpt-4.1", base_url="http://127.0.0.1:9/v1", api_key="sk-test", cache=False,
                    structured_mode="json_schema")
    assert fixed._most_tokens(req) == body_tokens(fixed.body(req, "json_schema"), most=True)
