"""Evidence recall (RAGEval's retrieval metrics on our QA pairs): do the retrieved chunks hold the persona sentences
that answer the question? A check of retrieval with no LLM, beside Table 1's similarity scores.

Every splitter gets the same retrieval either by equal k (:func:`evidence_scores`) or by an equal budget of
characters or tokens, the last chunk counted in part (:func:`budget_scores`); :func:`overlap_table` reports the
overlap the splitters achieve. The metrics are :mod:`rpa_lib.evaluation.metrics.retrieval`'s; this module retrieves
and aggregates.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from statistics import median

import pandas as pd
from tqdm.auto import tqdm

from rpa_lib.data import Dataset
from rpa_lib.evaluation.context import TOKENIZER, load_tokenizer, wordpiece_tokenizer
from rpa_lib.evaluation.metrics import eir, evidence_recall, within_budget
from rpa_lib.evaluation.uncertainty import interval_columns, merge_intervals
from rpa_lib.persona import heading_path
from rpa_lib.retrieval import retriever
from rpa_lib.splitters import SCOPES, SPLITTER_NAMES, overlap_chars, settings_for, split

KS = (1, 3, 5, 10)
CHARACTER_BUDGETS = (500, 1_000, 2_000, 3_000, 5_000)
TOKEN_BUDGETS = (125, 250, 500, 750, 1_250)  # about the character budgets / 4 (English WordPiece)
QA_SETS = ("paper", "multi")


@dataclass(frozen=True)
class TokenCounter:
    """Counts tokens and cuts a text to its first n tokens, with one tokenizer. ``label`` names it in tables."""

    label: str
    length: Callable[[str], int]
    prefix: Callable[[str, int], str]


def token_counter(name: str = "minilm") -> TokenCounter:
    """The tokenizer token budgets are counted with: ``"minilm"`` (:data:`~rpa_lib.evaluation.context.TOKENIZER`,
    offline) or a path to a ``tokenizer.json``; special tokens are not counted."""
    tok, label = (wordpiece_tokenizer(), TOKENIZER) if name == "minilm" else (load_tokenizer(name), str(name))

    @lru_cache(maxsize=1 << 14)
    def offsets(text: str) -> tuple[tuple[int, int], ...]:
        return tuple(tok.encode(text, add_special_tokens=False).offsets)

    def prefix(text: str, n: int) -> str:
        spans = offsets(text)
        return text[:spans[n - 1][1]] if n > 0 and spans else ""

    return TokenCounter(label, lambda text: len(offsets(text)), prefix)


def _ranked(dataset: Dataset, characters, splitters, embedders, sets, depth: int | None):
    """(the columns naming the question, its evidence, ranked chunks) per question, ``depth`` chunks (None: all)."""
    jobs = [(e, s, c) for e in embedders for s in splitters for c in characters]
    for emb, splitter, slug in tqdm(jobs, desc="evidence recall", unit="index"):
        index = retriever(slug, splitter, emb, dataset)
        qa = [q for qa_set in sets for q in dataset.qa(slug, qa_set)]
        if not qa:
            continue
        n = len(index.chunks) if depth is None else min(depth, len(index.chunks))
        for item, hits in zip(qa, index.search_many([q.question for q in qa], n), strict=True):
            yield ({"embedder": index.embedder.label, "splitter": splitter, "character": slug, "question": item.id,
                    "set": item.set}, list(item.evidence), [h.chunk for h in hits])


def evidence_scores(dataset: Dataset, characters: list[str], splitters: list[str], embedders: list[str],
                    ks: tuple[int, ...] = KS, sets: tuple[str, ...] = QA_SETS) -> pd.DataFrame:
    """Equal k: one row per (embedder, splitter, character, question, k) with recall, all_found, EIR on the
    bodies and with heading context, and the characters of the k chunk texts."""
    rows = []
    for named, evidence, ranked in _ranked(dataset, characters, splitters, embedders, sets, max(ks)):
        for k in ks:
            chunks = ranked[:k]
            bodies = [c.body for c in chunks]
            recall = evidence_recall(evidence, bodies)
            rows.append({**named, "k": k, "recall": recall, "all_found": recall == 1.0,
                         "eir_body": eir(evidence, bodies),
                         "eir_context": eir(evidence, [f"{heading_path(c.headings)}\n{c.body}" for c in chunks]),
                         "context_chars": sum(len(c.text) for c in chunks)})
    return pd.DataFrame(rows)


def evidence_table(scores: pd.DataFrame, by_character: bool = False) -> pd.DataFrame:
    """Means over questions per (embedder, splitter, set, k), and per character when ``by_character``; over
    characters, recall, all_found and eir_body with their 95% cluster-bootstrap interval (``_low``, ``_high``)."""
    keys = ["embedder", "splitter", "set", *(["character"] if by_character else []), "k"]
    means = ["recall", "all_found", "eir_body", "eir_context", "context_chars"]
    return _means(scores, keys, means, [] if by_character else ["recall", "all_found", "eir_body"])


def budget_scores(dataset: Dataset, characters: list[str], splitters: list[str], embedders: list[str],
                  character_budgets: tuple[int, ...] = CHARACTER_BUDGETS, token_budgets: tuple[int, ...] = TOKEN_BUDGETS,
                  tokens: TokenCounter | None = None, sets: tuple[str, ...] = QA_SETS) -> pd.DataFrame:
    """Equal budget: one row per (embedder, splitter, character, question, unit, budget), ``unit`` characters or
    ``tokens`` (default :func:`token_counter`), the ranked chunk texts cut to the budget, the last one in part."""
    tokens = tokens or (token_counter() if token_budgets else None)
    measures = [("characters", b, len, None) for b in character_budgets]
    measures += [("tokens", b, tokens.length, tokens.prefix) for b in token_budgets]
    rows = []
    for named, evidence, ranked in _ranked(dataset, characters, splitters, embedders, sets, None):
        texts = [c.text for c in ranked]
        for unit, budget, length, prefix in measures:
            given = within_budget(texts, budget, length, prefix)
            recall = evidence_recall(evidence, given)
            rows.append({**named, "unit": unit, "budget": budget, "chunks": len(given),
                         "context_chars": sum(map(len, given)), "recall": recall, "all_found": recall == 1.0,
                         "eir": eir(evidence, given)})
    out = pd.DataFrame(rows)
    out.attrs["tokenizer"] = tokens.label if tokens else None
    return out


def _means(scores: pd.DataFrame, keys: list[str], means: list[str], intervals: list[str]) -> pd.DataFrame:
    """Means over questions per ``keys`` and ``questions``; ``intervals``' columns with their 95% cluster bootstrap
    over characters (``<col>_low``, ``<col>_high``); the splitters by their display names."""
    t = scores.groupby(keys, sort=False).agg(**{c: (c, "mean") for c in means},
                                             questions=("question", "size")).reset_index()
    if intervals:
        rows = scores.assign(**{c: scores[c].astype(float) for c in intervals})
        t = merge_intervals(t, interval_columns(rows, keys, intervals), keys)
    t["splitter"] = t["splitter"].map(SPLITTER_NAMES).fillna(t["splitter"])
    return t


def budget_table(scores: pd.DataFrame) -> pd.DataFrame:
    """Means over questions per (embedder, splitter, set, unit, budget), recall, all_found and eir with their 95%
    cluster-bootstrap interval; the budget column is ``budget_last_chunk_cut`` (the last chunk counted in part)."""
    keys = ["embedder", "splitter", "set", "unit", "budget"]
    t = _means(scores, keys, ["recall", "all_found", "eir", "chunks", "context_chars"], ["recall", "all_found", "eir"])
    return t.rename(columns={"budget": "budget_last_chunk_cut"})


def overlap_table(dataset: Dataset, characters: list[str], splitters: list[str]) -> pd.DataFrame:
    """The overlap each splitter achieves between consecutive chunks, pooled over characters: pairs that overlap
    and their share, the median overlap in characters and as a share of the asked overlap. No embedding."""
    rows = []
    for splitter in splitters:
        sizes, ratios, targets, chunks = [], [], [], 0
        for slug in characters:
            persona = dataset.persona(slug)
            target = settings_for(persona, splitter).overlap
            pieces = split(persona, splitter)
            chunks += len(pieces)
            targets.append(target)
            pair_sizes = [overlap_chars(a.body, b.body) for a, b in zip(pieces, pieces[1:])]
            sizes += pair_sizes
            ratios += [n / target for n in pair_sizes if n and target]
        hits = [n for n in sizes if n]
        rows.append({"splitter": SPLITTER_NAMES.get(splitter, splitter), "scope": SCOPES[splitter], "chunks": chunks,
                     "pairs": len(sizes), "overlapping_pairs": len(hits),
                     "share_overlapping": len(hits) / len(sizes) if sizes else 0.0,
                     "median_overlap_chars": median(hits) if hits else 0,
                     "median_overlap_vs_asked": median(ratios) if ratios else 0.0,
                     "median_asked_overlap": median(targets) if targets else 0})
    return pd.DataFrame(rows)
