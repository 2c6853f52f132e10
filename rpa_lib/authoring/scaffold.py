"""QA pairs for a new character, proposed by an LLM and checked by a person: :func:`qa_scaffold` asks, for persona
sentences spread over each attribute, the question each one answers and appends the pairs to ``qa_review.csv``
(``reviewed=no``); :func:`promote` writes the rows a person marked ``yes`` to ``qa.jsonl`` only when the file reads
cleanly and ``validate`` accepts the result. This module does not judge questions or rewrite the persona."""

from __future__ import annotations

import csv
import io
import itertools
import json
import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from rpa_lib.data.dataset import Dataset, user_dataset
from rpa_lib.data.readers import read_qa
from rpa_lib.data.validate import validate
from rpa_lib.errors import DataError
from rpa_lib.persona import ATTRIBUTES, read_text
from rpa_lib.text import write_whole

REVIEW_COLUMNS = ["id", "attribute", "question", "answer", "evidence_1", "evidence_2", "evidence_3", "reviewed", "note"]
REQUIRED = ("id", "attribute", "question", "answer", "evidence_1", "reviewed")
YES, NO = ("yes", "y", "true", "1", "x"), ("no", "n", "false", "0", "")
PROMPT = ("Write the question that a user would ask {name} to get this sentence as the answer. Speak to {name} "
          "as \"you\". Reply with the question only.\n\n"
          'Example. Sentence: "He keeps bees on the slope below the gate."\n'
          'Question: What do you keep below the gate?\n\n'
          'Sentence: "{sentence}"\nQuestion:')
PLACEHOLDER = "placeholder question (the LLM gave none): rewrite it"
MIN_SENTENCE, MAX_SENTENCE = 30, 320  # characters of a sentence worth a question


@dataclass
class Scaffold:
    path: Path  # the review file
    added: int = 0
    placeholders: int = 0  # rows whose question is a placeholder
    empty: list[str] = field(default_factory=list)  # attributes with no sentence to ask about
    failed: list[str] = field(default_factory=list)  # "attribute: error" for LLM calls that failed
    interrupted: bool = False
    seconds: float = 0.0

    def summary(self) -> str:
        notes = [(self.placeholders, f"{self.placeholders} with a placeholder question"),
                 (self.empty, f"no text under {', '.join(self.empty)}"),
                 (self.failed, f"{len(self.failed)} LLM call(s) failed"),
                 (self.interrupted, "interrupted: the pairs made so far are kept")]
        written = f"{self.added} pair(s) written to {self.path} for review (reviewed=no) in {self.seconds:.0f} s"
        return "; ".join([written, *(note for on, note in notes if on)])


def review_path(ds: Dataset, slug: str) -> Path:
    return ds.characters_dir / slug / "qa_review.csv"


_SENTENCE = re.compile(r"[^.!?]+(?:[.!?]+[\"')\]]*|$)")


def sentences(text: str) -> list[str]:
    """The sentences of a paragraph, verbatim.

    >>> sentences("I row. She sings! Then home")
    ['I row.', 'She sings!', 'Then home']
    """
    return [m.group(0).strip() for m in _SENTENCE.finditer(text) if m.group(0).strip()]


def evidence_sentences(persona, attribute: str, n: int, skip: set[str] = frozenset()) -> list[tuple[str, str]]:
    """Up to ``n`` ``(heading path, sentence)`` of one attribute, none of ``skip``: the first usable sentence of each
    paragraph, then the second, ..., so the questions spread over the attribute."""
    pools = [[(p.context, s) for s in sentences(p.text) if MIN_SENTENCE <= len(s) <= MAX_SENTENCE]
             for p in persona.paragraphs if p.attribute == attribute]
    out, seen = [], set(skip)
    for depth in range(max(map(len, pools), default=0)):
        for pool in pools:
            if depth < len(pool) and pool[depth][1] not in seen and len(out) < n:
                out.append(pool[depth])
                seen.add(pool[depth][1])
    return out


_WORD = re.compile(r"[A-Za-z]{4,}")
_COMMON = {"what", "when", "where", "which", "your", "would", "could", "about", "there", "their", "with", "have",
           "this", "that", "from", "they", "them", "were", "tell", "like", "know", "does", "more", "than", "into"}


