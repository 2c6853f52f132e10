"""The LLM interface through the fake backend: chat, choose, structured, re-asks, errors, map, get_llm, settings."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

import pytest

from rpa_lib.llm import FakeLLM, LLMError, LocalLLM, OpenAILLM, Reply, Transient, get_llm
from rpa_lib.llm.answers import extract_json, match_option, schema_example
from rpa_lib.llm.retry import RetryPolicy
from rpa_lib.settings import setting

FAST = RetryPolicy(attempts=3, base_delay=0.001, max_delay=0.001)
SCHEMA = {"type": "object", "required": ["name", "age", "tags", "mood"],
          "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 3},
                         "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2},
                         "mood": {"enum": ["calm", "angry"]}}}




def user(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]


def test_fake_default_rules_are_deterministic():
    llm = FakeLLM()
    a, b = llm.chat(user("Who are you?")), FakeLLM().chat(user("Who are you?"))
    assert isinstance(a, Reply) and a.text == b.text and a.text.startswith("fake reply ")
    assert a.kind == "chat" and a.model == "fake:fake" and not a.cached
    assert llm.choose(user("Is the answer No?"), ["yes", "no"]).text == "no"
    assert llm.choose(user("Pick one"), ["a", "b", "c"]).text in ("a", "b", "c")
    reply = llm.structured(user("Describe Ada"), SCHEMA)
    assert reply.data == {"name": "fake name", "age": 3, "tags": ["fake tags", "fake tags"], "mood": "calm"}
    assert json.loads(reply.text) == reply.data and reply.kind == "structured"


def test_choose_reasks_then_names_the_call_in_its_error():
    answers = iter(["maybe", "Yes."])
    llm = FakeLLM(lambda kind, messages, options: next(answers))
    reply = llm.choose(user("Is Ada a mage?"), ["yes", "no"])
    assert reply.text == "yes" and llm.usage.reasks == 1 and llm.usage.requests == 2

    stubborn = FakeLLM(lambda kind, messages, options: "perhaps")
    with pytest.raises(LLMError, match=r"choose call 'Is Ada a mage\?': no allowed answer after 3 attempts"):
        stubborn.choose(user("Is Ada a mage?"), ["yes", "no"])
    assert stubborn.usage.requests == 3 and stubborn.usage.errors == 1


def test_structured_reasks_with_the_problem_then_raises():
    seen: list[list[dict]] = []

    def rule(kind, messages, schema):
        seen.append(messages)
        return "not json at all" if len(seen) == 1 else {"name": "Ada", "age": "old", "tags": [], "mood": "calm"}

    with pytest.raises(LLMError) as err:
        FakeLLM(rule).structured(user("Describe Ada please"), SCHEMA, max_retries=2, name="profile of Ada")
    assert str(err.value).startswith("structured call 'profile of Ada': no valid JSON object after 3 attempts")
    assert len(seen) == 3
    assert "no JSON object" in seen[1][-1]["content"] and seen[1][-2] == {"role": "assistant",
                                                                          "content": "not json at all"}

    good = iter(['Sure! ```json\n{"name": "Ada", "age": 30, "tags": ["a", "b"], "mood": "angry"}\n```'])
    reply = FakeLLM(lambda *_: next(good)).structured(user("Describe Ada"), SCHEMA)
    assert reply.data == {"name": "Ada", "age": 30, "tags": ["a", "b"], "mood": "angry"}


def test_backend_exceptions_become_llm_errors_and_transients_are_retried():
    def broken(kind, messages, spec):
        raise KeyError("boom")

    with pytest.raises(LLMError, match=r"chat call 'hello': KeyError: 'boom'"):
        FakeLLM(broken).chat(user("hello"))

    faults = iter([Transient("HTTP 503"), Transient("timed out")])

    def flaky(kind, messages, spec):
        fault = next(faults, None)
        if fault:
            raise fault
        return "ok"

    llm = FakeLLM(flaky, retry=FAST)
    assert llm.chat(user("hello")).text == "ok" and llm.usage.retries == 2

    always = FakeLLM(lambda *_: (_ for _ in ()).throw(Transient("HTTP 429")), retry=FAST)
    with pytest.raises(LLMError, match=r"chat call 'item 7' failed after 3 attempts: HTTP 429"):
        always.chat(user("item 7"))


def test_map_keeps_order_bounds_workers_and_records_failures():
    active, peak, lock = 0, 0, threading.Lock()

    def rule(kind, messages, spec):
        nonlocal active, peak
        with lock:
            active += 1
            peak = max(peak, active)
        time.sleep(0.02 * (hash(messages[-1]["content"]) % 3))
        with lock:
            active -= 1
        if messages[-1]["content"] == "item 5":
            raise ValueError("bad item")
        return messages[-1]["content"].upper()

    llm = FakeLLM(rule, max_workers=3)
    outcomes = llm.map(lambda i: llm.chat(user(f"item {i}")).text, range(12), desc="test", progress=False)
    assert [o.item for o in outcomes] == list(range(12))
    assert [o.value for o in outcomes if o.ok] == [f"ITEM {i}" for i in range(12) if i != 5]
    assert not outcomes[5].ok and outcomes[5].value is None
    assert outcomes[5].error == "LLMError: chat call 'item 5': ValueError: bad item"
    assert 1 < peak <= 3


def test_bad_requests_fail_fast():
    llm = FakeLLM()
    with pytest.raises(ValueError):
        llm.chat([{"role": "robot", "content": "hi"}])
    with pytest.raises(ValueError):
        llm.choose(user("x"), ["a", "a"])


def test_answer_helpers():
    assert match_option("**Yes.**", ["yes", "no"]) == "yes"
    assert match_option('{"answer": "No"}', ["yes", "no"]) == "no"
    assert match_option("4 - agree", ["1", "2", "3", "4", "5"]) == "4"
    assert match_option("10", ["1", "2"]) is None and match_option("maybe", ["yes", "no"]) is None
    assert extract_json('noise {"a": {"b": [1, "}"]}} more {"c": 2}') == {"a": {"b": [1, "}"]}}
    with pytest.raises(ValueError):
        extract_json("[1, 2] no object")
    assert schema_example({"type": "number", "exclusiveMinimum": 0}) == 1.0


def test_get_llm_specs(monkeypatch):
    assert isinstance(get_llm(), LocalLLM)  # nothing configured: the embedded model (not loaded yet)
    assert isinstance(get_llm("fake"), FakeLLM)
    gpt = get_llm("openai:gpt-4.1")
    assert isinstance(gpt, OpenAILLM) and gpt.label == "gpt-4.1 (openai)" and gpt.model_id == "gpt-4.1"
    assert get_llm("gpt-4o-mini").model_id == "gpt-4o-mini"
    served = get_llm("qwen2.5:7b", base_url="http://127.0.0.1:11434/v1", max_workers=2)
    assert served.model_id == "qwen2.5:7b" and served.label == "qwen2.5:7b (openai-compatible)"
    assert served.max_workers == 2 and served.base_url == "http://127.0.0.1:11434/v1"

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-x")
    assert get_llm().model_id == "gpt-4.1"
    monkeypatch.setenv("RPA_LLM_MODEL", "fake")
    assert isinstance(get_llm(), FakeLLM)
    monkeypatch.delenv("RPA_LLM_MODEL")
    monkeypatch.setenv("RPA_LLM_BASE_URL", "http://127.0.0.1:8000/v1")
    with pytest.raises(ValueError, match="RPA_LLM_MODEL"):
        get_llm()
    monkeypatch.setenv("RPA_LLM_MODEL", "qwen3-32b")
    assert get_llm().base_url == "http://127.0.0.1:8000/v1"


def test_settings_come_from_argument_then_environment_then_dotenv(tmp_path, monkeypatch):
    (tmp_path / ".env").write_text('# keys\nexport OPENAI_API_KEY="sk-from-dotenv"\nRPA_LLM_MODEL=fake  # comment\n')
    assert setting("OPENAI_API_KEY") == "sk-from-dotenv"
    assert isinstance(get_llm(), FakeLLM)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    assert setting("OPENAI_API_KEY") == "sk-from-env"
    assert setting("OPENAI_API_KEY", "sk-explicit") == "sk-explicit"


def test_missing_key_is_a_clear_error_at_first_call():
    llm = get_llm("openai:gpt-4.1", cache=False)
    with pytest.raises(LLMError, match="OPENAI_API_KEY"):
        llm.chat(user("hello"))


def test_import_has_no_side_effects(tmp_path):
    code = ("import sys, rpa_lib.llm; heavy = {'torch', 'transformers', 'openai', 'jsonschema', 'httpx', 'httpx2'}; "
            "print(sorted(heavy & set(sys.modules)))")
    env = {"RPA_CACHE_DIR": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"
    assert list(tmp_path.iterdir()) == []
