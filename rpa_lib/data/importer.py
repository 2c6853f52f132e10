"""Import a character from a user's own document: ``python -m rpa_lib.data new-character SLUG --name NAME --work WORK
--from FILE`` writes ``characters/SLUG/persona.md`` in the six-attribute layout and adds a ``labels.csv`` row.

How a section is placed. Each top-level section of the source (the highest heading level under a Markdown ``#`` title) goes
under one of the six attributes by :data:`HEADING_TABLE`: its heading, lowercased with punctuation removed, is
looked up whole, then the longest table key found in it as whole words ("Early life and family" -> "early
life" -> Activity). ``--map "HEADING=ATTRIBUTE"`` adds or overrides entries. A heading the table maps to None
(trivia, references, reception, ...) is dropped on purpose, as ``data/README.md`` asks. A heading that is in no
table is not placed unless ``llm=`` (``--classify-with-llm``, off by default) is given: the LLM then picks one of
the six attributes or none, and the report says so. The section's own heading becomes a ``###`` subsection
(unless it is the attribute's own name), its subsections go one level deeper, so the heading path survives as
each paragraph's context. Text before the first heading (a wiki page's lead, or the text under a Markdown
``#`` title) goes to ``Demographic Information > Overview``; two such blocks share that one subsection.

The report lists every section not placed (with its line in the source) and every table or code block removed.
The persona is written to a temporary folder, checked with :func:`rpa_lib.data.validate` (``full=False``) and only
then moved into place with its labels row; any failure writes nothing. Bad input is a
:class:`~rpa_lib.errors.DataError` naming the file and the problem.

This module does not rewrite prose (third person stays third person), does not write QA pairs (see
:mod:`rpa_lib.data.scaffold`) and never overwrites an existing character.
"""

from __future__ import annotations

import csv
import io
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from rpa_lib.data.dataset import Dataset, as_dataset
from rpa_lib.data.readers import LABEL_COLUMNS, TYPE_PATTERNS
from rpa_lib.data.sources import SourceDocument, read_source
from rpa_lib.errors import DataError
from rpa_lib.persona import ATTRIBUTES

DEMO, ACT, BELIEF, PSYCH, SKILL, SOCIAL = ATTRIBUTES
# Normalized heading (lowercase, words only) -> attribute; None: a kind of section the dataset leaves out.
HEADING_TABLE: dict[str, str | None] = {
    **{a.lower(): a for a in ATTRIBUTES},
    # Demographic Information: who and what the character is
    "overview": DEMO, "profile": DEMO, "introduction": DEMO, "about": DEMO, "basic information": DEMO,
    "personal information": DEMO, "general information": DEMO, "appearance": DEMO, "physical appearance": DEMO,
    "description": DEMO, "identity": DEMO, "demographics": DEMO, "name": DEMO, "origin": DEMO, "occupation": DEMO,
    # Activity: what happened, in order, and daily life
    "history": ACT, "biography": ACT, "story": ACT, "plot": ACT, "synopsis": ACT, "background": ACT,
    "backstory": ACT, "past": ACT, "events": ACT, "timeline": ACT, "early life": ACT, "career": ACT,
    "daily life": ACT, "routine": ACT, "daily routine": ACT, "activities": ACT, "adventures": ACT, "arc": ACT,
    # Belief and Value: principles and what the character stands for
    "beliefs": BELIEF, "belief": BELIEF, "values": BELIEF, "ideals": BELIEF, "principles": BELIEF,
    "philosophy": BELIEF, "motivation": BELIEF, "motivations": BELIEF, "goals": BELIEF, "creed": BELIEF,
    "worldview": BELIEF, "morals": BELIEF, "convictions": BELIEF,
    # Psychological Traits: personality, feelings, likes and habits
    "personality": PSYCH, "traits": PSYCH, "personality traits": PSYCH, "temperament": PSYCH, "psychology": PSYCH,
    "likes": PSYCH, "dislikes": PSYCH, "likes and dislikes": PSYCH, "habits": PSYCH, "fears": PSYCH,
    "hobbies": PSYCH, "quirks": PSYCH, "emotions": PSYCH, "character": PSYCH,
    # Skill and Expertise: what the character can do and knows
    "abilities": SKILL, "skills": SKILL, "powers": SKILL, "powers and abilities": SKILL, "techniques": SKILL,
    "expertise": SKILL, "talents": SKILL, "knowledge": SKILL, "magic": SKILL, "equipment": SKILL,
    "weapons": SKILL, "spells": SKILL, "training": SKILL, "strengths and weaknesses": SKILL, "weaknesses": SKILL,
    # Social Relationships: people
    "relationships": SOCIAL, "relations": SOCIAL, "family": SOCIAL, "friends": SOCIAL, "allies": SOCIAL,
    "enemies": SOCIAL, "rivals": SOCIAL, "companions": SOCIAL, "acquaintances": SOCIAL, "romance": SOCIAL,
    # left out on purpose (data/README.md: no trivia, speculation, reception or production facts)
    "trivia": None, "references": None, "notes": None, "footnotes": None, "sources": None, "external links": None,
    "see also": None, "gallery": None, "reception": None, "popularity": None, "production": None,
    "voice actors": None, "behind the scenes": None, "in other media": None, "navigation": None,
    "speculation": None, "quotes": None, "merchandise": None, "etymology": None,
}
UNKNOWN = "?"
SLUG = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")


