"""The OpenAI-compatible backend, driven through the real ``openai`` client against the mock server:
chat, the three choice modes, structured output, re-asks, and a retry for every fault kind."""

from __future__ import annotations

import json
import time
from email.utils import formatdate
from types import SimpleNamespace

import pytest

from benchmarks.mock_server import FAULTS, MockServer
from rpa_lib.llm import PRICES, LLMError, LLMFatalError, RetryPolicy, get_llm
from rpa_lib.llm.budget import Budget
from rpa_lib.llm.openai_backend import _client_class, public_url

FAST = RetryPolicy(attempts=4, base_delay=0.001, max_delay=0.001)
SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 1}},
          "required": ["name", "age"]}




def user(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]


def client(server: MockServer, **options):
    options = {"cache": False, "retry": FAST, "timeout": 2.0, **options}
    return get_llm("openai:gpt-4.1-mini", base_url=server.base_url, api_key="sk-test", **options)


def test_chat_sends_the_request_and_counts_tokens():
    with MockServer() as server:
        llm = client(server)
        reply = llm.chat(user("Who are you?"), temperature=0.5, max_tokens=20, seed=3)
        assert reply.text == "echo: Who are you?" and reply.model == "gpt-4.1-mini"
        assert (reply.prompt_tokens, reply.completion_tokens) == (3, 4)
        body = server.bodies[0]
        assert body["model"] == "gpt-4.1-mini" and body["messages"] == user("Who are you?")
        assert (body["temperature"], body["max_tokens"], body["seed"]) == (0.5, 20, 3)
        llm.chat(user("Who are you?"), sample=1)
        assert server.bodies[1]["seed"] != 0  # another sample, another seed


def test_choose_with_a_strict_json_schema():
    with MockServer() as server:
        reply = client(server).choose(user("Is Ada calm? I would say no."), ["yes", "no"])
        assert reply.text == "no" and reply.kind == "choose"
        fmt = server.bodies[0]["response_format"]
        assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
        assert fmt["json_schema"]["schema"]["properties"]["answer"]["enum"] == ["yes", "no"]


def test_choose_with_logprobs_gives_scores():
    with MockServer(lambda body: "Agree") as server:
        reply = client(server, choose_mode="logprobs").choose(user("Rate it"), ["Disagree", "Agree"])
        assert reply.text == "Agree" and reply.scores["Agree"] == pytest.approx(-0.05)
        assert reply.scores["Disagree"] == float("-inf")
        assert server.bodies[0]["logprobs"] is True and server.bodies[0]["top_logprobs"] == 20


def test_choose_text_mode_reasks_until_valid():
    answers = iter(["I am not sure", "**No.**"])
    with MockServer(lambda body: next(answers)) as server:
        llm = client(server, choose_mode="text")
        assert llm.choose(user("Is Ada calm?"), ["yes", "no"]).text == "no"
        assert "response_format" not in server.bodies[0] and server.requests == 2 and llm.usage.reasks == 1
        assert "is not one of" in server.bodies[1]["messages"][-1]["content"]


def test_structured_output_and_reask():
    with MockServer() as server:
        reply = client(server).structured(user("Describe Ada"), SCHEMA)
        assert reply.data == {"name": "fake name", "age": 1}
        fmt = server.bodies[0]["response_format"]
        assert fmt["type"] == "json_schema" and fmt["json_schema"]["schema"] == SCHEMA

    answers = iter(["Here you go: {broken", '{"name": "Ada"}', '{"name": "Ada", "age": 30}'])
    with MockServer(lambda body: next(answers)) as server:
        llm = client(server, structured_mode="json_object")
        assert llm.structured(user("Describe Ada"), SCHEMA).data == {"name": "Ada", "age": 30}
        assert server.bodies[0]["response_format"] == {"type": "json_object"}
        assert "'age' is a required property" in server.bodies[2]["messages"][-1]["content"]
        assert llm.usage.reasks == 2 and llm.usage.requests == 3

    with MockServer(lambda body: "no json here") as server:
        with pytest.raises(LLMError, match=r"structured call 'Describe Ada': no valid JSON object after 2 attempts"):
            client(server).structured(user("Describe Ada"), SCHEMA, max_retries=1)
        assert server.requests == 2


@pytest.mark.parametrize("fault", FAULTS)
def test_every_fault_kind_is_retried(fault):
    with MockServer(script=[fault, fault], hang_seconds=2.0) as server:
        llm = client(server, timeout=0.3)
        reply = llm.chat(user("Question 7"))
        assert reply.text == "echo: Question 7"
        assert server.requests == 3 and server.served[fault] == 2  # one retry layer: never both retrying a fault
        # transport faults are the openai client's retries (the retry count it sends); a 200 it accepts whose body
        # is malformed or holds no choices is retried by our layer, each a fresh request of the client, and paid for
        by_client = fault not in ("malformed", "empty")
        assert llm.usage.retries == 2 and llm.usage.requests == (1 if by_client else 3)
        assert [h.get("x-stainless-retry-count") for h in server.headers] == (["0", "1", "2"] if by_client else ["0"] * 3)


