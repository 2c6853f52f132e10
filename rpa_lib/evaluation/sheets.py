"""Human annotation sheets for AMADEUS Table 2: export one workbook per rater, read the filled ones back, merge.

The raters judge whether it is reasonable to infer the Attribute Extractor's attributes of a character from
the chunks Guided Selection picked, for a question, on a 1-5 scale.

- :func:`export_sheets` writes ``<rater>.xlsx`` (an "Instructions" sheet, a "Ratings" sheet whose rating column
  only takes whole numbers 1-5, and a hidden "_meta" sheet recording the sample set and the rater) and the same
  rows as ``<rater>.csv`` (with ``sample_set`` and ``rater`` columns, CSV having no other place for them).
- :func:`read_sheet` reads one filled sheet (.xlsx or .csv) back and validates it: one row per expected sample,
  each rating a whole number 1-5. Every problem of a sheet is reported at once in one :class:`SheetError`,
  naming the file, the row (as a spreadsheet shows it: the header is row 1) and the value.
- :func:`merge_sheets` reads a folder of sheets into the wide table (samples x raters) that
  :func:`rpa_lib.evaluation.metrics.cronbach_alpha` takes; sheets with no rating yet are skipped and reported.

This module writes files only in :func:`export_sheets`, and never over an existing sheet unless asked: a
filled sheet is the only copy of a rater's work. It does not choose samples, compute agreement or contact
raters. Sample ids are compared as text (``7`` and ``"7"`` are the same id).
"""

from __future__ import annotations

import csv
import math
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from rpa_lib.errors import DataError

SAMPLE_COLUMNS = ("sample_id", "task", "character", "question", "chunks", "attributes")
RATING_COLUMNS = (*SAMPLE_COLUMNS, "rating", "comment")
CSV_COLUMNS = (*RATING_COLUMNS, "sample_set", "rater")
TASKS = ("MBTI", "BFI")
FORMAT = "rpa_lib annotation sheet v1"
RATINGS_SHEET, INSTRUCTIONS_SHEET, META_SHEET = "Ratings", "Instructions", "_meta"
MAX_CELL = 32_767  # Excel's limit on the characters of one cell

QUESTION = "Is it reasonable to infer these attributes of the character from these chunks, for this question?"
SCALE = {
    1: "Not reasonable. The chunks do not support these attributes at all, or they point the other way.",
    2: "Hardly reasonable. The chunks touch the topic, but the attributes go well beyond what they show.",
    3: "Partly reasonable. Some attributes follow from the chunks; others are guesses or overstated.",
    4: "Mostly reasonable. The attributes follow from the chunks, with a small leap or a detail they do not show.",
    5: "Fully reasonable. Every attribute is clearly supported by the chunks, and they fit the question.",
}
WIDTHS = {"sample_id": 14, "task": 8, "character": 18, "question": 40, "chunks": 90, "attributes": 50,
          "rating": 9, "comment": 40}
WRAPPED = ("question", "chunks", "attributes", "comment")


@dataclass(frozen=True)
class SheetProblem:
    """One problem of a sheet: its row (None when it concerns no single row), the value, what is wrong."""

    row: int | None
    value: object
    problem: str

    def __str__(self) -> str:
        where = f"row {self.row}: " if self.row else ""
        return f"{where}{self.problem}" + ("" if self.value is None else f" (value {self.value!r})")


class SheetError(DataError):
    """A filled sheet that cannot be used: ``<file>: <problems>``; ``problems`` lists each :class:`SheetProblem`."""

    def __init__(self, path: Path | str, problems: list[SheetProblem]):
        self.problems = list(problems)
        text = str(self.problems[0]) if len(self.problems) == 1 else (
            f"{len(self.problems)} problems:\n" + "\n".join(f"  {p}" for p in self.problems))
        first = self.problems[0].row if len(self.problems) == 1 else None
        super().__init__(path, None, text)
        self.line = first


# ---- export ----------------------------------------------------------------------------------------------------


def _text(value) -> str:
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)


