"""No API key (nor credentials in the base URL) reaches the cache file, the usage JSON, logs, reprs or errors."""

from __future__ import annotations

import logging

import pytest

from rpa_lib.llm import LLMError, MockServer, RetryPolicy, get_llm, save_usage

KEY, WRONG, URL_PASSWORD = "sk-test-SECRET123", "sk-test-WRONG456", "pw-SECRET789"
SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}




def test_no_secret_leaks(tmp_path, monkeypatch, caplog, capsys):
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    texts: list[str] = []
    with MockServer(script=["429", "500"]) as server:
        host = server.base_url.removeprefix("http://")
        monkeypatch.setenv("RPA_LLM_BASE_URL", f"http://user:{URL_PASSWORD}@{host}")
        monkeypatch.setenv("RPA_LLM_MODEL", "gpt-4.1")
        llm = get_llm(cache=tmp_path / "cache" / "llm.sqlite", retry=RetryPolicy(attempts=3, base_delay=0.001))
        llm.chat([{"role": "user", "content": "hello"}])
        llm.choose([{"role": "user", "content": "yes or no?"}], ["yes", "no"])
        llm.structured([{"role": "user", "content": "object"}], SCHEMA)
        llm.chat([{"role": "user", "content": "hello"}])  # a hit
        texts += [repr(llm), str(llm), llm.label, llm.model_id, llm.base_url, repr(llm.usage), llm.usage.summary()]
        texts.append(save_usage(llm, tmp_path / "usage.json").read_text())

    with MockServer(api_key=KEY) as server:  # a rejected key is echoed back by the server
        bad = get_llm("openai:gpt-4.1", base_url=server.base_url, api_key=WRONG, cache=False)
        with pytest.raises(LLMError) as err:
            bad.chat([{"role": "user", "content": "hello"}])
        texts += [str(err.value), repr(err.value), repr(bad)]
        outcomes = bad.map(lambda m: bad.chat(m), [[{"role": "user", "content": "x"}]], progress=False)
        texts.append(outcomes[0].error)

    out = capsys.readouterr()
    texts += [caplog.text, out.out, out.err]
    stored = b"".join(p.read_bytes() for p in (tmp_path / "cache").iterdir())  # the db and its -wal/-shm
    assert b"hello" in stored  # the cache did get written
    for secret in (KEY, WRONG, URL_PASSWORD):
        assert secret.encode() not in stored
        for text in texts:
            assert secret not in text, text
    assert "sk-test" not in "".join(texts[:-3])
