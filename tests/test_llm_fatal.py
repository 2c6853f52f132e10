"""Fatal errors (credentials refused, permission denied, unknown model or endpoint, no key) stop at once: one
distinct exception, no retry, and ``map`` raises at the first instead of failing every item the same way."""

from __future__ import annotations

import threading

import pytest

from benchmarks.mock_server import MockServer
from rpa_lib.llm import FakeLLM, LLMError, LLMFatalError, RetryPolicy, Transient, get_llm

FAST = RetryPolicy(attempts=4, base_delay=0.001, max_delay=0.001)


def user(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]


def client(server: MockServer, model: str = "gpt-4.1-mini", **options):
    options = {"cache": False, "retry": FAST, "timeout": 2.0, **options}
    return get_llm(f"openai:{model}", base_url=server.base_url, api_key="sk-test", **options)


@pytest.mark.parametrize("status, hint", [("401", "refused the credentials"), ("403", "permission denied"),
                                          ("404", "check the model name (RPA_LLM_MODEL or the spec) and the base URL")])
def test_fatal_statuses_are_not_retried_and_name_model_and_server(status, hint):
    with MockServer(script=[status] * 5) as server:
        llm = client(server)
        with pytest.raises(LLMFatalError) as err:
            llm.chat(user("hello"))
        message = str(err.value)
        assert message.startswith(f"chat call 'hello': HTTP {status}") and hint in message
        assert f"model 'gpt-4.1-mini' at {server.base_url}" in message
        assert server.requests == 1 and llm.usage.retries == 0 and llm.usage.errors == 1
        assert isinstance(err.value, LLMError)  # callers catching LLMError still catch it
        assert err.value.__cause__ is None and err.value.__context__ is None


@pytest.mark.parametrize("role, model, url, key", [
    ("gs", "the gs_llm parameter", "RPA_GS_BASE_URL or", "RPA_GS_API_KEY, else OPENAI_API_KEY"),
    ("judge", "RPA_JUDGE_MODEL", "RPA_JUDGE_BASE_URL, else RPA_LLM_BASE_URL,", "RPA_JUDGE_API_KEY, else OPENAI_API_KEY")])
def test_a_fatal_status_names_the_settings_of_the_llms_own_role(role, model, url, key, monkeypatch):
    with MockServer(script=["404", "401"], models=("served",), list_models=True) as server:
        def build(name):  # GS from its parameter, the judge from RPA_JUDGE_MODEL: each on its role's settings
            monkeypatch.setenv("RPA_JUDGE_MODEL", name)
            monkeypatch.setenv(f"RPA_{role.upper()}_BASE_URL", server.base_url)
            spec = f"openai:{name}" if role == "gs" else None
            return get_llm(spec, role=role, api_key="sk-test", cache=False, retry=FAST)

        for status, hint in (("404", f"check the model name ({model}) and the base URL ({url}"),
                             ("401", f"check the API key ({key}, or api_key=)")):
            with pytest.raises(LLMFatalError, match=f"HTTP {status}") as err:
                build("served").chat(user("hi"))
            assert hint in str(err.value) and "RPA_LLM_MODEL" not in str(err.value)
        with pytest.raises(LLMFatalError, match=rf"is not served at .*: check the model name \({model}\)$"):
            build("other").chat(user("hi"))


def test_unknown_model_is_fatal():
    with MockServer(models=("served-model",)) as server:
        assert client(server, "served-model").chat(user("hi")).text == "echo: hi"
        with pytest.raises(LLMFatalError, match=r"HTTP 404: .*`other-model` does not exist.*model 'other-model'"):
            client(server, "other-model").chat(user("hi"))


