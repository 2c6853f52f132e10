"""Read one data file (``qa.jsonl``, ``labels.csv``, ``grounding_reviewed.csv``, a questionnaire) and return what
could be read with every problem as ``(line, message)``. Readers know file formats, not the dataset's layout."""

from __future__ import annotations

import csv
import json
import re
from collections import Counter
from pathlib import Path

from rpa_lib.data.records import QA, QA_SETS, Dimension, Item, Questionnaire
from rpa_lib.errors import DataError
from rpa_lib.persona import ATTRIBUTES, read_text

QUESTIONNAIRE_ITEMS = {"mbti": (60, 15), "bigfive": (120, 24)}  # name -> (items, items per dimension)
QA_FIELDS = ("id", "question", "answer", "attribute", "evidence", "set")  # a qa.jsonl line's; "set" optional
TYPE_PATTERNS = {"mbti": re.compile(r"^[EI][SN][TF][JP]$"), "sloan": re.compile(r"^[SR][LC][OU][AE][IN]$")}
LABEL_COLUMNS = ["slug", "name", "work", "mbti", "sloan"]
REVIEWED_COLUMNS = ["id", "word", "reason"]
Problems = list[tuple[int | None, str]]


def first_problem(path: Path, problems: Problems) -> None:
    if problems:
        raise DataError(path, problems[0][0], problems[0][1])


def read_qa(path: Path) -> tuple[list[QA], Problems]:
    """The QA pairs (each with its ``line``) and every problem; an absent ``set`` field means ``"paper"``."""
    problems: Problems = []
    try:
        text = read_text(path)
    except DataError as e:
        return [], [(e.line, e.problem)]
    items, seen = [], {}
    for lineno, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            problems.append((lineno, f"not valid JSON ({e.msg})"))
            continue
        if not isinstance(obj, dict):
            problems.append((lineno, "not a JSON object"))
            continue
        missing = [k for k in QA_FIELDS[:5] if k not in obj]
        if missing:
            problems.append((lineno, f"missing field(s): {', '.join(missing)}"))
            continue
        found = []  # this line's problems: a pair with any is reported and left out, so no caller meets bad fields
        if unknown := [k for k in obj if k not in QA_FIELDS]:  # "sett": the pair would quietly count in the paper set
            found.append(f"unknown field(s) {', '.join(map(repr, unknown))}; known: {', '.join(QA_FIELDS)}")
        if not all(isinstance(obj[k], str) and obj[k].strip() for k in ("id", "question", "answer")):
            found.append("id, question and answer must be non-empty strings")
        if obj["attribute"] not in ATTRIBUTES:
            found.append(f"unknown attribute {obj['attribute']!r}")
        evidence = [obj["evidence"]] if isinstance(obj["evidence"], str) else obj["evidence"]
        if not isinstance(evidence, list) or not evidence or not all(isinstance(e, str) and e.strip() for e in evidence):
            found.append(f"evidence must be a non-empty list of non-empty strings, not {_short(obj['evidence'])}")
        qa_set = obj.get("set", "paper")
        if qa_set not in QA_SETS:
            found.append(f"unknown set {qa_set!r}; known: {', '.join(QA_SETS)}")
        first = seen.setdefault(obj["id"], lineno) if isinstance(obj["id"], str) else lineno
        if first != lineno:
            found.append(f"duplicate id {obj['id']!r} (first at line {first})")
        problems += [(lineno, p) for p in found]
        if found:
            continue
        items.append(QA(obj["id"], obj["question"], obj["answer"], obj["attribute"], tuple(evidence), lineno, qa_set))
    return items, problems


def _short(value, width: int = 60) -> str:
    """A value's repr for a message, cut to ``width``: ``_short([1, 2])`` is ``'[1, 2]'``."""
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def _csv_reader(path: Path, columns: list[str]) -> tuple[csv.DictReader | None, Problems]:
    try:
        text = read_text(path)
    except DataError as e:
        return None, [(e.line, e.problem)]
    reader = csv.DictReader(text.splitlines())
    if reader.fieldnames != columns:
        return None, [(1, f"header must be {','.join(columns)}, found {','.join(reader.fieldnames or [])}")]
    return reader, []


def read_labels(path: Path) -> tuple[list[dict[str, str]], Problems]:
    """Rows of ``labels.csv`` and every problem; an empty type is allowed. A row with a wrong number of fields, an
    empty slug, name or work, or a slug already used is reported and left out."""
    reader, problems = _csv_reader(path, LABEL_COLUMNS)
    if reader is None:
        return [], problems
    rows, seen = [], {}
    for row in reader:
        lineno, found = reader.line_num, []  # the row's last line: a quoted field may hold a line break
        if None in row or None in row.values():  # DictReader's filler for too many or too few fields
            absent = [k for k in LABEL_COLUMNS if row[k] is None]
            fields = len(LABEL_COLUMNS) + len(row.get(None, [])) - len(absent)
            problems.append((lineno, f"row {row['slug']!r} has {fields} field(s), expected {len(LABEL_COLUMNS)} "
                                     f"({','.join(LABEL_COLUMNS)})" + (f": no {', '.join(absent)}" if absent else "")))
            continue
        found += [f"row {row['slug']!r}: field {k!r} is empty" for k in ("slug", "name", "work") if not row[k].strip()]
        for kind, pattern in TYPE_PATTERNS.items():  # reported; the row stays, as the folder's row
            if row[kind] and not pattern.match(row[kind]):
                problems.append((lineno, f"{kind} {row[kind]!r} of {row['slug']!r} is not a valid type"))
        first = seen.setdefault(row["slug"], lineno)
        if first != lineno:
            found.append(f"slug {row['slug']!r} has a second row (first at line {first}): one row per character")
        problems += [(lineno, p) for p in found]
        if not found:
            rows.append(row)
    return rows, problems


