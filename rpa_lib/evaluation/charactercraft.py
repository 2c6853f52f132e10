"""CharacterCraft's reference-guided judge and its agreement table (CharacterCraft Table 6), on a quality ladder.

CharacterCraft asks whether an LLM judge agrees with people (Kendall's tau per dimension) and finds that a
reference answer helps it. We need a rating source whose order is true. People's ratings are one (sheets in
``<human_dir>/<sample set>/``, read by :func:`human_levels`); until there are any, the **quality ladder**: for
each QA question, replies whose order on each dimension is known by construction (:func:`build_ladder`).

The rungs (:data:`RUNGS`) and the dimensions each should move (:data:`EXPECTED`; 2 best, None: no claim):

=================== ================================================================ ==========================
rung                reply                                                            moves (vs in_character)
=================== ================================================================ ==========================
in_character        the QA's evidence: persona sentences in the character's own      (top on every dimension)
                    first-person voice, which state the gold answer
out_of_character    the gold answer, in the third person, wrapped in an AI            us, hl, emo down to 0;
                    assistant's phrases                                               pers to 1; facts unchanged
partly_wrong        the first evidence sentence (all but the last, when there are    bg, dec down to 1
                    several) plus a claim about the character the persona never makes
contradicts_persona a flat denial of the gold answer, dismissive of the question     bg, pers, dec down to 0
off_topic           another character's evidence for a question of the same          coh, bg, pers, dec to 0
                    attribute (the same character's for another attribute when the
                    dataset has one character)
garbled             the in-character reply with the words of each sentence           flu, coh, hl down to 0
                    shuffled (not one of the issue's five; it is what moves fluency)
=================== ================================================================ ==========================

Claims are made only where the construction guarantees them; elsewhere :data:`EXPECTED` says None and the reply
does not enter that dimension's tau. Kendall's tau-b (ties corrected: the ladder has many ties) is computed per
dimension and judge mode over all replies with a claim (:func:`agreement`).

The judge (:func:`judge_ladder`) rates each reply on each dimension by constrained choice (prompts:
:mod:`rpa_lib.evaluation.charactercraft_prompts`), in two modes: ``with`` (the gold answer shown as reference
on the ``reference_dimensions``; the others are judged once, without it) and ``without`` (those dimensions again,
with the profile alone): as in CharacterCraft, a dimension the reference does not touch has one value ("-" in the
without row). Every judge sees the same static profile of the character (:func:`character_profile`).

This module writes only people's dimension sheets (:func:`export_dimension_sheets`, never over an existing one)
and draws nothing; Kendall's tau is :func:`rpa_lib.evaluation.metrics.kendall_tau`.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import re
import warnings
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from rpa_lib.data import QA, Dataset
from rpa_lib.evaluation.calibration import baseline_scores, calibrated_verdict
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
from rpa_lib.evaluation.judges import FAILED, OK
from rpa_lib.evaluation.metrics.agreement import kendall_tau
from rpa_lib.evaluation.metrics.charactercraft import DIMENSIONS
from rpa_lib.evaluation.sheets import SheetError, SheetProblem
from rpa_lib.methods.runner import spread

LADDER_SOURCE = "quality ladder (known order by construction), not human"
MODES = ("with", "without")
CHARACTERCRAFT_REFERENCE_DIMENSIONS = ("pers", "emo", "dec")  # where CharacterCraft's reference applies

RUNGS = {
    "in_character": "the QA's evidence sentences, in the character's first-person voice",
    "out_of_character": "the gold answer in the third person, inside an AI assistant's phrases",
    "partly_wrong": "part of the evidence plus a claim about the character that the persona never makes",
    "contradicts_persona": "a flat, dismissive denial of the gold answer",
    "off_topic": "another character's evidence for a question of the same attribute",
    "garbled": "the in-character reply with the words of each sentence shuffled",
}
DEFAULT_RUNGS = tuple(RUNGS)

_ = None  # no claim
EXPECTED = {  # rung -> expected level per dimension (flu, coh, bg, pers, us, emo, dec, hl); higher is better
    "in_character": dict(flu=2, coh=2, bg=2, pers=2, us=2, emo=2, dec=2, hl=2),
    "out_of_character": dict(flu=2, coh=2, bg=2, pers=1, us=0, emo=0, dec=2, hl=0),
    "partly_wrong": dict(flu=2, coh=2, bg=1, pers=_, us=2, emo=_, dec=1, hl=2),
    "contradicts_persona": dict(flu=2, coh=_, bg=0, pers=0, us=_, emo=_, dec=0, hl=_),
    "off_topic": dict(flu=2, coh=0, bg=0, pers=0, us=_, emo=_, dec=0, hl=2),
    "garbled": dict(flu=0, coh=0, bg=_, pers=_, us=_, emo=_, dec=_, hl=0),
}

OUT_OF_CHARACTER = ("As an AI language model, I do not have personal experiences, but I can share what the character "
                    "description says. {answer} I hope this information is helpful! Let me know if you have any "
                    "other questions.")
DENIAL = ("No. Whoever told you that has it wrong: it is simply not true of me that {answer_lower} I have never "
          "cared about any of that, and I am not going to pretend otherwise. Ask someone else.")
# Claims about oneself that no persona of ours makes, in the first person.
INVENTIONS = (
    "I also won a national chess championship three years in a row.",
    "Besides, I have a twin who runs a bakery in Lisbon.",
    "And I spent a whole winter living on a lighthouse ship in the Arctic.",
    "I also keep a ninety-year-old pet tortoise called Admiral.",
    "And in secret I write opera librettos under a false name.",
    "I was born, by the way, on a train crossing the Andes.",
)


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


# ---- the ladder -----------------------------------------------------------------------------------------------


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s]


def garble(text: str, seed: int) -> str:
    """The words of each sentence of ``text`` in a seeded random order (a sentence of 3+ words always changes).
    ``sorted(garble("a b c.", 1).split()) == sorted("a b c.".split())``"""
    rng = np.random.default_rng(seed)
    out = []
    for sentence in _sentences(text):
        words = sentence.split()
        if len(words) >= 3:
            order = list(range(len(words)))
            while order == sorted(order):
                order = list(rng.permutation(len(words)))
            words = [words[i] for i in order]
        out.append(" ".join(words))
    return " ".join(out)


def _lower_first(text: str) -> str:
    text = text.strip()
    return text[:1].lower() + text[1:] if text[:2] != text[:2].upper() else text


def _other(dataset: Dataset, characters: list[str], character: str, qa: QA, index: int) -> tuple[str, QA]:
    """Another character's QA of the same attribute (the next character in turn); with one character, the same
    character's QA of another attribute."""
    others = [c for c in characters if c != character]
    if others:
        c = others[index % len(others)]
        pool = [q for q in dataset.qa(c) if q.attribute == qa.attribute] or dataset.qa(c)
        return c, pool[index % len(pool)]
    pool = [q for q in dataset.qa(character) if q.attribute != qa.attribute]
    if not pool:
        raise ValueError(f"{character}: no other character and no QA of another attribute for the off-topic rung")
    return character, pool[index % len(pool)]