def test_a_400_saying_the_model_does_not_exist_is_fatal_other_400s_are_not():
    llm = get_llm("openai:m", base_url="http://127.0.0.1:9/v1", api_key="sk-x", cache=False)

    fatal = llm._status_failure(400, "The model `m` does not exist or you do not have access to it.")
    assert isinstance(fatal, LLMFatalError) and "model 'm' at http://127.0.0.1:9/v1" in str(fatal)
    other = llm._status_failure(400, "Unsupported parameter: 'seed' is not supported with this model.")
    assert type(other) is RuntimeError and "HTTP 400" in str(other)


def test_missing_key_is_fatal():
    with pytest.raises(LLMFatalError, match="no OpenAI API key for model 'gpt-4.1' at https://api.openai.com/v1"):
        get_llm("openai:gpt-4.1", cache=False).chat(user("hello"))


@pytest.mark.parametrize("workers", [1, 8])
def test_map_stops_at_the_first_fatal_error(workers):
    with MockServer(script=[None, None, "401"] + ["401"] * 200, latency=0.01) as server:
        llm = client(server, max_workers=workers)
        items = [f"question {i}" for i in range(200)]
        with pytest.raises(LLMFatalError) as err:
            llm.map(lambda q: llm.chat(user(q)).text, items, desc="interviews", progress=False)
        message = str(err.value)
        assert message.startswith("interviews: stopped at item ") and " of 200 (" in message
        assert "HTTP 401" in message and server.base_url in message and "sk-test" not in message
        # not one request per item: the calls in flight finish, and a worker may take a few queued items before
        # the stop reaches the pool (more on a loaded machine: 23 with 8 workers seen), never the 200
        assert server.requests < 3 + 5 * workers
        assert err.value.__context__ is None


def test_map_still_records_ordinary_failures_and_retries_transients():
    faults = iter([Transient("HTTP 503")])
    lock = threading.Lock()

    def rule(kind, messages, spec):
        with lock:
            fault = next(faults, None)
        if fault:
            raise fault
        if messages[-1]["content"] == "item 3":
            raise ValueError("bad item")
        return messages[-1]["content"]

    llm = FakeLLM(rule, retry=FAST, max_workers=2)
    outcomes = llm.map(lambda i: llm.chat(user(f"item {i}")).text, range(6), progress=False)
    assert [o.ok for o in outcomes] == [True, True, True, False, True, True] and llm.usage.retries == 1


def test_a_fake_rule_can_raise_a_fatal_error():
    def rule(kind, messages, spec):
        raise LLMFatalError("HTTP 401: refused (model 'x' at http://h/v1)")

    llm = FakeLLM(rule, retry=FAST)
    with pytest.raises(LLMFatalError, match=r"^chat call 'hi': HTTP 401"):
        llm.chat(user("hi"))
    assert llm.usage.retries == 0
    with pytest.raises(LLMFatalError, match=r"^llm: stopped at item 1 of 3 \(0 finished"):
        llm.map(lambda q: llm.chat(user(q)), ["a", "b", "c"], progress=False, workers=1)


def test_a_model_the_server_does_not_list_is_fatal_before_any_call():
    with MockServer(models=("served-model",), list_models=True) as server:
        with pytest.raises(LLMFatalError, match=r"model 'other' is not served at .*; it serves 'served-model'"):
            client(server, "other").chat(user("hi"))
        assert server.requests == 0
        assert client(server, "served-model").chat(user("hi")).text == "echo: hi"


def test_a_client_that_starts_retrying_says_so_once(caplog):
    # a retried call waits with backoff (about 25 s at a dead URL) and looked like a hang: one line says why
    with MockServer(script=["429"] * 6, latency=0.01) as server:
        llm = client(server, max_workers=4)
        with caplog.at_level("WARNING", logger="rpa_lib.llm"):
            llm.map(lambda q: llm.chat(user(q)).text, [f"question {i}" for i in range(6)], progress=False)
    said = [r.getMessage() for r in caplog.records if "retrying" in r.getMessage()]
    assert said == [f"model 'gpt-4.1-mini' at {server.base_url}: a retryable HTTP status; retrying, up to 4 "
                    "attempts a request"]
    assert llm.usage.retries >= 6
