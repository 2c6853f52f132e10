"""Per-item outcomes in one long format (:data:`COLUMNS`), adapters from the committed per-item files to it, and
the scores, intervals and paired comparisons computed from them (:func:`compare`: the caller's pairs, else each
method against its reference by :func:`default_pairs`). Only :func:`load_outcomes` reads files; nothing writes.
"""

from __future__ import annotations

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
from rpa_lib.methods.registry import BUDGETED
from rpa_lib.splitters import SPLITTER_NAMES
from rpa_lib.text import read_jsonl

LABELS = ["llm", "judge", "embedder"]
COLUMNS = ["table", "task", "method", "character", "item", "repeat", "outcome", "value", *LABELS]
# questionnaire -> (table, task, dimension names in letter order)
PERSONALITY = {"mbti": ("table4_mbti", "MBTI", ["EI", "SN", "TF", "JP"]),
               "bigfive": ("table5_sloan", "SLOAN", ["EXT", "NEU", "CON", "AGR", "OPE"])}
REFERENCE = "amadeus"
# tables whose comparisons are between splitters, not methods: the reference is ACTS
SPLITTER_TABLES = {"table1_similarity", "evidence_recall", "evidence_recall_budget"}
EXTRA_PAIRS = [(m, f"{m}_budget") for m in BUDGETED]  # (method, its control) beside "each against AMADEUS"
ITEM_TESTS = {True: "exact McNemar (items)", False: "Wilcoxon signed-rank (items)"}
CHARACTER_TEST = "sign test (per-character mean differences)"
RETRIEVAL_IDS = ["task", "method", "character", "item", "embedder"]  # the columns a retrieval table's outcomes keep
# 0/1 outcomes (exact McNemar, Clopper-Pearson) where every value is 0 or 1 (:func:`is_binary`)
BINARY = {"acc", "dimension_correct", "gs_failed", "all_found"}
_WORDS = {"true": 1.0, "false": 0.0, "": np.nan, "nan": np.nan}  # text an outcome value may be written as


def _numeric(values: pd.Series) -> pd.Series:
    """Outcome values as floats: booleans (also written "True"/"false") as 1/0, empty as NaN; ValueError for other
    text, which would otherwise pass for a failed item. ``_numeric(pd.Series([True, "0", None]))`` -> 1, 0, NaN"""
    if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
        return values.astype(float)  # already numbers (read by _frame, or from a CSV): nothing to read row by row
    words = values.map(lambda v: _WORDS.get(v.strip().lower(), v) if isinstance(v, str) else v)
    out = pd.to_numeric(words, errors="coerce").astype(float)
    bad = words[out.isna() & words.notna()]
    if len(bad):
        raise ValueError(f"outcome values are numbers, booleans or empty; got {len(bad)} other: "
                         f"{', '.join(map(repr, list(dict.fromkeys(bad))[:5]))}")
    return out


def _frame(rows: pd.DataFrame, **fixed) -> pd.DataFrame:
    """``rows`` with ``fixed`` columns in :data:`COLUMNS` order; ValueError for a row without a character (it would
    be its own cluster in an interval and dropped by the sign test)."""
    out = rows.assign(**fixed)
    out = out.assign(**{c: np.nan for c in COLUMNS if c not in out})
    out["repeat"] = out["repeat"].fillna(0)  # no runs: one run
    out["value"] = _numeric(out["value"])
    if (missing := out.character.isna()).any():
        where = out[missing]
        raise ValueError(f"{int(missing.sum())} outcome row(s) of {', '.join(map(str, where.table.unique()))} have "
                         f"no character, e.g. item {where.item.iloc[0]!r}: its samples or labels file lacks it")
    return out[COLUMNS].reset_index(drop=True)


def _retrieval(d: pd.DataFrame, outcomes: list[str], table: str) -> pd.DataFrame:
    return _frame(d.melt(id_vars=RETRIEVAL_IDS, value_vars=outcomes, var_name="outcome"), table=table)