def _check_samples(samples: pd.DataFrame) -> pd.DataFrame:
    missing = [c for c in SAMPLE_COLUMNS if c not in samples.columns]
    if missing:
        raise ValueError(f"samples need the columns {list(SAMPLE_COLUMNS)}; missing {missing}")
    if samples.empty:
        raise ValueError("no samples to export")
    rows = samples.loc[:, list(SAMPLE_COLUMNS)].map(_text)
    rows["sample_id"] = rows["sample_id"].str.strip()
    if (rows.sample_id == "").any():
        raise ValueError("every sample needs a sample_id")
    dup = sorted(set(rows.sample_id[rows.sample_id.duplicated()]))
    if dup:
        raise ValueError(f"duplicated sample_id(s): {', '.join(dup)}")
    bad_task = sorted(set(rows.task) - set(TASKS))
    if bad_task:
        raise ValueError(f"task must be one of {TASKS}, got {bad_task}")
    from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE

    for column in SAMPLE_COLUMNS:
        for sid, text in zip(rows.sample_id, rows[column]):
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


def _instructions(ws, rater: str, sample_set: str, n: int) -> None:
    from openpyxl.styles import Alignment, Font

    lines: list[tuple[str, str, bool]] = [
        ("Human evaluation: is the character inferred reasonably?", "", True),
        ("Rater", rater, False),
        ("Sample set", f"{sample_set} ({n} samples)", False),
        ("", "", False),
        ("What you see", "Each row of the Ratings sheet holds a question put to a character, the chunks (passages "
                         "of the character's persona document picked for that question) and the attributes (what "
                         "was inferred about the character from those chunks).", False),
        ("What to rate", QUESTION, True),
        ("", "Judge only what the chunks say, not what you know of the character from elsewhere.", False),
        ("", "", False),
        ("Scale", "", True),
        *[(str(k), v, False) for k, v in SCALE.items()],
        ("", "", False),
        ("How to fill", "Type a whole number from 1 to 5 in the rating column of every row; the comment column is "
                        "optional. Do not edit the other columns, rename the sheets or rename this file. Fill in "
                        "one copy only, this workbook or the .csv beside it, and save it in its own format (the "
                        ".csv as CSV in UTF-8).", False),
    ]
    for i, (key, text, bold) in enumerate(lines, start=1):
        ws.cell(i, 1, key).font = Font(bold=True, size=14 if i == 1 else 11)
        cell = ws.cell(i, 2, text)
        cell.font = Font(bold=bold)
        cell.alignment = Alignment(wrap_text=True, vertical="top")
        ws.row_dimensions[i].height = 15.0 * max(1, math.ceil(len(text) / 95))
    ws.column_dimensions["A"].width = 16
    ws.column_dimensions["B"].width = 100


def _row_height(values: dict[str, str]) -> float:
    """Points for a row whose wrapped cells show ``values`` at :data:`WIDTHS` (15 points a line, Excel's max 409)."""
    lines = 1
    for column in WRAPPED:
        width = WIDTHS[column]
        lines = max(lines, sum(max(1, math.ceil(len(p) / width)) for p in values.get(column, "").split("\n")))
    return min(409.0, 15.0 * lines)


def _write_xlsx(path: Path, rows: pd.DataFrame, rater: str, sample_set: str) -> None:
    from openpyxl import Workbook
    from openpyxl.styles import Alignment, Font
    from openpyxl.utils import get_column_letter
    from openpyxl.worksheet.datavalidation import DataValidation

    wb = Workbook()
    _instructions(wb.active, rater, sample_set, len(rows))
    wb.active.title = INSTRUCTIONS_SHEET
    ws = wb.create_sheet(RATINGS_SHEET)
    for j, column in enumerate(RATING_COLUMNS, start=1):
        ws.cell(1, j, column).font = Font(bold=True)
        ws.column_dimensions[get_column_letter(j)].width = WIDTHS[column]
    wrap, top = Alignment(wrap_text=True, vertical="top"), Alignment(vertical="top")
    for i, record in enumerate(rows.to_dict("records"), start=2):
        for j, column in enumerate(RATING_COLUMNS, start=1):
            cell = ws.cell(i, j, record.get(column, "") or None)
            if cell.value is not None:
                cell.data_type = "s"  # text stays text, even when it starts with "="
            cell.alignment = wrap if column in WRAPPED else top
        ws.row_dimensions[i].height = _row_height(record)
    rating_col = get_column_letter(RATING_COLUMNS.index("rating") + 1)
    dv = DataValidation(type="whole", operator="between", formula1="1", formula2="5", allow_blank=True,
                        showErrorMessage=True, errorTitle="Rating", error="A rating is a whole number from 1 to 5.",
                        showInputMessage=True, promptTitle="Rating", prompt="1 (not reasonable) to 5 (fully reasonable)")
    dv.add(f"{rating_col}2:{rating_col}{len(rows) + 1}")
    ws.add_data_validation(dv)
    ws.freeze_panes = "A2"
    meta = wb.create_sheet(META_SHEET)
    for i, (key, value) in enumerate([("format", FORMAT), ("sample_set", sample_set), ("rater", rater),
                                      ("samples", len(rows))], start=1):
        meta.cell(i, 1, key)
        meta.cell(i, 2, value).data_type = "s" if isinstance(value, str) else "n"
    meta.sheet_state = "hidden"
    wb.properties.title = f"Annotation sheet: {sample_set}, {rater}"
    wb.properties.creator = "rpa_lib"
    wb.active = 0
    wb.save(path)


