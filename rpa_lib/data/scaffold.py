"""QA pairs for a new character, proposed by an LLM and checked by a person.

``python -m rpa_lib.data qa-scaffold SLUG`` asks the LLM, once per attribute, for question-answer pairs about that
attribute's paragraphs, each with ``evidence``: a sentence copied from the persona. A pair is kept only when its
evidence is found verbatim in ``persona.md`` (the validator's own test); the others are dropped and counted. The
kept pairs are appended to ``characters/SLUG/qa_review.csv``, marked ``reviewed=no``: a spreadsheet a person opens,
corrects (question, answer, attribute, evidence_1..3) and marks ``yes`` row by row.

``python -m rpa_lib.data qa-promote SLUG`` then writes the rows marked ``yes`` to ``qa.jsonl`` (rows of the review
file replace pairs of the same id; pairs of ``qa.jsonl`` not in it stay), after checking every one of them: any
problem is reported with its CSV line and nothing is written. ``qa.jsonl`` therefore only ever holds reviewed
pairs, and the validator and the notebooks read only ``qa.jsonl``.

This module does not judge whether a question is good (the person does) and does not rewrite the persona.
"""

from __future__ import annotations

import csv
import io
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from rpa_lib.data.dataset import Dataset, as_dataset
from rpa_lib.data.readers import read_qa
from rpa_lib.errors import DataError
from rpa_lib.persona import ATTRIBUTES

REVIEW_COLUMNS = ["id", "attribute", "question", "answer", "evidence_1", "evidence_2", "evidence_3", "reviewed", "note"]
YES, NO = ("yes", "y", "true", "1", "x"), ("no", "n", "false", "0", "")
PROMPT = (
    "You are helping to build a test of a role-playing agent that plays {name}. Below are passages of {name}'s "
    "profile about {attribute}. Write {n} questions a user might put to {name} in conversation, in the second "
    "person (for example 'Where did you grow up?'), each answerable from these passages alone. For each one give "
    "a short factual answer in the third person, and as evidence copy one whole sentence from the passages, "
    "character for character, that supports the answer.\n\nPassages:\n{passages}")
SCHEMA = {"type": "object", "required": ["pairs"], "properties": {"pairs": {"type": "array", "minItems": 1, "items": {
    "type": "object", "required": ["question", "answer", "evidence"],
    "properties": {"question": {"type": "string"}, "answer": {"type": "string"}, "evidence": {"type": "string"}}}}}}


@dataclass
class Scaffold:
    path: Path  # the review file
    added: int = 0
    dropped: dict[str, int] = field(default_factory=dict)  # attribute -> pairs whose evidence was not found
    failed: list[str] = field(default_factory=list)  # "attribute: error" for LLM calls that failed

    def summary(self) -> str:
        lost = sum(self.dropped.values())
        return (f"{self.added} pair(s) written to {self.path} for review (reviewed=no); {lost} dropped because their "
                f"evidence is not verbatim in the persona {self.dropped}" + (f"; {len(self.failed)} LLM call(s) failed"
                                                                              if self.failed else ""))


def review_path(ds: Dataset, slug: str) -> Path:
    return ds.characters_dir / slug / "qa_review.csv"


def passages(persona, attribute: str, limit: int = 2400) -> str:
    """The attribute's paragraphs with their heading paths, in order, up to about ``limit`` characters."""
    out, size = [], 0
    for p in persona.paragraphs:
        if p.attribute == attribute and size < limit:
            out.append(f"[{p.context}]\n{p.text}")
            size += len(p.text)
    return "\n\n".join(out)


def qa_scaffold(slug: str, llm, *, data: Dataset | str | Path | None = None, per_attribute: int = 5) -> Scaffold:
    """Propose ``per_attribute`` pairs per attribute with ``llm`` and append the verified ones to the review file."""
    ds = as_dataset(data)
    persona = ds.persona(slug)
    name = ds.profile(slug)[0]
    path = review_path(ds, slug)
    rows = read_review(path)[0] if path.is_file() else []
    taken = {r["id"] for r in rows} | ({q.id for q in read_qa(ds.qa_path(slug))[0]} if ds.qa_path(slug).is_file() else set())
    result, new = Scaffold(path), []
    for attribute in ATTRIBUTES:
        prompt = PROMPT.format(name=name, attribute=attribute, n=per_attribute, passages=passages(persona, attribute))
        try:
            reply = llm.structured([{"role": "user", "content": prompt}], SCHEMA, max_tokens=1024,
                                   name=f"qa scaffold {slug} {attribute}")
        except Exception as e:  # an LLMError, or a fatal one: recorded, and the command exits non-zero
            result.failed.append(f"{attribute}: {e}")
            continue
        result.dropped[attribute] = 0
        for pair in reply.data["pairs"][:per_attribute]:
            evidence = " ".join(str(pair.get("evidence", "")).split())
            if not evidence or evidence not in persona.source:
                result.dropped[attribute] += 1
                continue
            n = len(taken) + 1
            while f"{slug}-{n:02d}" in taken:
                n += 1
            taken.add(f"{slug}-{n:02d}")
            new.append({"id": f"{slug}-{n:02d}", "attribute": attribute, "question": pair["question"].strip(),
                        "answer": pair["answer"].strip(), "evidence_1": evidence, "reviewed": "no"})
    _write_csv(path, rows + new)
    result.added = len(new)
    return result


