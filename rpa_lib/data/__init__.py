"""Load and validate the dataset under ``data/``: personas, QA pairs, labels and questionnaires.

``python -m rpa_lib.data validate`` checks every file (schema, the six headings, counts, every QA ``evidence``
found verbatim in its persona, labels well formed, questionnaire balance) and prints each problem with its
file and line. ``--character SLUG`` checks one character; ``--data-dir`` another collection in this format.

Loaders raise :class:`DataError` (file, line, problem) on the first problem; the validator collects all.
This module does not fetch or convert other datasets (see ``data/README.md`` for conversion).
"""

from __future__ import annotations

import argparse
import csv
import json
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

from rpa_lib.persona import ATTRIBUTES, PersonaError, list_characters, load_persona, read_text

QA_PER_CHARACTER = 30
MIN_PERSONA_CHARS = 8_000
MIN_TOTAL_CHARS = 150_000
QUESTIONNAIRE_ITEMS = {"mbti": (60, 15), "bigfive": (120, 24)}  # name -> (items, items per dimension)
TYPE_PATTERNS = {"mbti": re.compile(r"^[EI][SN][TF][JP]$"), "sloan": re.compile(r"^[SR][LC][OU][AE][IN]$")}


class DataError(PersonaError):
    """A data file that breaks the format; the message names the file, the line and the problem."""


@dataclass(frozen=True)
class QA:
    id: str
    question: str
    answer: str
    attribute: str
    evidence: tuple[str, ...]
    line: int | None = field(default=None, compare=False)  # line in qa.jsonl, for messages


@dataclass(frozen=True)
class Dimension:
    id: str
    name: str
    high: str  # letter when the score is above the scale midpoint
    low: str
    high_name: str = ""  # e.g. "Social"
    low_name: str = ""  # e.g. "Reserved"


@dataclass(frozen=True)
class Item:
    id: str
    dimension: str
    keyed: str  # "high" or "low": which letter agreement points to
    statement: str
    question: str


@dataclass(frozen=True)
class Questionnaire:
    name: str
    points: int  # Likert points, e.g. 7 -> answers 1..7
    labels: tuple[str, ...]
    dimensions: tuple[Dimension, ...]
    items: tuple[Item, ...]

    @property
    def midpoint(self) -> float:
        return (1 + self.points) / 2

    def dimension(self, dim_id: str) -> Dimension:
        return next(d for d in self.dimensions if d.id == dim_id)

    def subset(self, n: int | None) -> Questionnaire:
        """The questionnaire with a balanced subset of ``n`` items (None: all): ``n // dimensions`` per dimension,
        alternating items keyed high and low in file order, so every dimension is asked both ways when it gets
        two or more. ``load_questionnaire("mbti").subset(8)`` asks 2 items per dichotomy, one each way."""
        if n is None or n >= len(self.items):
            return self
        per_dim = n // len(self.dimensions)
        if per_dim < 1:
            raise ValueError(f"{n} items cannot cover the {len(self.dimensions)} dimensions of {self.name}")
        keep: set[str] = set()
        for dim in self.dimensions:
            sides = [[i for i in self.items if i.dimension == dim.id and i.keyed == k] for k in ("high", "low")]
            order = [s[j] for j in range(max(map(len, sides))) for s in sides if j < len(s)]
            keep |= {i.id for i in order[:per_dim]}
        return replace(self, items=tuple(i for i in self.items if i.id in keep))


def _dirs(data_dir: Path | None) -> Path:
    from rpa_lib.paths import DATA_DIR

    return Path(data_dir or DATA_DIR)


def load_qa(slug: str, data_dir: Path | None = None) -> list[QA]:
    """The QA pairs of one character, in file order. Raises :class:`DataError` naming file and line."""
    path = _dirs(data_dir) / "characters" / slug / "qa.jsonl"
    items, problems = _read_qa(path)
    if problems:
        raise DataError(path, problems[0][0], problems[0][1])
    return items


def _read_qa(path: Path) -> tuple[list[QA], list[tuple[int | None, str]]]:
    """The QA pairs (each with its 1-based ``line``) and every problem as ``(line, message)``."""
    problems: list[tuple[int | None, str]] = []
    try:
        text = read_text(path)
    except PersonaError as e:
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
        missing = [k for k in ("id", "question", "answer", "attribute", "evidence") if k not in obj]
        if missing:
            problems.append((lineno, f"missing field(s): {', '.join(missing)}"))
            continue
        if obj["attribute"] not in ATTRIBUTES:
            problems.append((lineno, f"unknown attribute {obj['attribute']!r}"))
        evidence = obj["evidence"]
        if isinstance(evidence, str):
            evidence = [evidence]
        if not evidence or not all(isinstance(e, str) and e.strip() for e in evidence):
            problems.append((lineno, "evidence must be a non-empty list of non-empty strings"))
        if not all(isinstance(obj[k], str) and obj[k].strip() for k in ("id", "question", "answer")):
            problems.append((lineno, "id, question and answer must be non-empty strings"))
            continue
        if obj["id"] in seen:
            problems.append((lineno, f"duplicate id {obj['id']!r} (first at line {seen[obj['id']]})"))
        seen[obj["id"]] = lineno
        items.append(QA(obj["id"], obj["question"], obj["answer"], obj["attribute"], tuple(evidence), lineno))
    return items, problems


