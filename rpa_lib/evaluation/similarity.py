"""AMADEUS Table 1: the distribution of similarity scores of the top-k retrieved chunks of each character's QA
questions, per splitter and embedder (mu and two readings of sigma^2, summed over characters). It retrieves and
aggregates; it calls no LLM.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from rpa_lib.data import Dataset
from rpa_lib.embeddings import embed, truncation
from rpa_lib.evaluation.uncertainty import interval_columns, merge_intervals
from rpa_lib.retrieval import retriever
from rpa_lib.splitters import SPLITTER_NAMES


def retrieved_scores(dataset: Dataset, characters: list[str], splitters: list[str], embedders: list[str],
                     k: int = 5, qa_set: str = "paper") -> pd.DataFrame:
    """One row per retrieved chunk of the questions of one QA set, with ``zero_query`` (an all-zero question vector,
    whose chunks are :meth:`~rpa_lib.retrieval.Retriever.search_vectors`' document-order tie-break)."""
    rows = []
    jobs = [(e, s, c) for e in embedders for s in splitters for c in characters]
    for emb, splitter, slug in tqdm(jobs, desc="retrieving", unit="index"):
        index = retriever(slug, splitter, emb, dataset)
        qa = dataset.qa(slug, qa_set)
        if not qa:
            continue
        vectors = embed(index.embedder, [q.question for q in qa], kind="query")  # once: for the search and the zeros
        for item, hits, vector in zip(qa, index.search_vectors(vectors, k), vectors, strict=True):
            zero = not vector.any()
            rows += [{"character": slug, "splitter": splitter, "embedder": index.embedder.label, "question": item.id,
                      "rank": r, "score": h.score, "chunk": h.chunk.id, "zero_query": zero}
                     for r, h in enumerate(hits, start=1)]
    return pd.DataFrame(rows)


def per_character(scores: pd.DataFrame) -> pd.DataFrame:
    """mu and both readings of sigma^2 (``var``, ``var_q``) per (splitter, embedder, character)."""
    keys = ["splitter", "embedder", "character"]
    g = scores.groupby(keys, sort=False)["score"]
    out = g.agg(mu="mean", var=lambda s: float(np.var(s)), n="size").reset_index()
    question_means = scores.groupby([*keys, "question"], sort=False)["score"].mean()
    var_q = question_means.groupby(level=keys, sort=False).agg(lambda s: float(np.var(s))).rename("var_q")
    return out.merge(var_q.reset_index(), on=keys)


def similarity_table(per_char: pd.DataFrame) -> pd.DataFrame:
    """Table 1: ``sum_mu``, ``sum_var`` and ``sum_var_q`` over characters per splitter and embedder, each with its
    95% interval (the number of characters times the cluster bootstrap of the per-character mean)."""
    keys = ["splitter", "embedder"]
    t = per_char.groupby(keys, sort=False).agg(sum_mu=("mu", "sum"), sum_var=("var", "sum"), sum_var_q=("var_q", "sum"),
                                               characters=("character", "nunique")).reset_index()
    ci = interval_columns(per_char.rename(columns={"mu": "sum_mu", "var": "sum_var", "var_q": "sum_var_q"}), keys,
                          ["sum_mu", "sum_var", "sum_var_q"], scale=per_char.character.nunique())
    t = merge_intervals(t, ci, keys)
    t["splitter"] = t["splitter"].map(SPLITTER_NAMES).fillna(t["splitter"])
    return t


def truncation_table(dataset: Dataset, characters: list[str], splitters: list[str],
                     embedders: list[str]) -> pd.DataFrame:
    """Share of chunks longer than each embedder reads, per splitter (never truncated silently)."""
    rows = []
    for emb in embedders:
        for splitter in splitters:
            retrievers = [retriever(slug, splitter, emb, dataset) for slug in characters]
            embedder = retrievers[-1].embedder  # TF-IDF is fitted per character but reads any length
            t = truncation(embedder, [c.text for r in retrievers for c in r.chunks])
            rows.append({"splitter": SPLITTER_NAMES.get(splitter, splitter), "embedder": embedder.label,
                         "chunks": t.n_texts, "truncated": t.n_truncated, "share_truncated": t.share,
                         "max_tokens": t.max_tokens, "longest_tokens": t.longest})
    return pd.DataFrame(rows)