def read_review(path: Path) -> tuple[list[dict[str, str]], list[tuple[int, str]]]:
    """The review file's rows and its problems (CSV line, message): columns, ids, the ``reviewed`` values."""
    from rpa_lib.persona import read_text

    try:
        text = read_text(path)
    except DataError as e:
        return [], [(e.line, e.problem)]
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in ("id", "attribute", "question", "answer", "evidence_1", "reviewed")
               if c not in (reader.fieldnames or [])]
    if missing:
        return [], [(1, f"missing column(s): {', '.join(missing)}")]
    rows, problems, seen = [], [], set()
    for lineno, row in enumerate(reader, start=2):
        row = {k: (v or "").strip() for k, v in row.items() if k}
        if row["reviewed"].lower() not in YES + NO:
            problems.append((lineno, f"reviewed must be yes or no, not {row['reviewed']!r}"))
        if not row["id"] or row["id"] in seen:
            problems.append((lineno, f"id {row['id']!r} is empty or repeated"))
        seen.add(row["id"])
        rows.append({**row, "line": str(lineno)})
    return rows, problems


def promote(slug: str, *, data: Dataset | str | Path | None = None) -> tuple[int, Path]:
    """Write the reviewed rows to ``qa.jsonl``; DataError listing every problem (nothing written) otherwise.
    Returns (pairs promoted, the qa.jsonl path)."""
    ds = as_dataset(data)
    persona, path = ds.persona(slug), review_path(ds, slug)
    rows, problems = read_review(path)
    chosen = [r for r in rows if r["reviewed"].lower() in YES]
    for r in chosen:
        if r["attribute"] not in ATTRIBUTES:
            problems.append((int(r["line"]), f"attribute {r['attribute']!r} is not one of {', '.join(ATTRIBUTES)}"))
        if not r["question"] or not r["answer"]:
            problems.append((int(r["line"]), "question and answer must not be empty"))
        evidence = [r.get(f"evidence_{i}", "") for i in (1, 2, 3)]
        if not any(evidence):
            problems.append((int(r["line"]), "no evidence"))
        problems += [(int(r["line"]), f"evidence not found verbatim in persona.md: {e[:70]!r}")
                     for e in evidence if e and e not in persona.source]
    if problems:
        raise DataError(path, None, "nothing promoted:\n  " + "\n  ".join(f"line {n}: {p}" for n, p in problems))
    if not chosen:
        raise DataError(path, None, "no row is marked reviewed=yes: review the pairs in a spreadsheet first")
    qa_path = ds.qa_path(slug)
    kept = read_qa(qa_path)[0] if qa_path.is_file() else []
    ids = {r["id"] for r in rows}
    lines = [json.dumps({"id": q.id, "question": q.question, "answer": q.answer, "attribute": q.attribute,
                         "evidence": list(q.evidence)}, ensure_ascii=False) for q in kept if q.id not in ids]
    lines += [json.dumps({"id": r["id"], "question": r["question"], "answer": r["answer"], "attribute": r["attribute"],
                          "evidence": [e for e in (r.get(f"evidence_{i}", "") for i in (1, 2, 3)) if e]},
                         ensure_ascii=False) for r in chosen]
    tmp = qa_path.with_name(".qa.jsonl.tmp")
    tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    os.replace(tmp, qa_path)
    return len(chosen), qa_path


def _write_csv(path: Path, rows: list[dict[str, str]]) -> None:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, REVIEW_COLUMNS, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows({c: r.get(c, "") for c in REVIEW_COLUMNS} for r in rows)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(buf.getvalue(), encoding="utf-8")
    os.replace(tmp, path)
