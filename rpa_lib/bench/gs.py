"""``python -m rpa_lib.bench gs``: Guided Selection, sequential (window 1) against the look-ahead window.

Real ACTS chunks of a few characters (all-MiniLM-L6-v2 retrieval), MBTI interview questions as queries, and a
judge served by the mock OpenAI-compatible server with 100 ms latency per call through the real ``openai``
client path. The mock answers "yes" for a fixed pseudo-random ~12% of (question, chunk) pairs (a hash of the
prompt), so both runs see the same verdicts. The LLM cache is off so every judge call reaches the server.

Prints wall time per query, judge calls per query (counted at the server, speculative calls included) and
whether every selection is identical. It does not measure a real LLM's latency or verdicts.
"""

from __future__ import annotations

import argparse
import hashlib
import time

from rpa_lib.data import load_questionnaire
from rpa_lib.llm import MockServer, get_llm
from rpa_lib.methods import Amadeus


def judge_rule(body: dict) -> str:
    prompt = body["messages"][-1]["content"] if body.get("messages") else ""
    return "yes" if int(hashlib.sha256(prompt.encode()).hexdigest(), 16) % 100 < 12 else "no"


def run(characters: list[str], questions: int, windows: list[int], latency: float) -> list[dict]:
    items = load_questionnaire("mbti").subset(questions).items
    queries = [(c, i.question) for c in characters for i in items]
    results = []
    with MockServer(judge_rule, latency=latency) as server:
        llm = get_llm("openai:mock-judge", base_url=server.base_url, api_key="sk-bench", cache=False, max_workers=16)
        for window in windows:
            method = Amadeus(llm, window=window)
            for c in characters:  # build the indexes outside the timing
                method.retriever(c)
            before, start = server.requests, time.perf_counter()
            selections = [method.select(c, q)[0] for c, q in queries]
            seconds = time.perf_counter() - start
            time.sleep(latency * 2)  # let discarded speculative calls land before counting
            results.append({"window": window, "queries": len(queries), "seconds": seconds,
                            "calls": server.requests - before,
                            "examined": sum(s.examined for s in selections),
                            "failures": sum(s.failed for s in selections),
                            "selections": [[c.id for c in s.selected] for s in selections]})
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rpa_lib.bench gs", description=__doc__.split("\n")[0])
    parser.add_argument("--characters", default="frieren,light-yagami,yui-hirasawa")
    parser.add_argument("--questions", type=int, default=8, help="MBTI questions per character")
    parser.add_argument("--windows", default="1,4,8", help="comma-separated look-ahead windows; 1 is sequential")
    parser.add_argument("--latency", type=float, default=0.1, help="seconds per mock call")
    args = parser.parse_args(argv)
    results = run(args.characters.split(","), args.questions, [int(w) for w in args.windows.split(",")], args.latency)
    base = results[0]
    print(f"Guided Selection (N=30, K=2) on {base['queries']} queries, mock judge with {args.latency * 1000:.0f} ms per call\n")
    print("| window | wall time / query | judge calls / query (server) | examined / query | speed-up | selections identical to window 1 |")
    print("|---|---|---|---|---|---|")
    for r in results:
        same = r["selections"] == base["selections"] and r["examined"] == base["examined"]
        print(f"| {r['window']} | {r['seconds'] / r['queries']:.3f} s | {r['calls'] / r['queries']:.1f} | "
              f"{r['examined'] / r['queries']:.1f} | {base['seconds'] / r['seconds']:.1f}x | {'yes' if same else 'NO'} |")
    print(f"\nGS failures (empty slot): {base['failures']} of {base['queries']} queries")
    return 0 if all(r["selections"] == base["selections"] for r in results) else 1
