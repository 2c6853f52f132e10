"""Chunk statistics (AMADEUS Figure 1 and Table 3): which persona chunks a method puts in front of the LLM.

For a character and a question set:
- chunk usage rate: the share of the character's chunks used at least once as context;
- GS failure rate: the share of questions for which Guided Selection's slot stayed empty (AMADEUS only);
- duplication frequencies: for each chunk, in how many of the questions it was used.

Naive RAG uses its top-k retrieved chunks; AMADEUS uses the chunks GS selects (the top K+1 on a failure),
which is all Figure 1 and Table 3 need, so no response is generated here.
"""

from __future__ import annotations

from collections import Counter

import pandas as pd

from rpa_lib.methods import Amadeus, NaiveRAG


def used_chunks(method, jobs: list[tuple[str, str, str]], llm=None, desc: str = "chunks") -> pd.DataFrame:
    """One row per (character, question id): the chunk ids the method used, and GS's outcome.

    ``jobs`` are ``(character, question_id, question)``. AMADEUS runs GS through ``llm.map`` (bounded
    concurrency, progress bar); a failed item keeps its row with the error, never dropped.
    """
    if isinstance(method, Amadeus):
        def run(job):
            selection, calls = method.select(job[0], job[2])
            return {"chunks": [c.id for c in selection.selected], "gs_failed": selection.failed,
                    "examined": selection.examined, "judge_calls_cached": sum(c.cached for c in calls)}
    elif isinstance(method, NaiveRAG):
        def run(job):
            return {"chunks": [c.id for c in method.retrieve(job[0], job[2])], "gs_failed": None, "examined": 0}
    else:
        raise TypeError(f"chunk usage is defined for naive_rag and amadeus, not {method!r}")
    outcomes = (llm or method.llm).map(run, jobs, desc=desc)
    rows = []
    for job, out in zip(jobs, outcomes, strict=True):
        base = {"method": method.name, "character": job[0], "question_id": job[1], "question": job[2]}
        rows.append({**base, **(out.value if out.ok else {"chunks": [], "gs_failed": None, "examined": 0}),
                     "error": out.error})
    return pd.DataFrame(rows)


def usage_stats(used: pd.DataFrame, n_chunks: dict[str, int]) -> pd.DataFrame:
    """Per (method, character): chunks, chunks used, usage rate, GS failure rate, failed items."""
    rows = []
    for (method, character), g in used.groupby(["method", "character"], sort=False):
        ok = g[g.error.isna()]
        distinct = {c for chunks in ok.chunks for c in chunks}
        gs = ok.gs_failed.dropna()
        rows.append({"method": method, "character": character, "questions": len(ok), "failed_items": len(g) - len(ok),
                     "chunks": n_chunks[character], "chunks_used": len(distinct),
                     "usage_rate": len(distinct) / n_chunks[character],
                     "gs_failure_rate": float(gs.mean()) if len(gs) else None})
    return pd.DataFrame(rows)


def duplication_frequencies(used: pd.DataFrame, n_chunks: dict[str, int]) -> pd.DataFrame:
    """Per (method, character, chunk used at least once): how many questions used it."""
    rows = []
    for (method, character), g in used[used.error.isna()].groupby(["method", "character"], sort=False):
        counts = Counter(c for chunks in g.chunks for c in chunks)
        rows += [{"method": method, "character": character, "chunk": c, "uses": n} for c, n in counts.items()]
    return pd.DataFrame(rows, columns=["method", "character", "chunk", "uses"])