def test_a_200_rejected_as_malformed_is_paid_for_in_the_usage_the_budget_and_the_reply():
    with MockServer(script=["empty", "malformed"]) as server:
        budget = Budget(1.0)
        llm = client(server).with_budget(budget)
        reply = llm.chat(user("Question 7"), max_tokens=20)
        # the reply with no choices reports its usage (2 prompt words, 3 completion words, as the answer has); the
        # malformed one none, so the budget books what it held: 10 bytes, 4 for the message, 3 for the reply; 20 out
        assert llm.usage.requests == 3 and (reply.prompt_tokens, reply.completion_tokens) == (4, 6)
        assert (llm.usage.prompt_tokens, llm.usage.completion_tokens) == (4, 6)
        assert budget.spent == pytest.approx(PRICES["gpt-4.1-mini"].cost(4 + 17, 6 + 20))


def test_gives_up_after_the_limit_naming_the_item():
    with MockServer(script=["500"] * 10) as server:
        llm = client(server)
        outcomes = llm.map(lambda q: llm.chat(user(q)), ["Question about Ada"], progress=False)
        assert outcomes[0].error.startswith("LLMError: chat call 'Question about Ada' failed after 4 attempts: HTTP 500")
        assert server.requests == 4


def test_retry_after_is_honoured():
    with MockServer(script=["429"], retry_after=0.4) as server:
        llm = client(server)
        start = time.monotonic()
        assert llm.chat(user("hello")).text == "echo: hello"
        assert time.monotonic() - start >= 0.4 and server.requests == 2


def test_a_retry_after_over_two_minutes_is_the_clients_to_refuse_and_not_retried_by_us():
    with MockServer(script=["429"], retry_after=200) as server:
        llm = client(server)
        start = time.monotonic()
        with pytest.raises(LLMError, match=r"chat call 'hello' failed after 1 attempts: HTTP 429: rate limited"):
            llm.chat(user("hello"))
        assert time.monotonic() - start < 5 and server.requests == 1 and llm.usage.retries == 0


def test_client_errors_are_not_retried():
    with MockServer(api_key="sk-right") as server:
        llm = get_llm("openai:m", base_url=server.base_url, api_key="sk-wrong-key", cache=False, retry=FAST)
        with pytest.raises(LLMFatalError, match=r"chat call 'hello': HTTP 401") as err:
            llm.chat(user("hello"))
        assert llm.usage.retries == 0 and "sk-wrong-key" not in str(err.value)


def test_the_client_waits_our_policy_after_its_own_reading_of_retry_after():
    import httpx2

    client = _client_class()(api_key="sk-x", base_url="http://127.0.0.1:9/v1", max_retries=3)
    client.retry_policy = RetryPolicy(base_delay=1.0, max_delay=4.0, jitter=0.0)
    options = SimpleNamespace(get_max_retries=lambda default: default)

    def wait(remaining: int, headers: dict | None = None) -> float:
        return client._calculate_retry_timeout(remaining, options, httpx2.Headers(headers) if headers else None)

    assert [wait(3), wait(2), wait(1)] == [1.0, 2.0, 4.0]  # retries 1, 2, 3: the policy's backoff
    assert wait(3, {"retry-after-ms": "1500"}) == 1.5 and wait(3, {"retry-after": "3"}) == 3.0
    assert 8 < wait(3, {"retry-after": formatdate(time.time() + 10, usegmt=True)}) <= 10
    assert wait(3, {"retry-after": "soon"}) == 1.0 and wait(3, {"retry-after": "0"}) == 1.0


def test_helpers():
    assert public_url("http://user:pw@127.0.0.1:8000/v1?key=secret#x") == "http://127.0.0.1:8000/v1"
    policy = RetryPolicy(base_delay=1.0, max_delay=4.0, jitter=0.5)
    assert 0.5 <= policy.delay(1) <= 1.0 and 2.0 <= policy.delay(5) <= 4.0
    assert policy.delay(1, retry_after=3.0) == 3.0 and policy.delay(1, retry_after=1e6) == 120.0


def test_mock_server_counts_and_scripts():
    with MockServer(script=["empty", None], fault_rate=0.0) as server:
        llm = client(server)
        llm.chat(user("a"))
        llm.chat(user("b"))
        assert server.requests == 3 and dict(server.served) == {"empty": 1, "ok": 2}
        assert json.loads(json.dumps(server.bodies))[0]["messages"] == user("a")
    with pytest.raises(ValueError):
        MockServer(faults=("teapot",))
