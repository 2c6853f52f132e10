"""Usage accounting: calls, cache hits, tokens, re-asks, retries, time and estimated cost; saving it as JSON."""

from __future__ import annotations

import json

import pytest

from benchmarks.mock_server import MockServer
from rpa_lib.llm import PRICES, FakeLLM, LLMError, RetryPolicy, get_llm, save_usage
from rpa_lib.llm.usage import Price, Usage, price_for


def user(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]


def test_totals_over_hits_reasks_and_failures(tmp_path):
    answers = {"a": "one two", "b": "three"}

    def rule(kind, messages, spec):
        if kind == "choose":
            return "nonsense" if messages[0]["content"] == "fail" else spec[0]
        return answers[messages[-1]["content"]]

    llm = FakeLLM(rule, cache=tmp_path / "llm.sqlite")
    llm.chat(user("a"))
    llm.chat(user("a"))  # hit
    llm.chat(user("b"))
    with pytest.raises(LLMError):
        llm.choose(user("fail"), ["x", "y"], max_retries=1)
    u = llm.usage
    assert (u.calls, u.cache_hits, u.errors, u.requests, u.reasks, u.retries) == (4, 1, 1, 4, 1, 0)
    assert u.completion_tokens == 2 + 1 + 1 + 1 and u.prompt_tokens > 0
    assert u.wall_seconds >= 0 and u.cost_usd is None
    d = u.to_dict()
    assert json.loads(json.dumps(d)) == d and d["label"] == "fake" and d["cost_usd"] is None
    # the failed choice's two
    assert d["replies"] == {"choose": {"replies": 2, "invalid": 2, "valid_share": 0.0, "coerced": 0}}
    assert "4 calls (1 cached, 1 failed)" in u.summary() and "no API cost (runs in this process)" in u.summary()
    llm.reset_usage()
    assert llm.usage.calls == 0 and llm.usage.to_dict()["prompt_tokens"] == 0


def test_cost_from_the_price_table(tmp_path):
    with MockServer() as server:
        llm = get_llm("openai:gpt-4.1-mini", base_url=server.base_url, api_key="sk-test", cache=False,
                      retry=RetryPolicy(attempts=2, base_delay=0.001))
        reply = llm.chat(user("one two three"))
        expected = PRICES["gpt-4.1-mini"].cost(reply.prompt_tokens, reply.completion_tokens)
        assert llm.usage.cost_usd == pytest.approx(expected) and expected > 0
        saved = json.loads(save_usage(llm, tmp_path / "runs" / "usage.json").read_text())
        assert saved["cost_usd"] == pytest.approx(expected, abs=1e-6) and saved["prices_as_of"]
        assert saved["model"] == "gpt-4.1-mini" and saved["calls"] == 1 and "written" in saved
        assert "~$" in llm.usage.summary()


def test_price_lookup():
    assert price_for("gpt-4.1-2025-04-14") == PRICES["gpt-4.1"] == Price(2.0, 8.0)
    assert price_for("gpt-4o-mini") == Price(0.15, 0.60)
    assert price_for("gpt-4.1-mini") != price_for("gpt-4.1")
    assert price_for("qwen3-32b") is None and price_for("local:SmolLM2") is None
    assert Price(2.0, 8.0).cost(1_000_000, 500_000) == pytest.approx(6.0)


def test_usage_is_thread_safe():
    usage = Usage("x")
    llm = FakeLLM(max_workers=8)
    llm.map(lambda i: usage.record_request(1, 2), range(1000), progress=False)
    assert (usage.requests, usage.prompt_tokens, usage.completion_tokens) == (1000, 1000, 2000)