def qa_outcomes(verdicts: pd.DataFrame) -> pd.DataFrame:
    """Table 6 from ``results/qa_verdicts.csv``; a verdict whose status is not ``ok`` keeps its row, value NaN."""
    v = verdicts.assign(value=verdicts.value.where(verdicts.status == "ok"))
    return _frame(v.rename(columns={"question_id": "item", "metric": "outcome"}), table="table6_roleplay")


def _letters(predicted, truth, n: int) -> list[float]:
    if not isinstance(predicted, str) or not isinstance(truth, str) or len(truth) != n:
        return [np.nan] * n
    return [float(i < len(predicted) and predicted[i] == truth[i]) for i in range(n)]


def personality_outcomes(types: pd.DataFrame, labels: pd.DataFrame | None = None) -> pd.DataFrame:
    """Tables 4-5 from ``results/personality_types.csv``: one 0/1 ``dimension_correct`` row per character and
    dimension (a tie is a miss); the truth is the file's ``truth`` column, else ``labels`` (``data/labels.csv``)."""
    rows = []
    truth = {} if labels is None else {(r["slug"], q): r[col] for _, r in labels.iterrows()
                                       for q, col in (("mbti", "mbti"), ("bigfive", "sloan"))}
    for _, r in types.iterrows():
        table, task, dims = PERSONALITY[r.questionnaire]
        gt = r.get("truth") if isinstance(r.get("truth"), str) else truth.get((r.character, r.questionnaire))
        for dim, ok in zip(dims, _letters(r.predicted, gt, len(dims)), strict=True):
            rows.append({"table": table, "task": task, "method": r.method, "character": r.character, "item": dim,
                         "repeat": r.get("repeat", 0), "outcome": "dimension_correct", "value": ok,
                         **{k: r.get(k) for k in LABELS}})
    return _frame(pd.DataFrame(rows, columns=COLUMNS))


def paper_personality_outcomes(table: pd.DataFrame, questionnaire: str) -> pd.DataFrame:
    """The paper's printed Table 4 (``mbti``) or 5 (``bigfive``): 1 where a method's letter equals the GT letter."""
    name, task, dims = PERSONALITY[questionnaire]
    methods = [c for c in table.columns if f"{c}_misses" in table.columns]
    rows = [{"table": f"{name} (paper)", "task": task, "method": m, "character": r.character, "item": d,
             "outcome": "dimension_correct", "value": ok, "llm": "GPT-4.1 (paper)"}
            for _, r in table.iterrows() for m in methods
            for d, ok in zip(dims, _letters(r[m], r.GT, len(dims)), strict=True)]
    return _frame(pd.DataFrame(rows, columns=COLUMNS))


def rating_outcomes(ratings: pd.DataFrame) -> pd.DataFrame:
    """The interview ratings behind Tables 4-5 (``results/personality_ratings.csv``), for run-to-run checks."""
    r = ratings.rename(columns={"unit": "item", "rating": "value"})
    r["task"] = r.questionnaire.map(lambda q: PERSONALITY.get(q, (None, q))[1])
    return _frame(r, table="personality_ratings", outcome="rating")


def chunk_usage_outcomes(items: pd.DataFrame, per_character: pd.DataFrame) -> pd.DataFrame:
    """Table 3 and Figure 1: per question ``chunks_used`` and AMADEUS's ``gs_failed``, per character the
    ``usage_rate`` (``results/chunk_usage_items.jsonl``, ``results/chunk_usage_per_character.csv``)."""
    it = items.rename(columns={"question_set": "task", "question_id": "item"})
    # the per-item file carries no model labels: those of the per-character file notebook 03 writes with it, when
    # it names one model per label
    known = {c: per_character[c].dropna().unique() for c in LABELS if c in per_character}
    it = it.assign(**{c: v[0] for c, v in known.items() if len(v) == 1 and c not in it})
    used = it.assign(outcome="chunks_used", value=it.chunks.map(lambda c: len(c) if isinstance(c, list) else np.nan))
    gs = it[it.gs_failed.notna()].assign(outcome="gs_failed", value=lambda d: d.gs_failed.astype(float))
    rate = per_character.rename(columns={"question_set": "task"}).assign(item="all", outcome="usage_rate",
                                                                         value=lambda d: d.usage_rate)
    return _frame(pd.concat([used, gs, rate], ignore_index=True), table="table3_chunk_usage")