def load_labels(data_dir: Path | None = None) -> list[dict[str, str]]:
    """Rows of ``labels.csv`` (slug, name, work, mbti, sloan)."""
    path = _dirs(data_dir) / "labels.csv"
    rows, problems = _read_labels(path)
    if problems:
        raise DataError(path, problems[0][0], problems[0][1])
    return rows


def _read_labels(path: Path) -> tuple[list[dict[str, str]], list[tuple[int | None, str]]]:
    try:
        text = read_text(path)
    except PersonaError as e:
        return [], [(e.line, e.problem)]
    reader = csv.DictReader(text.splitlines())
    want = ["slug", "name", "work", "mbti", "sloan"]
    if reader.fieldnames != want:
        return [], [(1, f"header must be {','.join(want)}, found {','.join(reader.fieldnames or [])}")]
    rows, problems = [], []
    for lineno, row in enumerate(reader, start=2):
        for kind, pattern in TYPE_PATTERNS.items():
            if not pattern.match(row[kind] or ""):
                problems.append((lineno, f"{kind} {row[kind]!r} of {row['slug']!r} is not a valid type"))
        rows.append(row)
    return rows, problems


def load_questionnaire(name: str, data_dir: Path | None = None) -> Questionnaire:
    """``mbti`` or ``bigfive`` (any ``data/questionnaires/<name>.json``)."""
    path = _dirs(data_dir) / "questionnaires" / f"{name}.json"
    q, problems = _read_questionnaire(path, full=False)  # the item counts are the validator's (full) concern
    if problems:
        raise DataError(path, None, problems[0])
    return q


def _read_questionnaire(path: Path, full: bool = True) -> tuple[Questionnaire | None, list[str]]:
    try:
        obj = json.loads(read_text(path))
        dims = tuple(Dimension(d["id"], d["name"], d["high"], d["low"], d.get("high_name", ""), d.get("low_name", ""))
                     for d in obj["dimensions"])
        items = tuple(Item(i["id"], i["dimension"], i["keyed"], i["statement"], i["question"]) for i in obj["items"])
        q = Questionnaire(obj["name"], int(obj["scale"]["points"]), tuple(obj["scale"]["labels"]), dims, items)
    except PersonaError as e:
        return None, [e.problem]
    except json.JSONDecodeError as e:
        return None, [f"not valid JSON at line {e.lineno} ({e.msg})"]
    except (KeyError, TypeError, ValueError) as e:
        return None, [f"missing or malformed field: {e}"]
    problems = []
    if len(q.labels) != q.points:
        problems.append(f"scale has {q.points} points but {len(q.labels)} labels")
    dim_ids = {d.id for d in dims}
    for item in items:
        if item.dimension not in dim_ids:
            problems.append(f"item {item.id}: unknown dimension {item.dimension!r}")
        if item.keyed not in ("high", "low"):
            problems.append(f"item {item.id}: keyed must be 'high' or 'low', not {item.keyed!r}")
        if not item.statement.strip() or not item.question.strip():
            problems.append(f"item {item.id}: empty statement or question")
    for dup, n in Counter(i.id for i in items).items():
        if n > 1:
            problems.append(f"item id {dup!r} appears {n} times")
    expected = QUESTIONNAIRE_ITEMS.get(q.name) if full else None
    if expected and len(items) != expected[0]:
        problems.append(f"{len(items)} items, expected {expected[0]}")
    for d in dims:
        keyed = Counter(i.keyed for i in items if i.dimension == d.id)
        if expected and sum(keyed.values()) != expected[1]:
            problems.append(f"dimension {d.id}: {sum(keyed.values())} items, expected {expected[1]}")
        if not keyed:
            problems.append(f"dimension {d.id}: no items")
        elif not keyed["high"] or not keyed["low"]:
            problems.append(f"dimension {d.id}: items must be keyed both ways, found {dict(keyed)}")
    return q, problems


