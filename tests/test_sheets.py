"""Annotation sheets (rpa_lib.evaluation.sheets): export, fill programmatically, read back, merge; malformed sheets."""

from __future__ import annotations

import csv
import math

import openpyxl
import pandas as pd
import pytest

from rpa_lib.errors import DataError
from rpa_lib.evaluation.metrics import cronbach_alpha
from rpa_lib.evaluation.sheets import (
    QUESTION,
    SCALE,
    SheetError,
    export_sheets,
    merge_sheets,
    read_sheet,
)

SET = "table2-test"
IDS = ["s01", "s02", "s03", "s04"]


@pytest.fixture
def samples() -> pd.DataFrame:
    return pd.DataFrame({
        "sample_id": IDS,
        "task": ["MBTI", "MBTI", "BFI", "BFI"],
        "character": ["Frieren", "Frieren", "Hitori Gotoh", "Hitori Gotoh"],
        "question": ["Do you prefer to plan ahead?", "=Do you enjoy parties?", "Are you anxious?", "Are you kind?"],
        "chunks": ["[1] Frieren spends decades collecting spells.\n[2] She travels slowly.", "[1] She avoids crowds.",
                   "[1] Bocchi hides in a box.", "[1] She helps her band."],
        "attributes": ["Patient; curious", "Introverted", "Anxious", "Caring"],
    })


@pytest.fixture
def folder(tmp_path, samples):
    export_sheets(samples, ["alice", "bob", "carol"], tmp_path / "sheets", sample_set=SET)
    return tmp_path / "sheets"


def fill_xlsx(path, ratings: dict, *, ids: dict | None = None):
    """Type ``ratings`` ({sample id: value}) into the rating column; ``ids`` ({old id: new id}) edits ids."""
    wb = openpyxl.load_workbook(path)
    ws = wb["Ratings"]
    header = [c.value for c in ws[1]]
    id_col, rating_col = header.index("sample_id") + 1, header.index("rating") + 1
    for row in range(2, ws.max_row + 1):
        sid = ws.cell(row, id_col).value
        if sid in ratings:
            ws.cell(row, rating_col).value = ratings[sid]
        if ids and sid in ids:
            ws.cell(row, id_col).value = ids[sid]
    wb.save(path)


