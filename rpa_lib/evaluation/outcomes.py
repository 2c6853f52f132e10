"""Per-item outcomes in one long format, and the intervals and paired comparisons computed from them.

The format (:data:`COLUMNS`): one row per ``(table, task, method, character, item, repeat, outcome)`` with its
numeric ``value`` and the ``llm``, ``judge`` and ``embedder`` labels of the run. ``item`` is what was scored once:
a question id (Table 6 ACC, ACC_L, HS), a questionnaire dimension (Tables 4-5: 1 when the predicted letter is the
true one), a rating unit or a human-evaluation sample (Likert), or ``"all"`` where the committed file holds one
number per character (Table 1's mean similarity, evidence recall, chunk usage rate). A failed item keeps its row
with a NaN value, so counts show it; intervals use the values. ``repeat`` is the run (:mod:`rpa_lib.experiment`'s
``repeats``: the same item answered again, with another seed): 0 in a file without the column, i.e. one run.
Scores average over the runs; the cluster bootstrap resamples characters with all their runs inside, so
run-to-run variance is in the interval (``n_repeats``). Runs of two methods are not paired with each other (their
seeds are independent draws): a paired comparison pairs each item's mean over its runs (tested with Wilcoxon, as
the means are no longer 0/1), and the character-level sign test pairs each character's mean over items and runs;
the character, the unit the intervals resample, is the independent one.

The adapters turn the committed per-item files into this format (each takes the file's DataFrame, so a test or a
notebook can pass its own). :func:`summarize` gives each (table, task, outcome, method) its score and 95% interval
(characters resampled as clusters; Clopper-Pearson beside it for 0/1 items as if independent), :func:`compare`
each method against its reference (AMADEUS, or ACTS for the splitter tables; Naive RAG against its budget-matched
control): the paired difference with its interval, an item-level and a character-level test, and Holm's
adjustment across the comparisons of one table. This module reads no file: :func:`load_outcomes` takes paths.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from rpa_lib.evaluation.metrics.intervals import (
    BOOTSTRAP,
    EXACT,
    clopper_pearson,
    cluster_bootstrap,
    holm,
    mcnemar_exact,
    sign_test,
    wilcoxon_signed_rank,
)
from rpa_lib.splitters import SPLITTER_NAMES

LABELS = ["llm", "judge", "embedder"]
COLUMNS = ["table", "task", "method", "character", "item", "repeat", "outcome", "value", *LABELS]
# questionnaire -> (table, task, dimension names in letter order)
PERSONALITY = {"mbti": ("table4_mbti", "MBTI", ["EI", "SN", "TF", "JP"]),
               "bigfive": ("table5_sloan", "SLOAN", ["EXT", "NEU", "CON", "AGR", "OPE"])}
REFERENCE = "amadeus"
# tables whose comparisons are between splitters, not methods: the reference is ACTS
SPLITTER_TABLES = {"table1_similarity", "evidence_recall", "evidence_recall_budget"}
EXTRA_PAIRS = [("naive_rag", "naive_rag_budget")]  # (method, its reference) beside "each method against AMADEUS"
ITEM_TESTS = {True: "exact McNemar (items)", False: "Wilcoxon signed-rank (items)"}
CHARACTER_TEST = "sign test (per-character mean differences)"


def _frame(rows: pd.DataFrame, **fixed) -> pd.DataFrame:
    out = rows.assign(**{k: v for k, v in fixed.items()})
    for col in COLUMNS:
        if col not in out:
            out[col] = 0 if col == "repeat" else np.nan  # a file without runs is one run
    out["value"] = pd.to_numeric(out["value"], errors="coerce").astype(float)
    return out[COLUMNS].reset_index(drop=True)


# ---- adapters: committed per-item files -> outcomes ------------------------------------------------------------


def qa_outcomes(verdicts: pd.DataFrame) -> pd.DataFrame:
    """Table 6: ``results/qa_verdicts.csv`` (one row per question and metric: ``acc`` 0/1, ``acc_l`` and ``hs``
    1-10); a verdict whose status is not ``ok`` keeps its row with a NaN value."""
    v = verdicts.assign(value=verdicts.value.where(verdicts.status == "ok"))
    return _frame(v.rename(columns={"question_id": "item", "metric": "outcome"}), table="table6_roleplay")


def _letters(predicted, truth, n: int) -> list[float]:
    if not isinstance(predicted, str) or not isinstance(truth, str) or len(truth) != n:
        return [np.nan] * n
    return [float(i < len(predicted) and predicted[i] == truth[i]) for i in range(n)]


def personality_outcomes(types: pd.DataFrame, labels: pd.DataFrame | None = None) -> pd.DataFrame:
    """Tables 4-5: ``results/personality_types.csv`` -> one 0/1 row per character and dimension (outcome
    ``dimension_correct``; a tie "-" is a miss, as in the tables). The truth is the file's ``truth`` column, else
    ``data/labels.csv`` (``labels``: its DataFrame)."""
    rows = []
    truth = {}
    if labels is not None:
        truth = {(s, q): r[col] for _, r in labels.iterrows() for q, col in (("mbti", "mbti"), ("bigfive", "sloan"))
                 for s in [r["slug"]]}
    for _, r in types.iterrows():
        table, task, dims = PERSONALITY[r.questionnaire]
        gt = r.get("truth") if isinstance(r.get("truth"), str) else truth.get((r.character, r.questionnaire))
        for dim, ok in zip(dims, _letters(r.predicted, gt, len(dims)), strict=True):
            rows.append({"table": table, "task": task, "method": r.method, "character": r.character, "item": dim,
                         "outcome": "dimension_correct", "value": ok, **{k: r.get(k) for k in LABELS}})
    return _frame(pd.DataFrame(rows, columns=COLUMNS))


def paper_personality_outcomes(table: pd.DataFrame, questionnaire: str) -> pd.DataFrame:
    """The paper's printed Table 4 (``mbti``) or 5 (``bigfive``) (``data/paper_results/table4_mbti.csv``):
    per character and method column, 1 where the printed letter equals the printed GT letter."""
    name, task, dims = PERSONALITY[questionnaire]
    methods = [c for c in table.columns if f"{c}_misses" in table.columns]
    rows = [{"table": f"{name} (paper)", "task": task, "method": m, "character": r.character, "item": d,
             "outcome": "dimension_correct", "value": ok, "llm": "GPT-4.1 (paper)"}
            for _, r in table.iterrows() for m in methods
            for d, ok in zip(dims, _letters(r[m], r.GT, len(dims)), strict=True)]
    return _frame(pd.DataFrame(rows, columns=COLUMNS))


def rating_outcomes(ratings: pd.DataFrame) -> pd.DataFrame:
    """The interview ratings behind Tables 4-5 (``results/personality_ratings.csv``): one Likert rating per
    method, character and unit (outcome ``rating``; not a score of quality, kept for run-to-run checks)."""
    r = ratings.rename(columns={"unit": "item", "rating": "value"})
    r["task"] = r.questionnaire.map(lambda q: PERSONALITY.get(q, (None, q))[1])
    return _frame(r, table="personality_ratings", outcome="rating")


def chunk_usage_outcomes(items: pd.DataFrame, per_character: pd.DataFrame) -> pd.DataFrame:
    """Table 3 and Figure 1: per question the chunks a method put in the context (``chunks_used``) and, for
    AMADEUS, whether GS failed (``gs_failed``, 0/1) from ``results/chunk_usage_items.jsonl``; per character the
    usage rate (distinct chunks used over chunks) from ``results/chunk_usage_per_character.csv``."""
    it = items.rename(columns={"question_set": "task", "question_id": "item"})
    used = it.assign(outcome="chunks_used", value=it.chunks.map(lambda c: len(c) if isinstance(c, list) else np.nan))
    gs = it[it.gs_failed.notna()].assign(outcome="gs_failed", value=lambda d: d.gs_failed.astype(float))
    rate = per_character.rename(columns={"question_set": "task"}).assign(item="all", outcome="usage_rate",
                                                                         value=lambda d: d.usage_rate)
    return _frame(pd.concat([used, gs, rate], ignore_index=True), table="table3_chunk_usage")


def similarity_outcomes(per_character: pd.DataFrame) -> pd.DataFrame:
    """Table 1: per character the mean (``mu``) and variance (``var``) of retrieved-chunk similarity, from
    ``results/table1_similarity_per_character.csv``; the task is the embedder, the method the splitter."""
    d = per_character.assign(task=per_character.embedder, method=per_character.splitter.str.upper()
                             .replace({"VANILLA": "Vanilla"}), item="all")
    long = d.melt(id_vars=["task", "method", "character", "item", "embedder"], value_vars=["mu", "var"],
                  var_name="outcome", value_name="value")
    return _frame(long, table="table1_similarity")


def evidence_recall_outcomes(per_character: pd.DataFrame) -> pd.DataFrame:
    """Evidence recall and EIR at each k: per character (the mean over its questions) from
    ``results/evidence_recall_per_character.csv``; the task is ``"<qa set>, k=<k>"``, the method the splitter."""
    d = per_character.assign(task=per_character.set + ", k=" + per_character.k.astype(str),
                             method=per_character.splitter, item="all")
    long = d.melt(id_vars=["task", "method", "character", "item", "embedder"],
                  value_vars=["recall", "all_found", "eir_body"], var_name="outcome", value_name="value")
    return _frame(long, table="evidence_recall")


def budget_outcomes(scores: pd.DataFrame) -> pd.DataFrame:
    """Evidence recall at equal context budgets, per question (:func:`rpa_lib.evaluation.evidence.budget_scores`
    rows): the task is ``"<qa set>, <budget> <unit>"``, the method the splitter, outcomes ``recall`` and
    ``all_found`` (0/1)."""
    d = scores.assign(task=scores.set + ", " + scores.budget.astype(str) + " " + scores.unit,
                      method=scores.splitter.map(SPLITTER_NAMES).fillna(scores.splitter), item=scores.question,
                      all_found=scores.all_found.astype(float))
    long = d.melt(id_vars=["task", "method", "character", "item", "embedder"], value_vars=["recall", "all_found"],
                  var_name="outcome", value_name="value")
    return _frame(long, table="evidence_recall_budget")


def keypoint_outcomes(per_response: pd.DataFrame) -> pd.DataFrame:
    """RAGEval key points per QA response (``results/qa_keypoint_scores.csv``): completeness, hallucination and
    irrelevance of each response with a judged key point (the others keep a NaN row)."""
    d = per_response.assign(task="CharacterRAG", item=per_response.question_id)
    scored = ~d.job_failed.astype(bool) & (d.judged > 0)
    long = d.melt(id_vars=["task", "method", "character", "item", *[c for c in LABELS if c in d]],
                  value_vars=["completeness", "hallucination", "irrelevance"], var_name="outcome", value_name="value")
    long.loc[~np.tile(scored.to_numpy(), 3), "value"] = np.nan
    return _frame(long, table="qa_keypoints")


def human_outcomes(ratings: pd.DataFrame, samples: pd.DataFrame) -> pd.DataFrame:
    """Table 2: one rating per sample (the mean over raters) from ``human_eval/llm_ratings_*.csv`` (or people's
    sheets in the same shape), the character from ``human_eval/samples_*.csv``; the method is who rated."""
    ok = ratings[ratings.get("status", "ok") == "ok"] if "status" in ratings else ratings
    source = "LLM raters" if ok.rater.astype(str).str.startswith("llm-").all() else "raters"
    per = ok.groupby(["sample_id", "task"], as_index=False).rating.mean()
    per["character"] = per.sample_id.map(samples.set_index("sample_id").slug)
    model = ratings.model.dropna().iloc[0] if "model" in ratings and ratings.model.notna().any() else np.nan
    return _frame(per.rename(columns={"sample_id": "item", "rating": "value"}), table="table2_human_eval",
                  method=source, outcome="rating", llm=model)


def load_outcomes(results_dir: Path, labels: pd.DataFrame | None = None) -> pd.DataFrame:
    """Every adapter on the files of ``results_dir`` that exist (a missing file adds nothing)."""
    r = Path(results_dir)
    parts = []
    if (r / "qa_verdicts.csv").is_file():
        parts.append(qa_outcomes(pd.read_csv(r / "qa_verdicts.csv")))
    if (r / "qa_keypoint_scores.csv").is_file():
        parts.append(keypoint_outcomes(pd.read_csv(r / "qa_keypoint_scores.csv")))
    if (r / "personality_types.csv").is_file():
        parts.append(personality_outcomes(pd.read_csv(r / "personality_types.csv"), labels))
    if (r / "personality_ratings.csv").is_file():
        parts.append(rating_outcomes(pd.read_csv(r / "personality_ratings.csv")))
    if (r / "chunk_usage_items.jsonl").is_file() and (r / "chunk_usage_per_character.csv").is_file():
        items = pd.DataFrame([json.loads(line) for line in (r / "chunk_usage_items.jsonl").read_text().splitlines()
                              if line.strip()])
        parts.append(chunk_usage_outcomes(items, pd.read_csv(r / "chunk_usage_per_character.csv")))
    if (r / "table1_similarity_per_character.csv").is_file():
        parts.append(similarity_outcomes(pd.read_csv(r / "table1_similarity_per_character.csv")))
    if (r / "evidence_recall_per_character.csv").is_file():
        parts.append(evidence_recall_outcomes(pd.read_csv(r / "evidence_recall_per_character.csv")))
    for ratings in sorted((r / "human_eval").glob("llm_ratings_*.csv")):
        samples = ratings.with_name(ratings.name.replace("llm_ratings_", "samples_"))
        if samples.is_file():
            parts.append(human_outcomes(pd.read_csv(ratings), pd.read_csv(samples)))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=COLUMNS)


# ---- intervals and paired comparisons ---------------------------------------------------------------------------


def _keys(df: pd.DataFrame) -> list[str]:
    return ["table", "task", "outcome", *[c for c in LABELS if df[c].notna().any()]]


# 0/1 outcomes (exact McNemar, Clopper-Pearson); every other outcome is a rating or a measurement
BINARY = {"acc", "dimension_correct", "gs_failed", "all_found"}


def _binary(outcome: str) -> bool:
    return outcome in BINARY


def summarize(outcomes: pd.DataFrame) -> pd.DataFrame:
    """Per (table, task, outcome, labels, method): ``score`` (mean over items), ``ci_low``/``ci_high`` (the
    cluster bootstrap over characters of :func:`~rpa_lib.evaluation.metrics.intervals.cluster_bootstrap`),
    ``interval`` (its method) and ``note`` (why it is NaN or a caveat), ``n_items``, ``n_failed`` (NaN values),
    ``n_characters``; for 0/1 outcomes also ``exact_low``/``exact_high``, Clopper-Pearson over items as if
    they were independent."""
    rows = []
    for key, g in outcomes.groupby([*_keys(outcomes), "method"], sort=False, dropna=False):
        ci = cluster_bootstrap(g.value, g.character)
        row = dict(zip([*_keys(outcomes), "method"], key, strict=True))
        row.update(score=ci.estimate, ci_low=ci.low, ci_high=ci.high, interval=BOOTSTRAP, note=ci.reason,
                   n_items=ci.n_items, n_failed=int(g.value.isna().sum()), n_characters=ci.n_clusters,
                   n_repeats=int(g.repeat.nunique()))
        if _binary(row["outcome"]):
            v = g.value.dropna()
            ex = clopper_pearson(int(v.sum()), len(v))
            row.update(exact_low=ex.low, exact_high=ex.high, exact_interval=EXACT)
        rows.append(row)
    return pd.DataFrame(rows)


def default_pairs(table: str, methods: list[str]) -> list[tuple[str, str]]:
    """(method, reference) pairs of a table: every method against AMADEUS (ACTS for the splitter tables), and
    Naive RAG against its budget-matched control, for those present."""
    ref = next((m for m in methods if m.lower() == ("acts" if table in SPLITTER_TABLES else REFERENCE)), None)
    pairs = [(m, ref) for m in methods if ref is not None and m != ref]
    return pairs + [(m, r) for m, r in EXTRA_PAIRS if m in methods and r in methods]


def _item_means(d: pd.DataFrame) -> pd.DataFrame:
    return d.groupby(["character", "item"], sort=False, as_index=False).value.mean()


def paired_difference(a: pd.DataFrame, b: pd.DataFrame, binary: bool) -> dict:
    """The paired comparison of two methods' outcomes on the same (character, item)s: ``a`` minus ``b``;
    ``binary``: 0/1 outcomes (McNemar at items), else Wilcoxon. No character with a nonzero mean difference: the
    sign test's p is 1."""
    if a.duplicated(["character", "item"]).any() or b.duplicated(["character", "item"]).any():
        # several runs: each item's mean over its runs, so run-to-run noise is in the pairs (no longer 0/1)
        a, b, binary = _item_means(a), _item_means(b), False
    both = a.merge(b, on=["character", "item"], suffixes=("_a", "_b")).dropna(subset=["value_a", "value_b"])
    diff = both.value_a - both.value_b
    ci = cluster_bootstrap(diff, both.character)
    per_char = diff.groupby(both.character).mean()
    better, worse, p_char = sign_test(per_char)
    out = {"score_method": both.value_a.mean(), "score_reference": both.value_b.mean(), "difference": ci.estimate,
           "diff_low": ci.low, "diff_high": ci.high, "note": ci.reason, "n_pairs": len(both),
           "n_characters": ci.n_clusters, "characters_better": better, "characters_worse": worse,
           "p_character": p_char if len(both) else np.nan, "test_character": CHARACTER_TEST}
    if binary:
        b_, c_ = int(((both.value_a == 1) & (both.value_b == 0)).sum()), int(((both.value_a == 0) & (both.value_b == 1)).sum())
        out.update(only_method=b_, only_reference=c_, p_item=mcnemar_exact(b_, c_) if len(both) else np.nan)
    else:
        out.update(only_method=int((diff > 0).sum()), only_reference=int((diff < 0).sum()),
                   p_item=wilcoxon_signed_rank(both.value_a, both.value_b))
    out["test_item"] = ITEM_TESTS[binary]
    return out


