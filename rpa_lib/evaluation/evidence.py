"""Evidence recall (RAGEval's retrieval metrics on our QA pairs): do the retrieved chunks hold the persona
sentences that answer the question? A check of retrieval with no LLM, beside Table 1's similarity scores
(which say how similar the retrieved chunks are, not whether the right ones came back).

For every splitter x embedder x character x question and every k in ``ks``: Recall (each evidence sentence is a
reference, found when one retrieved chunk body contains it), whether all references were found, and EIR (words
of the found references over all words retrieved) on the chunk bodies and on the chunks with their heading
context in front (what ACTS embeds). The metrics are :mod:`rpa_lib.evaluation.metrics.retrieval`'s.
"""

from __future__ import annotations

import pandas as pd
from tqdm.auto import tqdm

from rpa_lib.data import Dataset
from rpa_lib.evaluation.metrics import eir, evidence_recall
from rpa_lib.persona import heading_path
from rpa_lib.retrieval import retriever
from rpa_lib.splitters import SPLITTER_NAMES

KS = (1, 3, 5, 10)


def evidence_scores(dataset: Dataset, characters: list[str], splitters: list[str], embedders: list[str],
                    ks: tuple[int, ...] = KS) -> pd.DataFrame:
    """One row per (embedder, splitter, character, question, k): recall, all_found, eir_body, eir_context."""
    rows = []
    jobs = [(e, s, c) for e in embedders for s in splitters for c in characters]
    for emb, splitter, slug in tqdm(jobs, desc="evidence recall", unit="index"):
        index = retriever(slug, splitter, emb, dataset)
        qa = dataset.qa(slug)
        hits = index.search_many([q.question for q in qa], min(max(ks), len(index.chunks)))
        for item, ranked in zip(qa, hits, strict=True):
            for k in ks:
                chunks = [h.chunk for h in ranked[:k]]
                bodies = [c.body for c in chunks]
                recall = evidence_recall(list(item.evidence), bodies)
                rows.append({"embedder": index.embedder.label, "splitter": splitter, "character": slug,
                             "question": item.id, "k": k, "recall": recall, "all_found": recall == 1.0,
                             "eir_body": eir(list(item.evidence), bodies),
                             "eir_context": eir(list(item.evidence), [f"{heading_path(c.headings)}\n{c.body}" for c in chunks])})
    return pd.DataFrame(rows)


def evidence_table(scores: pd.DataFrame, by_character: bool = False) -> pd.DataFrame:
    """Means over questions per (embedder, splitter, k), and per character when ``by_character``: recall, the
    share of questions with all their evidence found, EIR on bodies and with context, and the questions."""
    keys = ["embedder", "splitter", *(["character"] if by_character else []), "k"]
    t = scores.groupby(keys, sort=False).agg(recall=("recall", "mean"), all_found=("all_found", "mean"),
                                             eir_body=("eir_body", "mean"), eir_context=("eir_context", "mean"),
                                             questions=("question", "size")).reset_index()
    t["splitter"] = t["splitter"].map(SPLITTER_NAMES).fillna(t["splitter"])
    return t
