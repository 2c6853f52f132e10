"""CharacterCraft's reference-guided judge and its agreement table (CharacterCraft Table 6).

The judge rates each reply on each dimension by constrained choice, with the gold answer shown as reference on the
``reference_dimensions`` (mode ``with``) and again without it (``without``); Kendall's tau-b against a rating
source (people's dimension sheets, else the quality ladder of :mod:`rpa_lib.evaluation.known_quality`) is laid out
as Table 6. Writes only people's empty dimension sheets (never over an existing one); draws nothing.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from rpa_lib.data import Dataset
from rpa_lib.evaluation.calibration import calibrated_verdict, template_baselines
from rpa_lib.evaluation.charactercraft_prompts import (
    NAMES,
    REFERENCE_ANCHORS,
    TOP,
    WHAT,
    content_free_messages,
    dimension_messages,
    options,
)
from rpa_lib.evaluation.human import HUMAN_SOURCE, rater_names, ratings_folder
from rpa_lib.evaluation.known_quality import LADDER_SOURCE, ladder_levels
from rpa_lib.evaluation.metrics.agreement import kendall_tau, noted
from rpa_lib.evaluation.metrics.charactercraft import DIMENSIONS
from rpa_lib.evaluation.runner import OK, run_verdicts
from rpa_lib.evaluation.sheets import SheetSpec, export_empty_sheets, read_sheets

MODES = ("with", "without")
CHARACTERCRAFT_REFERENCE_DIMENSIONS = ("pers", "emo", "dec")  # where CharacterCraft's reference applies (Table 6)
VERDICT_COLUMNS = ["reply_id", "character", "qa_id", "rung", "mode", "dimension", "reference_shown", "answer", "value",
                   "status", "problem", "error", "judge", "coerced"]
DIMENSION_SHEET = SheetSpec(id="reply_id", shown=("reply_id", "character", "question", "reference", "reply"),
                            scales={d: (0, TOP[d]) for d in DIMENSIONS}, noun=("reply", "replies"), formats=("csv",))


def character_profile(dataset: Dataset, slug: str, max_chars: int = 700) -> str:
    """``Attribute: first sentence`` of each attribute section of the persona, cut to ``max_chars``: the same for
    every question, as CharacterCraft's profile is for every scene."""
    first = {}
    for p in dataset.persona(slug).paragraphs:
        if p.attribute and p.attribute not in first:
            first[p.attribute] = re.split(r"(?<=[.!?])\s+", p.text.strip())[0]
    text = "\n".join(f"{attribute}: {sentence}" for attribute, sentence in first.items())
    return text if len(text) <= max_chars else text[:max_chars].rsplit(" ", 1)[0] + " ..."


def judge_jobs(ladder: pd.DataFrame, reference_dimensions: Sequence[str]) -> list[tuple]:
    """``(row, mode, dimension, reference shown)``: ``with`` judges every dimension, showing the reference on
    ``reference_dimensions``; ``without`` judges only those, without it."""
    bad = [d for d in reference_dimensions if d not in DIMENSIONS]
    if bad or isinstance(reference_dimensions, str):
        raise ValueError(f"unknown dimension(s) {bad or reference_dimensions!r}; dimensions: {', '.join(DIMENSIONS)}")
    return [(row, mode, d, mode == "with" and d in reference_dimensions) for row in ladder.to_dict("records")
            for mode in MODES for d in DIMENSIONS if mode == "with" or d in reference_dimensions]


def judge_ladder(ladder: pd.DataFrame, judge, profiles: dict[str, str], about: dict[str, tuple[str, str]], *,
                 reference_dimensions: Sequence[str] = CHARACTERCRAFT_REFERENCE_DIMENSIONS, calibrate: bool = False,
                 workers: int | None = None, progress: bool = True) -> pd.DataFrame:
    """One verdict row per :func:`judge_jobs` job (:data:`VERDICT_COLUMNS`). ``profiles``: slug -> profile;
    ``about``: slug -> (name, work); ``calibrate``: per (dimension, reference shown) template."""
    jobs = judge_jobs(ladder, reference_dimensions)
    baselines, broken = (template_baselines(judge, [(d, shown) for _, _, d, shown in jobs],
                                            lambda key: content_free_messages(*key), lambda key: options(key[0]))
                         if calibrate else ({}, {}))

    def run(job):
        row, _, d, shown = job
        if (d, shown) in broken:
            raise RuntimeError(broken[d, shown])
        name, work = about.get(row["character"], (row["character"], ""))
        messages = dimension_messages(d, name, work, profiles.get(row["character"], ""), row["question"], row["reply"],
                                      row["reference"] if shown else None)
        return calibrated_verdict(judge, d, messages, options(d), baselines.get((d, shown)))

    def describe(job) -> dict:
        row, mode, d, shown = job
        return {"reply_id": row["reply_id"], "character": row["character"], "qa_id": row["qa_id"], "rung": row["rung"],
                "mode": mode, "dimension": d, "reference_shown": shown, "judge": judge.label}

    return run_verdicts(judge, jobs, run, describe, columns=VERDICT_COLUMNS, desc="CharacterCraft judge",
                        workers=workers, progress=progress)


