"""Capability negotiation: a server that rejects a ``response_format`` (as llama.cpp's server does, with a 500
whose body is a validation error) gets the next mode at once, never a retry; the move is remembered per server,
said once in the log and recorded in the usage dict; an explicitly set mode is never changed. And the judge role
of ``get_llm``."""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor

import pytest

from benchmarks.mock_server import MockServer
from rpa_lib.llm import LLMFatalError, RetryPolicy, clear_caches, get_llm, judge_llm
from rpa_lib.llm.answers import example_instruction, schema_instruction

FAST = RetryPolicy(attempts=4, base_delay=0.001, max_delay=0.001)
SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 1}},
          "required": ["name", "age"]}


@pytest.fixture(autouse=True)
def _forget_servers():
    clear_caches()
    yield
    clear_caches()


def user(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]


def client(server: MockServer, **options):
    return get_llm("openai:small", base_url=server.base_url, api_key="sk-test",
                   **{"cache": False, "retry": FAST, "timeout": 2.0, **options})


def formats(server: MockServer) -> list[str]:
    return [(b.get("response_format") or {}).get("type", "logprobs" if b.get("logprobs") else "none")
            for b in server.bodies]


def test_choose_falls_back_once_per_server_and_says_so(caplog):
    caplog.set_level(logging.WARNING, logger="rpa_lib.llm")
    with MockServer(lambda body: "no", rejects=("json_schema",)) as server:
        llm = client(server)
        assert llm.choose(user("Is Ada calm?"), ["yes", "no"]).text == "no"
        assert llm.choose(user("Is Bo calm?"), ["yes", "no"]).text == "no"
        assert formats(server) == ["json_schema", "logprobs", "logprobs"]  # rejected once, never retried
        assert llm.usage.retries == 0 and llm.usage.errors == 0 and llm.usage.to_dict()["modes"] == {"choose": "logprobs"}
        other = client(server)  # another object for the same server: remembered for the run
        other.choose(user("Is Cy calm?"), ["yes", "no"])
        assert formats(server)[-1] == "logprobs"
    assert caplog.text.count("rejected choose mode json_schema") == 1 and "using logprobs" in caplog.text


def test_choose_falls_back_to_text_when_logprobs_are_rejected_too():
    with MockServer(lambda body: "yes", rejects=("json_schema", "logprobs")) as server:
        assert client(server).choose(user("Is Ada calm?"), ["yes", "no"]).text == "yes"
        assert formats(server) == ["json_schema", "logprobs", "none"]


def test_structured_walks_the_whole_chain_and_uses_an_example_object_unaided():
    answer = '{"name": "Ada", "age": 36}'
    with MockServer(lambda body: answer, rejects=("json_schema", "json_object_schema", "json_object")) as server:
        llm = client(server)
        assert llm.structured(user("Describe Ada"), SCHEMA).data == {"name": "Ada", "age": 36}
        assert formats(server) == ["json_schema", "json_object", "json_object", "none"]
        assert server.bodies[1]["response_format"] == {"type": "json_object", "schema": SCHEMA}
        assert server.bodies[-1]["messages"][-1]["content"].endswith(example_instruction(SCHEMA))
        assert '"<name>"' in example_instruction(SCHEMA) and "Schema" not in example_instruction(SCHEMA)
        assert llm.usage.to_dict()["modes"] == {"structured": "text"}


def test_a_mode_that_enforces_the_schema_shows_the_schema_a_fallback_that_does_not_an_example():
    with MockServer(lambda body: '{"name": "Ada", "age": 36}', rejects=("json_schema", "json_object_schema")) as server:
        assert client(server).structured(user("Describe Ada"), SCHEMA).data == {"name": "Ada", "age": 36}
    assert formats(server) == ["json_schema", "json_object", "json_object"]
    schema, object_schema, plain = (body["messages"][-1]["content"] for body in server.bodies)
    assert schema.endswith(schema_instruction(SCHEMA))  # where auto starts: not a fallback
    assert object_schema.endswith(schema_instruction(SCHEMA))  # llama.cpp's grammar from the schema
    assert plain.endswith(example_instruction(SCHEMA))  # nothing enforces the schema: an example


def test_sixteen_concurrent_calls_move_the_mode_once():
    with MockServer(lambda body: "no", rejects=("json_schema",), latency=0.02) as server:
        llm = client(server, max_workers=16)
        with ThreadPoolExecutor(16) as pool:
            texts = list(pool.map(lambda i: llm.choose(user(f"Is {i} calm?"), ["yes", "no"]).text, range(16)))
        assert texts == ["no"] * 16 and llm.usage.errors == 0
        assert formats(server).count("logprobs") == 16 and formats(server).count("json_schema") <= 16


def test_an_explicit_mode_is_never_changed(monkeypatch):
    monkeypatch.setenv("RPA_LLM_CHOOSE_MODE", "json_schema")
    with MockServer(rejects=("json_schema",)) as server:
        llm = client(server)
        with pytest.raises(LLMFatalError, match="does not support choose_mode 'json_schema'.*RPA_LLM_CHOOSE_MODE"):
            llm.choose(user("Is Ada calm?"), ["yes", "no"])
        assert server.requests == 1 and llm.usage.retries == 0


def test_modes_come_from_settings_per_role_and_key_the_cache_as_before(monkeypatch):
    monkeypatch.setenv("RPA_LLM_CHOOSE_MODE", "logprobs")
    monkeypatch.setenv("RPA_JUDGE_STRUCTURED_MODE", "json_object_schema")
    monkeypatch.setenv("RPA_JUDGE_MODEL", "judge-model")
    monkeypatch.setenv("RPA_JUDGE_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("RPA_JUDGE_API_KEY", "sk-judge")
    agent = get_llm("openai:agent", base_url="http://127.0.0.1:9/v1")
    judge = judge_llm(default="openai:agent")
    assert (agent.choose_mode, agent.structured_mode) == ("logprobs", "auto")
    assert (judge.model, judge.choose_mode, judge.structured_mode) == ("judge-model", "auto", "json_object_schema")
    assert judge._explicit_key == "sk-judge"
    assert judge_llm("fake:explicit").label == "explicit"  # an explicit spec wins over RPA_JUDGE_MODEL
    # auto keys as json_schema did: caches written before negotiation existed stay valid
    assert judge._key_extra()["choose_mode"] == "json_schema"
    monkeypatch.setenv("RPA_LLM_CHOOSE_MODE", "grammar")
    with pytest.raises(ValueError, match="RPA_LLM_CHOOSE_MODE .* must be auto or one of json_schema, logprobs, text"):
        get_llm("openai:agent", base_url="http://127.0.0.1:9/v1")


def test_the_judge_falls_back_to_the_role_play_settings(monkeypatch):
    assert judge_llm(default="fake:agent").label == "agent"
    monkeypatch.setenv("RPA_LLM_MODEL", "fake:env-agent")
    assert judge_llm().label == "env-agent"
    monkeypatch.setenv("RPA_JUDGE_BASE_URL", "http://127.0.0.1:9/v1")
    with pytest.raises(ValueError, match="RPA_JUDGE_BASE_URL is set but not RPA_JUDGE_MODEL"):
        judge_llm()
