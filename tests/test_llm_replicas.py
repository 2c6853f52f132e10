"""Several servers of one model behind one base URL: the order each request tries them in (a character keeps its
replica, other calls go round robin, a refusing replica set aside and tried again after its cool-down), then the
same through the real ``openai`` client against mock servers, one stopped mid-run. The same against two real
llama.cpp servers is in ``test_server_llamacpp.py``."""

from __future__ import annotations

import logging
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.mock_server import MockServer
from rpa_lib.llm import LLMError, RetryPolicy, get_llm
from rpa_lib.llm.plan import acting
from rpa_lib.llm.replicas import Replicas

URLS = ["http://10.0.0.1:8000/v1", "http://10.0.0.2:8000/v1", "http://10.0.0.3:8000/v1"]
CHARACTERS = [f"character-{i}" for i in range(30)]
QUICK = RetryPolicy(attempts=2, base_delay=0.05, max_delay=0.05)


def user(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]


def test_a_character_keeps_its_replica_and_characters_spread_over_all():
    replicas = Replicas(URLS)
    homes = {c: replicas.order(c)[0] for c in CHARACTERS}
    assert all(replicas.order(c)[0] == homes[c] for c in CHARACTERS)  # stable from call to call
    assert all(Replicas(URLS).order(c)[0] == homes[c] for c in CHARACTERS)  # and from process to process
    assert set(homes.values()) == {0, 1, 2}
    assert all(sorted(replicas.order(c)) == [0, 1, 2] for c in CHARACTERS)  # every replica is a fallback


def test_calls_for_no_character_go_round_robin():
    replicas = Replicas(URLS[:2])
    assert [replicas.order(None) for _ in range(4)] == [[0, 1], [1, 0], [0, 1], [1, 0]]


def test_a_refusing_replica_is_set_aside_once_and_tried_again_after_the_cool_down(caplog):
    now = [0.0]
    replicas = Replicas(URLS, cool_down=30, clock=lambda: now[0])
    homes = {c: replicas.order(c)[0] for c in CHARACTERS}
    with caplog.at_level(logging.WARNING, logger="rpa_lib.llm"):
        replicas.set_aside(0, "connection refused")
        now[0] = 10.0
        replicas.set_aside(0, "connection refused")  # still aside: no second line
    assert [r.getMessage() for r in caplog.records] == [
        f"replica {URLS[0]} refuses connections (connection refused): set aside for 30 s"]
    moved = [c for c in CHARACTERS if homes[c] == 0]
    assert moved and all(replicas.order(c)[-1] == 0 for c in moved)  # tried last, not skipped
    assert all(replicas.order(c)[0] == homes[c] for c in CHARACTERS if homes[c] != 0)  # the others stay put
    assert [replicas.order(None)[0] for _ in range(4)] == [1, 2, 1, 2]
    now[0] = 40.1  # 30 s after the last refusal
    assert all(replicas.order(c)[0] == homes[c] for c in CHARACTERS)


# ---------------------------------------------------------------- through the openai client, against mock servers

def _llm(urls: list[str], **options):
    return get_llm("openai:mock-model", base_url=",".join(urls), api_key="sk-test", **{"cache": False, **options})


def _asked(server: MockServer) -> list[str]:
    return [body["messages"][-1]["content"] for body in server.bodies]


def test_requests_spread_over_two_servers_and_a_character_keeps_its_server():
    with MockServer() as a, MockServer() as b:
        llm = _llm([a.base_url, b.base_url], max_workers=8)
        jobs = [(c, f"{c} question {i}") for c in CHARACTERS for i in range(2)]  # 30: never all on one (ports vary)

        def ask(job):
            with acting(job[0]):
                return llm.chat(user(job[1])).text

        assert all(o.ok for o in llm.map(ask, jobs, progress=False))
        homes = {c: {name for name, server in (("a", a), ("b", b)) if any(q.startswith(f"{c} ") for q in
                                                                             _asked(server))} for c in CHARACTERS}
        assert all(len(h) == 1 for h in homes.values()), homes
        assert {h for hs in homes.values() for h in hs} == {"a", "b"}
        before = a.requests, b.requests
        for i in range(10):
            llm.chat(user(f"no one's question {i}"))
        assert (a.requests - before[0], b.requests - before[1]) == (5, 5)


def test_the_cache_key_names_the_list_of_replicas_not_the_one_that_answered(tmp_path):
    with MockServer() as a, MockServer() as b:
        first = _llm([a.base_url, b.base_url], cache=tmp_path / "llm.sqlite")
        assert first.chat(user("Who are you?")).text == "echo: Who are you?"
        again = _llm([f" {b.base_url}/ ", a.base_url], cache=tmp_path / "llm.sqlite")  # the same list written anew
        assert again.chat(user("Who are you?")).cached and a.requests + b.requests == 1
        assert again.base_url == first.base_url == ",".join(sorted([a.base_url, b.base_url]))
        assert _llm([a.base_url]).base_url == a.base_url  # one server: the key it always had
    with pytest.raises(ValueError, match="different credentials"):
        _llm(["http://u:p@10.0.0.1/v1", "http://10.0.0.2/v1"])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_server_stopped_mid_run_is_set_aside_and_the_other_answers(caplog):
    # the second server in a process of its own, so that stopping it closes its open connections as a real one does
    other = subprocess.Popen([sys.executable, "-m", "benchmarks.mock_server", "--port", "0"], stdout=subprocess.PIPE,
                             text=True, cwd=Path(__file__).resolve().parent.parent)  # benchmarks/ is at the root
    try:
        assert other.stdout is not None
        other_url = other.stdout.readline().split(" at ")[1].split(" ")[0]
        with MockServer() as a:
            llm = _llm([a.base_url, other_url], retry=QUICK, max_workers=1)
            assert [llm.chat(user(f"q{i}")).text for i in range(4)] == [f"echo: q{i}" for i in range(4)]
            assert a.requests == 2  # and two at the other
            other.terminate()
            other.wait(10)
            with caplog.at_level(logging.WARNING, logger="rpa_lib.llm"):
                assert [llm.chat(user(f"q{i}")).text for i in range(4, 12)] == [f"echo: q{i}" for i in range(4, 12)]
            assert a.requests == 10
            assert [r.getMessage().split(" (")[0] for r in caplog.records] == [
                f"replica {other_url} refuses connections"]
    finally:
        other.kill()
        other.wait(10)


def test_every_replica_down_is_the_usual_transport_error():
    urls = [f"http://127.0.0.1:{_free_port()}/v1" for _ in range(2)]  # nothing listens there
    with pytest.raises(LLMError, match="connection failed"):
        _llm(urls, retry=QUICK).chat(user("Anyone?"))


def test_the_judge_and_gs_roles_take_replica_lists_too(monkeypatch):
    a, b = "http://10.0.0.1:8000/v1", "http://10.0.0.2:8000/v1"
    monkeypatch.setenv("RPA_JUDGE_MODEL", "judge-model")
    monkeypatch.setenv("RPA_JUDGE_BASE_URL", f"{b},{a}")
    monkeypatch.setenv("RPA_GS_BASE_URL", f"{a}, {b}")
    judge, gs = get_llm(role="judge", cache=False), get_llm("openai:gs-model", role="gs", cache=False)
    assert judge.base_url == gs.base_url == f"{a},{b}"  # built lazily: no server is asked