def agreement(verdicts: pd.DataFrame, levels: pd.DataFrame, source: str) -> pd.DataFrame:
    """Kendall's tau-b per (mode, dimension) between the judge's values and ``levels`` (reply_id, dimension,
    level), with ``note`` saying why a tau is undefined. Repeated runs are averaged per reply first. A dimension judged
    with no parsed verdict has its row, tau undefined (never filled from the other mode's)."""
    out = []
    for (mode, d), judged in verdicts.groupby(["mode", "dimension"], sort=False):
        group = judged[judged.status == OK]
        if group.empty:
            out.append({"mode": mode, "dimension": d, "tau": np.nan, "pvalue": np.nan, "n": 0, "source": source,
                        "note": f"no parsed verdict ({len(judged)} unparsed or failed)"})
            continue
        if "repeat" in group:
            group = group.groupby("reply_id", sort=False, as_index=False).value.mean()
        ref = levels[levels.dimension == d].set_index("reply_id").level
        pairs = group[group.reply_id.isin(ref.index)]
        tau, note = noted(kendall_tau, pairs.value, pairs.reply_id.map(ref), variant="b")
        out.append({"mode": mode, "dimension": d, "tau": tau.tau, "pvalue": tau.pvalue, "n": tau.n, "source": source,
                    "note": note})
    return pd.DataFrame(out, columns=["mode", "dimension", "tau", "pvalue", "n", "source", "note"])


def kendall_table(agree: pd.DataFrame, judge: str) -> pd.DataFrame:
    """CharacterCraft Table 6's layout: a ``with`` and a ``without`` row of tau-b x 100 per dimension (NaN: not
    judged, the paper's "-", or undefined), ``avg`` over the defined dimensions (an unjudged one taken from the
    with row, as :func:`rpa_lib.evaluation.metrics.table6_average`) and ``defined``, how many were averaged."""
    taus = {m: agree[agree["mode"] == m].set_index("dimension").tau * 100 for m in MODES}
    modes = [m for m in MODES if m in set(agree["mode"])]
    table = pd.DataFrame([{"judge": judge, "reference": m, **{d: taus[m].get(d, np.nan) for d in DIMENSIONS}}
                          for m in modes], columns=["judge", "reference", *DIMENSIONS])
    full = pd.DataFrame([[taus[m].get(d, taus["with"].get(d, np.nan)) for d in DIMENSIONS] for m in modes],
                        columns=list(DIMENSIONS), dtype=float)
    table.insert(2, "avg", full.mean(axis=1, skipna=True))
    table["defined"] = full.notna().sum(axis=1)
    return table


def rung_means(verdicts: pd.DataFrame) -> pd.DataFrame:
    """The judge's mean value and ``n`` per (mode, dimension, rung), to compare with :data:`EXPECTED`."""
    ok = verdicts[verdicts.status == OK]
    means = ok.groupby(["mode", "dimension", "rung"], sort=False).value.agg(["mean", "count"]).reset_index()
    return means.rename(columns={"count": "n"})


def instructions() -> str:
    """The text of ``INSTRUCTIONS.txt`` beside the dimension sheets: each dimension, its scale and anchors."""
    lines = ["Rate each reply of a role-playing agent speaking as a fictional character, on each dimension.",
             "The reference answer says what is true of the character here (written about them in the third person).",
             "Type a whole number in each dimension column; leave a cell blank only if you cannot judge it.",
             "Do not edit the other columns or the file name; save as CSV (UTF-8).", ""]
    for d in DIMENSIONS:
        lines.append(f"{d} = {NAMES[d]} (0-{TOP[d]}): {WHAT[d]}")
        lines += [f"  {i} = {text}" for i, text in enumerate(REFERENCE_ANCHORS[d])]
    return "\n".join(lines) + "\n"


def export_dimension_sheets(ladder: pd.DataFrame, raters: int, folder: Path, sample_set: str,
                            names: dict[str, str] | None = None, seed: int = 0) -> tuple[list[Path], list[str]]:
    """One empty CSV sheet per person and ``INSTRUCTIONS.txt`` in ``folder``, the replies shuffled (seeded) and
    without their rung; an existing sheet is kept. Returns ``(paths written, raters kept)``."""
    rows = ladder.iloc[np.random.default_rng(seed).permutation(len(ladder))]
    rows = rows.assign(character=[(names or {}).get(c, c) for c in rows.character])
    return export_empty_sheets(rows, rater_names(raters), folder, sample_set=sample_set, spec=DIMENSION_SHEET,
                               instructions=instructions())


def human_levels(ladder: pd.DataFrame, sample_set: str, human_dir: Path | None = None) -> pd.DataFrame | None:
    """People's mean rating per (reply, dimension) from ``<human_dir>/<sample_set>/`` (columns reply_id,
    dimension, level, raters); None when no sheet there holds a rating; FileNotFoundError for a ``human_dir`` that is
    no folder."""
    folder = ratings_folder(human_dir, sample_set)
    if not folder.is_dir():
        return None
    rated, _, _ = read_sheets(folder, expected_ids=list(ladder.reply_id), sample_set=sample_set, allow_missing=True,
                              spec=DIMENSION_SHEET)
    if not rated:
        return None
    long = pd.DataFrame([{"reply_id": r["reply_id"], "dimension": d, "value": r[d]} for sheet in rated.values()
                         for r in sheet.to_dict("records") for d in DIMENSIONS if not math.isnan(r[d])],
                        columns=["reply_id", "dimension", "value"])
    return long.groupby(["reply_id", "dimension"], sort=False).value.agg(level="mean", raters="count").reset_index()


def rating_source(ladder: pd.DataFrame, sample_set: str, human_dir: Path | None = None) -> tuple[pd.DataFrame, str]:
    """``(levels, label)``: people's (:func:`human_levels`) when their sheets are there, else the ladder's."""
    people = human_levels(ladder, sample_set, human_dir)
    if people is not None:
        return people, HUMAN_SOURCE
    return ladder_levels(ladder), LADDER_SOURCE
