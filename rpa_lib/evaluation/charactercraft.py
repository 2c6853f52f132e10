"""CharacterCraft's reference-guided judge and its agreement table (CharacterCraft Table 6).

CharacterCraft asks whether an LLM judge agrees with people (Kendall's tau per dimension) and whether a reference
answer helps it. We need a rating source whose order is true. People's ratings are one (dimension sheets in
``<human_dir>/<sample set>/``, read through :mod:`rpa_lib.evaluation.sheets` by :func:`human_levels`); until
there are any, the **quality ladder** of :mod:`rpa_lib.evaluation.known_quality`: per QA question, replies whose
level on each dimension is known by construction (:data:`~rpa_lib.evaluation.known_quality.EXPECTED`; see there
for what the ladder can and cannot test: not whether the reference helps, which on the ladder is circular).

The judge (:func:`judge_ladder`) rates each reply on each dimension by constrained choice (prompts:
:mod:`rpa_lib.evaluation.charactercraft_prompts`), through the verdict runner, in two modes: ``with`` (the gold
answer shown as reference on the ``reference_dimensions``, CharacterCraft's Pers, Emo and Dec by default; the
others are judged once, without it) and ``without`` (those dimensions again, with the profile alone): as in
CharacterCraft, a dimension the reference does not touch has one value ("-" in the without row). Every judge
sees the same static profile of the character (:func:`character_profile`). Kendall's tau-b (ties corrected:
the ladder has many ties) is computed per dimension and mode over the replies the source rates
(:func:`agreement`); :func:`kendall_table` lays it out as CharacterCraft's Table 6, an undefined tau left
undefined.

This module writes only people's empty dimension sheets (:func:`export_dimension_sheets`, never over an existing
one) and draws nothing; Kendall's tau is :func:`rpa_lib.evaluation.metrics.kendall_tau`.
"""

from __future__ import annotations

import math
import re
import warnings
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
from rpa_lib.evaluation.human import HUMAN_RATINGS_DIR, HUMAN_SOURCE, rater_names
from rpa_lib.evaluation.known_quality import LADDER_SOURCE, ladder_levels
from rpa_lib.evaluation.metrics.agreement import kendall_tau
from rpa_lib.evaluation.metrics.charactercraft import DIMENSIONS
from rpa_lib.evaluation.runner import OK, run_verdicts
from rpa_lib.evaluation.sheets import SheetSpec, export_empty_sheets, read_sheets

MODES = ("with", "without")
CHARACTERCRAFT_REFERENCE_DIMENSIONS = ("pers", "emo", "dec")  # where CharacterCraft's reference applies (Table 6)


# ---- the character's profile ----------------------------------------------------------------------------------


def character_profile(dataset: Dataset, slug: str, max_chars: int = 700) -> str:
    """A static profile for the judge: the first sentence of the first paragraph of each attribute section of the
    persona, ``Attribute: sentence``, cut to ``max_chars``. The same for every question, as CharacterCraft's
    profile is the same for every scene."""
    persona = dataset.persona(slug)
    lines, seen = [], set()
    for p in persona.paragraphs:
        if p.attribute and p.attribute not in seen:
            seen.add(p.attribute)
            first = re.split(r"(?<=[.!?])\s+", p.text.strip())[0]
            lines.append(f"{p.attribute}: {first}")
    text = "\n".join(lines)
    return text if len(text) <= max_chars else text[:max_chars].rsplit(" ", 1)[0] + " ..."


# ---- the judge ------------------------------------------------------------------------------------------------

VERDICT_COLUMNS = ["reply_id", "character", "qa_id", "rung", "mode", "dimension", "reference_shown", "answer", "value",
                   "status", "problem", "error", "judge", "coerced"]


def judge_jobs(ladder: pd.DataFrame, reference_dimensions: Sequence[str], modes: Sequence[str] = MODES) -> list[tuple]:
    """``(row, mode, dimension, reference shown)``: mode ``with`` judges every dimension, showing the reference
    on ``reference_dimensions``; mode ``without`` judges only ``reference_dimensions``, without it."""
    bad = [d for d in reference_dimensions if d not in DIMENSIONS] + [m for m in modes if m not in MODES]
    if bad or isinstance(reference_dimensions, str):
        raise ValueError(f"unknown dimension(s) or mode(s) {bad or reference_dimensions!r}; dimensions: "
                         f"{', '.join(DIMENSIONS)}; modes: {', '.join(MODES)}")
    jobs = []
    for row in ladder.to_dict("records"):
        for mode in modes:
            for d in DIMENSIONS:
                if mode == "with":
                    jobs.append((row, mode, d, d in reference_dimensions))
                elif d in reference_dimensions:
                    jobs.append((row, mode, d, False))
    return jobs


