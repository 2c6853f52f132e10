"""Interval columns for the tables this repository builds, and the captions that name them.

A table builder (Table 1, 3, 4-5 summaries, 6, key points, evidence recall, Table 2) calls
:func:`interval_columns` on the per-item rows it averages and merges the result: for each score column ``v`` the
columns ``v_low`` and ``v_high`` (a 95% cluster bootstrap over characters), with ``n_characters`` and
``interval_note`` (why an interval is NaN: "1 character: no cluster interval"). :func:`interval_caption` is the
sentence a caption adds. :func:`paired_table` is the paired comparison written beside a table
(``<table>_paired.csv``, by :func:`save_paired`), from :mod:`rpa_lib.evaluation.outcomes`.

It computes no score of its own (the builders do); only :func:`save_paired` writes, to the folder it is given.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from rpa_lib.evaluation.metrics.intervals import BOOTSTRAP, cluster_bootstrap
from rpa_lib.evaluation.outcomes import LABELS, compare
from rpa_lib.report import save_table

PAIRED_COLUMNS = ["table", "task", "outcome", "method", "reference", "score_method", "score_reference", "difference",
                  "diff_low", "diff_high", "n_pairs", "n_characters", "only_method", "only_reference", "test_item",
                  "p_item", "p_item_holm", "characters_better", "characters_worse", "test_character", "p_character",
                  "p_character_holm", "interval", "note"]


def interval_columns(rows: pd.DataFrame, keys: list[str], columns: list[str], cluster: str = "character",
                     scale: float | dict | None = None, suffix: tuple[str, str] = ("_low", "_high")) -> pd.DataFrame:
    """Per ``keys`` group of ``rows`` (one row per item, with a ``cluster`` column): ``<col>_low``/``<col>_high``
    for each of ``columns``, the 95% cluster bootstrap of the mean over items, times ``scale`` (a number, or per
    column; e.g. the number of characters for a sum over characters), and ``n_characters`` and
    ``interval_note``; rows of several runs (a ``repeat`` column) are pooled, each character resampled with all its
    runs, and ``n_runs`` says how many. ``keys`` empty: one row."""
    scale = scale if isinstance(scale, dict) else dict.fromkeys(columns, 1.0 if scale is None else scale)
    out = []
    groups = rows.groupby(keys, sort=False, dropna=False) if keys else [((), rows)]
    for key, g in groups:
        key = key if isinstance(key, tuple) else (key,)
        row = dict(zip(keys, key, strict=True))
        notes = []
        for col in columns:
            ci = cluster_bootstrap(pd.to_numeric(g[col], errors="coerce"), g[cluster])
            s = scale.get(col, 1.0)
            row[col + suffix[0]], row[col + suffix[1]] = ci.low * s, ci.high * s
            row["n_characters"] = max(row.get("n_characters", 0), ci.n_clusters)
            notes.append(ci.reason)
        row["interval_note"] = next((n for n in notes if n), "")
        if "repeat" in g:  # several runs (rpa_lib.experiment's repeats): the table says how many it pooled
            row["n_runs"] = int(g["repeat"].nunique())
        out.append(row)
    return pd.DataFrame(out)


def merge_intervals(table: pd.DataFrame, intervals: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """``table`` with the interval columns of :func:`interval_columns` (rows matched on ``keys``; a column already
    in ``table``, such as ``characters``, is kept as it is)."""
    new = [c for c in intervals.columns if c not in table.columns or c in keys]
    return table.merge(intervals[new], on=keys, how="left")


def interval_caption(n_characters, unit: str = "characters", runs: int = 1) -> str:
    """The sentence a caption adds: the interval's method and unit of resampling, what a one-character run shows,
    and how many runs were pooled (``runs`` > 1: the repeats of :mod:`rpa_lib.experiment`).
    ``interval_caption(1)`` ends with "1 character: no cluster interval (NaN)"; ``interval_caption(5, runs=2)``
    names "2 runs"."""
    values = pd.to_numeric(pd.Series(np.atleast_1d(n_characters)), errors="coerce").dropna()
    n = int(values.max()) if len(values) else 0
    text = f"95% intervals (_low, _high): {BOOTSTRAP.replace('characters', unit)}"
    if runs > 1:
        text += f"; {runs_note(runs)}"
    if n <= 1:
        return text + "; 1 character: no cluster interval (NaN)"
    if n < 10:
        return text + f"; {n} {unit}: the interval under-covers with so few clusters"
    return text


def runs_note(runs: int) -> str:
    """``runs_note(2)``: "2 runs (a seed each): scores are means over the runs, each character resampled with all
    its runs, so run-to-run variance is in the interval"."""
    return (f"{runs} runs (a seed each): scores are means over the runs, each character resampled with all its "
            "runs, so run-to-run variance is in the interval")


def paired_table(outcomes: pd.DataFrame, pairs: dict | None = None) -> pd.DataFrame:
    """The paired comparisons of one table's outcomes (:func:`~rpa_lib.evaluation.outcomes.compare`) with the
    labels of the run, in a fixed column order."""
    out = compare(outcomes, pairs)
    if out.empty:
        return pd.DataFrame(columns=PAIRED_COLUMNS)
    extra = [c for c in out.columns if c not in PAIRED_COLUMNS]
    return out[[*[c for c in PAIRED_COLUMNS if c in out.columns], *extra]]


PAIRED_CAPTION = ("Paired comparisons, each method minus its reference (AMADEUS; ACTS for splitters; Naive RAG "
                  "against its budget-matched control) on the same characters and items: difference with its 95% "
                  "cluster bootstrap over characters; item-level exact McNemar (0/1) or Wilcoxon signed-rank "
                  "(ratings); character-level sign test; Holm-adjusted within the table.")


PAIRED_RUNS = ("With several runs, the runs of two methods are not paired with each other: each item's mean over its "
               "runs is the item-level pair (Wilcoxon signed-rank), each character's mean over its items and runs the "
               "character-level one.")


def save_paired(outcomes: pd.DataFrame, results_dir: Path, models: dict | None = None, note: str = "") -> dict:
    """``<table>_paired.csv`` and ``.tex`` for each table of ``outcomes`` (:func:`paired_table`), the caption
    naming the tests and the interval (:data:`PAIRED_CAPTION`) and ``note`` (the run's label line); the
    outcomes' own model labels are kept per row, ``models`` (:func:`rpa_lib.report.with_models`'s) fills those
    they lack. With several runs (a ``repeat`` column with more than one value) the caption says how many and how
    they are paired (:data:`PAIRED_RUNS`). Returns ``{table: paths}``."""
    written = {}
    for table, rows in outcomes.groupby("table", sort=False):
        paired = paired_table(rows)
        chars = int(paired.n_characters.max()) if len(paired) else 0
        runs = int(rows.repeat.nunique())
        pooled = f" {PAIRED_RUNS}" if runs > 1 else ""
        caption = f"{PAIRED_CAPTION}{pooled} {interval_caption(chars, runs=runs)}. {note}".strip()
        written[table] = save_table(paired, f"{table}_paired", results_dir, caption=caption,
                                    models={k: v for k, v in (models or {}).items() if k in LABELS} or None)
    return written