LADDER_COLUMNS = ["reply_id", "character", "qa_id", "attribute", "question", "reference", "rung", "reply", "source"]


def build_ladder(dataset: Dataset, characters: list[str], per_character: int | None = None,
                 rungs: Sequence[str] = DEFAULT_RUNGS) -> pd.DataFrame:
    """One row per (QA question, rung): ``per_character`` questions of each character spread over the six
    attributes (None: all), each with the replies of ``rungs`` (:data:`RUNGS`). Columns
    :data:`LADDER_COLUMNS`: ``reference`` is the gold answer, ``source`` where an off-topic reply came from."""
    unknown = [r for r in rungs if r not in RUNGS]
    if unknown or isinstance(rungs, str) or len(set(rungs)) < 2:
        raise ValueError(f"rungs: at least two distinct of {', '.join(RUNGS)}; got {rungs!r}")
    rows = []
    for character in characters:
        for index, qa in enumerate(spread(dataset.qa(character), lambda q: q.attribute, per_character)):
            evidence = list(qa.evidence) or [qa.answer]
            in_char = " ".join(evidence)
            seed = zlib.crc32(qa.id.encode())
            kept = evidence[:-1] if len(evidence) > 1 else evidence[:1]
            other_char, other_qa = _other(dataset, characters, character, qa, index)
            texts = {
                "in_character": (in_char, None),
                "out_of_character": (OUT_OF_CHARACTER.format(answer=qa.answer.strip()), None),
                "partly_wrong": (" ".join([*kept, INVENTIONS[seed % len(INVENTIONS)]]), None),
                "contradicts_persona": (DENIAL.format(answer_lower=_lower_first(qa.answer)), None),
                "off_topic": (" ".join(other_qa.evidence) or other_qa.answer, f"{other_char}:{other_qa.id}"),
                "garbled": (garble(in_char, seed), None),
            }
            for rung in rungs:
                text, source = texts[rung]
                rows.append({"reply_id": f"{qa.id}:{rung}", "character": character, "qa_id": qa.id,
                             "attribute": qa.attribute, "question": qa.question, "reference": qa.answer, "rung": rung,
                             "reply": text, "source": source})
    return pd.DataFrame(rows, columns=LADDER_COLUMNS)