def fill_csv(path, ratings: dict):
    with open(path, encoding="utf-8-sig", newline="") as f:
        rows = list(csv.DictReader(f))
    for row in rows:
        row["rating"] = ratings.get(row["sample_id"], row["rating"])
    with open(path, "w", encoding="utf-8-sig", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


# ---- export ----------------------------------------------------------------------------------------------------


def test_export_writes_a_workbook_and_a_csv_per_rater(folder):
    assert sorted(p.name for p in folder.iterdir()) == ["alice.csv", "alice.xlsx", "bob.csv", "bob.xlsx",
                                                        "carol.csv", "carol.xlsx"]
    wb = openpyxl.load_workbook(folder / "alice.xlsx")
    assert wb.sheetnames == ["Instructions", "Ratings", "_meta"]
    assert wb.active.title == "Instructions"
    assert wb["_meta"].sheet_state == "hidden"
    meta = {row[0]: row[1] for row in wb["_meta"].iter_rows(values_only=True)}
    assert meta["sample_set"] == SET and meta["rater"] == "alice"

    instructions = "\n".join(str(v) for row in wb["Instructions"].iter_rows(values_only=True) for v in row if v)
    assert QUESTION in instructions and all(anchor in instructions for anchor in SCALE.values())

    ws = wb["Ratings"]
    assert [c.value for c in ws[1]] == ["sample_id", "task", "character", "question", "chunks", "attributes",
                                        "rating", "comment"]
    assert [ws.cell(r, 1).value for r in range(2, 6)] == IDS
    assert ws["D3"].value == "=Do you enjoy parties?" and ws["D3"].data_type == "s"  # text, not a formula
    assert ws["E2"].alignment.wrap_text and ws.column_dimensions["E"].width >= 60
    assert ws.freeze_panes == "A2"
    (dv,) = ws.data_validations.dataValidation
    assert (dv.type, dv.operator, dv.formula1, dv.formula2) == ("whole", "between", "1", "5")
    assert str(dv.sqref) == "G2:G5"

    with open(folder / "alice.csv", encoding="utf-8-sig", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["sample_id"] for r in rows] == IDS
    assert rows[0]["chunks"].count("\n") == 1 and {r["sample_set"] for r in rows} == {SET}


def test_export_never_overwrites_unless_asked(folder, samples):
    fill_xlsx(folder / "alice.xlsx", {"s01": 5})
    with pytest.raises(FileExistsError, match="may hold ratings"):
        export_sheets(samples, ["alice"], folder, sample_set=SET)
    export_sheets(samples, ["alice"], folder, sample_set=SET, overwrite=True)
    assert read_sheet(folder / "alice.xlsx", expected_ids=IDS, sample_set=SET, allow_missing=True).rating.isna().all()


@pytest.mark.parametrize("change, message", [
    (lambda s: s.drop(columns="chunks"), "missing \\['chunks'\\]"),
    (lambda s: s.assign(task=["MBTI", "ENFP", "BFI", "BFI"]), "task must be one of"),
    (lambda s: s.assign(sample_id=["a", "a", "b", "c"]), "duplicated sample_id"),
    (lambda s: s.assign(chunks=["x\x07", "y", "z", "w"]), "control character"),
    (lambda s: s.iloc[:0], "no samples"),
])
def test_export_rejects_bad_samples(tmp_path, samples, change, message):
    with pytest.raises(ValueError, match=message):
        export_sheets(change(samples), ["alice"], tmp_path, sample_set=SET)


@pytest.mark.parametrize("raters", [[], ["a/b"], ["..", "x"], ["Ann", "ann"], "alice"])
def test_export_rejects_bad_rater_names(tmp_path, samples, raters):
    with pytest.raises(ValueError):
        export_sheets(samples, raters, tmp_path, sample_set=SET)


# ---- round trip ------------------------------------------------------------------------------------------------


def test_round_trip(folder):
    fill_xlsx(folder / "alice.xlsx", {"s01": 5, "s02": 4, "s03": 3, "s04": 4})
    fill_csv(folder / "bob.csv", {"s01": "4", "s02": "4", "s03": "2", "s04": "5"})  # carol: not yet rated

    alice = read_sheet(folder / "alice.xlsx", expected_ids=IDS, sample_set=SET)
    assert alice.to_dict("list") == {"sample_id": IDS, "rater": ["alice"] * 4, "rating": [5.0, 4.0, 3.0, 4.0]}
    bob = read_sheet(folder / "bob.csv", expected_ids=IDS, sample_set=SET)
    assert bob.rating.tolist() == [4.0, 4.0, 2.0, 5.0]

    with pytest.warns(UserWarning, match="not yet rated, left out: carol"):
        table = merge_sheets(folder, expected_ids=IDS, sample_set=SET)
    assert table.index.tolist() == IDS and table.columns.tolist() == ["alice", "bob"]
    assert table["alice"].tolist() == [5, 4, 3, 4] and table["bob"].tolist() == [4, 4, 2, 5]
    assert table.attrs["not_yet_rated"] == ["carol"]
    assert table.attrs["sheets"] == {"alice": "alice.xlsx", "bob": "bob.csv"}
    alpha, _ = cronbach_alpha(table)
    assert alpha == pytest.approx(cronbach_alpha(table.to_numpy())[0])


def test_reordered_rows_and_allowed_missing(folder, tmp_path):
    fill_xlsx(folder / "alice.xlsx", {"s01": 5, "s02": 4.0, "s03": None, "s04": " 2 "})
    wb = openpyxl.load_workbook(folder / "alice.xlsx")
    wb["Ratings"].move_range("A2:H2", rows=10)  # the first sample moved to the bottom, leaving an empty row
    wb.save(folder / "alice.xlsx")
    ratings = read_sheet(folder / "alice.xlsx", expected_ids=IDS, sample_set=SET, allow_missing=True)
    assert ratings.sample_id.tolist() == IDS
    assert ratings.rating.tolist()[:2] == [5.0, 4.0] and math.isnan(ratings.rating[2]) and ratings.rating[3] == 2.0


def test_merge_with_no_rated_sheet_is_empty(folder):
    with pytest.warns(UserWarning, match="alice, bob, carol"):
        table = merge_sheets(folder, expected_ids=IDS, sample_set=SET)
    assert table.shape == (4, 0)


# ---- malformed sheets ------------------------------------------------------------------------------------------

FULL = {"s01": 5, "s02": 4, "s03": 3, "s04": 4}


def read(folder, name="alice.xlsx", **kw):
    return read_sheet(folder / name, expected_ids=kw.pop("expected_ids", IDS), sample_set=kw.pop("sample_set", SET),
                      **kw)


@pytest.mark.parametrize("value, problem", [
    (7, "outside 1-5"), (0, "outside 1-5"), (4.5, "not a whole number"), ("good", "not a number"),
    ("3.5", "not a whole number"), (True, "not a whole number"),
])
def test_bad_rating_names_file_row_and_value(folder, value, problem):
    fill_xlsx(folder / "alice.xlsx", {**FULL, "s03": value})
    with pytest.raises(SheetError, match=problem) as err:
        read(folder)
    message = str(err.value)
    assert "alice.xlsx" in message and "row 4" in message and repr(value) in message
    assert err.value.problems[0].row == 4 and err.value.line == 4
    assert isinstance(err.value, DataError) and isinstance(err.value, ValueError)


def test_bad_rating_in_csv(folder):
    fill_csv(folder / "bob.csv", {**{k: str(v) for k, v in FULL.items()}, "s02": "6"})
    with pytest.raises(SheetError, match=r"bob\.csv: row 3: rating is outside 1-5 \(value '6'\)"):
        read(folder, "bob.csv")


def test_empty_rating_needs_allow_missing(folder):
    fill_xlsx(folder / "alice.xlsx", {**FULL, "s02": None})
    with pytest.raises(SheetError, match="row 3: rating of sample s02 is empty"):
        read(folder)
    assert math.isnan(read(folder, allow_missing=True).rating[1])


def test_duplicated_sample_id(folder):
    fill_xlsx(folder / "alice.xlsx", FULL, ids={"s02": "s01"})
    with pytest.raises(SheetError, match=r"row 3: sample_id duplicated \(first in row 2\) \(value 's01'\)"):
        read(folder)


def test_foreign_sample_id(folder):
    fill_xlsx(folder / "alice.xlsx", FULL, ids={"s04": "s99"})
    with pytest.raises(SheetError) as err:
        read(folder)
    text = str(err.value)
    assert "2 problems" in text
    assert "row 5: sample_id is not one of the expected samples (value 's99')" in text
    assert "1 expected sample(s) missing: s04" in text


def test_missing_sample(folder):
    fill_xlsx(folder / "alice.xlsx", FULL)
    with pytest.raises(SheetError, match="1 expected sample\\(s\\) missing: s05"):
        read(folder, expected_ids=[*IDS, "s05"])


def test_sheet_for_another_sample_set(folder):
    fill_xlsx(folder / "alice.xlsx", FULL)
    with pytest.raises(SheetError, match="alice.xlsx: the sheet is for sample set 'table2-test', not 'other'"):
        read(folder, sample_set="other")
    with pytest.raises(SheetError, match="not 'other'"):
        merge_sheets(folder, expected_ids=IDS, sample_set="other")


def test_foreign_files(tmp_path, folder):
    wb = openpyxl.Workbook()
    wb.save(tmp_path / "plain.xlsx")
    with pytest.raises(SheetError, match="not a sheet written by export_sheets"):
        read_sheet(tmp_path / "plain.xlsx", expected_ids=IDS, sample_set=SET)
    (tmp_path / "notes.txt").write_text("hi")
    with pytest.raises(SheetError, match=".xlsx or .csv"):
        read_sheet(tmp_path / "notes.txt", expected_ids=IDS, sample_set=SET)
    (tmp_path / "broken.xlsx").write_bytes(b"not a zip")
    with pytest.raises(SheetError, match="cannot be read as a workbook"):
        read_sheet(tmp_path / "broken.xlsx", expected_ids=IDS, sample_set=SET)
    (tmp_path / "bare.csv").write_text("sample_id,rating\ns01,4\n")
    with pytest.raises(SheetError, match="not a sheet written by export_sheets"):
        read_sheet(tmp_path / "bare.csv", expected_ids=IDS, sample_set=SET)


def test_two_rated_copies_of_one_sheet(folder):
    fill_xlsx(folder / "alice.xlsx", FULL)
    fill_csv(folder / "alice.csv", {k: str(v) for k, v in FULL.items()})
    with pytest.raises(SheetError, match="rater 'alice' has 2 rated sheets \\(alice.csv, alice.xlsx\\); keep one"):
        merge_sheets(folder, expected_ids=IDS, sample_set=SET)


def test_merge_reports_a_bad_sheet_and_ignores_lock_files(folder):
    fill_xlsx(folder / "alice.xlsx", FULL)
    (folder / "~$alice.xlsx").write_bytes(b"lock")
    fill_xlsx(folder / "bob.xlsx", {**FULL, "s01": 9})
    with pytest.raises(SheetError, match="bob.xlsx: row 2: rating is outside 1-5"):
        merge_sheets(folder, expected_ids=IDS, sample_set=SET)
