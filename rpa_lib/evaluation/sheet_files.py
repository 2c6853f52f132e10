"""The files of a rating sheet: one rater's ``.xlsx`` workbook (Instructions, Ratings and a hidden "_meta" sheet
with the sample set and rater) and ``.csv`` file, written and read back as ``(row, id, {rating column: value})``
rows (:func:`load_sheet`), and the error a bad file raises (:class:`SheetError`). What goes in a sheet and its
validation are :mod:`rpa_lib.evaluation.sheets`'. openpyxl is imported where used.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from rpa_lib.errors import DataError

RATINGS_SHEET, INSTRUCTIONS_SHEET, META_SHEET = "Ratings", "Instructions", "_meta"
FORMAT = "rpa_lib annotation sheet v1"
DEFAULT_WIDTH = 12


def _row_height(spec, values: dict[str, str]) -> float:
    """Points for a row showing ``values`` (15 points a wrapped line, Excel's max 409)."""
    lines = 1
    for column in spec.wrapped:
        width = spec.widths.get(column, DEFAULT_WIDTH)
        lines = max(lines, sum(max(1, math.ceil(len(p) / width)) for p in values.get(column, "").split("\n")))
    return min(409.0, 15.0 * lines)


def write_workbook(path: Path, spec, rows: pd.DataFrame, rater: str, sample_set: str) -> None:
    """``rows`` (the spec's shown columns, as text) as one rater's workbook at ``path``."""
    from openpyxl import Workbook
    from openpyxl.styles import Alignment, Font
    from openpyxl.utils import get_column_letter
    from openpyxl.worksheet.datavalidation import DataValidation

    wb = Workbook()
    wrap, top = Alignment(wrap_text=True, vertical="top"), Alignment(vertical="top")
    guide = wb.active
    guide.title = INSTRUCTIONS_SHEET
    lines = [(spec.title, "", True), ("Rater", rater, False),
             ("Sample set", f"{sample_set} ({len(rows)} samples)", False), ("", "", False), *spec.guide]
    for i, (key, text, bold) in enumerate(lines, start=1):
        guide.cell(i, 1, key).font = Font(bold=True, size=14 if i == 1 else 11)
        cell = guide.cell(i, 2, text)
        cell.font = Font(bold=bold)
        cell.alignment = wrap
        guide.row_dimensions[i].height = 15.0 * max(1, math.ceil(len(text) / 95))
    guide.column_dimensions["A"].width = 16
    guide.column_dimensions["B"].width = 100
    ws = wb.create_sheet(RATINGS_SHEET)
    for j, column in enumerate(spec.columns, start=1):
        ws.cell(1, j, column).font = Font(bold=True)
        ws.column_dimensions[get_column_letter(j)].width = spec.widths.get(column, DEFAULT_WIDTH)
    for i, record in enumerate(rows.to_dict("records"), start=2):
        for j, column in enumerate(spec.columns, start=1):
            cell = ws.cell(i, j, record.get(column, "") or None)
            if cell.value is not None:
                cell.data_type = "s"  # text stays text, even when it starts with "="
            cell.alignment = wrap if column in spec.wrapped else top
        ws.row_dimensions[i].height = _row_height(spec, record)
    for column, (low, high) in spec.scales.items():
        letter = get_column_letter(spec.columns.index(column) + 1)
        dv = DataValidation(type="whole", operator="between", formula1=str(low), formula2=str(high), allow_blank=True,
                            showErrorMessage=True, errorTitle=column.capitalize(),
                            error=f"A {column} is a whole number from {low} to {high}.", showInputMessage=True,
                            promptTitle=column.capitalize(), prompt=spec.prompts.get(column, f"{low} to {high}"))
        dv.add(f"{letter}2:{letter}{len(rows) + 1}")
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


@dataclass(frozen=True)
class SheetProblem:
    """One problem of a sheet: its row (None: no single row), the value, what is wrong."""

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
        one = len(self.problems) == 1
        super().__init__(path, None, str(self.problems[0]) if one else (
            f"{len(self.problems)} problems:\n" + "\n".join(f"  {p}" for p in self.problems)))
        self.line = self.problems[0].row if one else None


def fail(path: Path, problem: str, row: int | None = None):
    raise SheetError(path, [SheetProblem(row, None, problem)])


def cell_text(value) -> str:
    """A cell's text ("" for None or NaN). ``cell_text(None) == ""``"""
    return "" if pd.isna(value) else str(value)


def write_csv(path: Path, spec, rows: pd.DataFrame, rater: str, sample_set: str) -> None:
    with path.open("w", encoding="utf-8-sig", newline="") as f:  # the BOM lets spreadsheet apps see UTF-8
        writer = csv.writer(f)
        writer.writerow((*spec.columns, "sample_set", "rater"))
        for record in rows.to_dict("records"):
            writer.writerow([record[c] for c in spec.shown] + [""] * len(spec.scales) + ["", sample_set, rater])


@dataclass
class LoadedSheet:
    """A sheet as read from its file, before validation."""

    path: Path
    sample_set: str
    rater: str
    rows: list[tuple[int, object, dict[str, object]]]  # (spreadsheet row, id, {rating column: value}) as stored

    @property
    def rated(self) -> bool:
        return any(not blank(v) for _, _, values in self.rows for v in values.values())


def blank(value) -> bool:
    """An empty cell (None, blank text or NaN). ``blank(" ")``"""
    return pd.isna(value) or (isinstance(value, str) and not value.strip())


def sheet_id(value) -> str:
    """An id as text (``7.0`` and ``"7"`` are ``"7"``)."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value).strip()


def parse_rating(value, column: str, low: int, high: int) -> tuple[int | None, str | None]:
    """``(rating, None)``, ``(None, None)`` for a blank cell, or ``(None, problem)``."""
    if blank(value):
        return None, None
    if isinstance(value, bool):
        return None, f"{column} is not a whole number from {low} to {high}"
    try:
        number = float(value)  # "4" and "4.0" are 4; "4.5" is no whole number
    except (TypeError, ValueError):
        return None, f"{column} is not a number"
    if not number.is_integer():
        return None, f"{column} is not a whole number"
    if not low <= number <= high:
        return None, f"{column} is outside {low}-{high}"
    return int(number), None


def _rows(table: list, path: Path, spec) -> list[tuple[int, object, dict[str, object]]]:
    """A table's rows (header first) as ``(row, id, {rating column: value})``, blank rows left out."""
    cols = {str(h).strip().lower(): j for j, h in enumerate(table[0]) if not blank(h)}
    missing = [c for c in (spec.id, *spec.scales) if c not in cols]
    if missing:
        fail(path, f"the header lacks the column(s) {missing}", 1)

    def get(row, name: str):
        j = cols[name]
        return row[j] if j < len(row) else None

    return [(i, get(r, spec.id), {c: get(r, c) for c in spec.scales}) for i, r in enumerate(table[1:], start=2)
            if not all(blank(v) for v in r)]


def _load_csv(path: Path, spec) -> LoadedSheet:
    try:
        with path.open(encoding="utf-8-sig", newline="") as f:
            table = list(csv.reader(f))
    except (UnicodeDecodeError, csv.Error) as exc:
        fail(path, f"cannot be read as UTF-8 CSV: {exc}")
    if not table:
        fail(path, "the file is empty")
    header = [h.strip().lower() for h in table[0]]
    missing = [c for c in ("sample_set", "rater") if c not in header]
    if missing:
        fail(path, f"the header lacks {missing}: not a sheet written by export_sheets", 1)
    found = {name: sorted({r[header.index(name)].strip() for r in table[1:] if header.index(name) < len(r)} - {""})
             for name in ("sample_set", "rater")}  # a blank row adds only ""
    problems = [SheetProblem(None, ", ".join(v), f"the {name} column holds several values")
                for name, v in found.items() if len(v) > 1]
    if problems:
        raise SheetError(path, problems)
    return LoadedSheet(path, (found["sample_set"] or [""])[0], (found["rater"] or [""])[0], _rows(table, path, spec))


def _load_xlsx(path: Path, spec) -> LoadedSheet:
    """A workbook written by :func:`write_workbook`: its "_meta" sheet's sample set and rater, its "Ratings" rows."""
    from openpyxl import load_workbook

    try:
        wb = load_workbook(path, read_only=True, data_only=True)
    except Exception as exc:  # noqa: BLE001  (a corrupt or foreign file: openpyxl raises many kinds)
        raise SheetError(path, [SheetProblem(None, None, f"cannot be read as a workbook: {exc}")]) from None
    try:
        if META_SHEET not in wb.sheetnames or RATINGS_SHEET not in wb.sheetnames:
            fail(path, f"no '{RATINGS_SHEET}' or '{META_SHEET}' sheet: not a sheet written by export_sheets")
        meta = {str(k).strip(): v for k, v, *_ in wb[META_SHEET].iter_rows(values_only=True) if k is not None}
        table = list(wb[RATINGS_SHEET].iter_rows(values_only=True))
    finally:
        wb.close()
    if not table:
        fail(path, f"the '{RATINGS_SHEET}' sheet is empty")
    return LoadedSheet(path, cell_text(meta.get("sample_set")).strip(), cell_text(meta.get("rater")).strip(),
                       _rows(table, path, spec))


def load_sheet(path: Path, sample_set: str, spec) -> LoadedSheet:
    """The sheet at ``path`` (.xlsx or .csv), checked to be one written for ``sample_set``, with a rater."""
    path = Path(path)
    load = {".xlsx": _load_xlsx, ".csv": _load_csv}.get(path.suffix.lower())
    if load is None:
        fail(path, "a sheet is a .xlsx or .csv file")
    sheet = load(path, spec)
    if not sheet.sample_set:
        fail(path, "no sample set recorded: not a sheet written by export_sheets")
    if sheet.sample_set != str(sample_set).strip():
        fail(path, f"the sheet is for sample set {sheet.sample_set!r}, not {sample_set!r}")
    if not sheet.rater:
        fail(path, "no rater recorded")
    return sheet