def similarity_outcomes(per_character: pd.DataFrame) -> pd.DataFrame:
    """Table 1: per character ``mu`` and ``var`` of similarity (task: the embedder, method: the splitter)."""
    d = per_character.assign(task=per_character.embedder, method=per_character.splitter.str.upper()
                             .replace({"VANILLA": "Vanilla"}), item="all")
    return _retrieval(d, ["mu", "var"], "table1_similarity")


def evidence_recall_outcomes(per_character: pd.DataFrame) -> pd.DataFrame:
    """Evidence recall and EIR per character at each k (task ``"<qa set>, k=<k>"``, method: the splitter). Per
    character, ``all_found`` is the share of questions whose evidence was all found: outcome ``all_found_share``, never
    0/1 statistics, even where every share happens to be 0 or 1."""
    d = per_character.assign(task=per_character.set + ", k=" + per_character.k.astype(str),
                             method=per_character.splitter, item="all", all_found_share=per_character.all_found)
    return _retrieval(d, ["recall", "all_found_share", "eir_body"], "evidence_recall")


def budget_outcomes(scores: pd.DataFrame) -> pd.DataFrame:
    """Evidence recall at equal context budgets per question (:func:`rpa_lib.evaluation.evidence.budget_scores`
    rows; task ``"<qa set>, <budget> <unit>"``, method: the splitter)."""
    d = scores.assign(task=scores.set + ", " + scores.budget.astype(str) + " " + scores.unit,
                      method=scores.splitter.map(SPLITTER_NAMES).fillna(scores.splitter), item=scores.question,
                      all_found=scores.all_found.astype(float))
    return _retrieval(d, ["recall", "all_found"], "evidence_recall_budget")


def keypoint_outcomes(per_response: pd.DataFrame) -> pd.DataFrame:
    """RAGEval's key-point scores per QA response (a response without a judged key point keeps NaN rows)."""
    d = per_response.assign(task="CharacterRAG", item=per_response.question_id)
    scored = ~d.job_failed.astype(bool) & (d.judged > 0)
    long = d.melt(id_vars=["task", "method", "character", "item", *[c for c in ("repeat", *LABELS) if c in d]],
                  value_vars=["completeness", "hallucination", "irrelevance"], var_name="outcome", value_name="value")
    long.loc[~np.tile(scored.to_numpy(), 3), "value"] = np.nan
    return _frame(long, table="qa_keypoints")


def human_outcomes(ratings: pd.DataFrame, samples: pd.DataFrame) -> pd.DataFrame:
    """Table 2: one rating per sample (the mean over raters; method: who rated), characters from the samples file."""
    ok = ratings[ratings.status == "ok"] if "status" in ratings else ratings
    source = "LLM raters" if ok.rater.astype(str).str.startswith("llm-").all() else "raters"
    per = ok.groupby(["sample_id", "task"], as_index=False).rating.mean()
    per["character"] = per.sample_id.map(samples.set_index("sample_id").slug)
    model = ratings.model.dropna().iloc[0] if "model" in ratings and ratings.model.notna().any() else np.nan
    return _frame(per.rename(columns={"sample_id": "item", "rating": "value"}), table="table2_human_eval",
                  method=source, outcome="rating", llm=model)


