"""The SQLite reply cache: hits and misses, what the key covers, threads, two processes, kill-and-resume."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from benchmarks.mock_server import MockServer
from rpa_lib.llm import Cache, FakeLLM, LLMError, get_llm


def user(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]


def rows(path) -> int:
    """Replies stored in the file (0 while the file or its table does not exist yet)."""
    try:
        with sqlite3.connect(path) as conn:
            return conn.execute("SELECT COUNT(*) FROM replies").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


class Counting:
    """A fake rule that counts its calls."""

    def __init__(self):
        self.calls = 0
        self.lock = threading.Lock()

    def __call__(self, kind, messages, spec):
        with self.lock:
            self.calls += 1
        if kind == "choose":
            return spec[-1]
        return {"x": 1} if kind == "structured" else "answer to " + messages[-1]["content"]


def test_hit_is_reported_and_costs_no_tokens(tmp_path):
    rule = Counting()
    llm = FakeLLM(rule, cache=tmp_path / "llm.sqlite")
    first, second = llm.chat(user("hello there")), llm.chat(user("hello there"))
    assert not first.cached and first.prompt_tokens > 0
    assert second.cached and second.text == first.text
    assert (second.prompt_tokens, second.completion_tokens) == (0, 0)
    assert rule.calls == 1 and llm.usage.calls == 2 and llm.usage.cache_hits == 1
    assert llm.usage.prompt_tokens == first.prompt_tokens  # the hit added none
    # a new object (a new process, say) on the same file hits too, for every kind of call
    again = FakeLLM(rule, cache=tmp_path / "llm.sqlite")
    assert again.chat(user("hello there")).cached
    choice = again.choose(user("pick"), ["a", "b"])
    assert again.choose(user("pick"), ["a", "b"]).cached and choice.text == "b"
    assert again.structured(user("obj"), {"type": "object"}).data == {"x": 1}
    assert again.structured(user("obj"), {"type": "object"}).data == {"x": 1}
    assert rule.calls == 3


def test_the_key_covers_the_whole_request(tmp_path):
    rule = Counting()
    llm = FakeLLM(rule, cache=tmp_path / "llm.sqlite")
    base = {"temperature": 0.0, "max_tokens": 256, "seed": 0, "sample": 0}
    variants = [{}, {"temperature": 0.7}, {"max_tokens": 10}, {"seed": 1}, {"sample": 1}]
    for variant in variants:
        llm.chat(user("q"), **{**base, **variant})
    llm.chat([{"role": "system", "content": "be brief"}, *user("q")])
    llm.choose(user("q"), ["a", "b"])
    llm.choose(user("q"), ["a", "c"])
    llm.structured(user("q"), {"type": "object"})
    llm.structured(user("q"), {"type": "object", "required": []})
    FakeLLM(rule, label="other", cache=tmp_path / "llm.sqlite").chat(user("q"))  # another model id
    assert rule.calls == 11 and llm.usage.cache_hits == 0
    for variant in variants:  # and all of them hit now
        assert llm.chat(user("q"), **{**base, **variant}).cached
    assert rule.calls == 11
    # the same numbers written as another type are the same request: temperature 0 is 0.0, max_tokens 256.0 is 256
    assert llm.chat(user("q"), temperature=0, max_tokens=256.0, seed=0.0).cached
    assert llm.structured(user("q"), {"type": "object"}, temperature=0, max_tokens=512.0).cached
    assert rule.calls == 11


def test_key_ignores_credentials_so_a_new_key_still_hits(tmp_path):
    with MockServer() as server:
        host = server.base_url.removeprefix("http://")
        one = get_llm("openai:m", base_url=server.base_url, api_key="sk-one", cache=tmp_path / "c.sqlite")
        two = get_llm("openai:m", base_url=f"http://user:pw@{host}", api_key="sk-two", cache=tmp_path / "c.sqlite")
        assert not one.chat(user("hello")).cached
        assert two.chat(user("hello")).cached
        assert server.requests == 1


def test_concurrent_threads_share_one_file(tmp_path):
    rule = Counting()
    llm = FakeLLM(rule, cache=tmp_path / "llm.sqlite", max_workers=8)
    prompts = [f"q{i % 40}" for i in range(200)]  # each prompt 5 times
    outcomes = llm.map(lambda p: llm.chat(user(p)).text, prompts, progress=False)
    assert all(o.ok and o.value == f"answer to {o.item}" for o in outcomes)
    assert rows(tmp_path / "llm.sqlite") == 40
    assert llm.usage.cache_hits + rule.calls == 200 and rule.calls >= 40


WORKER = textwrap.dedent("""
    import sys
    from rpa_lib.llm import FakeLLM
    path, start, stop, delay = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
    calls = []
    llm = FakeLLM(lambda kind, messages, spec: calls.append(1) or "answer to " + messages[-1]["content"],
                  cache=path, max_workers=4, delay=delay)
    items = range(start, stop)
    outcomes = llm.map(lambda i: llm.chat([{"role": "user", "content": f"q{i}"}]).text, items, progress=False)
    bad = [o for o in outcomes if not o.ok or o.value != f"answer to q{o.item}"]
    print(len(calls), llm.usage.cache_hits, len(bad), flush=True)
    sys.exit(1 if bad else 0)