def question_from(reply: str, sentence: str = "") -> str | None:
    """The first line of a reply that reads as one question sharing a word of 4+ letters with ``sentence`` (when
    given), or None.

    >>> question_from('Question: "Where did you grow up?"\\nBecause...'), question_from("fake reply 1a2b")
    ('Where did you grow up?', None)
    >>> question_from("What would you like to know?", "He keeps bees on the slope.")
    """
    words = {w.lower() for w in _WORD.findall(sentence)} - _COMMON
    for line in reply.splitlines():
        line = re.sub(r"^\W*(?:q(?:uestion)?\s*\d*\s*[:.)-])?\s*", "", line.strip(), flags=re.I).strip(" \"'*")
        if not (line.endswith("?") and line.count("?") == 1 and 8 <= len(line) <= 160):
            continue
        if not words or words & {w.lower() for w in _WORD.findall(line)}:
            return line
    return None


def placeholder(context: str, sentence: str) -> str:
    """A question to rewrite when the LLM gave none, naming the section or an infobox field:
    ``placeholder("A > Infobox", "birth date: 12 March 1021.") == "What is your birth date?"``"""
    field, sep, _ = sentence.partition(": ")
    if sep and len(field) <= 30 and context.endswith("Infobox"):
        return f"What is your {field.lower()}?"
    return f"What can you tell me about {context.rsplit(' > ', 1)[-1].lower()}?"


def qa_scaffold(slug: str, llm, *, data: Dataset | str | Path | None = None, per_attribute: int = 5) -> Scaffold:
    """Propose up to ``per_attribute`` pairs per attribute (one short ``llm`` call each) into the review file, a
    progress line per pair on stderr."""
    ds = user_dataset(data)
    persona = ds.persona(slug)
    name = ds.profile(slug)[0]
    path = review_path(ds, slug)
    rows, problems = read_review(path) if path.is_file() else ([], [])
    if problems:
        raise DataError(path, problems[0][0], f"{problems[0][1]}: fix the review file before adding to it")
    saved = _saved_pairs(ds, slug)
    taken = {r["id"] for r in rows} | {q.id for q in saved}
    asked = {e for r in rows for i in (1, 2, 3) if (e := r.get(f"evidence_{i}"))}
    asked |= {e for q in saved for e in q.evidence}
    result, new = Scaffold(path), []  # a sentence asked about in an earlier run is not asked again
    todo = [(a, ctx, s) for a in ATTRIBUTES for ctx, s in evidence_sentences(persona, a, per_attribute, asked)]
    result.empty = [a for a in ATTRIBUTES if not evidence_sentences(persona, a, 1)]
    start = time.perf_counter()
    try:
        for done, (attribute, context, sentence) in enumerate(todo, start=1):
            prompt = PROMPT.format(name=name, sentence=sentence)
            try:
                reply = llm.chat([{"role": "user", "content": prompt}], max_tokens=40,
                                 name=f"qa scaffold {slug} {attribute}").text
            except Exception as e:  # an LLMError, or a fatal one: recorded, and the command exits non-zero
                result.failed.append(f"{attribute}: {e}")
                continue
            question = question_from(reply, sentence)
            qa_id = next(i for n in itertools.count(len(taken) + 1) if (i := f"{slug}-{n:02d}") not in taken)
            taken.add(qa_id)
            note = "answer = the evidence sentence: shorten it"
            if question is None:
                question = placeholder(context, sentence)
                note, result.placeholders = PLACEHOLDER, result.placeholders + 1
            new.append({"id": qa_id, "attribute": attribute, "question": question, "answer": sentence,
                        "evidence_1": sentence, "reviewed": "no", "note": note})
            _write_csv(path, rows + new)  # each pair kept as it comes: a killed run loses none
            spent = time.perf_counter() - start
            print(f"  [{done}/{len(todo)}] {attribute}: {spent:.0f} s, "
                  f"about {spent / done * (len(todo) - done):.0f} s left", file=sys.stderr, flush=True)
    except KeyboardInterrupt:
        result.interrupted = True
    _write_csv(path, rows + new)  # each pair was written as it came: this creates the file when none was added
    result.added, result.seconds = len(new), time.perf_counter() - start
    return result


