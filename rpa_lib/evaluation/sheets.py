"""Rating sheets, one reader and writer for all of them (AMADEUS Table 2's annotation sheets, CharacterCraft's
dimension sheets), each described by a :class:`SheetSpec`.

:func:`export_sheets` writes ``<rater>.xlsx`` and/or ``<rater>.csv``; :func:`read_sheet`, :func:`read_sheets` and
:func:`merge_sheets` read filled ones back and validate them, reporting every problem of a sheet at once in one
:class:`SheetError` (file, spreadsheet row, value). Writes files only when exporting, and never over an existing
sheet unless asked: a filled sheet is the only copy of a rater's work. Does not choose samples or compute agreement.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from rpa_lib.evaluation.runner import QUESTIONNAIRE_TASKS
from rpa_lib.evaluation.sheet_files import (
    LoadedSheet,
    SheetError,
    SheetProblem,
    blank,
    cell_text,
    fail,
    load_sheet,
    parse_rating,
    sheet_id,
    write_csv,
    write_workbook,
)

MAX_CELL = 32_767  # Excel's limit on the characters of one cell


@dataclass(frozen=True)
class SheetSpec:
    """What a rating sheet holds: the id column, the ``shown`` columns (``id`` first), each rating column's
    (lowest, highest) whole number, what a row is called, allowed values, formats and the workbook's layout."""

    id: str
    shown: tuple[str, ...]
    scales: dict[str, tuple[int, int]]
    noun: tuple[str, str] = ("sample", "samples")
    allowed: dict[str, tuple[str, ...]] = field(default_factory=dict)
    formats: tuple[str, ...] = ("xlsx", "csv")
    title: str = ""
    guide: tuple[tuple[str, str, bool], ...] = ()
    prompts: dict[str, str] = field(default_factory=dict)
    widths: dict[str, int] = field(default_factory=dict)
    wrapped: tuple[str, ...] = ()

    @property
    def columns(self) -> tuple[str, ...]:
        return (*self.shown, *self.scales, "comment")


QUESTION = "Is it reasonable to infer these attributes of the character from these chunks, for this question?"
SCALE = {
    1: "Not reasonable. The chunks do not support these attributes at all, or they point the other way.",
    2: "Hardly reasonable. The chunks touch the topic, but the attributes go well beyond what they show.",
    3: "Partly reasonable. Some attributes follow from the chunks; others are guesses or overstated.",
    4: "Mostly reasonable. The attributes follow from the chunks, with a small leap or a detail they do not show.",
    5: "Fully reasonable. Every attribute is clearly supported by the chunks, and they fit the question.",
}
SAMPLE_COLUMNS = ("sample_id", "task", "character", "question", "chunks", "attributes")
TABLE2_SHEET = SheetSpec(
    id="sample_id", shown=SAMPLE_COLUMNS, scales={"rating": (1, 5)},
    allowed={"task": tuple(QUESTIONNAIRE_TASKS.values())},
    title="Human evaluation: is the character inferred reasonably?",
    guide=(("What you see", "Each row of the Ratings sheet holds a question put to a character, the chunks (passages "
                            "of the character's persona document picked for that question) and the attributes (what "
                            "was inferred about the character from those chunks).", False),
           ("What to rate", QUESTION, True),
           ("", "Judge only what the chunks say, not what you know of the character from elsewhere.", False),
           ("", "", False), ("Scale", "", True), *[(str(k), v, False) for k, v in SCALE.items()], ("", "", False),
           ("How to fill", "Type a whole number from 1 to 5 in the rating column of every row; the comment column is "
                           "optional. Do not edit the other columns, rename the sheets or rename this file. Fill in "
                           "one copy only, this workbook or the .csv beside it, and save it in its own format (the "
                           ".csv as CSV in UTF-8).", False)),
    prompts={"rating": "1 (not reasonable) to 5 (fully reasonable)"},
    widths={"sample_id": 14, "task": 8, "character": 18, "question": 40, "chunks": 90, "attributes": 50, "rating": 9,
            "comment": 40},
    wrapped=("question", "chunks", "attributes", "comment"))