""")


def test_two_processes_write_one_file(tmp_path):
    path = tmp_path / "llm.sqlite"
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, str(path), str(a), str(b), "0.01"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for a, b in ((0, 150), (50, 200))]
    results = [p.communicate(timeout=60) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], results
    assert rows(path) == 200
    rule = Counting()
    llm = FakeLLM(rule, cache=path)
    assert all(llm.chat(user(f"q{i}")).text == f"answer to q{i}" for i in range(200)) and rule.calls == 0


def test_kill_and_resume_redoes_no_completed_call(tmp_path):
    path = tmp_path / "llm.sqlite"
    proc = subprocess.Popen([sys.executable, "-c", WORKER.replace("max_workers=4", "max_workers=1"),
                             str(path), "0", "60", "0.05"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and rows(path) < 5:
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    done = rows(path)
    assert 5 <= done < 60, "the run should be killed midway"

    rule = Counting()
    llm = FakeLLM(rule, cache=path)
    outcomes = llm.map(lambda i: llm.chat(user(f"q{i}")).text, range(60), progress=False)
    assert all(o.ok and o.value == f"answer to q{o.item}" for o in outcomes)
    assert llm.usage.cache_hits == done and rule.calls == 60 - done
    assert rows(path) == 60


def test_cache_object_is_lazy_and_closable(tmp_path):
    cache = Cache(tmp_path / "sub" / "llm.sqlite")
    assert not (tmp_path / "sub").exists()  # nothing until first use
    assert cache.get("missing") is None and len(cache) == 0
    cache.put("k", {"backend": "fake"}, {"text": "t"})
    assert cache.get("k") == {"text": "t"}
    with sqlite3.connect(cache.path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    cache.close()


# ---------------------------------------------------------------- failed outcomes are cached too


def test_a_reply_that_fails_to_parse_is_cached_with_its_outcome(tmp_path):
    rule = Counting()
    bad = FakeLLM(lambda kind, messages, spec: rule(kind, messages, spec) and "no json, sorry",
                  cache=tmp_path / "llm.sqlite")
    schema = {"type": "object", "required": ["a"]}
    with pytest.raises(LLMError) as first:
        bad.structured(user("extract"), schema, max_retries=1)
    assert rule.calls == 2 and not first.value.cached
    with pytest.raises(LLMError) as again:
        bad.structured(user("extract"), schema, max_retries=1)
    assert again.value.cached and str(again.value) == str(first.value) and rule.calls == 2
    assert bad.usage.cache_hits == 1 and bad.usage.errors == 2
    with pytest.raises(LLMError):
        bad.structured(user("extract"), schema, max_retries=0)  # fewer attempts than stored: the same outcome
    assert rule.calls == 2
    with pytest.raises(LLMError, match="after 4 attempts"):
        bad.structured(user("extract"), schema, max_retries=3)  # more attempts than stored: asked again
    assert rule.calls == 6

    chooser = FakeLLM(lambda kind, messages, spec: rule(kind, messages, spec) and "perhaps",
                      cache=tmp_path / "llm.sqlite")
    for _ in range(2):
        with pytest.raises(LLMError, match="no allowed answer after 3 attempts"):
            chooser.choose(user("pick"), ["yes", "no"])
    assert rule.calls == 9


def test_faults_are_not_cached(tmp_path):
    from rpa_lib.llm import LLMFatalError, RetryPolicy, Transient

    calls = []

    def rule(kind, messages, spec):
        calls.append(kind)
        raise Transient("HTTP 503") if messages[-1]["content"] == "busy" else LLMFatalError("HTTP 401: refused")

    llm = FakeLLM(rule, cache=tmp_path / "llm.sqlite", retry=RetryPolicy(attempts=2, base_delay=0.001))
    for text in ("busy", "busy", "refused", "refused"):
        with pytest.raises(LLMError):
            llm.chat(user(text))
    assert len(calls) == 2 + 2 + 1 + 1 and rows(tmp_path / "llm.sqlite") == 0


def test_a_warm_rerun_of_amadeus_makes_no_backend_call(tmp_path, fixture_data):
    """The Attribute Extractor's structured call fails to parse (a small model), so AE falls back to free text;
    the second run reaches the same fallback from the cache alone."""
    from rpa_lib.methods import build_method

    def run() -> tuple[int, list]:
        rule = Counting()

        def answer(kind, messages, spec):
            rule(kind, messages, spec)
            if kind == "choose":
                return "yes"
            return "not a JSON object" if kind == "structured" else "a sentence"

        llm = FakeLLM(answer, cache=tmp_path / "llm.sqlite")
        method = build_method("amadeus", llm, dataset=fixture_data, embedder="hash-64", window=1)
        response = method.respond("ada-lindqvist", "What did you do when the storm broke the lamp's lens?")
        return rule.calls, response

    cold_calls, cold = run()
    warm_calls, warm = run()
    assert cold.details["extract_fallback"] and cold_calls > 0
    assert warm_calls == 0, "a warm re-run called the backend"
    assert warm.reply == cold.reply and warm.details == cold.details
    assert [c.output for c in warm.calls] == [c.output for c in cold.calls]