def read_review(path: Path) -> tuple[list[dict[str, str]], list[tuple[int, str]]]:
    """The review file's rows (each with its CSV ``line``) and every problem as ``(line, message)``."""
    try:
        text = read_text(path)
    except DataError as e:
        return [], [(e.line, e.problem)]
    records, problems = [], []
    for lineno, line in enumerate(text.split("\n"), start=1):  # one row a line: the file has no line breaks in cells
        if not line.strip():
            continue
        try:
            record = next(csv.reader([line], strict=True))
        except csv.Error as e:
            problems.append((lineno, f"not a valid CSV row ({e}): an unbalanced quote, or a line break inside a "
                                     "cell; the row is skipped"))
            continue
        records.append((lineno, record))
    if not records:
        return [], problems + [(1, "no header row")]
    header = [h.strip() for h in records[0][1]]
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        return [], problems + [(records[0][0], f"missing column(s): {', '.join(missing)}")]
    rows, seen = [], set()
    for lineno, record in records[1:]:
        if len(record) != len(header):
            problems.append((lineno, f"{len(record)} field(s), the header has {len(header)}"))
            continue
        row = {k: v.strip() for k, v in zip(header, record, strict=True) if k}
        if row["reviewed"].lower() not in YES + NO:
            problems.append((lineno, f"reviewed must be yes or no, not {row['reviewed']!r}"))
        if not row["id"] or row["id"] in seen:
            problems.append((lineno, f"id {row['id']!r} is empty or repeated"))
        seen.add(row["id"])
        rows.append({**row, "line": str(lineno)})
    return rows, sorted(problems, key=lambda p: p[0] or 0)


def promote(slug: str, *, data: Dataset | str | Path | None = None) -> tuple[int, Path]:
    """Write the reviewed rows to ``qa.jsonl``: ``(pairs promoted, path)``, or a DataError listing every problem by
    CSV line (nothing written)."""
    ds = user_dataset(data)
    persona, path = ds.persona(slug), review_path(ds, slug)
    rows, problems = read_review(path)
    chosen = [{**r, "evidence": [e for e in (r.get(f"evidence_{i}", "") for i in (1, 2, 3)) if e]}
              for r in rows if r["reviewed"].lower() in YES]
    problems += [(int(r["line"]), "no evidence") for r in chosen if not r["evidence"]]
    qa_path, ids = ds.qa_path(slug), {r["id"] for r in rows}
    lines = [_jsonl(vars(q)) for q in _saved_pairs(ds, slug) if q.id not in ids]
    row_at = {len(lines) + n: int(r["line"]) for n, r in enumerate(chosen, start=1)}  # qa.jsonl line -> CSV line
    by_id = {r["id"]: int(r["line"]) for r in chosen}
    lines += [_jsonl(r) for r in chosen]
    if chosen and not problems:
        problems += _validated(ds, persona, slug, lines, row_at, by_id)
    if problems:
        raise DataError(path, None, "nothing promoted:\n  " + "\n  ".join(
            f"line {n}: {p}" if n else p for n, p in sorted(problems, key=lambda p: p[0] or 0)))
    if not chosen:
        raise DataError(path, None, "no row is marked reviewed=yes: review the pairs in a spreadsheet first")
    write_whole(qa_path, "\n".join(lines) + "\n")
    return len(chosen), qa_path


def _validated(ds: Dataset, persona, slug: str, lines: list[str], row_at: dict[int, int],
               by_id: dict[str, int]) -> list[tuple[int | None, str]]:
    """``validate``'s problems with the new ``qa.jsonl`` (on a staged copy), each on its CSV line."""
    stage = Path(tempfile.mkdtemp(prefix=".promote-"))
    try:
        folder = stage / "characters" / slug
        folder.mkdir(parents=True)
        shutil.copyfile(persona.path, folder / "persona.md")
        if ds.labels_path.is_file():
            shutil.copyfile(ds.labels_path, stage / "labels.csv")
        (folder / "qa.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        found = validate(Dataset(stage), [slug], full=False)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    out = []
    for problem in found:
        m = re.match(r".*?qa\.jsonl:(\d+): (.*)", problem)
        if m:
            message = m.group(2)
            at = row_at.get(int(m.group(1))) or next((n for i, n in by_id.items() if f" {i} " in f" {message} "), None)
            out.append((at, message if at else f"qa.jsonl line {m.group(1)}: {message}"))
        else:
            out.append((None, problem.replace(str(stage), str(ds.root))))
    return out


def _saved_pairs(ds: Dataset, slug: str) -> list:
    return read_qa(ds.qa_path(slug))[0] if ds.qa_path(slug).is_file() else []


def _jsonl(pair: dict) -> str:
    return json.dumps({k: pair[k] for k in ("id", "question", "answer", "attribute", "evidence")}, ensure_ascii=False)


def _write_csv(path: Path, rows: list[dict[str, str]]) -> None:
    columns = [*REVIEW_COLUMNS, *(k for k in dict.fromkeys(k for r in rows for k in r)  # a reviewer's own columns too
                                  if k not in REVIEW_COLUMNS and k != "line")]
    buf = io.StringIO()
    writer = csv.DictWriter(buf, columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows({c: r.get(c, "") for c in columns} for r in rows)
    write_whole(path, buf.getvalue())