def ladder_levels(ladder: pd.DataFrame) -> pd.DataFrame:
    """The ladder as a rating source: one row per (reply, dimension) with a claim in :data:`EXPECTED`:
    ``reply_id``, ``dimension``, ``level``."""
    rows = [{"reply_id": r.reply_id, "dimension": d, "level": float(EXPECTED[r.rung][d])}
            for r in ladder.itertuples() for d in DIMENSIONS if EXPECTED[r.rung][d] is not None]
    return pd.DataFrame(rows, columns=["reply_id", "dimension", "level"])


def expected_table(rungs: Sequence[str] = DEFAULT_RUNGS) -> pd.DataFrame:
    """:data:`EXPECTED` for ``rungs`` as a table (rung, what, and a column per dimension; "-": no claim)."""
    return pd.DataFrame([{"rung": r, "reply": RUNGS[r], **{d: "-" if EXPECTED[r][d] is None else EXPECTED[r][d]
                                                           for d in DIMENSIONS}} for r in rungs])


# ---- the judge ------------------------------------------------------------------------------------------------

VERDICT_COLUMNS = ["reply_id", "character", "qa_id", "rung", "mode", "dimension", "reference_shown", "answer", "value",
                   "status", "problem", "error", "judge"]


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
    baselines, broken = {}, {}
    if calibrate:
        for key in dict.fromkeys((d, shown) for _, _, d, shown in jobs):
            try:
                baselines[key] = baseline_scores(judge, content_free_messages(*key), options(key[0]))
            except Exception as exc:  # noqa: BLE001  (recorded on every verdict of this template, raised at the end)
                broken[key] = f"calibration baseline failed: {type(exc).__name__}: {exc}"

    def run(job):
        row, _, d, shown = job
        if (d, shown) in broken:
            raise RuntimeError(broken[d, shown])
        name, work = about.get(row["character"], (row["character"], ""))
        messages = dimension_messages(d, name, work, profiles.get(row["character"], ""), row["question"], row["reply"],
                                      row["reference"] if shown else None)
        return calibrated_verdict(judge, d, messages, options(d), baselines.get((d, shown)))

    outcomes = judge.map(run, jobs, desc="CharacterCraft judge", workers=workers, progress=progress) if jobs else []
    rows = []
    for o in outcomes:
        row, mode, d, shown = o.item
        v = o.value if o.ok else None
        rows.append({"reply_id": row["reply_id"], "character": row["character"], "qa_id": row["qa_id"],
                     "rung": row["rung"], "mode": mode, "dimension": d, "reference_shown": shown,
                     "answer": v.answer if v else None, "value": v.value if v else np.nan,
                     "status": v.status if v else FAILED, "problem": v.problem if v else None, "error": o.error,
                     "judge": judge.label})
    return pd.DataFrame(rows, columns=VERDICT_COLUMNS)


# ---- agreement ------------------------------------------------------------------------------------------------


