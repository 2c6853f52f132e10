"""Check a whole dataset and report every problem as ``file[:line]: problem``: persona structure, QA pairs (schema,
counts, evidence verbatim in the persona, answers grounded in it: :mod:`rpa_lib.data.grounding`), labels and
questionnaires. ``full`` adds CharacterRAG-EN's dataset-wide counts (``docs/design/data.md``). This module collects
every problem; loading one file and raising on its first is :class:`~rpa_lib.data.Dataset`'s job."""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from rpa_lib.data.dataset import Dataset, as_dataset
from rpa_lib.data.grounding import persona_names, stem, stems, ungrounded, unsupported_words
from rpa_lib.data.readers import QUESTIONNAIRE_ITEMS, read_grounding_reviewed, read_labels, read_qa, read_questionnaire
from rpa_lib.data.records import QA
from rpa_lib.errors import DataError
from rpa_lib.persona import ATTRIBUTES, Persona, heading_path

QA_PER_CHARACTER = 30  # the paper set: 30 a character (5 per attribute); the "multi" set is extra
MIN_PARAGRAPH_CHARS = 40_000  # paragraph text per character (CharacterRAG-EN v2)
MIN_TOTAL_PARAGRAPH_CHARS = 600_000
MIN_MEDIAN_PARAGRAPHS = 3  # paragraphs per subsection, median per character
MIN_TWO_PARAGRAPH_QA = 3  # QA pairs whose evidence spans two paragraphs of one subsection


def _located(path: Path, problems) -> list[str]:
    return [f"{path}:{line}: {p}" if line else f"{path}: {p}" for line, p in problems]