def _check_samples(samples: pd.DataFrame, spec: SheetSpec) -> pd.DataFrame:
    missing = [c for c in spec.shown if c not in samples.columns]
    if missing:
        raise ValueError(f"samples need the columns {list(spec.shown)}; missing {missing}")
    if samples.empty:
        raise ValueError("no samples to export")
    rows = samples.loc[:, list(spec.shown)].map(cell_text)
    rows[spec.id] = rows[spec.id].str.strip()
    if (rows[spec.id] == "").any():
        raise ValueError(f"every sample needs a {spec.id}")
    dup = sorted(set(rows[spec.id][rows[spec.id].duplicated()]))
    if dup:
        raise ValueError(f"duplicated {spec.id}(s): {', '.join(dup)}")
    for column, values in spec.allowed.items():
        bad = sorted(set(rows[column]) - set(values))
        if bad:
            raise ValueError(f"{column} must be one of {values}, got {bad}")
    from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE

    for column in spec.shown:
        for sid, text in zip(rows[spec.id], rows[column]):
            if len(text) > MAX_CELL:
                raise ValueError(f"sample {sid}: {column} has {len(text)} characters, more than a spreadsheet cell "
                                 f"holds ({MAX_CELL})")
            if ILLEGAL_CHARACTERS_RE.search(text):
                raise ValueError(f"sample {sid}: {column} holds a control character a spreadsheet cannot store")
    return rows


def _check_raters(raters: list[str]) -> list[str]:
    if isinstance(raters, str) or not raters:
        raise ValueError("raters is a non-empty list of rater names")
    names = [str(r).strip() for r in raters]
    for name in names:
        if not name or name.startswith((".", "~")) or any(ch in name for ch in '/\\:*?"<>|') or name != Path(name).name:
            raise ValueError(f"rater name {name!r} cannot be a file name; use letters, digits, '-' or '_'")
    folded = [n.casefold() for n in names]
    dup = sorted({n for n in names if folded.count(n.casefold()) > 1})
    if dup:
        raise ValueError(f"rater names must differ (ignoring case, as file names do): {dup}")
    return names


def export_sheets(samples: pd.DataFrame, raters: list[str], folder: Path | str, *, sample_set: str,
                  spec: SheetSpec = TABLE2_SHEET, overwrite: bool = False) -> list[Path]:
    """Write every rater's sheet (the spec's formats) of ``samples`` (the spec's shown columns, in order) into
    ``folder``; an existing one only with ``overwrite=True``. Returns the paths written."""
    sample_set = str(sample_set).strip()
    if not sample_set:
        raise ValueError("sample_set is the id of this set of samples, e.g. 'table2-v1'")
    rows = _check_samples(samples, spec)
    names = _check_raters(raters)
    folder = Path(folder)
    targets = {folder / f"{name}.{ext}": name for name in names for ext in spec.formats}
    existing = [str(p) for p in targets if p.exists()]
    if existing and not overwrite:
        raise FileExistsError(f"sheets exist and may hold ratings: {', '.join(existing)} (overwrite=True replaces)")
    folder.mkdir(parents=True, exist_ok=True)
    for path, name in targets.items():
        (write_workbook if path.suffix == ".xlsx" else write_csv)(path, spec, rows, name, sample_set)
    return list(targets)


def export_empty_sheets(samples: pd.DataFrame, raters: list[str], folder: Path | str, *, sample_set: str,
                        spec: SheetSpec = TABLE2_SHEET, instructions: str | None = None) -> tuple[list[Path], list[str]]:
    """:func:`export_sheets` for the raters without a sheet in ``folder`` (and ``INSTRUCTIONS.txt`` if given and
    absent). Returns ``(paths written, raters whose sheets were kept)``."""
    folder = Path(folder)
    kept = [n for n in raters if any((folder / f"{n}.{ext}").exists() for ext in spec.formats)]
    todo = [n for n in raters if n not in kept]
    written = export_sheets(samples, todo, folder, sample_set=sample_set, spec=spec) if todo else []
    guide = folder / "INSTRUCTIONS.txt"
    if instructions and written and not guide.exists():
        guide.write_text(instructions, encoding="utf-8")
        written.append(guide)
    return written, kept


def _expected(expected_ids: Iterable) -> list[str]:
    ids = [sheet_id(i) for i in expected_ids]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise ValueError(f"expected_ids has duplicates: {dup}")
    if not ids:
        raise ValueError("expected_ids is empty")
    return ids