def _write_csv(path: Path, rows: pd.DataFrame, rater: str, sample_set: str) -> None:
    with path.open("w", encoding="utf-8-sig", newline="") as f:  # the BOM lets spreadsheet apps see UTF-8
        writer = csv.writer(f)
        writer.writerow(CSV_COLUMNS)
        for record in rows.to_dict("records"):
            writer.writerow([record[c] for c in SAMPLE_COLUMNS] + ["", "", sample_set, rater])


def export_sheets(samples: pd.DataFrame, raters: list[str], folder: Path | str, *, sample_set: str,
                  overwrite: bool = False) -> list[Path]:
    """Write ``<rater>.xlsx`` and ``<rater>.csv`` for every rater into ``folder`` (created if needed).

    ``samples`` has the columns sample_id, task ("MBTI" or "BFI"), character, question, chunks and attributes;
    rows keep their order. An existing sheet is never replaced unless ``overwrite=True`` (it may hold ratings).
    Returns the paths written.
    """
    if not str(sample_set).strip():
        raise ValueError("sample_set is the id of this set of samples, e.g. 'table2-v1'")
    sample_set = str(sample_set).strip()
    rows = _check_samples(samples)
    names = _check_raters(raters)
    folder = Path(folder)
    targets = [(name, folder / f"{name}.xlsx", folder / f"{name}.csv") for name in names]
    existing = [str(p) for _, *paths in targets for p in paths if p.exists()]
    if existing and not overwrite:
        raise FileExistsError(f"sheets exist and may hold ratings: {', '.join(existing)} (overwrite=True replaces)")
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, xlsx, csv_path in targets:
        _write_xlsx(xlsx, rows, name, sample_set)
        _write_csv(csv_path, rows, name, sample_set)
        written += [xlsx, csv_path]
    return written


# ---- read ------------------------------------------------------------------------------------------------------


@dataclass
class _Sheet:
    path: Path
    sample_set: str
    rater: str
    rows: list[tuple[int, object, object]]  # (spreadsheet row, sample id, rating) as stored

    @property
    def rated(self) -> bool:
        return any(not _blank(rating) for _, _, rating in self.rows)


def _blank(value) -> bool:
    return value is None or (isinstance(value, str) and not value.strip()) or (
        isinstance(value, float) and math.isnan(value))


def _sample_id(value) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value).strip()


def _parse_rating(value) -> tuple[int | None, str | None]:
    """``(rating, None)``, ``(None, None)`` for a blank cell, or ``(None, problem)``."""
    if _blank(value):
        return None, None
    if isinstance(value, bool):
        return None, "rating is not a whole number from 1 to 5"
    if isinstance(value, str):
        text = value.strip()
        try:
            value = int(text)
        except ValueError:
            try:
                value = float(text)
            except ValueError:
                return None, "rating is not a number"
    if isinstance(value, float):
        if not value.is_integer():
            return None, "rating is not a whole number"
        value = int(value)
    if not isinstance(value, int):
        return None, "rating is not a number"
    if not 1 <= value <= 5:
        return None, "rating is outside 1-5"
    return value, None


