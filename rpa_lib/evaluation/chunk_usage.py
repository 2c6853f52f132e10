"""Chunk statistics (AMADEUS Figure 1 and Table 3): which persona chunks a method puts in front of the LLM.

Per character and question set: the chunk usage rate (with ``ceiling_rate``, the most the chunks shown allow),
the GS failure rate and each chunk's duplication frequency, read from the jobs' context items (the runner stops
at ``context``: no reply is generated). :data:`COMPARISONS` names the two set-ups Table 3 compares Naive RAG and
AMADEUS in.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import pandas as pd

from rpa_lib.evaluation.runner import Job, chunk_ids, run_jobs
from rpa_lib.methods.registry import build_method

MIN_USED_CHARS = 200  # characters of a chunk's text that must reach the LLM for the chunk to count as used


@dataclass(frozen=True)
class Comparison:
    naive_splitter: str
    naive_k: int | None  # None: K, the GS slot size
    amadeus_k: int  # AMADEUS's separate top-k knowledge (0: GS chooses every chunk)
    amadeus_roles: tuple[str, ...] | None  # which of AMADEUS's context items count (None: all)

    def describe(self, naive, amadeus) -> str:
        a = amadeus.settings
        counted = "every chunk in front of the LLM" if self.amadeus_roles is None else "GS-selected chunks only"
        return (f"Naive RAG top-{naive.settings.k} {naive.settings.splitter.upper()} chunks vs AMADEUS on "
                f"{a.splitter.upper()} chunks with top-{a.k} knowledge + GS K={a.slot_size} ({counted})")


COMPARISONS = {"equal": Comparison("acts", None, 0, None), "paper-like": Comparison("acts", 3, 3, ("selected",))}


def comparison_methods(name: str, llm, dataset, **amadeus_settings):
    """``((naive_rag, roles), (amadeus, roles))`` for a :data:`COMPARISONS` entry; ``amadeus_settings`` go to
    AMADEUS (its embedder to both), which runs without the Attribute Extractor: usage needs only the chunks."""
    if name not in COMPARISONS:
        raise ValueError(f"unknown comparison {name!r}; choose one of {', '.join(COMPARISONS)}")
    c = COMPARISONS[name]
    settings = {k: v for k, v in amadeus_settings.items() if v is not None}
    amadeus = build_method("amadeus", llm, dataset=dataset, k=c.amadeus_k, extract=False, **settings)
    naive = build_method("naive_rag", llm, dataset=dataset, splitter=c.naive_splitter, embedder=amadeus.settings.embedder,
                         k=c.naive_k or amadeus.settings.slot_size)
    return (naive, None), (amadeus, list(c.amadeus_roles) if c.amadeus_roles else None)


def counted_items(items: list[dict], method, character: str) -> list[dict]:
    """The context items whose chunk reached the LLM with at least :data:`MIN_USED_CHARS` of its characters (or all
    of a shorter chunk); items without a chunk are kept."""
    retriever = method.retriever(character)

    def full(item: dict) -> int:
        return max((len(chunk.text) for c in item.get("chunk_ids") or () if (chunk := retriever.chunk(c))), default=0)
    return [i for i in items if len(i.get("text") or "") >= min(MIN_USED_CHARS, full(i))]


def used_chunks(method, jobs: list[Job], *, roles: list[str] | None = None, llm=None,
                desc: str = "chunks") -> pd.DataFrame:
    """One row per job: the used chunk ids of the items of ``roles`` (None: all), every context item, GS's
    outcome where reported, and a failed job's error (kept)."""
    rows = run_jobs(method, jobs, step="context", llm=llm, desc=desc)
    out = []
    for r in rows.to_dict("records"):
        ok = pd.isna(r["error"])
        details = r["details"] if ok else {}
        chunks = chunk_ids(counted_items(r["context"], method, r["character"]), *(roles or ())) if ok else []
        row = {"method": r["method"], "character": r["character"], "question_id": r["question_id"],
               "question": r["question"], "chunks": chunks, "context": r["context"] if ok else None,
               "gs_failed": details.get("gs_failed"), "examined": details.get("examined", 0)}
        if ok and "gs_failed" in details:
            row["judge_calls_cached"] = r["cached_calls"]
        out.append({**row, "error": None if ok else r["error"]})
    return pd.DataFrame(out)


def usage_stats(used: pd.DataFrame, n_chunks: dict[str, int]) -> pd.DataFrame:
    """Per (method, character): chunks, chunks used, usage rate and its ceiling, GS failure rate, failed items."""
    rows = []
    for (method, character), g in used.groupby(["method", "character"], sort=False):
        ok = g[g.error.isna()]
        distinct = {c for chunks in ok.chunks for c in chunks}
        shown = sum(len(chunks) for chunks in ok.chunks)
        gs = ok.gs_failed.dropna()
        rows.append({"method": method, "character": character, "questions": len(ok), "failed_items": len(g) - len(ok),
                     "chunks": n_chunks[character], "chunks_used": len(distinct),
                     "usage_rate": len(distinct) / n_chunks[character],
                     "gs_failure_rate": float(gs.mean()) if len(gs) else None,
                     "ceiling_rate": min(shown, n_chunks[character]) / n_chunks[character]})
    return pd.DataFrame(rows)


def duplication_frequencies(used: pd.DataFrame, n_chunks: dict[str, int]) -> pd.DataFrame:
    """Per (method, character, chunk used at least once): how many questions used it."""
    rows = []
    for (method, character), g in used[used.error.isna()].groupby(["method", "character"], sort=False):
        counts = Counter(c for chunks in g.chunks for c in chunks)
        rows += [{"method": method, "character": character, "chunk": c, "uses": n} for c, n in counts.items()]
    return pd.DataFrame(rows, columns=["method", "character", "chunk", "uses"])