def judge_ladder(ladder: pd.DataFrame, judge, profiles: dict[str, str], about: dict[str, tuple[str, str]], *,
                 reference_dimensions: Sequence[str] = CHARACTERCRAFT_REFERENCE_DIMENSIONS,
                 modes: Sequence[str] = MODES, calibrate: bool = False, workers: int | None = None,
                 progress: bool = True) -> pd.DataFrame:
    """One verdict row per :func:`judge_jobs` job (columns :data:`VERDICT_COLUMNS`): the judge's digit and
    value, status ``ok``/``unparsed``/``failed`` (with its error). ``profiles``: slug -> profile text;
    ``about``: slug -> (name, work). ``calibrate``: each (dimension, reference shown) template's content-free
    baseline is subtracted (:mod:`rpa_lib.evaluation.calibration`)."""
    jobs = judge_jobs(ladder, reference_dimensions, modes)
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


# ---- agreement ------------------------------------------------------------------------------------------------


def agreement(verdicts: pd.DataFrame, levels: pd.DataFrame, source: str) -> pd.DataFrame:
    """Kendall's tau-b per (mode, dimension) between the judge's parsed values and the rating source's
    ``levels`` (reply_id, dimension, level), over the replies both have. Columns: mode, dimension, tau,
    pvalue, n, source, note (why tau is undefined). Verdicts of several runs (a ``repeat`` column) give each reply
    its mean value over the runs: the reply, not the run, is the unit ``n`` counts and tau pairs."""
    ok = verdicts[verdicts.status == OK]
    out = []
    for (mode, d), group in ok.groupby(["mode", "dimension"], sort=False):
        if "repeat" in group:
            group = group.groupby("reply_id", sort=False, as_index=False).value.mean()
        ref = levels[levels.dimension == d].set_index("reply_id").level
        pairs = group[group.reply_id.isin(ref.index)]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            tau = kendall_tau(pairs.value, pairs.reply_id.map(ref), variant="b")
        out.append({"mode": mode, "dimension": d, "tau": tau.tau, "pvalue": tau.pvalue, "n": tau.n, "source": source,
                    "note": "; ".join(str(w.message) for w in caught) or None})
    return pd.DataFrame(out, columns=["mode", "dimension", "tau", "pvalue", "n", "source", "note"])


def kendall_table(agree: pd.DataFrame, judge: str) -> pd.DataFrame:
    """CharacterCraft Table 6's layout: a ``with`` and a ``without`` reference row for the judge, Kendall's tau-b
    x 100 per dimension; a dimension the without mode did not judge is NaN (the paper's "-": no change), and so
    is a tau that is undefined (a constant rating, too few replies: its ``note`` in :func:`agreement`). ``avg`` is
    the mean over the eight dimensions, a dimension the without mode did not judge taken from the with row (as the
    paper's Avg recomputes, :func:`rpa_lib.evaluation.metrics.table6_average`), over the dimensions with a defined
    tau: an undefined tau is never filled from the other row. ``defined`` counts the dimensions averaged."""
    rows, full = [], []
    with_taus = agree[agree["mode"] == "with"].set_index("dimension").tau * 100
    for mode in [m for m in MODES if m in set(agree["mode"])]:
        got = agree[agree["mode"] == mode].set_index("dimension").tau * 100
        rows.append({"judge": judge, "reference": mode, **{d: got.get(d, np.nan) for d in DIMENSIONS}})
        full.append([got[d] if d in got.index else with_taus.get(d, np.nan) for d in DIMENSIONS])
    table = pd.DataFrame(rows, columns=["judge", "reference", *DIMENSIONS])
    full = pd.DataFrame(full, columns=list(DIMENSIONS), dtype=float)
    table.insert(2, "avg", full.mean(axis=1, skipna=True))
    table["defined"] = full.notna().sum(axis=1)
    return table


def rung_means(verdicts: pd.DataFrame) -> pd.DataFrame:
    """The judge's mean value per (mode, dimension, rung), over parsed verdicts, with ``n``: does it order the
    rungs as :data:`EXPECTED` says?"""
    ok = verdicts[verdicts.status == OK]
    means = ok.groupby(["mode", "dimension", "rung"], sort=False).value.agg(["mean", "count"]).reset_index()
    return means.rename(columns={"count": "n"})