def _read(path: Path) -> pd.DataFrame:
    return pd.DataFrame(read_jsonl(path)) if path.suffix == ".jsonl" else pd.read_csv(path)


def load_outcomes(results_dir: Path, labels: pd.DataFrame | None = None) -> pd.DataFrame:
    """Every adapter on the files of ``results_dir`` that exist."""
    r = Path(results_dir)
    adapters = [(qa_outcomes, "qa_verdicts.csv"), (keypoint_outcomes, "qa_keypoint_scores.csv"),
                (lambda types: personality_outcomes(types, labels), "personality_types.csv"),
                (rating_outcomes, "personality_ratings.csv"),
                (chunk_usage_outcomes, "chunk_usage_items.jsonl", "chunk_usage_per_character.csv"),
                (similarity_outcomes, "table1_similarity_per_character.csv"),
                (evidence_recall_outcomes, "evidence_recall_per_character.csv")]
    parts = [adapt(*(_read(r / name) for name in names)) for adapt, *names in adapters
             if all((r / name).is_file() for name in names)]
    for ratings in sorted((r / "human_eval").glob("llm_ratings_*.csv")):
        samples = ratings.with_name(ratings.name.replace("llm_ratings_", "samples_"))
        if samples.is_file():
            parts.append(human_outcomes(pd.read_csv(ratings), pd.read_csv(samples)))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=COLUMNS)


def _keys(df: pd.DataFrame) -> list[str]:
    return ["table", "task", "outcome", *[c for c in LABELS if c in df and df[c].notna().any()]]


def is_binary(outcome: str, *values: pd.Series) -> bool:
    """``outcome`` is a 0/1 outcome by name and every value given is 0 or 1 (NaN aside): an item's mean over repeated
    runs is not 0/1. ``is_binary("acc", pd.Series([1, 0.5]))`` is False."""
    return outcome in BINARY and all(v.dropna().isin([0, 1]).all() for v in values)


def summarize(outcomes: pd.DataFrame) -> pd.DataFrame:
    """Per (table, task, outcome, labels, method): the score with its cluster-bootstrap interval and counts
    (``n_items``: distinct (character, item)s, each with all its runs); for 0/1 outcomes (:func:`is_binary` on each
    item's mean over its runs, so one run each) also Clopper-Pearson's ``exact_low``/``exact_high`` (items as
    independent; repeated runs of an item are not further items)."""
    rows, keys = [], [*_keys(outcomes), "method"]
    outcomes = outcomes.assign(value=_numeric(outcomes.value))
    for key, g in outcomes.groupby(keys, sort=False, dropna=False):
        ci = cluster_bootstrap(g.value, g.character)
        per_item = g.groupby(["character", "item"], sort=False).value.mean().dropna()
        row = dict(zip(keys, key, strict=True))
        row.update(score=ci.estimate, ci_low=ci.low, ci_high=ci.high, interval=BOOTSTRAP, note=ci.reason,
                   n_items=len(per_item), n_failed=int(g.value.isna().sum()), n_characters=ci.n_clusters,
                   n_repeats=int(g.repeat.nunique()))
        if is_binary(row["outcome"], per_item):
            ex = clopper_pearson(int(per_item.sum()), len(per_item))
            row.update(exact_low=ex.low, exact_high=ex.high, exact_interval=EXACT)
        rows.append(row)
    return pd.DataFrame(rows)


def default_pairs(table: str, methods: list[str]) -> list[tuple[str, str]]:
    """(method, reference) pairs: each method against AMADEUS (ACTS for splitters), a method against its budget-matched
    control."""
    ref = next((m for m in methods if m.lower() == ("acts" if table in SPLITTER_TABLES else REFERENCE)), None)
    pairs = [(m, ref) for m in methods if ref is not None and m != ref]
    return pairs + [(m, r) for m, r in EXTRA_PAIRS if m in methods and r in methods]