def normalize(heading: str) -> str:
    """``normalize("Powers & Abilities!") == "powers abilities"``"""
    return " ".join(re.sub(r"[^a-z0-9]+", " ", heading.lower()).split())


def place(heading: str, table: dict[str, str | None] = HEADING_TABLE) -> str | None:
    """The attribute of a top-level heading, None (left out on purpose) or :data:`UNKNOWN`.

    >>> place("Powers and Abilities"), place("Early life and family"), place("Trivia"), place("Reception history")
    ('Skill and Expertise', 'Activity', None, None)
    """
    key = normalize(heading)
    if key in table:
        return table[key]
    words = f" {key} "
    for entry in sorted(table, key=len, reverse=True):
        if f" {entry} " in words:
            return table[entry]
    return UNKNOWN


@dataclass
class Imported:
    """What an import wrote and what it left out."""

    slug: str
    persona_path: Path
    report: list[str] = field(default_factory=list)  # "line N: ..." for each section not placed or thing removed
    placed: dict[str, int] = field(default_factory=dict)  # attribute -> paragraphs

    def summary(self) -> str:
        counts = ", ".join(f"{a}: {n}" for a, n in self.placed.items())
        return f"wrote {self.persona_path} ({counts} paragraphs)"


def plan(doc: SourceDocument, name: str, table: dict[str, str | None] = HEADING_TABLE, llm=None) -> tuple[str, list[str], dict]:
    """The persona text, the report and paragraphs per attribute for a read document (nothing written)."""
    headed = [s for s in doc.sections if s.level > 0]
    skip_title = doc.format != "mediawiki" and doc.title is not None  # a wiki page's title is no heading
    top = min(s.level for s in headed if not (skip_title and s.level == 1)) if len(headed) > skip_title else 1
    out: dict[str, list[tuple[int, str, list[str]]]] = {a: [] for a in ATTRIBUTES}  # (depth, title, paragraphs)
    report = [f"line {line}: {what} removed" for line, what in doc.removed]
    current: str | None = None
    own_name = False
    dropped_under = ""
    overview: list[str] = []
    for s in doc.sections:
        if s.level == 0 or s.level < top:  # text before the first heading, or under the document's own title
            if s.paragraphs:
                overview += s.paragraphs
                report.append(f"line {s.line}: text before the first heading placed under {DEMO} > Overview")
            continue
        if s.level == top:
            current = place(s.title, table)
            if current == UNKNOWN and llm is not None:
                current = classify(llm, s.title, s.paragraphs, doc.path, s.line)
                report.append(f"line {s.line}: section {s.title!r} placed by the LLM: {current or 'none of the six'}")
            own_name = current is not None and current != UNKNOWN and normalize(s.title) == normalize(current)
            dropped_under = s.title
            if current is None:
                report.append(f"line {s.line}: section {s.title!r} not placed: left out on purpose (its heading maps "
                              "to none of the six attributes in the table)")
            elif current == UNKNOWN:
                report.append(f"line {s.line}: section {s.title!r} not placed: heading not in the table (map it with "
                              f"--map {s.title!r}=ATTRIBUTE, or use --classify-with-llm)")
            else:
                out[current].append((2 if own_name else 3, s.title, s.paragraphs))
            continue
        if current in (None, UNKNOWN):
            report.append(f"line {s.line}: subsection {s.title!r} not placed: it is under {dropped_under!r}")
            continue
        out[current].append((min(6, s.level - top + (2 if own_name else 3)), s.title, s.paragraphs))
    if overview:
        out[DEMO].insert(0, (3, "Overview", overview))
    report.sort(key=lambda r: int(r.split(":")[0].split()[1]))
    lines = [f"# {name}", ""]
    placed = {}
    for attribute in ATTRIBUTES:
        lines += [f"## {attribute}", ""]
        depth_now = 2
        for depth, title, paragraphs in out[attribute]:
            depth = min(depth, depth_now + 1)  # never skip a level
            if depth > 2:
                lines += [f"{'#' * depth} {title}", ""]
                depth_now = depth
            for p in paragraphs:
                lines += [p, ""]
        placed[attribute] = sum(len(p) for _, _, p in out[attribute])
    return "\n".join(lines).rstrip("\n") + "\n", report, placed


CLASSIFY_PROMPT = ("A person is turning notes about a fictional character into a profile with six parts: {options}. "
                   "Below is one section of the notes, its heading and its opening. Which part does it belong to? "
                   "Answer with the part's name, or 'none of these' if it is about the real world (production, "
                   "reception, trivia) rather than the character.\n\nHeading: {heading}\nOpening: {opening}")


