"""Benchmark one reply cache shared by several processes: how many requests are paid twice.

``python -m benchmarks shared_cache`` prints a Markdown table and writes it to ``results/bench_shared_cache.md``.

For each count in ``--processes`` (2 and 4), that many processes start together, each running the same ``--calls``
chat calls (default 300, distinct prompts, the same in every process and in the same order) with ``--workers``
threads (16) against one :class:`~benchmarks.mock_server.MockServer` (its own process, ``--latency`` seconds per
request), all through one new cache file. The server counts the requests it received: every request beyond the
distinct calls is a duplicate, paid twice. Each count runs with the cache's in-flight claims
(:mod:`rpa_lib.llm.inflight`) and, for comparison, without them (``Cache(path, claims=False)``: each process
sends its own misses). A run passes when every call of every process got the answer and, with claims, no request
was sent twice.

It measures the layer's coordination between processes, not a real server: the mock answers at once after its
latency.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from rpa_lib.paths import RESULTS_DIR

BENCH_KEY = "sk-bench-not-a-real-key"


def prompts(calls: int) -> list[list[dict]]:
    return [[{"role": "user", "content": f"Question {i}: what is {i} cubed?"}] for i in range(calls)]


def worker(url: str, cache: str, calls: int, workers: int, claims: bool) -> int:
    """One process's run: ready, wait for the go line on stdin, run the calls; prints a JSON line of its counts."""
    from rpa_lib.llm import Cache, RetryPolicy, get_llm

    llm = get_llm("openai:mock-model", base_url=url, api_key=BENCH_KEY, cache=Cache(cache, claims=claims),
                  max_workers=workers, retry=RetryPolicy(attempts=5, base_delay=0.02, max_delay=0.2), timeout=30)
    print("ready", flush=True)
    sys.stdin.readline()
    start = time.perf_counter()
    outcomes = llm.map(lambda messages: llm.chat(messages, max_tokens=16).text, prompts(calls), progress=False)
    ok = sum(o.ok and o.value.startswith("echo: Question") for o in outcomes)
    print(json.dumps({"ok": ok, "hits": llm.usage.cache_hits, "seconds": time.perf_counter() - start}), flush=True)
    return 0 if ok == calls else 1


def _requests(url: str) -> int:
    with urllib.request.urlopen(f"{url}/mock/stats", timeout=10) as response:
        return json.load(response)["requests"]


def _run(url: str, cache: Path, processes: int, args: argparse.Namespace, claims: bool) -> dict:
    """``processes`` workers started together on one new cache file: the table's row."""
    command = [sys.executable, "-m", "benchmarks.shared_cache", "--worker", url, str(cache), "--calls",
               str(args.calls), "--workers", str(args.workers)] + ([] if claims else ["--no-claims"])
    procs = [subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
             for _ in range(processes)]
    for p in procs:  # every process built its client before any sends
        assert p.stdout is not None and p.stdout.readline().strip() == "ready"
    before, start = _requests(url), time.perf_counter()
    for p in procs:
        assert p.stdin is not None
        p.stdin.write("go\n")
        p.stdin.flush()
    results = [json.loads(p.communicate(timeout=600)[0]) for p in procs]
    wall = time.perf_counter() - start
    requests = _requests(url) - before
    return {"claims": claims, "processes": processes, "calls": processes * args.calls,
            "ok": sum(r["ok"] for r in results), "requests": requests, "duplicates": requests - args.calls,
            "hits": sum(r["hits"] for r in results), "wall": wall}


def _table(rows: list[dict], args: argparse.Namespace) -> str:
    head = ("| in-flight claims | processes | calls in all | ok | server requests | duplicates | cache hits | wall s |\n"
            "|---|---:|---:|---:|---:|---:|---:|---:|")
    lines = [f"| {'on' if r['claims'] else 'off'} | {r['processes']} | {r['calls']:,} | {r['ok']:,} | "
             f"{r['requests']:,} | {r['duplicates']:,} | {r['hits']:,} | {r['wall']:.1f} |" for r in rows]
    return (f"One cache file shared by processes, each running the same {args.calls} distinct chat calls with "
            f"{args.workers} workers against the mock server ({args.latency * 1000:.0f} ms per request)\n\n"
            + "\n".join([head, *lines]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks shared_cache", description=__doc__.split("\n")[0])
    parser.add_argument("--processes", default="2,4", help="comma-separated process counts")
    parser.add_argument("--calls", type=int, default=300, help="distinct calls, run by every process")
    parser.add_argument("--workers", type=int, default=16, help="threads per process")
    parser.add_argument("--latency", type=float, default=0.1, help="server seconds per request")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "bench_shared_cache.md")
    parser.add_argument("--worker", nargs=2, metavar=("URL", "CACHE"), help=argparse.SUPPRESS)
    parser.add_argument("--no-claims", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker(*args.worker, args.calls, args.workers, not args.no_claims)

    server = subprocess.Popen([sys.executable, "-m", "benchmarks.mock_server", "--port", "0", "--latency",
                               str(args.latency)], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        url = server.stdout.readline().split(" at ")[1].split(" ")[0]
        rows = []
        with tempfile.TemporaryDirectory(prefix="bench-shared-") as tmp:
            for count in [int(p) for p in args.processes.split(",")]:
                for claims in (False, True):
                    print(f"[bench shared_cache] {count} processes, claims {'on' if claims else 'off'} ...",
                          file=sys.stderr, flush=True)
                    rows.append(_run(url, Path(tmp) / f"p{count}-{claims}.sqlite", count, args, claims))
    finally:
        server.terminate()
        server.wait(10)
    text = _table(rows, args) + "\n"
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(f"[bench shared_cache] wrote {args.out}", file=sys.stderr)
    return 0 if all(r["ok"] == r["calls"] and (r["duplicates"] == 0 or not r["claims"]) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
