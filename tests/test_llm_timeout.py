"""A server that accepts connections and never answers fails a call with a clear error in bounded time:
``RPA_LLM_TIMEOUT`` seconds per request, ``timeout x attempts + backoff`` in all."""

from __future__ import annotations

import time

import pytest

from benchmarks.mock_server import MockServer
from rpa_lib.llm import LLMError, RetryPolicy, get_llm
from rpa_lib.llm.openai_backend import DEFAULT_TIMEOUT, request_timeout


def user(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]


def test_the_timeout_setting(monkeypatch, tmp_path):
    assert request_timeout() == DEFAULT_TIMEOUT == 60.0
    assert get_llm("openai:m", base_url="http://127.0.0.1:9/v1").timeout == 60.0
    monkeypatch.setenv("RPA_LLM_TIMEOUT", "12.5")
    assert get_llm("openai:m", base_url="http://127.0.0.1:9/v1").timeout == 12.5
    assert get_llm("openai:m", base_url="http://127.0.0.1:9/v1", timeout=3).timeout == 3  # explicit wins
    for bad in ("soon", "0", "-1", "nan", "inf"):
        monkeypatch.setenv("RPA_LLM_TIMEOUT", bad)
        with pytest.raises(ValueError, match="RPA_LLM_TIMEOUT .* must be a positive number of seconds"):
            get_llm("openai:m", base_url="http://127.0.0.1:9/v1")
    monkeypatch.delenv("RPA_LLM_TIMEOUT")
    (tmp_path / ".env").write_text("RPA_LLM_TIMEOUT=7\n")  # conftest points the .env lookup at tmp_path
    assert request_timeout() == 7.0


def test_worst_case_is_timeout_times_attempts_plus_backoff():
    assert RetryPolicy().worst_case(60) == 6 * 60 + 1 + 2 + 4 + 8 + 16 == 391
    assert RetryPolicy(attempts=1).worst_case(5) == 5
    assert RetryPolicy(attempts=8, base_delay=1, max_delay=10).worst_case(2) == 16 + 1 + 2 + 4 + 8 + 10 + 10 + 10
    llm = get_llm("openai:m", base_url="http://127.0.0.1:9/v1", timeout=10)
    assert llm.worst_case_seconds == 91


def test_a_hanging_server_gives_a_clear_error_in_bounded_time(monkeypatch):
    monkeypatch.setenv("RPA_LLM_TIMEOUT", "0.3")
    retry = RetryPolicy(attempts=3, base_delay=0.05, max_delay=0.05)
    with MockServer(script=["hang"] * 10, hang_seconds=30) as server:
        llm = get_llm("openai:m", base_url=server.base_url, api_key="sk-x", cache=False, retry=retry)
        start = time.monotonic()
        with pytest.raises(LLMError) as err:
            llm.chat(user("hello"))
        took = time.monotonic() - start
    assert llm.worst_case_seconds == pytest.approx(3 * 0.3 + 0.1)
    assert 0.9 <= took <= llm.worst_case_seconds + 1.0, took
    assert str(err.value) == ("chat call 'hello' failed after 3 attempts: timed out after 0.3 s (RPA_LLM_TIMEOUT); "
                              "a call gives up after at most 1 s (3 attempts and backoff)")
    assert server.requests == 3