def agreement(verdicts: pd.DataFrame, levels: pd.DataFrame, source: str) -> pd.DataFrame:
    """Kendall's tau-b per (mode, dimension) between the judge's parsed values and the rating source's
    ``levels`` (reply_id, dimension, level), over the replies both have. Columns: mode, dimension, tau,
    pvalue, n, source, note (why tau is undefined)."""
    ok = verdicts[verdicts.status == OK]
    out = []
    for (mode, d), group in ok.groupby(["mode", "dimension"], sort=False):
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
    x 100 per dimension; a dimension the without mode did not judge is NaN (the paper's "-": no change). ``avg``
    is the mean over the eight dimensions, the without row's missing ones taken from the with row (as the paper's
    Avg recomputes, :func:`rpa_lib.evaluation.metrics.table6_average`), over the dimensions with a defined tau;
    ``defined`` counts them."""
    rows = []
    for mode in [m for m in MODES if m in set(agree["mode"])]:
        got = agree[agree["mode"] == mode].set_index("dimension").tau * 100
        rows.append({"judge": judge, "reference": mode, **{d: got.get(d, np.nan) for d in DIMENSIONS}})
    table = pd.DataFrame(rows, columns=["judge", "reference", *DIMENSIONS])
    with_row = table[table.reference == "with"]
    full = table[list(DIMENSIONS)].copy()
    if len(with_row):
        full = full.fillna(with_row[list(DIMENSIONS)].iloc[0])
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

SHEET_COLUMNS = ["reply_id", "character", "question", "reference", "reply", *DIMENSIONS, "comment", "sample_set",
                 "rater"]


def ladder_set_id(ladder: pd.DataFrame) -> str:
    """``ladder-<replies>r-<digest of what a rater sees>``."""
    digest = hashlib.sha256(json.dumps(ladder[["reply_id", "question", "reference", "reply"]].values.tolist(),
                                       ensure_ascii=False).encode()).hexdigest()[:8]
    return f"ladder-{len(ladder)}r-{digest}"


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
    """One empty CSV sheet per person (``rater01.csv`` ...) and ``INSTRUCTIONS.txt`` in ``folder``: the replies
    in a seeded shuffled order (so the ladder's order does not show), without their rung. An existing sheet is
    never rewritten. Returns ``(paths written, raters kept)``."""
    folder = Path(folder)
    names = names or {}
    order = np.random.default_rng(seed).permutation(len(ladder))
    rows = ladder.iloc[order]
    written, kept = [], []
    for rater in rater_names(raters):
        path = folder / f"{rater}.csv"
        if path.exists():
            kept.append(rater)
            continue
        folder.mkdir(parents=True, exist_ok=True)
        with path.open("w", encoding="utf-8-sig", newline="") as f:
            w = csv.writer(f)
            w.writerow(SHEET_COLUMNS)
            for r in rows.itertuples():
                w.writerow([r.reply_id, names.get(r.character, r.character), r.question, r.reference, r.reply,
                            *[""] * len(DIMENSIONS), "", sample_set, rater])
        written.append(path)
    guide = folder / "INSTRUCTIONS.txt"
    if written and not guide.exists():
        guide.write_text(instructions(), encoding="utf-8")
        written.append(guide)
    return written, kept


def _value(raw: str, top: int) -> tuple[float, str | None]:
    text = (raw or "").strip()
    if not text:
        return math.nan, None
    try:
        number = float(text)
    except ValueError:
        return math.nan, "not a number"
    if not number.is_integer() or not 0 <= number <= top:
        return math.nan, f"not a whole number from 0 to {top}"
    return number, None


def read_dimension_sheet(path: Path, expected_ids: Sequence[str], sample_set: str) -> pd.DataFrame:
    """One filled dimension sheet as rows (reply_id, rater, dimension, value; blank cells left out). A
    :class:`~rpa_lib.evaluation.sheets.SheetError` lists every problem: another sample set, a value outside
    its dimension's scale, a duplicated, foreign or missing reply id, a missing column."""
    path = Path(path)
    try:
        with path.open(encoding="utf-8-sig", newline="") as f:
            table = list(csv.DictReader(f))
            header = list(table[0].keys()) if table else []
    except (UnicodeDecodeError, csv.Error) as exc:
        raise SheetError(path, [SheetProblem(None, None, f"cannot be read as UTF-8 CSV: {exc}")]) from None
    missing = [c for c in ("reply_id", *DIMENSIONS, "sample_set", "rater") if c not in header]
    if missing:
        raise SheetError(path, [SheetProblem(1, None, f"the header lacks the column(s) {missing}")])
    problems, rows, seen = [], [], {}
    wanted = set(expected_ids)
    for i, r in enumerate(table, start=2):
        if (r.get("sample_set") or "").strip() != sample_set:
            problems.append(SheetProblem(i, r.get("sample_set"), f"the row is for another sample set, not {sample_set!r}"))
            continue
        rid = (r.get("reply_id") or "").strip()
        if rid in seen:
            problems.append(SheetProblem(i, rid, f"reply_id duplicated (first in row {seen[rid]})"))
            continue
        seen[rid] = i
        if rid not in wanted:
            problems.append(SheetProblem(i, rid, "reply_id is not one of the expected replies"))
            continue
        for d in DIMENSIONS:
            value, problem = _value(r.get(d), TOP[d])
            if problem:
                problems.append(SheetProblem(i, r.get(d), f"{d}: {problem}"))
            elif not math.isnan(value):
                rows.append({"reply_id": rid, "rater": (r.get("rater") or path.stem).strip(), "dimension": d,
                             "value": value})
    absent = [i for i in expected_ids if i not in seen]
    if absent and rows:
        problems.append(SheetProblem(None, None, f"{len(absent)} expected reply(s) missing: {', '.join(absent[:10])}"))
    if problems:
        raise SheetError(path, problems)
    return pd.DataFrame(rows, columns=["reply_id", "rater", "dimension", "value"])


def human_levels(ladder: pd.DataFrame, sample_set: str, human_dir: Path | None = None) -> pd.DataFrame | None:
    """People's ratings of the ladder from ``<human_dir>/<sample_set>/*.csv`` (default
    :data:`~rpa_lib.evaluation.human.HUMAN_RATINGS_DIR`) as a rating source: the mean over raters per (reply,
    dimension), columns reply_id, dimension, level, raters; None when no sheet there holds a rating."""
    folder = Path(human_dir or HUMAN_RATINGS_DIR) / sample_set
    if not folder.is_dir():
        return None
    files = sorted(p for p in folder.glob("*.csv") if not p.name.startswith(("~$", ".")))
    rated = [r for r in (read_dimension_sheet(p, list(ladder.reply_id), sample_set) for p in files) if len(r)]
    if not rated:
        return None
    long = pd.concat(rated, ignore_index=True)
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