def _columns(header: list, path: Path) -> dict[str, int]:
    index = {str(h).strip().lower(): j for j, h in enumerate(header) if not _blank(h)}
    missing = [c for c in ("sample_id", "rating") if c not in index]
    if missing:
        raise SheetError(path, [SheetProblem(1, None, f"the header lacks the column(s) {missing}")])
    return index


def _load_xlsx(path: Path) -> _Sheet:
    from openpyxl import load_workbook

    try:
        wb = load_workbook(path, read_only=True, data_only=True)
    except Exception as exc:  # a corrupt or foreign file: openpyxl raises many kinds
        raise SheetError(path, [SheetProblem(None, None, f"cannot be read as a workbook: {exc}")]) from None
    try:
        if META_SHEET not in wb.sheetnames or RATINGS_SHEET not in wb.sheetnames:
            raise SheetError(path, [SheetProblem(None, None, f"no '{RATINGS_SHEET}' or '{META_SHEET}' sheet: not a "
                                                             "sheet written by export_sheets")])
        meta = {str(k).strip(): v for k, v, *_ in wb[META_SHEET].iter_rows(values_only=True) if k is not None}
        table = list(wb[RATINGS_SHEET].iter_rows(values_only=True))
    finally:
        wb.close()
    if not table:
        raise SheetError(path, [SheetProblem(None, None, f"the '{RATINGS_SHEET}' sheet is empty")])
    cols = _columns(list(table[0]), path)

    def get(row: tuple, name: str):
        j = cols[name]
        return row[j] if j < len(row) else None

    rows = [(i, get(r, "sample_id"), get(r, "rating")) for i, r in enumerate(table[1:], start=2)
            if not all(_blank(v) for v in r)]
    return _Sheet(path, _text(meta.get("sample_set")).strip(), _text(meta.get("rater")).strip(), rows)


def _load_csv(path: Path) -> _Sheet:
    try:
        with path.open(encoding="utf-8-sig", newline="") as f:
            table = list(csv.reader(f))
    except (UnicodeDecodeError, csv.Error) as exc:
        raise SheetError(path, [SheetProblem(None, None, f"cannot be read as UTF-8 CSV: {exc}")]) from None
    if not table:
        raise SheetError(path, [SheetProblem(None, None, "the file is empty")])
    cols = _columns(table[0], path)
    missing = [c for c in ("sample_set", "rater") if c not in cols]
    if missing:
        raise SheetError(path, [SheetProblem(1, None, f"the header lacks {missing}: not a sheet written by "
                                                      "export_sheets")])

    def get(row: list, name: str):
        j = cols[name]
        return row[j] if j < len(row) else None

    body = [(i, r) for i, r in enumerate(table[1:], start=2) if not all(_blank(v) for v in r)]
    found = {name: sorted({_text(get(r, name)).strip() for _, r in body} - {""}) for name in ("sample_set", "rater")}
    problems = [SheetProblem(None, ", ".join(v), f"the {name} column holds several values")
                for name, v in found.items() if len(v) > 1]
    if problems:
        raise SheetError(path, problems)
    return _Sheet(path, (found["sample_set"] or [""])[0], (found["rater"] or [""])[0],
                  [(i, get(r, "sample_id"), get(r, "rating")) for i, r in body])


def _load(path: Path, sample_set: str) -> _Sheet:
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".xlsx", ".csv"):
        raise SheetError(path, [SheetProblem(None, None, "a sheet is a .xlsx or .csv file")])
    sheet = _load_xlsx(path) if suffix == ".xlsx" else _load_csv(path)
    if not sheet.sample_set:
        raise SheetError(path, [SheetProblem(None, None, "no sample set recorded: not a sheet written by "
                                                         "export_sheets")])
    if sheet.sample_set != str(sample_set).strip():
        raise SheetError(path, [SheetProblem(None, None,
                                             f"the sheet is for sample set {sheet.sample_set!r}, not {sample_set!r}")])
    if not sheet.rater:
        raise SheetError(path, [SheetProblem(None, None, "no rater recorded")])
    return sheet


def _expected(expected_ids: Iterable) -> list[str]:
    ids = [_sample_id(i) for i in expected_ids]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise ValueError(f"expected_ids has duplicates: {dup}")
    if not ids:
        raise ValueError("expected_ids is empty")
    return ids