def validate(data_dir: Dataset | str | Path | None = None, characters: list[str] | None = None,
             full: bool = True) -> list[str]:
    """Every problem found, as ``file:line: problem`` strings; empty when the data is valid."""
    ds = as_dataset(data_dir)
    slugs = characters or ds.slugs()
    out: list[str] = []
    if not slugs:
        out.append(f"{ds.characters_dir}: no character folders")
    total_chars = 0
    titles: dict[str, tuple[Path, str]] = {}  # slug -> (persona.md, its title)
    for slug in slugs:
        try:
            persona = ds.persona(slug)
        except DataError as e:
            out.append(str(e))
            continue
        titles[slug] = persona.path, persona.name
        total_chars += sum(len(p.text) for p in persona.paragraphs)
        out += _check_persona_shape(persona, full)
        qa_path = ds.qa_path(slug)
        if not full and not qa_path.is_file():
            continue  # a new character, imported but with no reviewed QA pairs yet (rpa_lib.authoring.scaffold)
        items, problems = read_qa(qa_path)
        out += _located(qa_path, problems)
        names, (name, work) = persona_names(persona.source), _profile(ds, slug, persona)
        for qa in items:
            out += [f"{qa_path}:{qa.line}: evidence of {qa.id} not found verbatim in persona.md: {ev[:70]!r}"
                    for ev in qa.evidence if ev not in persona.source]
            missing = ungrounded(qa.answer, qa.evidence, " ".join([qa.question, name, work]), names)
            if missing:
                out.append(f"{qa_path}:{qa.line}: the answer of {qa.id} uses {', '.join(map(repr, missing))}, found "
                           f"in no evidence string (add the persona sentence that says it)")
        if full and items:
            base = [q for q in items if q.set == "paper"]
            if len(base) != QA_PER_CHARACTER:
                out.append(f"{qa_path}: {len(base)} QA pairs in the paper set, expected {QA_PER_CHARACTER}")
            per_attr = Counter(q.attribute for q in base)
            uneven = {a: per_attr[a] for a in ATTRIBUTES if per_attr[a] != QA_PER_CHARACTER // len(ATTRIBUTES)}
            if uneven:
                out.append(f"{qa_path}: expected {QA_PER_CHARACTER // len(ATTRIBUTES)} QA per attribute in the paper "
                           f"set, found {uneven}")
            spanning = sum(spans_two_paragraphs(persona, q) for q in items)
            if spanning < MIN_TWO_PARAGRAPH_QA:
                out.append(f"{qa_path}: {spanning} QA pair(s) whose evidence spans two paragraphs of one subsection, "
                           f"expected at least {MIN_TWO_PARAGRAPH_QA}")
    if characters is None:
        if full and total_chars < MIN_TOTAL_PARAGRAPH_CHARS:
            out.append(f"{ds.characters_dir}: {total_chars:,} characters of paragraph text in all personas, "
                       f"expected at least {MIN_TOTAL_PARAGRAPH_CHARS:,}")
        rows, problems = read_labels(ds.labels_path)
        out += _located(ds.labels_path, problems)
        labelled = {r["slug"] for r in rows}
        out += [f"{ds.labels_path}: no row for character {s!r}" for s in slugs if s not in labelled]
        out += [f"{ds.labels_path}: row for {s!r} but no folder {ds.characters_dir / s}"
                for s in sorted(labelled - set(slugs))]
        out += [f"{ds.labels_path}: name {r['name']!r} of {r['slug']!r} is not the title of {titles[r['slug']][0]} "
                f"({titles[r['slug']][1]!r}): prompts would name the one, chunk headings the other"
                for r in rows if r["slug"] in titles and r["name"] != titles[r["slug"]][1]]
        for qpath in sorted(ds.questionnaires_dir.glob("*.json")):
            out += _located(qpath, read_questionnaire(qpath, full)[1])
        if full:
            out += [f"{ds.questionnaire_path(name)}: missing" for name in QUESTIONNAIRE_ITEMS
                    if not ds.questionnaire_path(name).is_file()]
    return out + grounding_report(ds, characters).problems()


@dataclass
class FlaggedPair:
    """A QA pair the content-word check flags: ``words`` in answer order, ``reviewed`` word -> reason from
    ``grounding_reviewed.csv``."""
    qa: QA
    path: Path
    words: list[str]
    reviewed: dict[str, str] = field(default_factory=dict)

    @property
    def unreviewed(self) -> list[str]:
        return [w for w in self.words if w not in self.reviewed]


@dataclass
class GroundingReport:
    """The content-word check over a dataset: flagged pairs, stale reviewed rows (matching no flag) and the
    reviewed file's own problems."""
    reviewed_path: Path
    characters: int = 0
    pairs: int = 0
    flagged: list[FlaggedPair] = field(default_factory=list)
    stale: list[dict] = field(default_factory=list)
    file_problems: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        unreviewed = [f for f in self.flagged if f.unreviewed]
        return {"pairs flagged": len(self.flagged), "words flagged": sum(len(f.words) for f in self.flagged),
                "words reviewed": sum(len(f.reviewed) for f in self.flagged),
                "pairs unreviewed": len(unreviewed), "words unreviewed": sum(len(f.unreviewed) for f in unreviewed),
                "stale rows": len(self.stale)}

    def summary(self) -> str:
        c = self.counts()
        return (f"content-word check: {self.characters} character(s), {self.pairs} pairs; {c['pairs flagged']} pairs "
                f"flagged with {c['words flagged']} words, {c['words reviewed']} reviewed in "
                f"{self.reviewed_path.name}; unreviewed: {c['words unreviewed']} words in {c['pairs unreviewed']} "
                f"pairs; stale rows: {c['stale rows']}")

    def problems(self) -> list[str]:
        unreviewed = [f"{f.path}:{f.qa.line}: the answer of {f.qa.id} uses {', '.join(map(repr, f.unreviewed))}: "
                      f"persona words in no evidence string (add the persona sentence that says it, or review the "
                      f"word in {self.reviewed_path.name})" for f in self.flagged if f.unreviewed]
        return self.file_problems + unreviewed + self.stale_problems()

    def stale_problems(self) -> list[str]:
        return [f"{self.reviewed_path}:{r['line']}: {r['id']} {r['word']!r} is not flagged (no such pair, or its "
                f"evidence or answer changed): remove the row" for r in self.stale]


def grounding_report(data_dir: Dataset | str | Path | None = None,
                     characters: list[str] | None = None) -> GroundingReport:
    """The content-word check on every QA pair (both sets) of ``characters`` (None: all), flags matched with
    ``grounding_reviewed.csv``. Characters that do not load are skipped (the validator reports them)."""
    ds = as_dataset(data_dir)
    slugs = characters or ds.slugs()
    report = GroundingReport(ds.grounding_reviewed_path)
    rows, problems = read_grounding_reviewed(report.reviewed_path)
    report.file_problems = _located(report.reviewed_path, problems)
    checked_ids: set[str] = set()
    for slug in slugs:
        try:
            persona = ds.persona(slug)
        except DataError:
            continue
        items, _ = read_qa(ds.qa_path(slug))  # its problems are the validator's to report
        if not items:
            continue
        report.characters += 1
        report.pairs += len(items)
        checked_ids |= {q.id for q in items}
        words, names, (name, work) = stems(persona.source), persona_names(persona.source), _profile(ds, slug, persona)
        for qa in items:
            flagged = unsupported_words(qa.answer, qa.evidence, " ".join([qa.question, name, work]), words, names)
            if flagged:
                report.flagged.append(FlaggedPair(qa, ds.qa_path(slug), flagged))
    by_pair = {f.qa.id: f for f in report.flagged}
    for row in rows:
        pair = by_pair.get(row["id"])
        match = [w for w in pair.words if stem(w) == stem(row["word"])] if pair else []
        if match:
            pair.reviewed[match[0]] = row["reason"]
        elif characters is None or row["id"] in checked_ids or row["id"].rsplit("-", 1)[0] in slugs:
            report.stale.append(row)  # rows of characters not checked (validate --character) are left alone
    return report


def _profile(ds: Dataset, slug: str, persona: Persona) -> tuple[str, str]:
    """``(name, work)``; the persona's title when labels.csv is broken (reported on its own)."""
    try:
        return ds.profile(slug)
    except DataError:
        return persona.name, ""


def subsection_sizes(persona: Persona) -> list[int]:
    """Paragraphs per ``###``-or-deeper heading that holds text."""
    return [len(s.paragraphs) for s in persona.sections if len(s.headings) >= 3]


def spans_two_paragraphs(persona: Persona, qa) -> bool:
    """Whether the pair's evidence lies in two or more paragraphs of one subsection."""
    where = [{(p.headings, p.start) for p in persona.paragraphs if ev in p.text} for ev in qa.evidence]
    if len(where) < 2 or not all(where):
        return False
    for headings in {h for found in where for h, _ in found}:
        starts = {start for found in where for h, start in found if h == headings}
        if len(starts) >= 2 and all(any(h == headings for h, _ in found) for found in where):
            return True
    return False


def _check_persona_shape(persona: Persona, full: bool) -> list[str]:
    out = []
    text = sum(len(p.text) for p in persona.paragraphs)
    sizes = subsection_sizes(persona)
    if full and text < MIN_PARAGRAPH_CHARS:
        out.append(f"{persona.path}: {text:,} characters of paragraph text, expected at least {MIN_PARAGRAPH_CHARS:,}")
    if full and sizes and statistics.median(sizes) < MIN_MEDIAN_PARAGRAPHS:
        out.append(f"{persona.path}: median {statistics.median(sizes)} paragraphs per subsection, expected at least "
                   f"{MIN_MEDIAN_PARAGRAPHS}")
    out += repeated_headings(persona)
    empty = persona.empty_attributes
    for attribute in ATTRIBUTES:
        subsections = {s.headings[2] for s in persona.sections if len(s.headings) > 2 and s.headings[1] == attribute}
        if full and len(subsections) < 2:
            out.append(f"{persona.path}: section {attribute!r} has {len(subsections)} '###' subsection(s), "
                       "expected at least 2")
        if full and attribute in empty:
            out.append(f"{persona.path}: section {attribute!r} has no text")
    return out + (empty_subsections(persona) if full else [])


def empty_subsections(persona: Persona) -> list[str]:
    """A problem for each ``###`` or deeper heading with no paragraph under it or its own subsections: nothing of it
    reaches a chunk, so its heading is a stray (an edit that left it, or text forgotten)."""
    held = {p.headings[:n] for p in persona.paragraphs for n in range(3, len(p.headings) + 1)}
    return [f"{persona.path}:{lineno}: heading {heading_path(path[1:])!r} has no text under it"
            for lineno, path in persona.headings if len(path) > 2 and path not in held]


def repeated_headings(persona: Persona) -> list[str]:
    """A problem for each heading whose whole path repeats an earlier heading's (two ``### Personality`` under one
    attribute): both subsections' chunks would carry one context, ``spans_two_paragraphs`` would take them for one
    subsection, and an edit by heading path could not tell them apart."""
    seen: dict[tuple[str, ...], int] = {}
    return [f"{persona.path}:{lineno}: heading path {heading_path(path[1:])!r} repeats line {seen[path]}: merge the "
            "two or rename one" for lineno, path in persona.headings if seen.setdefault(path, lineno) != lineno]


def empty_attributes(data_dir: Dataset | str | Path | None, characters: list[str] | None = None) -> list[str]:
    """A warning for each persona that parses and has an attribute with no text, and for each empty subsection
    (``validate(full=False)`` accepts them; ``full=True`` does not)."""
    ds = as_dataset(data_dir)
    out = []
    for slug in characters or ds.slugs():
        try:
            persona = ds.persona(slug)
        except DataError:
            continue  # reported by validate
        if persona.empty_attributes:
            out.append(f"{persona.path}: no text under {', '.join(map(repr, persona.empty_attributes))}: methods "
                       "answer from the other attributes")
        out += empty_subsections(persona)
    return out