def read_grounding_reviewed(path: Path) -> tuple[list[dict[str, str | int]], Problems]:
    """Rows of ``grounding_reviewed.csv`` (``id, word, reason``), each with its ``line``, and every problem; a
    missing file has neither."""
    if not path.is_file():
        return [], []
    reader, problems = _csv_reader(path, REVIEWED_COLUMNS)
    if reader is None:
        return [], problems
    rows, seen = [], {}
    for lineno, row in enumerate(reader, start=2):
        if any(not (row.get(k) or "").strip() for k in REVIEWED_COLUMNS):
            problems.append((lineno, "id, word and reason must all be filled in"))
            continue
        key = (row["id"].strip(), row["word"].strip().lower())
        if key in seen:
            problems.append((lineno, f"{key[0]} {key[1]!r} is listed twice (first at line {seen[key]})"))
            continue
        seen[key] = lineno
        rows.append({"id": key[0], "word": key[1], "reason": row["reason"].strip(), "line": lineno})
    return rows, problems


def _field(obj: dict, key: str, where: str):
    if not isinstance(obj, dict) or key not in obj:
        raise DataError("", None, f"{where}: missing field {key!r}")
    return obj[key]


_STRING = "a string", lambda v: isinstance(v, str)  # (what a field must be, the test): _typed's kinds
_LIST = "a list", lambda v: isinstance(v, list)
_STRINGS = "a list of strings", lambda v: isinstance(v, list) and all(isinstance(s, str) for s in v)
_WHOLE = "a whole number", lambda v: isinstance(v, int) and not isinstance(v, bool)  # not 7.5, "7" or True


def _typed(obj: dict, key: str, where: str, kind: tuple, default: str | None = None):
    """``obj[key]`` if it is of ``kind`` (``default`` when absent, if given), else a DataError naming ``where``, the
    field and the kind: ``dimension 1: field 'id' must be a string, not ['E']``."""
    value = obj.get(key, default) if isinstance(obj, dict) and default is not None else _field(obj, key, where)
    if not kind[1](value):
        raise DataError("", None, f"{where}: field {key!r} must be {kind[0]}, not {_short(value)}")
    return value


def read_questionnaire(path: Path, full: bool = True) -> tuple[Questionnaire | None, Problems]:
    """The questionnaire and every problem (naming the item or dimension and the field); ``full`` also checks the
    item counts of :data:`QUESTIONNAIRE_ITEMS`."""
    try:
        obj = json.loads(read_text(path))
    except DataError as e:
        return None, [(e.line, e.problem)]
    except json.JSONDecodeError as e:
        return None, [(e.lineno, f"not valid JSON ({e.msg})")]
    try:
        scale = _field(obj, "scale", "questionnaire")
        dims = tuple(Dimension(*(_typed(d, k, f"dimension {n}", _STRING) for k in ("id", "name", "high", "low")),
                               *(_typed(d, k, f"dimension {n}", _STRING, "") for k in ("high_name", "low_name")))
                     for n, d in enumerate(_typed(obj, "dimensions", "questionnaire", _LIST), start=1))
        items = tuple(Item(*(_typed(i, k, f"item {i.get('id', n) if isinstance(i, dict) else n}", _STRING)
                             for k in ("id", "dimension", "keyed", "statement", "question")))
                      for n, i in enumerate(_typed(obj, "items", "questionnaire", _LIST), start=1))
        q = Questionnaire(_typed(obj, "name", "questionnaire", _STRING), _typed(scale, "points", "scale", _WHOLE),
                          tuple(_typed(scale, "labels", "scale", _STRINGS)), dims, items)
    except DataError as e:
        return None, [(None, e.problem)]
    problems: Problems = []
    if len(q.labels) != q.points:
        problems.append((None, f"scale has {q.points} points but {len(q.labels)} labels"))
    dim_ids = {d.id for d in dims}
    for item in items:
        if item.dimension not in dim_ids:
            problems.append((None, f"item {item.id}: field 'dimension': unknown dimension {item.dimension!r}"))
        if item.keyed not in ("high", "low"):
            problems.append((None, f"item {item.id}: field 'keyed' must be 'high' or 'low', not {item.keyed!r}"))
        for key in ("statement", "question"):
            if not getattr(item, key).strip():
                problems.append((None, f"item {item.id}: field {key!r} is empty"))
    ids = Counter(i.id for i in items)
    problems += [(None, f"item id {dup!r} appears {n} times") for dup, n in ids.items() if n > 1]
    expected = QUESTIONNAIRE_ITEMS.get(q.name) if full else None
    if expected and len(items) != expected[0]:
        problems.append((None, f"{len(items)} items, expected {expected[0]}"))
    for d in dims:
        keyed = Counter(i.keyed for i in items if i.dimension == d.id)
        if expected and sum(keyed.values()) != expected[1]:
            problems.append((None, f"dimension {d.id}: {sum(keyed.values())} items, expected {expected[1]}"))
        if not keyed:
            problems.append((None, f"dimension {d.id}: no items"))
        elif not keyed["high"] or not keyed["low"]:
            problems.append((None, f"dimension {d.id}: items must be keyed both ways, found {dict(keyed)}"))
    return q, problems
