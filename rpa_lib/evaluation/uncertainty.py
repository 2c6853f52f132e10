"""Interval columns for the tables this repository builds, the captions that name them, and the paired comparisons
written beside a table. It computes no score of its own (the table builders do); only :func:`save_paired` writes,
to the folder it is given.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from rpa_lib.evaluation.metrics.intervals import BOOTSTRAP, FEW_CLUSTERS, cluster_bootstrap
from rpa_lib.evaluation.outcomes import LABELS, compare
from rpa_lib.report import save_table

PAIRED_COLUMNS = ["table", "task", "outcome", "method", "reference", "score_method", "score_reference", "difference",
                  "diff_low", "diff_high", "n_pairs", "n_characters", "only_method", "only_reference", "test_item",
                  "p_item", "p_item_holm", "characters_better", "characters_worse", "test_character", "p_character",
                  "p_character_holm", "interval", "note"]


def interval_columns(rows: pd.DataFrame, keys: list[str], columns: list[str], scale: float = 1.0) -> pd.DataFrame:
    """Per ``keys`` group of ``rows`` (one row per item, with a ``character`` column): ``<col>_low``/``<col>_high``,
    the 95% cluster bootstrap of each column's mean times ``scale``, ``n_characters``, ``interval_note`` and, with a
    ``repeat`` column, ``n_runs``. ``keys`` empty: one row."""
    out = []
    for key, g in rows.groupby(keys, sort=False, dropna=False) if keys else [((), rows)]:
        row = dict(zip(keys, key, strict=True))
        notes = []
        for col in columns:
            ci = cluster_bootstrap(pd.to_numeric(g[col], errors="coerce"), g["character"])
            row[col + "_low"], row[col + "_high"] = ci.low * scale, ci.high * scale
            row["n_characters"] = max(row.get("n_characters", 0), ci.n_clusters)
            notes.append(ci.reason)
        row["interval_note"] = next((n for n in notes if n), "")
        if "repeat" in g:
            row["n_runs"] = int(g["repeat"].nunique())
        out.append(row)
    if not out:  # no rows: the columns all the same, for merge_intervals
        return pd.DataFrame(columns=[*keys, *(f"{c}_{end}" for c in columns for end in ("low", "high")),
                                     "n_characters", "interval_note"])
    return pd.DataFrame(out)


def merge_intervals(table: pd.DataFrame, intervals: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """``table`` with :func:`interval_columns`' columns matched on ``keys`` (a column it already has is kept)."""
    new = [c for c in intervals.columns if c not in table.columns or c in keys]
    return table.merge(intervals[new], on=keys, how="left")


def interval_caption(n_characters, runs: int = 1) -> str:
    """The sentence a caption adds about the intervals. ``interval_caption(1)`` ends with "1 character: no cluster
    interval (NaN)"; ``interval_caption(5, runs=2)`` names "2 runs"; with no character (none, or only NaN), "no
    character: no interval"."""
    values = pd.to_numeric(pd.Series(np.atleast_1d(n_characters)), errors="coerce").dropna()
    n = int(values.max()) if len(values) else 0
    text = f"95% intervals (_low, _high): {BOOTSTRAP}"
    if runs > 1:
        text += (f"; {runs} runs (a seed each): scores are means over the runs, each character resampled with all its "
                 "runs, so run-to-run variance is in the interval")
    if n == 0:
        return text + "; no character: no interval"
    if n <= 1:
        return text + "; 1 character: no cluster interval (NaN)"
    if n < FEW_CLUSTERS:
        return text + f"; {n} characters: the interval under-covers with so few clusters"
    return text


PAIRED_CAPTION = ("Paired comparisons, each method minus its reference (AMADEUS; ACTS for splitters; Naive RAG "
                  "against its budget-matched control) on the same characters and items: difference with its 95% "
                  "cluster bootstrap over characters; item-level exact McNemar (0/1 outcomes of one run; only_method "
                  "and only_reference: the discordant items) or Wilcoxon signed-rank (other outcomes, and means over "
                  "runs; only_method and only_reference: the items scored higher and lower); character-level sign "
                  "test; Holm-adjusted within the table.")


PAIRED_RUNS = ("With several runs, the runs of two methods are not paired with each other: each item's mean over its "
               "runs is the item-level pair (Wilcoxon signed-rank), each character's mean over its items and runs the "
               "character-level one.")


def save_paired(outcomes: pd.DataFrame, results_dir: Path, models: dict | None = None, note: str = "") -> dict:
    """``<table>_paired.csv`` and ``.tex`` for each table of ``outcomes`` (:func:`~rpa_lib.evaluation.outcomes.
    compare`, columns in :data:`PAIRED_COLUMNS` order); ``models`` fills the labels the outcomes lack. Returns
    ``{table: paths}``."""
    written = {}
    for table, rows in outcomes.groupby("table", sort=False):
        paired = compare(rows)
        if paired.empty:
            paired = pd.DataFrame(columns=PAIRED_COLUMNS)
        paired = paired[[*[c for c in PAIRED_COLUMNS if c in paired], *[c for c in paired if c not in PAIRED_COLUMNS]]]
        runs = int(rows.repeat.nunique())
        pooled = f" {PAIRED_RUNS}" if runs > 1 else ""
        caption = f"{PAIRED_CAPTION}{pooled} {interval_caption(paired.n_characters, runs=runs)}. {note}".strip()
        if paired.empty:  # no intervals nor tests to describe
            caption = (f"No paired comparison: no method ran beside its reference (methods run: "
                       f"{', '.join(map(str, dict.fromkeys(rows.method)))}){f'; {runs} runs' if runs > 1 else ''}. "
                       f"{note}").strip()
        written[table] = save_table(paired, f"{table}_paired", results_dir, caption=caption,
                                    models={k: v for k, v in (models or {}).items() if k in LABELS} or None)
    return written
