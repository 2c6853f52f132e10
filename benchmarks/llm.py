"""Benchmark the LLM client layer against the mock OpenAI-compatible server: concurrency, cache, fault recovery.

``python -m benchmarks llm`` prints a Markdown table and writes it to ``results/bench_llm.md``.

The same ``--calls`` chat calls (default 200, distinct prompts) go through the real ``openai`` client to a
:class:`~benchmarks.mock_server.MockServer` answering after ``--latency`` seconds (default 0.1): once at each concurrency
in ``--workers`` (1, 4, 16; a fresh cache each time, so every call reaches the server), then again on the last
run's cache (all hits), then with ``--fault-rate`` (20%) of server requests faulted (429 with Retry-After,
500, hang past the client timeout, malformed body, empty choices, dropped connection) at the highest
concurrency. A run passes when every call succeeds with the answers of the first run. Last, one call to a server
that accepts connections and never answers: the time until its error, against the bound ``timeout x attempts +
backoff`` (``OpenAILLM.worst_case_seconds``). Retries use a small backoff so the whole benchmark takes well under
a minute offline.

This module measures the layer's overhead and robustness; it does not measure any real model.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.mock_server import MockServer
from rpa_lib.llm import LLMError, RetryPolicy, get_llm

BENCH_RETRY = RetryPolicy(attempts=10, base_delay=0.02, max_delay=0.2)
HANG_RETRY = RetryPolicy(attempts=3, base_delay=0.05, max_delay=0.2)
BENCH_KEY = "sk-bench-not-a-real-key"


def _run(name: str, server: MockServer, cache: Path, prompts: list, workers: int, timeout: float) -> dict:
    """One pass of every prompt; the row of the table plus the answers."""
    llm = get_llm("openai:mock-model", base_url=server.base_url, api_key=BENCH_KEY, cache=cache,
                  max_workers=workers, retry=BENCH_RETRY, timeout=timeout)
    before = server.requests
    start = time.perf_counter()
    outcomes = llm.map(lambda messages: llm.chat(messages, max_tokens=32).text, prompts, progress=False)
    wall = time.perf_counter() - start
    ok = sum(o.ok for o in outcomes)
    return {"scenario": name, "workers": workers, "calls": len(prompts), "ok": ok,
            "requests": server.requests - before, "hits": llm.usage.cache_hits, "retries": llm.usage.retries,
            "wall": wall, "rate": len(prompts) / wall, "answers": [o.value for o in outcomes]}


def _hang(timeout: float) -> dict:
    """One call to a server that never answers: seconds until the error, the bound, and the error."""
    with MockServer(script=["hang"] * HANG_RETRY.attempts, hang_seconds=60 + 10 * timeout) as server:
        llm = get_llm("openai:mock-model", base_url=server.base_url, api_key=BENCH_KEY, cache=False,
                      retry=HANG_RETRY, timeout=timeout)
        start = time.perf_counter()
        try:
            llm.chat([{"role": "user", "content": "Are you there?"}], max_tokens=8)
            error = None
        except LLMError as exc:
            error = str(exc)
        return {"seconds": time.perf_counter() - start, "bound": llm.worst_case_seconds, "error": error}


def _table(rows: list[dict], reference: list) -> str:
    head = ("| scenario | workers | calls | ok | server requests | cache hits | retries | wall s | calls/s "
            "| same answers |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    lines = [f"| {r['scenario']} | {r['workers']} | {r['calls']} | {r['ok']} | {r['requests']} | {r['hits']} "
             f"| {r['retries']} | {r['wall']:.2f} | {r['rate']:.1f} | {'yes' if r['answers'] == reference else 'NO'} |"
             for r in rows]
    return "\n".join([head, *lines])


def main(argv: list[str] | None = None) -> int:
    from rpa_lib.paths import RESULTS_DIR

    parser = argparse.ArgumentParser(prog="python -m benchmarks llm", description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.1, help="server seconds per request")
    parser.add_argument("--workers", default="1,4,16", help="comma-separated concurrency levels")
    parser.add_argument("--fault-rate", type=float, default=0.2)
    parser.add_argument("--timeout", type=float, default=1.0, help="client timeout; a hang lasts 3x this")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "bench_llm.md")
    args = parser.parse_args(argv)
    levels = [int(w) for w in args.workers.split(",")]
    prompts = [[{"role": "user", "content": f"Question {i}: what is {i} squared?"}] for i in range(args.calls)]

    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-llm-") as tmp:
        with MockServer(latency=args.latency) as server:
            for workers in levels:
                print(f"[bench llm] {args.calls} calls, {workers} workers ...", file=sys.stderr, flush=True)
                rows.append(_run("no cache", server, Path(tmp) / f"w{workers}.sqlite", prompts, workers,
                                 args.timeout))
            rows.append(_run("all cache hits", server, Path(tmp) / f"w{levels[-1]}.sqlite", prompts, levels[-1],
                             args.timeout))
        print(f"[bench llm] {args.fault_rate:.0%} faults ...", file=sys.stderr, flush=True)
        with MockServer(latency=args.latency, fault_rate=args.fault_rate, retry_after=0.05,
                        hang_seconds=3 * args.timeout, seed=1) as server:
            row = _run(f"{args.fault_rate:.0%} faults", server, Path(tmp) / "faults.sqlite", prompts, levels[-1],
                       args.timeout)
            row["scenario"] += " (" + ", ".join(f"{k} {v}" for k, v in sorted(server.served.items())) + ")"
            rows.append(row)

        print("[bench llm] a server that never answers ...", file=sys.stderr, flush=True)
        hang = _hang(args.timeout)

    reference = rows[0]["answers"]
    text = (f"LLM client layer against the mock server ({args.latency * 1000:.0f} ms per request), "
            f"{args.calls} chat calls per row\n\n{_table(rows, reference)}\n\n"
            f"A server that never answers: the call failed after {hang['seconds']:.2f} s ({HANG_RETRY.attempts} "
            f"attempts x {args.timeout:g} s timeout + backoff = {hang['bound']:.2f} s, plus the client's own time): "
            f"{hang['error']}\n")
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(f"[bench llm] wrote {args.out}", file=sys.stderr)
    passed = all(r["ok"] == r["calls"] and r["answers"] == reference for r in rows)
    passed = passed and hang["error"] is not None and hang["seconds"] <= hang["bound"] + 1.0
    return 0 if passed else 1