# ---- people's dimension sheets --------------------------------------------------------------------------------

DIMENSION_SHEET = SheetSpec(id="reply_id", shown=("reply_id", "character", "question", "reference", "reply"),
                            scales={d: (0, TOP[d]) for d in DIMENSIONS}, noun=("reply", "replies"), formats=("csv",))


def instructions(top: dict[str, int] = TOP) -> str:
    """The instructions written beside the dimension sheets: every dimension, its scale and its anchors (the
    judge's, with the reference answer)."""
    lines = ["Rate each reply of a role-playing agent speaking as a fictional character, on each dimension.",
             "The reference answer says what is true of the character here (written about them in the third person).",
             "Type a whole number in each dimension column; leave a cell blank only if you cannot judge it.",
             "Do not edit the other columns or the file name; save as CSV (UTF-8).", ""]
    for d in DIMENSIONS:
        lines.append(f"{d} = {NAMES[d]} (0-{top[d]}): {WHAT[d]}")
        lines += [f"  {i} = {text}" for i, text in enumerate(REFERENCE_ANCHORS[d])]
    return "\n".join(lines) + "\n"


def export_dimension_sheets(ladder: pd.DataFrame, raters: int, folder: Path, sample_set: str,
                            names: dict[str, str] | None = None, seed: int = 0) -> tuple[list[Path], list[str]]:
    """One empty CSV sheet per person (``rater01.csv`` ...; :data:`DIMENSION_SHEET` through
    :func:`rpa_lib.evaluation.sheets.export_empty_sheets`) and ``INSTRUCTIONS.txt`` in ``folder``: the replies in a
    seeded shuffled order (so the ladder's order does not show), without their rung. An existing sheet is never
    rewritten. Returns ``(paths written, raters kept)``."""
    names = names or {}
    rows = ladder.iloc[np.random.default_rng(seed).permutation(len(ladder))]
    rows = rows.assign(character=[names.get(c, c) for c in rows.character])
    return export_empty_sheets(rows, rater_names(raters), folder, sample_set=sample_set, spec=DIMENSION_SHEET,
                               instructions=instructions())


def _long(sheet: pd.DataFrame) -> pd.DataFrame:
    """A read dimension sheet as (reply_id, rater, dimension, value) rows, blank cells left out."""
    rows = [{"reply_id": r["reply_id"], "rater": r["rater"], "dimension": d, "value": r[d]}
            for r in sheet.to_dict("records") for d in DIMENSIONS if not math.isnan(r[d])]
    return pd.DataFrame(rows, columns=["reply_id", "rater", "dimension", "value"])


def human_levels(ladder: pd.DataFrame, sample_set: str, human_dir: Path | None = None) -> pd.DataFrame | None:
    """People's ratings of the ladder from ``<human_dir>/<sample_set>/`` (default
    :data:`~rpa_lib.evaluation.human.HUMAN_RATINGS_DIR`; :func:`rpa_lib.evaluation.sheets.read_sheets`) as a
    rating source: the mean over raters per (reply, dimension), columns reply_id, dimension, level, raters; None
    when no sheet there holds a rating."""
    folder = Path(human_dir or HUMAN_RATINGS_DIR) / sample_set
    if not folder.is_dir():
        return None
    rated, _, _ = read_sheets(folder, expected_ids=list(ladder.reply_id), sample_set=sample_set, allow_missing=True,
                              spec=DIMENSION_SHEET)
    if not rated:
        return None
    long = pd.concat([_long(sheet) for sheet in rated.values()], ignore_index=True)
    return (long.groupby(["reply_id", "dimension"], sort=False).value.agg(level="mean", raters="count")
            .reset_index())


def rating_source(ladder: pd.DataFrame, sample_set: str, human_dir: Path | None = None) -> tuple[pd.DataFrame, str]:
    """The levels the judge is compared with, and their label: people's (:func:`human_levels`,
    :data:`~rpa_lib.evaluation.human.HUMAN_SOURCE`) when their sheets are there, else the ladder's
    (:func:`ladder_levels`, :data:`LADDER_SOURCE`). Dropping filled sheets into the folder changes the source
    with no code change."""
    people = human_levels(ladder, sample_set, human_dir)
    if people is not None:
        return people, HUMAN_SOURCE
    return ladder_levels(ladder), LADDER_SOURCE