def _validate(sheet: _Sheet, expected: list[str], allow_missing: bool) -> pd.DataFrame:
    problems: list[SheetProblem] = []
    wanted, seen, ratings = set(expected), {}, {}
    for row, raw_id, raw_rating in sheet.rows:
        if _blank(raw_id):
            problems.append(SheetProblem(row, None, "sample_id is empty"))
            continue
        sid = _sample_id(raw_id)
        if sid in seen:
            problems.append(SheetProblem(row, sid, f"sample_id duplicated (first in row {seen[sid]})"))
            continue
        seen[sid] = row
        if sid not in wanted:
            problems.append(SheetProblem(row, sid, "sample_id is not one of the expected samples"))
            continue
        rating, problem = _parse_rating(raw_rating)
        if problem:
            problems.append(SheetProblem(row, raw_rating, problem))
        elif rating is None and not allow_missing:
            problems.append(SheetProblem(row, None, f"rating of sample {sid} is empty (allow_missing=True accepts "
                                                    "it as NaN)"))
        ratings[sid] = float("nan") if rating is None else float(rating)
    absent = [i for i in expected if i not in seen]
    if absent:
        problems.append(SheetProblem(None, None, f"{len(absent)} expected sample(s) missing: {', '.join(absent)}"))
    if problems:
        raise SheetError(sheet.path, problems)
    return pd.DataFrame({"sample_id": expected, "rater": sheet.rater, "rating": [ratings[i] for i in expected]})


def read_sheet(path: Path | str, *, expected_ids: Iterable, sample_set: str,
               allow_missing: bool = False) -> pd.DataFrame:
    """One filled sheet (.xlsx or .csv) as a DataFrame (sample_id, rater, rating), in ``expected_ids`` order.

    A :class:`SheetError` lists every problem: a sheet for another sample set, a rating outside 1-5 or not a
    whole number, an empty rating (unless ``allow_missing``, which gives NaN), a duplicated, foreign or missing
    sample id. Rows may be reordered and columns moved; they are found by their header.
    """
    return _validate(_load(Path(path), sample_set), _expected(expected_ids), allow_missing)


def merge_sheets(folder: Path | str, *, expected_ids: Iterable, sample_set: str,
                 allow_missing: bool = False) -> pd.DataFrame:
    """Every rated sheet of ``folder`` as one table: rows sample_id (in ``expected_ids`` order), columns raters.

    A rater's .xlsx and .csv are two copies of one sheet: the one that holds ratings is read. A rater whose
    sheets hold no rating at all has not rated yet: left out with a warning and listed in
    ``table.attrs["not_yet_rated"]``; ``table.attrs["sheets"]`` maps each rater to the file read. Two rated
    copies of one rater's sheet, or any invalid sheet, are a :class:`SheetError`. Office lock files (``~$...``)
    and hidden files (``.name``) are ignored.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"no sheet folder {folder}")
    expected = _expected(expected_ids)
    files = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in (".xlsx", ".csv")
                   and not p.name.startswith(("~$", ".")))
    by_rater: dict[str, list[_Sheet]] = {}
    for path in files:
        sheet = _load(path, sample_set)
        by_rater.setdefault(sheet.rater, []).append(sheet)
    columns, used, waiting = {}, {}, []
    for rater in sorted(by_rater):
        rated = [s for s in by_rater[rater] if s.rated]
        if not rated:
            waiting.append(rater)
            continue
        if len(rated) > 1:
            names = ", ".join(s.path.name for s in rated)
            raise SheetError(rated[1].path, [SheetProblem(None, None, f"rater {rater!r} has {len(rated)} rated "
                                                                      f"sheets ({names}); keep one")])
        ratings = _validate(rated[0], expected, allow_missing)
        columns[rater] = ratings["rating"].to_numpy()
        used[rater] = rated[0].path.name
    table = pd.DataFrame(columns, index=pd.Index(expected, name="sample_id"), dtype=float)
    table.columns.name = "rater"
    table.attrs["not_yet_rated"] = waiting
    table.attrs["sheets"] = used
    if waiting:
        warnings.warn(f"{folder}: not yet rated, left out: {', '.join(waiting)}", UserWarning, stacklevel=2)
    return table
