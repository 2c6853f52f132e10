"""Batch rounds end to end through the OpenAI Batch API protocol: BatchLLM's lines, the round loop, the batch
transport and the test server (``benchmarks.batch_server``); the final reply lands in the reply cache under the
synchronous key."""

from __future__ import annotations

from pathlib import Path

from benchmarks.batch_server import BatchServer
from rpa_lib.llm import FakeLLM, OpenAILLM, RunMode
from rpa_lib.llm.batches import run_round
from rpa_lib.llm.reply import Pending
from rpa_lib.run import rounds

QUESTION = [{"role": "user", "content": "What do you fear?"}]


def fast(lines, **options):
    """The batch transport, polling every 10 ms."""
    return run_round(lines, poll_seconds=0.01, **options)


def test_two_dependent_calls_take_two_openai_batch_rounds_and_then_hit_the_cache(tmp_path):
    with BatchServer() as server:
        real = OpenAILLM("gpt-4.1-mini", base_url=server.base_url, api_key="sk-test", cache=tmp_path / "llm.sqlite")

        def collect(notebook: str, mode: dict, scratch: Path) -> str | None:
            llm = RunMode.of(mode).wrap(real)
            try:
                first = llm.chat(QUESTION)
                llm.chat([*QUESTION, {"role": "assistant", "content": first.text}, {"role": "user", "content": "Why?"}])
            except Pending as exc:
                return str(exc)
            return None

        entries = rounds.run_rounds(["05_qa_evaluation"], collect, mode="openai", store=tmp_path / "store",
                                    run_dir=tmp_path / "run", build=FakeLLM, send=fast, progress=False)
        assert [(e["calls"], e["answered"]) for e in entries] == [(1, 1), (1, 1)]
        assert len(server.batches) == 2 and all(b["status"] == "completed" for b in server.batches.values())
    # the server is gone: a synchronous call of either is a cache hit
    assert real.chat(QUESTION).cached and real.chat(QUESTION).text == f"echo: {QUESTION[0]['content']}"
