"""An empty or null chat reply is an error (re-asked, then LLMError) unless the caller allows it."""

from __future__ import annotations

import pytest

from benchmarks.mock_server import MockServer
from rpa_lib.llm import FakeLLM, LLMError, RetryPolicy, get_llm


def user(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]


class Script:
    """A fake rule answering chat calls from a list, counting calls."""

    def __init__(self, *answers):
        self.answers, self.calls = list(answers), 0

    def __call__(self, kind, messages, spec):
        self.calls += 1
        return self.answers.pop(0) if self.answers else "fallback"


@pytest.mark.parametrize("empty", ["", None, "  \n "])
def test_empty_chat_is_reasked_then_an_error(empty):
    rule = Script(empty, empty, empty)
    llm = FakeLLM(rule)
    with pytest.raises(LLMError, match=r"^chat call 'hi': empty reply after 3 attempts$"):
        llm.chat(user("hi"))
    assert rule.calls == 3 and llm.usage.reasks == 2 and llm.usage.errors == 1

    rule = Script(empty, "second try")
    seen = []
    llm = FakeLLM(lambda kind, messages, spec: seen.append(messages) or rule(kind, messages, spec))
    assert llm.chat(user("hi")).text == "second try" and llm.usage.reasks == 1
    assert seen[1][-1]["content"] == "That reply was not valid: it was empty. Please answer again."


def test_allow_empty_returns_the_empty_reply_and_has_its_own_cache_entry(tmp_path):
    rule = Script("", "", "", "")
    llm = FakeLLM(rule, cache=tmp_path / "llm.sqlite")
    assert llm.chat(user("hi"), allow_empty=True).text == "" and rule.calls == 1
    assert llm.chat(user("hi"), allow_empty=True).cached
    with pytest.raises(LLMError, match="empty reply after 3 attempts"):  # not answered from the allow_empty entry
        llm.chat(user("hi"))
    assert rule.calls == 4


def test_max_retries_bounds_the_reasks():
    rule = Script("", "", "")
    with pytest.raises(LLMError, match="empty reply after 1 attempts"):
        FakeLLM(rule).chat(user("hi"), max_retries=0)
    assert rule.calls == 1


@pytest.mark.parametrize("content", ["", None])
def test_empty_or_null_content_from_a_server_is_an_error(content):
    with MockServer(lambda body: content) as server:
        llm = get_llm("openai:m", base_url=server.base_url, api_key="sk-x", cache=False,
                      retry=RetryPolicy(attempts=2, base_delay=0.001))
        with pytest.raises(LLMError, match="empty reply after 3 attempts"):
            llm.chat(user("hi"))
        assert server.requests == 3
        assert llm.chat(user("hi"), allow_empty=True).text == ""