def validate(data_dir: Path | None = None, characters: list[str] | None = None, full: bool = True) -> list[str]:
    """Every problem found, as ``file:line: problem`` strings; empty when the data is valid.

    ``full`` also checks the dataset-wide counts (30 QA a character, 5 per attribute, sizes, 15 labels);
    test fixtures pass ``full=False``.
    """
    root = _dirs(data_dir)
    chars_dir = root / "characters"
    slugs = characters or list_characters(chars_dir)
    out: list[str] = []
    if not slugs:
        out.append(f"{chars_dir}: no character folders")
    total_chars = 0
    for slug in slugs:
        try:
            persona = load_persona(slug, chars_dir)
        except PersonaError as e:
            out.append(str(e))
            continue
        total_chars += len(persona.source)
        out += _check_persona_shape(persona, full)
        qa_path = chars_dir / slug / "qa.jsonl"
        items, problems = _read_qa(qa_path)
        out += [f"{qa_path}:{line}: {p}" if line else f"{qa_path}: {p}" for line, p in problems]
        for qa in items:
            for ev in qa.evidence:
                if ev not in persona.source:
                    out.append(f"{qa_path}:{qa.line}: evidence of {qa.id} not found verbatim in persona.md: {ev[:70]!r}")
        if full and items:
            if len(items) != QA_PER_CHARACTER:
                out.append(f"{qa_path}: {len(items)} QA pairs, expected {QA_PER_CHARACTER}")
            per_attr = Counter(q.attribute for q in items)
            uneven = {a: per_attr[a] for a in ATTRIBUTES if per_attr[a] != QA_PER_CHARACTER // len(ATTRIBUTES)}
            if uneven:
                out.append(f"{qa_path}: expected {QA_PER_CHARACTER // len(ATTRIBUTES)} QA per attribute, found {uneven}")
    if characters is None:
        if full and total_chars < MIN_TOTAL_CHARS:
            out.append(f"{chars_dir}: {total_chars:,} characters in all personas, expected at least {MIN_TOTAL_CHARS:,}")
        labels_path = root / "labels.csv"
        rows, problems = _read_labels(labels_path)
        out += [f"{labels_path}:{line}: {p}" if line else f"{labels_path}: {p}" for line, p in problems]
        labelled = {r["slug"] for r in rows}
        out += [f"{labels_path}: no row for character {s!r}" for s in slugs if s not in labelled]
        out += [f"{labels_path}: row for {s!r} but no folder data/characters/{s}" for s in sorted(labelled - set(slugs))]
        for qpath in sorted((root / "questionnaires").glob("*.json")):
            out += [f"{qpath}: {p}" for p in _read_questionnaire(qpath, full)[1]]
        if full:
            for name in QUESTIONNAIRE_ITEMS:
                if not (root / "questionnaires" / f"{name}.json").is_file():
                    out.append(f"{root / 'questionnaires' / name}.json: missing")
    return out


def _check_persona_shape(persona, full: bool) -> list[str]:
    out = []
    if full and len(persona.source) < MIN_PERSONA_CHARS:
        out.append(f"{persona.path}: {len(persona.source):,} characters, expected at least {MIN_PERSONA_CHARS:,}")
    for attribute in ATTRIBUTES:
        subsections = {s.headings[2] for s in persona.sections if len(s.headings) > 2 and s.headings[1] == attribute}
        if full and len(subsections) < 2:
            out.append(f"{persona.path}: section {attribute!r} has {len(subsections)} '###' subsection(s), expected at least 2")
        if not any(s.headings[1:2] == (attribute,) for s in persona.sections):
            out.append(f"{persona.path}: section {attribute!r} has no text")
    return out


def dataset_statistics(data_dir: Path | None = None, characters: list[str] | None = None):
    """Two DataFrames for AMADEUS Figure 3: one row per character (length, paragraphs, sections, QA pairs per
    attribute, longest paragraph) and one row per paragraph (character, attribute, depth, length)."""
    import pandas as pd

    chars_dir = _dirs(data_dir) / "characters"
    names = {r["slug"]: r["name"] for r in load_labels(data_dir)} if (_dirs(data_dir) / "labels.csv").is_file() else {}
    per_char, per_par = [], []
    for slug in characters or list_characters(chars_dir):
        persona = load_persona(slug, chars_dir)
        qa = Counter(q.attribute for q in load_qa(slug, data_dir))
        pars = persona.paragraphs
        per_char.append({"character": slug, "name": names.get(slug, persona.name), "characters_written": len(persona.source),
                         "paragraphs": len(pars), "sections": len(persona.sections),
                         "max_depth": max(len(s.headings) for s in persona.sections) - 1,
                         "longest_paragraph": persona.longest_paragraph,
                         "median_paragraph": int(sorted(len(p.text) for p in pars)[len(pars) // 2]),
                         "qa_pairs": sum(qa.values()), **{f"qa_{a}": qa[a] for a in ATTRIBUTES}})
        per_par += [{"character": slug, "attribute": p.attribute, "depth": len(p.headings) - 1, "length": len(p.text)}
                    for p in pars]
    return pd.DataFrame(per_char), pd.DataFrame(per_par)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rpa_lib.data", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    v = sub.add_parser("validate", help="check every file of the dataset")
    v.add_argument("--character", action="append", help="check only this character (repeatable)")
    v.add_argument("--data-dir", type=Path, help="dataset folder (default: the repository's data/)")
    v.add_argument("--no-counts", action="store_true", help="skip dataset-wide counts (for small fixture sets)")
    args = parser.parse_args(argv)
    problems = validate(args.data_dir, args.character, full=not args.no_counts)
    for p in problems:
        print(p)
    root = _dirs(args.data_dir)
    slugs = args.character or list_characters(root / "characters")
    print(f"{'FAILED' if problems else 'OK'}: {len(slugs)} character(s) checked in {root}, {len(problems)} problem(s)")
    return 1 if problems else 0

