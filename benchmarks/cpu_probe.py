"""Benchmark llama.cpp reading a prompt on one core: the embedded SmolLM2 as shipped (GGUF Q4_1) and stored as Q8_0.

``python -m benchmarks cpu_probe`` prints prompt tokens a second for each file: one thread, the logits of every
token kept (as llama.cpp's server keeps them for log-probabilities), the best of ``--runs`` (3) evaluations of the
same ``--tokens`` (400) tokens, timed by this process's CPU clock. Needs ``llama-cpp-python`` (``make
setup-server``). The Q8_0 figure is the speed probe quoted beside timings in docs/benchmarks.md: this machine's
speed varies through the day, also when nothing else runs on it.
"""

from __future__ import annotations

import argparse
import ctypes
import logging
import tempfile
import time
from pathlib import Path

from rpa_lib.llm.local import smollm2_path

TEXT = "You grade answers that a role-playing agent gave in the voice of a fictional character. " * 60


def requantized(source: Path, to: Path) -> Path:
    """``source`` (a GGUF file) stored as Q8_0 at ``to``: each weight rounded to 8 bits, which for SmolLM2's Q4_1
    changes it far less than Q4_1 itself did."""
    import llama_cpp

    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype, params.allow_requantize = llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0, True
    if llama_cpp.llama_model_quantize(str(source).encode(), str(to).encode(), ctypes.byref(params)) != 0:
        raise RuntimeError(f"llama.cpp could not requantize {source} to Q8_0")
    return to


def prompt_speed(model: Path, tokens: int = 400, runs: int = 3) -> float:
    """Prompt tokens a second of ``model`` on one thread: the best of ``runs`` evaluations of ``tokens`` tokens."""
    import llama_cpp

    llm = llama_cpp.Llama(str(model), n_ctx=max(768, tokens + 8), n_threads=1, n_threads_batch=1, logits_all=True,
                          verbose=False)
    ids = llm.tokenize(TEXT.encode())[:tokens]
    best = float("inf")
    for _ in range(runs):
        llm.reset()
        start = time.process_time()
        llm.eval(ids)
        best = min(best, time.process_time() - start)
    return len(ids) / best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks cpu_probe", description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=400, help="prompt tokens (default 400, at most 1,000)")
    parser.add_argument("--runs", type=int, default=3, help="evaluations of each file, the best counts (default 3)")
    args = parser.parse_args(argv)
    if not 1 <= args.tokens <= 1000 or args.runs < 1:
        parser.error("--tokens must be 1 to 1,000 and --runs at least 1")
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        parser.error("llama-cpp-python is not installed: make setup-server")
    logging.getLogger("llama-cpp-python").setLevel(logging.ERROR)  # not llama.cpp's hundreds of lines of loading
    shipped = smollm2_path()
    with tempfile.TemporaryDirectory(prefix="rpa-cpu-probe-") as tmp:
        q8 = requantized(shipped, Path(tmp) / "SmolLM2-135M-Instruct.Q8_0.gguf")
        print(f"llama.cpp, one thread, {args.tokens} prompt tokens, logits of every token kept, best of {args.runs}\n")
        print("| file | prompt tokens a second |\n|---|---:|")
        for label, model in (("Q4_1 (as shipped)", shipped), ("Q8_0 (the probe)", q8)):
            print(f"| {label} | {prompt_speed(model, args.tokens, args.runs):.0f} |")
    return 0