def compare(outcomes: pd.DataFrame, pairs: dict[str, list[tuple[str, str]]] | None = None) -> pd.DataFrame:
    """Per table, task, outcome and labels: each (method, reference) pair of :func:`default_pairs` (or
    ``pairs[table]``), with :func:`paired_difference`'s columns and ``p_item_holm``/``p_character_holm``, Holm's
    adjustment across every comparison of the same table (each test family apart). ``only_method`` and
    ``only_reference`` are the discordant counts for 0/1 outcomes, the positive and negative differences else."""
    rows = []
    for key, g in outcomes.groupby(_keys(outcomes), sort=False, dropna=False):
        table = key[0]
        methods = list(dict.fromkeys(g.method))
        for method, ref in (pairs or {}).get(table, default_pairs(table, methods)):
            a, b = g[g.method == method], g[g.method == ref]
            if len(a) and len(b):
                rows.append({**dict(zip(_keys(outcomes), key, strict=True)), "method": method, "reference": ref,
                             **paired_difference(a[["character", "item", "value"]], b[["character", "item", "value"]],
                                                   _binary(key[2]))})
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    out["interval"] = BOOTSTRAP.replace("over characters", "of paired differences over characters")
    for col in ("p_item", "p_character"):
        out[f"{col}_holm"] = np.nan
        for _, idx in out.groupby("table").groups.items():
            out.loc[idx, f"{col}_holm"] = holm(out.loc[idx, col])
    return out
