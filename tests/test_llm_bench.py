"""The LLM benchmark runs end to end on a small scale (the full one is ``python -m benchmarks llm``)."""

from __future__ import annotations

from benchmarks import llm as bench_llm


def test_bench_llm_small(tmp_path, capsys):
    out = tmp_path / "bench_llm.md"
    code = bench_llm.main(["--calls", "20", "--latency", "0.01", "--workers", "1,4", "--fault-rate", "0.3",
                           "--timeout", "0.3", "--out", str(out)])
    table = capsys.readouterr().out
    assert code == 0, table
    assert "all cache hits" in table and "30% faults" in table and "| NO |" not in table
    assert "A server that never answers: the call failed after" in table and "timed out after 0.3 s" in table
    assert out.read_text() in table + "\n" or out.read_text().strip() in table
