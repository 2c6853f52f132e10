"""One payment per request: threads and processes sharing a reply cache send a missing request once and wait for
its outcome; a failed sender releases its claim, a killed one loses it after its lease, a long call keeps it."""

from __future__ import annotations

import multiprocessing
import os
import signal
import sqlite3
import threading
import time

import pytest

from rpa_lib.llm import Cache, FakeLLM, LLMError, LLMNoValidAnswer, RetryPolicy, Transient

ONCE = RetryPolicy(attempts=1)


def user(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]


def claims(path) -> list[tuple]:
    """The claims table's rows (none while the table does not exist)."""
    try:
        with sqlite3.connect(path) as conn:
            return conn.execute("SELECT key, owner FROM claims").fetchall()
    except sqlite3.OperationalError:
        return []


class Slow:
    """A fake rule taking ``seconds`` per call and counting its calls; ``fail_first`` raises a fault on call one."""

    def __init__(self, seconds: float, *, fail_first: bool = False, answer: str = "answer"):
        self.seconds, self.fail_first, self.answer = seconds, fail_first, answer
        self.calls = 0
        self.lock = threading.Lock()

    def __call__(self, kind, messages, spec):
        with self.lock:
            self.calls += 1
            first = self.calls == 1
        time.sleep(self.seconds)
        if self.fail_first and first:
            raise Transient("server fault")
        return f"{self.answer} to {messages[-1]['content']}"


def together(*calls) -> list:
    """Each call in a thread of its own, started 20 ms apart; their results (or exceptions) in order."""
    results: list = [None] * len(calls)

    def run(i, call):
        try:
            results[i] = call()
        except Exception as exc:  # noqa: BLE001 - returned to the test to assert on
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate(calls)]
    for t in threads:
        t.start()
        time.sleep(0.02)
    for t in threads:
        t.join(30)
    return results


def test_threads_missing_one_key_send_it_once(tmp_path):
    rule = Slow(0.3)
    llm = FakeLLM(rule, cache=tmp_path / "llm.sqlite", max_workers=8)
    outcomes = llm.map(lambda _: llm.chat(user("Who are you?")), range(8), progress=False)
    assert [o.value.text for o in outcomes] == ["answer to Who are you?"] * 8
    assert rule.calls == 1 and llm.usage.cache_hits == 7
    assert claims(tmp_path / "llm.sqlite") == []  # released after the reply was stored


def test_a_claim_outlives_its_lease_while_the_call_runs(tmp_path):
    # two cache objects on one file, as two processes have: the sender's 1 s call renews its 0.3 s lease
    path = tmp_path / "llm.sqlite"
    rules = Slow(1.0, answer="first"), Slow(1.0, answer="second")
    first, second = (FakeLLM(rule, cache=Cache(path, lease=0.3), retry=ONCE) for rule in rules)
    a, b = together(lambda: first.chat(user("q")), lambda: second.chat(user("q")))
    assert a.text == b.text and sorted([a.cached, b.cached]) == [False, True]
    assert sorted(rule.calls for rule in rules) == [0, 1]


def test_a_fault_releases_the_claim_and_the_waiter_sends(tmp_path):
    rule = Slow(0.3, fail_first=True)
    llm = FakeLLM(rule, cache=tmp_path / "llm.sqlite", retry=ONCE)
    failed, sent = sorted(together(lambda: llm.chat(user("q")), lambda: llm.chat(user("q"))),
                          key=lambda r: not isinstance(r, LLMError))
    assert isinstance(failed, LLMError) and "server fault" in str(failed)  # a fault is not an answer: not stored
    assert sent.text == "answer to q" and not sent.cached and rule.calls == 2
    assert claims(tmp_path / "llm.sqlite") == []


def test_a_stored_failure_is_the_waiters_answer_too(tmp_path):
    calls = []

    def never_valid(kind, messages, spec):
        calls.append(1)
        time.sleep(0.1)
        return "perhaps"

    llm = FakeLLM(never_valid, cache=tmp_path / "llm.sqlite")
    outcomes = together(lambda: llm.choose(user("yes or no?"), ["yes", "no"]),
                        lambda: llm.choose(user("yes or no?"), ["yes", "no"]))
    assert all(isinstance(o, LLMNoValidAnswer) for o in outcomes)
    assert sorted(o.cached for o in outcomes) == [False, True]
    assert len(calls) == 3  # one call's attempts (the first and two re-asks), not two calls'


# ---------------------------------------------------------------- processes

def _child(path: str, lease: float, seconds: float, counter, prompt: str) -> None:
    """A process of its own: one chat call through its own cache object, counting its backend calls."""

    def rule(kind, messages, spec):
        with counter.get_lock():
            counter.value += 1
        time.sleep(seconds)
        return f"from {os.getpid()}"

    FakeLLM(rule, cache=Cache(path, lease=lease), retry=ONCE).chat(user(prompt))


@pytest.fixture
def fork():
    return multiprocessing.get_context("fork")


def test_two_processes_missing_one_key_send_it_once(tmp_path, fork):
    path, counter = str(tmp_path / "llm.sqlite"), fork.Value("i", 0)
    procs = [fork.Process(target=_child, args=(path, 5.0, 0.5, counter, "q")) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(30)
    assert [p.exitcode for p in procs] == [0, 0]
    assert counter.value == 1
    assert FakeLLM(Slow(0), cache=path).chat(user("q")).text.startswith("from ")


def _sending_child(fork, path: str, lease: float, counter):
    """A child process that claims "q" (with ``lease``) and is stuck sending it (a 60 s call), once it sends."""
    child = fork.Process(target=_child, args=(path, lease, 60.0, counter, "q"))
    child.start()
    deadline = time.monotonic() + 20
    while counter.value == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    return child


def test_a_killed_senders_claim_ends_with_its_lease(tmp_path, fork):
    path, counter = str(tmp_path / "llm.sqlite"), fork.Value("i", 0)
    stuck = _sending_child(fork, path, 0.5, counter)
    killer = threading.Timer(0.5, os.kill, (stuck.pid, signal.SIGKILL))
    try:
        assert len(claims(path)) == 1 and counter.value == 1  # claimed, and sending
        rule = Slow(0.0, answer="mine")
        llm = FakeLLM(rule, cache=Cache(path, lease=0.5), retry=ONCE)
        killer.start()
        start = time.monotonic()
        reply = llm.chat(user("q"))  # waits while the sender lives, then for its lease to end
        waited = time.monotonic() - start
    finally:
        killer.cancel()
        stuck.kill()
        stuck.join(10)
    assert reply.text == "mine to q" and rule.calls == 1
    assert 0.5 < waited < 5
    assert claims(path) == []


def test_a_dead_senders_claim_on_this_machine_is_taken_at_once(tmp_path, fork):
    # a run killed and restarted: its old claims (30 s leases) are not waited for, their process being gone
    path, counter = str(tmp_path / "llm.sqlite"), fork.Value("i", 0)
    stuck = _sending_child(fork, path, 30.0, counter)
    stuck.kill()
    stuck.join(10)
    assert len(claims(path)) == 1  # left behind by the killed process
    start = time.monotonic()
    assert FakeLLM(Slow(0.0, answer="mine"), cache=path).chat(user("q")).text == "mine to q"
    assert time.monotonic() - start < 5
    assert claims(path) == []
