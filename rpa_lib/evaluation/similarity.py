"""AMADEUS Table 1: the distribution of similarity scores of retrieved chunks, per splitter and embedder.

For each character, ask its QA questions, retrieve the top-k chunks, and take the mean (mu) and the variance
(sigma^2, population) of all retrieved similarities; the table sums both over characters. The paper does not
state k; we default to 5 and keep it a parameter. Similarities are cosine similarities of normalized vectors.

This module retrieves and aggregates; it calls no LLM.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from rpa_lib.data import load_qa
from rpa_lib.embeddings import truncation
from rpa_lib.retrieval import Retriever

SPLITTER_NAMES = {"vanilla": "Vanilla", "ats": "ATS", "acts": "ACTS"}


@cache
def _retriever(slug: str, splitter: str, embedder: str, chars_dir: Path | None) -> Retriever:
    """One retriever per (character, splitter, embedder), shared by the functions of this module."""
    return Retriever.for_character(slug, splitter, embedder, characters_dir=chars_dir)


def retrieved_scores(characters: list[str], splitters: list[str], embedders: list[str], k: int = 5,
                     data_dir: Path | None = None) -> pd.DataFrame:
    """One row per retrieved chunk: character, splitter, embedder, question id, rank, score."""
    chars_dir = Path(data_dir) / "characters" if data_dir else None
    rows = []
    jobs = [(e, s, c) for e in embedders for s in splitters for c in characters]
    for emb, splitter, slug in tqdm(jobs, desc="retrieving", unit="index"):
        retriever = _retriever(slug, splitter, emb, chars_dir)
        qa = load_qa(slug, data_dir)
        for item, hits in zip(qa, retriever.search_many([q.question for q in qa], k), strict=True):
            rows += [{"character": slug, "splitter": splitter, "embedder": retriever.embedder.label, "question": item.id,
                      "rank": r, "score": h.score, "chunk": h.chunk.id} for r, h in enumerate(hits, start=1)]
    return pd.DataFrame(rows)


def per_character(scores: pd.DataFrame) -> pd.DataFrame:
    """mu and sigma^2 of the retrieved similarities per (splitter, embedder, character)."""
    g = scores.groupby(["splitter", "embedder", "character"], sort=False)["score"]
    return g.agg(mu="mean", var=lambda s: float(np.var(s)), n="size").reset_index()


def similarity_table(per_char: pd.DataFrame) -> pd.DataFrame:
    """Table 1: sum over characters of mu and of sigma^2 (columns ``splitter, embedder, sum_mu, sum_var``)."""
    t = per_char.groupby(["splitter", "embedder"], sort=False).agg(sum_mu=("mu", "sum"), sum_var=("var", "sum"),
                                                                   characters=("character", "nunique"))
    t = t.reset_index()
    t["splitter"] = t["splitter"].map(SPLITTER_NAMES).fillna(t["splitter"])
    return t


def truncation_table(characters: list[str], splitters: list[str], embedders: list[str],
                     data_dir: Path | None = None) -> pd.DataFrame:
    """Share of chunks longer than each embedder reads, per splitter (never truncated silently)."""
    chars_dir = Path(data_dir) / "characters" if data_dir else None
    rows = []
    for emb in embedders:
        for splitter in splitters:
            retrievers = [_retriever(slug, splitter, emb, chars_dir) for slug in characters]
            embedder = retrievers[-1].embedder  # TF-IDF is fitted per character but reads any length
            t = truncation(embedder, [c.text for r in retrievers for c in r.chunks])
            rows.append({"splitter": SPLITTER_NAMES.get(splitter, splitter), "embedder": embedder.label,
                         "chunks": t.n_texts, "truncated": t.n_truncated, "share_truncated": t.share,
                         "max_tokens": t.max_tokens, "longest_tokens": t.longest})
    return pd.DataFrame(rows)
