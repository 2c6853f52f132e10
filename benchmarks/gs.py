"""``python -m benchmarks gs``: Guided Selection, sequential (window 1) against the speculation policies.

Real ACTS chunks of a few characters (all-MiniLM-L6-v2 retrieval), MBTI interview questions as queries, and a
judge served by the mock OpenAI-compatible server with 100 ms latency per call through the real HTTP client
(``OpenAILLM``). The mock runs in its own process, as a real server would, so that its CPU time does not compete
with the walk's threads for this interpreter's lock; what remains is the client's own CPU time per call (the
``openai`` package's request building and response parsing, serialized across threads), which the fewer round
trips of a wider look-ahead cannot hide. The mock answers "yes" for a fixed pseudo-random share (``--yes-percent``, 12 by
default) of (question, chunk) pairs (a hash of the prompt), so every policy sees the same verdicts. The LLM
cache is off so every judge call reaches the server; the query embeddings are computed before the timing.
Policies: fixed windows (``--windows``, 1 is sequential) and ``adaptive``: one :class:`AdaptiveWindow` for the
whole run, as a method keeps one, so it learns the judge's yes-rate from the queries before.

Prints, per policy: wall time per query, judge calls per query (counted at the server, speculative calls
included) and their ratio to the sequential run's, round trips per query (times a walk waited for a verdict),
chunks examined per query, the speed-up over sequential, and whether every selection is identical to the
sequential one. It does not measure a real LLM's latency or verdicts.

``--rounds`` prints instead what the look-ahead means for batch rounds (:mod:`rpa_lib.run.rounds`), where each round
of a walk is one batch round: per fixed window, the rounds a walk takes (mean and most), the judge calls per walk
and their ratio to the synchronous default (window 4), with the same verdict rule in-process (no server, no timing).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator

from rpa_lib.data import load_questionnaire
from rpa_lib.llm import FakeLLM, get_llm
from rpa_lib.methods import build_method

YES_PERCENT = "RPA_BENCH_YES_PERCENT"  # the mock judge's share of "yes", set by --yes-percent for the server process


def judge_rule(body: dict) -> str:
    prompt = body["messages"][-1]["content"] if body.get("messages") else ""
    share = int(os.environ.get(YES_PERCENT, "12"))
    return "yes" if int(hashlib.sha256(prompt.encode()).hexdigest(), 16) % 100 < share else "no"


@contextlib.contextmanager
def judge_server(latency: float, yes_percent: int = 12) -> Iterator[tuple[str, Callable[[], int]]]:
    """``(base_url, requests)``: the mock server answering with :func:`judge_rule` (``yes_percent`` % yes) in a
    child process, and a function returning how many chat requests it has received."""
    proc = subprocess.Popen([sys.executable, "-m", "benchmarks.mock_server", "--port", "0", "--latency", str(latency),
                             "--answer", f"{__name__}:judge_rule"], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, YES_PERCENT: str(yes_percent)})
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        if " at " not in line:
            raise RuntimeError(f"the mock server did not start (exit code {proc.poll()})")
        base_url = line.split(" at ", 1)[1].split()[0]

        def requests() -> int:
            with urllib.request.urlopen(f"{base_url}/mock/stats", timeout=10) as response:
                return int(json.load(response)["requests"])

        yield base_url, requests
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def run(characters: list[str], questions: int, policies: list[str], latency: float,
        yes_percent: int = 12) -> list[dict]:
    items = load_questionnaire("mbti").subset(questions).items
    queries = [(c, i.question) for c in characters for i in items]
    results = []
    with judge_server(latency, yes_percent) as (base_url, server_requests):
        llm = get_llm("openai:mock-judge", base_url=base_url, api_key="sk-bench", cache=False, max_workers=16)
        for name in policies:
            method = build_method("amadeus", llm, window=name)  # one policy object for the run, as a method keeps
            for c, q in queries:  # build the indexes and embed the queries outside the timing, for every policy
                method.search(c, q, 1)
            before, start = server_requests(), time.perf_counter()
            selections = [method.select(c, q)[0] for c, q in queries]
            seconds = time.perf_counter() - start
            time.sleep(latency * 2)  # let discarded speculative calls land before counting
            results.append({"policy": name, "queries": len(queries), "seconds": seconds,
                            "calls": server_requests() - before,
                            "round_trips": sum(s.round_trips for s in selections),
                            "examined": sum(s.examined for s in selections),
                            "failures": sum(s.failed for s in selections),
                            "selections": [[c.id for c in s.selected] for s in selections]})
    return results


def rounds(characters: list[str], questions: int, windows: list[int], yes_percent: int = 12) -> str:
    """The batch-rounds table: each walk judged in-process by the same rule (``yes_percent`` % yes), per window."""
    def rule(kind: str, messages: list[dict], options) -> str:
        digest = int(hashlib.sha256(messages[-1]["content"].encode()).hexdigest(), 16)
        return "yes" if digest % 100 < yes_percent else "no"

    items = load_questionnaire("mbti").subset(questions).items
    queries = [(c, i.question) for c in characters for i in items]
    rows = {}
    for w in windows:
        method = build_method("amadeus", FakeLLM(rule), window=w)
        walks = [method.select(c, q)[0] for c, q in queries]
        rows[w] = {"rounds": [s.round_trips for s in walks], "calls": sum(s.examined + s.speculative for s in walks)}
    base = rows[4]["calls"] if 4 in rows else rows[windows[0]]["calls"]
    lines = ["| window | batch rounds / walk (mean) | most | judge calls / walk | calls vs window 4 |",
             "|---|---|---|---|---|"]
    for w, r in rows.items():
        lines.append(f"| {w} | {sum(r['rounds']) / len(queries):.2f} | {max(r['rounds'])} | "
                     f"{r['calls'] / len(queries):.1f} | {r['calls'] / base:.2f}x |")
    return "\n".join(lines)


def table(results: list[dict]) -> str:
    """The Markdown table; the first result is the reference (sequential)."""
    base = results[0]
    lines = ["| policy | wall time / query | judge calls / query (server) | calls vs sequential | round trips / query "
             "| examined / query | speed-up | selections identical to window 1 |",
             "|---|---|---|---|---|---|---|---|"]
    for r in results:
        same = r["selections"] == base["selections"] and r["examined"] == base["examined"]
        n = r["queries"]
        lines.append(f"| {r['policy']} | {r['seconds'] / n:.3f} s | {r['calls'] / n:.1f} | "
                     f"{r['calls'] / base['calls']:.2f}x | {r['round_trips'] / n:.2f} | {r['examined'] / n:.1f} | "
                     f"{base['seconds'] / r['seconds']:.1f}x | {'yes' if same else 'NO'} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks gs", description=__doc__.split("\n")[0])
    parser.add_argument("--characters", default="frieren,light-yagami,yui-hirasawa")
    parser.add_argument("--questions", type=int, default=8, help="MBTI questions per character")
    parser.add_argument("--windows", default="1,4,8,adaptive,adaptive:1",
                        help="comma-separated policies: look-ahead windows (1 is sequential, and first), 'adaptive' or "
                             "'adaptive:M' (look-ahead M times the expected need)")
    parser.add_argument("--latency", type=float, default=0.1, help="seconds per mock call")
    parser.add_argument("--yes-percent", type=int, default=12, help="the mock judge's share of yes verdicts")
    parser.add_argument("--rounds", action="store_true",
                        help="the batch-rounds table instead (windows 4, 8, 12, 16, 30; in-process, no server)")
    args = parser.parse_args(argv)
    if not 0 <= args.yes_percent <= 100:
        parser.error(f"--yes-percent must be in 0..100 (got {args.yes_percent})")
    if args.rounds:
        print(f"Guided Selection (N=30, K=2) in batch rounds, {args.questions} MBTI questions x "
              f"{len(args.characters.split(','))} characters, yes to {args.yes_percent}% of (question, chunk) pairs\n")
        print(rounds(args.characters.split(","), args.questions, [4, 8, 12, 16, 30], args.yes_percent))
        return 0
    policies = args.windows.split(",")
    if policies[0] != "1":
        policies.insert(0, "1")
    results = run(args.characters.split(","), args.questions, policies, args.latency, args.yes_percent)
    base = results[0]
    print(f"Guided Selection (N=30, K=2) on {base['queries']} queries, mock judge with {args.latency * 1000:.0f} ms "
          f"per call, yes to {args.yes_percent}% of (question, chunk) pairs\n")
    print(table(results))
    print(f"\nGS failures (empty slot): {base['failures']} of {base['queries']} queries")
    return 0 if all(r["selections"] == base["selections"] for r in results) else 1
