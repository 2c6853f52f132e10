"""No API key, and no credential of the base URL (as written, percent-decoded or base64-encoded as HTTP Basic auth
sends it), reaches an error message, an exception chain, a repr, a log line, the cache file or the usage JSON;
URL credentials are honoured as HTTP Basic auth."""

from __future__ import annotations

import base64
import logging
import traceback

import pytest

from benchmarks.mock_server import MockServer
from rpa_lib.llm import LLMError, LLMFatalError, RetryPolicy, get_llm, save_usage

KEY, WRONG = "sk-test-SECRET123", "sk-test-WRONG456"
USER, PLAIN_PASSWORD, ENCODED_PASSWORD = "user-SECRETU1", "pw-SECRET789", "p%40ss-SECRET321"
DECODED_PASSWORD = "p@ss-SECRET321"
SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
FAST = RetryPolicy(attempts=3, base_delay=0.001)


def basic(user: str, password: str) -> str:
    return base64.b64encode(f"{user}:{password}".encode()).decode()


SENTINELS = [KEY, WRONG, USER, PLAIN_PASSWORD, ENCODED_PASSWORD, DECODED_PASSWORD, "SECRET",
             basic(USER, PLAIN_PASSWORD), basic(USER, DECODED_PASSWORD)]


def user_says(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]


def error_texts(exc: BaseException) -> list[str]:
    """The error as a traceback prints it (causes and contexts included), and str/repr/args of every link."""
    texts = ["".join(traceback.format_exception(exc))]
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        texts += [str(exc), repr(exc), repr(exc.args)]
        exc = exc.__cause__ or exc.__context__
    return texts


def assert_clean(texts: list[str]) -> None:
    for text in texts:
        for secret in SENTINELS:
            assert secret not in text, (secret, text)


def with_credentials(server: MockServer, password: str) -> str:
    return server.base_url.replace("http://", f"http://{USER}:{password}@")


@pytest.mark.parametrize("password", [PLAIN_PASSWORD, ENCODED_PASSWORD], ids=["plain", "percent-encoded"])
def test_no_secret_leaks(tmp_path, monkeypatch, caplog, capsys, password):
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    texts: list[str] = []
    with MockServer(script=["429", "500"]) as server:
        monkeypatch.setenv("RPA_LLM_BASE_URL", with_credentials(server, password))
        monkeypatch.setenv("RPA_LLM_MODEL", "gpt-4.1")
        llm = get_llm(cache=tmp_path / "cache" / "llm.sqlite", retry=FAST)
        llm.chat(user_says("hello"))
        llm.choose(user_says("yes or no?"), ["yes", "no"])
        llm.structured(user_says("object"), SCHEMA)
        assert llm.chat(user_says("hello")).cached
        texts += [repr(llm), str(llm), llm.label, llm.model_id, llm.base_url, repr(llm.usage), llm.usage.summary()]
        texts.append(save_usage(llm, tmp_path / "usage.json").read_text())
        # honoured as HTTP Basic auth, percent-encoding decoded; never left in the URL
        sent = {h["authorization"] for h in server.headers}
        assert sent == {f"Basic {basic(USER, DECODED_PASSWORD if password == ENCODED_PASSWORD else password)}"}

    with MockServer(script=["401"]) as server:  # this 401 echoes the Authorization header: the Basic credentials
        llm = get_llm("openai:gpt-4.1", base_url=with_credentials(server, password), cache=False)
        with pytest.raises(LLMFatalError) as err:
            llm.chat(user_says("hello"))
        texts += error_texts(err.value) + [repr(llm)]

    with MockServer(api_key=KEY) as server:  # a rejected key is echoed back by the server
        bad = get_llm("openai:gpt-4.1", base_url=server.base_url, api_key=WRONG, cache=False)
        with pytest.raises(LLMError) as err:
            bad.chat(user_says("hello"))
        texts += error_texts(err.value) + [repr(bad)]
        with pytest.raises(LLMFatalError) as err:
            bad.map(lambda m: bad.chat(m), [user_says("x")], progress=False)
        texts += error_texts(err.value)

    out = capsys.readouterr()
    texts += [caplog.text, out.out, out.err]
    stored = b"".join(p.read_bytes() for p in (tmp_path / "cache").iterdir())  # the db and its -wal/-shm
    assert b"hello" in stored  # the cache did get written
    for secret in SENTINELS:
        assert secret.encode() not in stored
    assert_clean(texts)
    assert "sk-test" not in "".join(texts[:8])


def test_transport_errors_and_rejected_urls_stay_clean(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with MockServer() as server:
        url = with_credentials(server, ENCODED_PASSWORD)
    # the server is gone: connection refused, with the credentials in the URL
    llm = get_llm("openai:m", base_url=url, cache=False, retry=RetryPolicy(attempts=2, base_delay=0.001))
    with pytest.raises(LLMError, match="failed after 2 attempts: connection failed") as err:
        llm.chat(user_says("hello"))
    assert_clean(error_texts(err.value))

    with pytest.raises(ValueError, match="query string") as err:
        get_llm("openai:m", base_url=f"http://{USER}:{ENCODED_PASSWORD}@127.0.0.1:9/v1?key={KEY}")
    assert_clean(error_texts(err.value))


def test_the_credentials_are_not_in_the_cache_key_but_the_server_is(tmp_path):
    with MockServer() as one, MockServer() as two:
        cache = tmp_path / "llm.sqlite"
        first = get_llm("openai:m", base_url=with_credentials(one, PLAIN_PASSWORD), api_key=KEY, cache=cache)
        same = get_llm("openai:m", base_url=one.base_url + "/", api_key=WRONG, cache=cache)
        other = get_llm("openai:m", base_url=two.base_url, api_key=KEY, cache=cache)
        assert not first.chat(user_says("hello")).cached
        assert same.chat(user_says("hello")).cached  # same server, other credentials: the same entry
        assert not other.chat(user_says("hello")).cached  # another server serving the same model name
        assert (one.requests, two.requests) == (1, 1)