def classify(llm, heading: str, paragraphs: list[str], path: Path = Path(), line: int | None = None) -> str | None:
    """One of the six attributes for a heading the table does not know, chosen by ``llm``; None: none of them.
    A failed LLM call is a DataError (the import then writes nothing)."""
    from rpa_lib.llm import LLMError

    prompt = CLASSIFY_PROMPT.format(options=", ".join(ATTRIBUTES), heading=heading,
                                    opening=" ".join(paragraphs)[:600] or "(no text)")
    try:
        reply = llm.choose([{"role": "user", "content": prompt}], [*ATTRIBUTES, "none of these"],
                           name=f"classify heading {heading[:40]!r}")
    except LLMError as e:
        raise DataError(path, line, f"the LLM could not place section {heading!r} ({e}); nothing written: retry, or "
                                    "place it with --map") from None
    return None if reply.text == "none of these" else reply.text


def parse_mapping(items: list[str] | None) -> dict[str, str | None]:
    """``--map`` values (``"Heading=Attribute"``, ``"Heading=none"``) as table entries; ValueError otherwise."""
    table = {}
    for item in items or []:
        heading, sep, attribute = item.rpartition("=")
        attribute = attribute.strip()
        match = next((a for a in ATTRIBUTES if a.lower() == attribute.lower()), None)
        if not sep or not heading.strip() or (match is None and attribute.lower() != "none"):
            raise ValueError(f"--map {item!r}: expected 'HEADING=ATTRIBUTE' with one of {', '.join(ATTRIBUTES)} or none")
        table[normalize(heading)] = match
    return table


def new_character(slug: str, source: str | Path, *, name: str, work: str, data: Dataset | str | Path | None = None,
                  mapping: dict[str, str | None] | None = None, llm=None, mbti: str = "", sloan: str = "") -> Imported:
    """Import ``source`` as character ``slug`` of ``data`` (default the repository's data/); see the module doc."""
    from rpa_lib.data.validate import validate

    ds = as_dataset(data)
    if not SLUG.match(slug):
        raise DataError(ds.characters_dir / slug, None, f"slug {slug!r} must be lowercase words joined by hyphens, e.g. 'ada-lindqvist'")
    if (ds.characters_dir / slug).exists():
        raise DataError(ds.characters_dir / slug, None, f"character {slug!r} already exists; pick another slug")
    labels = ds.labels_path.read_text(encoding="utf-8") if ds.labels_path.is_file() else ""
    if any(row.get("slug") == slug for row in csv.DictReader(io.StringIO(labels))):
        raise DataError(ds.labels_path, None, f"labels.csv already has a row for {slug!r}")
    for kind, value in (("mbti", mbti), ("sloan", sloan)):
        if value and not TYPE_PATTERNS[kind].match(value):
            raise DataError(ds.labels_path, None, f"{kind} {value!r} is not a valid type")
    if not name.strip() or "\n" in name:
        raise DataError(source, None, "--name must be the character's name on one line")
    doc = read_source(source)
    text, report, placed = plan(doc, name.strip(), {**HEADING_TABLE, **(mapping or {})}, llm)
    empty = [a for a, n in placed.items() if not n]
    if empty:
        raise DataError(source, None, f"no section placed under {', '.join(map(repr, empty))}; every attribute needs "
                                      "text. Add such sections or map headings with --map. Report:\n  " + "\n  ".join(report))
    ds.characters_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".import-{slug}-", dir=ds.characters_dir))
    try:
        folder = staging / "characters" / slug
        folder.mkdir(parents=True)
        (folder / "persona.md").write_text(text, encoding="utf-8")
        (folder / "IMPORT.md").write_text(_report_file(source, doc.format, report), encoding="utf-8")
        problems = validate(Dataset(staging), [slug], full=False)
        if problems:
            raise DataError(source, None, "the imported persona does not validate:\n  " + "\n  ".join(problems))
        row = io.StringIO()
        writer = csv.writer(row, lineterminator="\n")
        if not labels:
            writer.writerow(LABEL_COLUMNS)
        writer.writerow([slug, name.strip(), work.strip(), mbti, sloan])
        new_labels = staging / "labels.csv"
        new_labels.write_text(labels + ("" if not labels or labels.endswith("\n") else "\n") + row.getvalue(),
                              encoding="utf-8")
        os.replace(folder, ds.characters_dir / slug)
        try:
            os.replace(new_labels, ds.labels_path)
        except OSError:
            shutil.rmtree(ds.characters_dir / slug)
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return Imported(slug, ds.persona_path(slug), report, placed)


def _report_file(source, fmt: str, report: list[str]) -> str:
    body = "\n".join(f"- {r}" for r in report) or "- every section was placed"
    return (f"# Import report\n\nImported from `{Path(source).name}` ({fmt}) by `python -m rpa_lib.data new-character`."
            f"\nLines are the source file's. Sections not placed and things removed:\n\n{body}\n")