def _validate(sheet: LoadedSheet, expected: list[str], allow_missing: bool, spec: SheetSpec) -> pd.DataFrame:
    problems: list[SheetProblem] = []
    wanted, seen, ratings = set(expected), {}, {}
    one, many = spec.noun
    for row, raw_id, raw in sheet.rows:
        if blank(raw_id):
            problems.append(SheetProblem(row, None, f"{spec.id} is empty"))
            continue
        sid = sheet_id(raw_id)
        if sid in seen:
            problems.append(SheetProblem(row, sid, f"{spec.id} duplicated (first in row {seen[sid]})"))
            continue
        seen[sid] = row
        if sid not in wanted:
            problems.append(SheetProblem(row, sid, f"{spec.id} is not one of the expected {many}"))
            continue
        ratings[sid] = {spec.id: sid, "rater": sheet.rater}
        for column, (low, high) in spec.scales.items():
            rating, problem = parse_rating(raw[column], column, low, high)
            if problem:
                problems.append(SheetProblem(row, raw[column], problem))
            elif rating is None and not allow_missing:
                problems.append(SheetProblem(row, None, f"{column} of {one} {sid} is empty (allow_missing=True "
                                                        "accepts it as NaN)"))
            ratings[sid][column] = float("nan") if rating is None else float(rating)
    absent = [i for i in expected if i not in seen]
    if absent:
        problems.append(SheetProblem(None, None, f"{len(absent)} expected {one}(s) missing: {', '.join(absent)}"))
    if problems:
        raise SheetError(sheet.path, problems)
    return pd.DataFrame([ratings[i] for i in expected])


def read_sheet(path: Path | str, *, expected_ids: Iterable, sample_set: str, allow_missing: bool = False,
               spec: SheetSpec = TABLE2_SHEET) -> pd.DataFrame:
    """One filled sheet as a DataFrame (the id, ``rater``, each rating column) in ``expected_ids`` order; an empty
    rating is a problem unless ``allow_missing`` (NaN). Columns are found by their header."""
    return _validate(load_sheet(Path(path), sample_set, spec), _expected(expected_ids), allow_missing, spec)


def read_sheets(folder: Path | str, *, expected_ids: Iterable, sample_set: str, allow_missing: bool = False,
                spec: SheetSpec = TABLE2_SHEET) -> tuple[dict[str, pd.DataFrame], dict[str, str], list[str]]:
    """``(ratings, files, waiting)`` of ``folder``: :func:`read_sheet`'s frame and the file read per rater who has
    rated, and the raters yet to rate. Of a rater's .xlsx and .csv copies, the rated one is read (two: an error)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"no sheet folder {folder}")
    expected = _expected(expected_ids)
    loaded = [load_sheet(p, sample_set, spec) for p in sorted(folder.iterdir())
              if p.is_file() and p.suffix.lower() in (".xlsx", ".csv") and not p.name.startswith(("~$", "."))]
    ratings, used, waiting = {}, {}, []
    for rater in sorted({s.rater for s in loaded}):
        rated = [s for s in loaded if s.rater == rater and s.rated]
        if not rated:
            waiting.append(rater)
            continue
        if len(rated) > 1:
            fail(rated[1].path, f"rater {rater!r} has {len(rated)} rated sheets "
                                 f"({', '.join(s.path.name for s in rated)}); keep one")
        ratings[rater] = _validate(rated[0], expected, allow_missing, spec)
        used[rater] = rated[0].path.name
    return ratings, used, waiting


def merge_sheets(folder: Path | str, *, expected_ids: Iterable, sample_set: str, allow_missing: bool = False,
                 spec: SheetSpec = TABLE2_SHEET) -> pd.DataFrame:
    """The rated sheets of ``folder`` as one table (ids x raters); a rater yet to rate is left out with a warning
    and listed in ``attrs["not_yet_rated"]``; ``attrs["sheets"]`` maps each rater to the file read."""
    expected = _expected(expected_ids)
    ratings, used, waiting = read_sheets(folder, expected_ids=expected, sample_set=sample_set,
                                         allow_missing=allow_missing, spec=spec)
    table = pd.DataFrame({r: f.rating.to_numpy() for r, f in ratings.items()},
                         index=pd.Index(expected, name=spec.id), dtype=float).rename_axis(columns="rater")
    table.attrs.update(not_yet_rated=waiting, sheets=used)
    if waiting:
        warnings.warn(f"{folder}: not yet rated, left out: {', '.join(waiting)}", UserWarning, stacklevel=2)
    return table