def _unpaired(a: pd.DataFrame, b: pd.DataFrame, both: pd.DataFrame) -> str:
    """What the pairs of ``both`` leave out: items with a value on one side only (failed, or not run, on the other),
    and the characters that lose every pair. "" when nothing is left out."""
    n_a, n_b = int(a.value.notna().sum()) - len(both), int(b.value.notna().sum()) - len(both)
    if not n_a and not n_b:
        return ""
    lost = sorted({*a.character[a.value.notna()], *b.character[b.value.notna()]} - set(both.character), key=str)
    return (f"left out, without a pair: {n_a} item(s) of the method, {n_b} of the reference (no value for the other)"
            + (f"; no pair at all for character(s) {', '.join(map(str, lost))}" if lost else ""))


def paired_difference(a: pd.DataFrame, b: pd.DataFrame, binary: bool) -> dict:
    """``a`` minus ``b`` on the same (character, item)s: the difference with its interval, an item-level test
    (McNemar for ``binary`` outcomes, else Wilcoxon) and the character-level sign test; ``note`` says what has no
    pair and is left out."""
    if a.duplicated(["character", "item"]).any() or b.duplicated(["character", "item"]).any():
        # several runs: each item's mean over its runs, so run-to-run noise is in the pairs (no longer 0/1)
        a, b = (d.groupby(["character", "item"], sort=False, as_index=False).value.mean() for d in (a, b))
        binary = False
    both = a.merge(b, on=["character", "item"], suffixes=("_a", "_b")).dropna(subset=["value_a", "value_b"])
    diff = both.value_a - both.value_b
    ci = cluster_bootstrap(diff, both.character)
    per_char = diff.groupby(both.character).mean()
    better, worse, p_char = sign_test(per_char)
    reason = "no paired item" if both.empty else ci.reason
    note = "; ".join(n for n in (reason, _unpaired(a, b, both)) if n)
    out = {"score_method": both.value_a.mean(), "score_reference": both.value_b.mean(), "difference": ci.estimate,
           "diff_low": ci.low, "diff_high": ci.high, "note": note, "n_pairs": len(both),
           "n_characters": ci.n_clusters, "characters_better": better, "characters_worse": worse,
           "p_character": p_char if len(both) else np.nan, "test_character": CHARACTER_TEST}
    only_a, only_b = int((diff > 0).sum()), int((diff < 0).sum())  # on 0/1 values: McNemar's discordant pairs
    if binary:
        p_item = mcnemar_exact(only_a, only_b) if len(both) else np.nan
    else:
        p_item = wilcoxon_signed_rank(both.value_a, both.value_b)
    return {**out, "only_method": only_a, "only_reference": only_b, "p_item": p_item, "test_item": ITEM_TESTS[binary]}


def compare(outcomes: pd.DataFrame, pairs: dict[str, list[tuple[str, str]]] | None = None) -> pd.DataFrame:
    """Each pair of :func:`default_pairs` (or ``pairs[table]``) per table, task, outcome and labels, with
    :func:`paired_difference`'s columns and Holm's adjustment within each table (each test family apart)."""
    rows, keys = [], _keys(outcomes)
    outcomes = outcomes.assign(value=_numeric(outcomes.value))
    for key, g in outcomes.groupby(keys, sort=False, dropna=False):
        table = key[0]
        for method, ref in (pairs or {}).get(table, default_pairs(table, list(dict.fromkeys(g.method)))):
            a, b = g[g.method == method], g[g.method == ref]
            if len(a) and len(b):
                rows.append({**dict(zip(keys, key, strict=True)), "method": method, "reference": ref,
                             **paired_difference(a[["character", "item", "value"]], b[["character", "item", "value"]],
                                                   is_binary(key[2], a.value, b.value))})
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    out["interval"] = BOOTSTRAP.replace("over characters", "of paired differences over characters")
    for col in ("p_item", "p_character"):
        out[f"{col}_holm"] = out.groupby("table")[col].transform(holm)
    return out
