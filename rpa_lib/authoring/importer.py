"""Import a user's own document as a character: ``characters/SLUG/persona.md`` in the six-attribute layout, an
``IMPORT.md`` report beside it and a ``labels.csv`` row, in the user's data folder unless ``data=`` names another.
Sections are placed by ``--map``, :data:`HEADING_TABLE`, an optional LLM, then by content
(``docs/your_own_character.md``); the persona is validated before anything is written. This module does not
rewrite prose, write QA pairs (:mod:`~rpa_lib.authoring.scaffold`) or overwrite an existing character."""

from __future__ import annotations

import csv
import difflib
import io
import itertools
import os
import re
import shutil
import tempfile
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from rpa_lib.authoring.document import SourceDocument
from rpa_lib.authoring.sources import read_source
from rpa_lib.data.dataset import Dataset, user_dataset
from rpa_lib.data.readers import LABEL_COLUMNS, TYPE_PATTERNS
from rpa_lib.data.validate import validate
from rpa_lib.embeddings import get_embedder
from rpa_lib.errors import DataError
from rpa_lib.llm import LLMError
from rpa_lib.persona import ATTRIBUTES, HEADING_LINE

DEMO, ACT, BELIEF, PSYCH, SKILL, SOCIAL = ATTRIBUTES
_HEADINGS = {  # attribute -> normalized headings (lowercase, words only); None: a kind of section left out
    DEMO: "overview, profile, introduction, about, basic information, personal information, general information, "
          "appearance, physical appearance, description, identity, demographics, name, origin, occupation",
    ACT: "history, biography, story, plot, synopsis, background, backstory, past, events, timeline, early life, "
         "career, daily life, routine, daily routine, activities, adventures, arc",
    BELIEF: "beliefs, belief, values, ideals, principles, philosophy, motivation, motivations, goals, creed, "
            "worldview, morals, convictions",
    PSYCH: "personality, traits, personality traits, temperament, psychology, likes, dislikes, likes and dislikes, "
           "habits, fears, hobbies, quirks, emotions, character, characterization, characterisation, "
           "personality and traits",
    SKILL: "abilities, skills, powers, powers and abilities, techniques, expertise, talents, knowledge, magic, "
           "equipment, weapons, spells, spell casting, spellcasting, magic casting, training, "
           "strengths and weaknesses, weaknesses",
    SOCIAL: "relationships, relations, family, friends, allies, enemies, rivals, companions, acquaintances, romance",
    # data/README.md: no trivia, speculation, reception or production facts
    None: "trivia, references, notes, footnotes, sources, external links, see also, gallery, reception, popularity, "
          "production, voice actors, behind the scenes, in other media, navigation, speculation, quotes, "
          "merchandise, etymology, portrayal, portrayals, portrayal in adaptations, adaptations, in adaptations, "
          "portrayal in film, film adaptations, cultural impact, creation, conception, development, "
          "critical reception, further reading, appearances, bibliography, translations, names in other languages, "
          "contents, table of contents, design, concept, concept art, character design, character creation, "
          "character concept, casting, voice acting, voice actor, voice actress, voice cast, themes, theme, motifs, "
          "symbolism, analysis, interpretation, interpretations, in popular culture, popular culture, "
          "critical response, critical reaction, critical analysis, reviews, publication history, inspiration, "
          "inspirations, awards and nominations, accolades, merchandising, cultural references",
}
HEADING_TABLE: dict[str, str | None] = {**{a.lower(): a for a in ATTRIBUTES},
                                        **{h: a for a, hs in _HEADINGS.items() for h in hs.split(", ")}}
UNKNOWN = "?"
FOLLOW = "with its section"  # a subsection the heading table places where its section is: it stays under it
REAL_WORLD = "the real world"  # content placement's seventh option: dropped
LETTERS = str.maketrans({"ß": "ss", "æ": "ae", "Æ": "Ae", "œ": "oe", "Œ": "Oe", "ø": "o", "Ø": "O", "ł": "l",
                        "Ł": "L", "đ": "d", "Đ": "D", "þ": "th", "Þ": "Th"})  # letters NFKD does not decompose
SLUG = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
NEAR_MISS = 0.85  # difflib ratio for a heading to match a table or --map entry it misspells
# a section that only gathers others ("== Overview ==" over "=== Appearance ===", "=== Personality ==="): each of its
# subsections the heading table knows is placed by its own heading, the others go with it
OVERVIEWS = {"overview", "character overview", "profile", "character profile", "introduction", "about",
             "general information", "basic information", "personal information"}
REAL_WORLD_FIELDS = re.compile(r"first appearance|last appearance|created by|creator|portrayed by|voiced by|"
                               r"played by|actor|debut|designer|appears in|publisher|based on|portrayer|voice|"
                               r"^(?:first|last)$", re.I)  # infobox fields left out ({{Infobox character}}'s too)
MOVE_MARGIN = 0.12  # cosine by which a paragraph must be closer to another attribute to leave its section
NEAR_TIE = 0.05  # cosine by which content's choice must lead the runner-up; under it the headings' placement stands
TIE = "near tie by content"  # how the report names one (a section's reason starting so is listed with the ties)
DESCRIPTIONS = {
    DEMO: "Who the character is: their name, titles, age, birth, birthplace, home, race or species, family origin, "
          "nationality, occupation, rank, and physical appearance such as height, hair, eyes and clothing.",
    ACT: "What the character did and what happened to them: the events of their life in order, journeys, battles, "
         "quests, deeds, their later years and death, and their daily routine.",
    BELIEF: "What the character believes and values: their principles, ideals, morals, faith, convictions, oaths, "
            "what they think is right and wrong, and the goals they live for.",
    PSYCH: "The character's personality and inner life: temperament, moods, emotions, fears, likes and dislikes, "
           "habits and quirks, how they behave and feel.",
    SKILL: "What the character can do and knows: abilities, skills, powers, training, fighting techniques, weapons, "
           "magic, crafts, languages and expertise.",
    SOCIAL: "The character's relationships with other people: family members, parents, siblings, spouse, friends, "
            "lovers, allies, rivals, enemies, mentors, students and companions.",
    REAL_WORLD: "The real world outside the story: the author who created the character, books, films, television "
                "and stage adaptations, actors who played or voiced the character, publication history, critics' "
                "reception, fans and merchandise.",
}


def normalize(heading: str) -> str:
    """Casefolded words of any script: ``normalize("Powers & Abilities!") == "powers abilities"``, ``"人物"``."""
    return " ".join(re.sub(r"[\W_]+", " ", heading.casefold()).split())


def slugify(title: str) -> str:
    """A page title as a slug, accents folded: ``slugify("Amélie (Frieren)") == "amelie-frieren"``; ``""`` for a
    title with no Latin letter or digit (``"フリーレン"``)."""
    folded = unicodedata.normalize("NFKD", title.translate(LETTERS)).encode("ascii", "ignore").decode()
    return "-".join(normalize(folded).split())


def lookup(heading: str, table: dict[str, str | None] = HEADING_TABLE) -> tuple[str | None, str] | None:
    """``(attribute or None, how)`` for a heading the table knows (whole, by a key in it, or a near miss), else None.

    >>> lookup("Personallity"), lookup("Powers and Abilities")[0], lookup("Early life and family")[0], lookup("Trivia")
    (('Psychological Traits', "near miss of 'personality'"), 'Skill and Expertise', 'Activity', (None, "heading 'trivia'"))
    """
    key = normalize(heading)
    if key in table:
        return table[key], f"heading {key!r}"
    words = f" {key} "
    for entry in sorted(table, key=len, reverse=True):
        if f" {entry} " in words:
            return table[entry], f"{entry!r} in the heading"
    close = near_miss(key, table)
    return (table[close], f"near miss of {close!r}") if close else None


def near_miss(key: str, entries) -> str | None:
    """The entry a normalized heading misspells, or None: ``near_miss("backgroud", HEADING_TABLE) == "background"``."""
    # a typo seldom changes a word's first letter; a different word often does ("fasting" is no "casting")
    return next(iter(difflib.get_close_matches(key, [e for e in entries if e[:1] == key[:1]], 1, NEAR_MISS)), None)


class ContentPlacer:
    """Places text by the cosine of its embedding to each of :data:`DESCRIPTIONS`: ``ContentPlacer("minilm")``."""

    def __init__(self, embedder="minilm"):
        self.embedder = get_embedder(embedder) if isinstance(embedder, str) else embedder
        self._targets = self._encode(list(DESCRIPTIONS.values()))

    def _encode(self, texts: list[str]):
        import numpy as np

        v = np.asarray(self.embedder.encode(texts), dtype=float)
        return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)

    def scores(self, texts: list[str]) -> list[dict[str, float]]:
        """For each text, ``{option: cosine}`` over the six attributes and :data:`REAL_WORLD`."""
        if not texts:
            return []
        sims = self._encode(texts) @ self._targets.T
        return [dict(zip(DESCRIPTIONS, map(float, row), strict=True)) for row in sims]


def _best(score: dict[str, float]) -> tuple[str | None, str]:
    """``(closest option, report reason naming the runner-up)``; None when it leads by less than :data:`NEAR_TIE`."""
    first, second = sorted(score, key=score.get, reverse=True)[:2]
    margin = score[first] - score[second]
    if margin < NEAR_TIE:
        return None, (f"{TIE}: {first} {score[first]:.2f}, {second} {score[second]:.2f} "
                      f"(margin {margin:.2f}, under {NEAR_TIE})")
    return first, f"content: closest to {first} ({score[first]:.2f}; next {second} {score[second]:.2f})"


@dataclass
class Imported:
    """What an import wrote and what it left out."""

    slug: str
    persona_path: Path
    report: list[str] = field(default_factory=list)  # "line N: ..." for every placement and everything dropped
    placed: dict[str, int] = field(default_factory=dict)  # attribute -> paragraphs
    warnings: list[str] = field(default_factory=list)  # attributes with no text
    notes: list[str] = field(default_factory=list)  # which page and revision was read

    def summary(self) -> str:
        counts = ", ".join(f"{a}: {n}" for a, n in self.placed.items())
        return f"wrote {self.persona_path} ({counts} paragraphs)"


@dataclass
class Plan:
    """The persona text and report of one document, before anything is written."""

    text: str
    report: list[tuple[int, str]]  # (source line, what happened)
    placed: dict[str, int]
    empty: list[str]
    dropped: list[tuple[int, str]]  # (line, what): sections, tables, templates, fields
    rendered: list[tuple[int, str]]
    ties: list[tuple[int, str]]  # (line, what): content placements left to the headings, runner-up within NEAR_TIE
    origins: dict[int, tuple[int, str]] = field(default_factory=dict)  # persona line -> (source line or 0, where from)


def plan(doc: SourceDocument, name: str, table: dict[str, str | None] = HEADING_TABLE, llm=None, *,
         mapping: dict[str, str | None] | None = None, placer: ContentPlacer | None = None) -> Plan:
    """Place a read document; nothing is written."""
    headed = [s for s in doc.sections if s.level > 0]
    # the document's title is no section: a level-1 heading that is the title (a wiki export's page title is none,
    # unless the page repeats it as its only level-1 heading at the top)
    skip_title = doc.title is not None and bool(headed) and headed[0].level == 1 and (
        doc.format != "mediawiki" or normalize(headed[0].title) == normalize(doc.title)
        and sum(s.level == 1 for s in headed) == 1)
    top = min(s.level for s in headed if not (skip_title and s.level == 1)) if len(headed) > skip_title else 1
    # attribute -> (path under the attribute, paragraphs, source line, where from: "'History > Youth'", "the infobox")
    out: dict[str, list[tuple[tuple[str, ...], list[str], int, str]]] = {a: [] for a in ATTRIBUTES}
    report, ties, dropped = [], [], list(doc.removed)  # (source line, what happened)
    mapping, used = mapping or {}, set()  # the --map entries, and those that matched a heading
    overview, overview_line = [], None
    stack: list[tuple[int, str | None, tuple[str, ...], str]] = []  # (level, attribute, path under it, title)

    def decide(s, inherited: str | None) -> tuple[str | None, str] | None:
        """``(attribute, reason)``, the attribute None (dropped) or UNKNOWN (not placed) too; ``(FOLLOW, reason)``
        when its own heading places it where its overview section is, or None: it goes with its section."""
        key = normalize(s.title)
        hit = key if key in mapping else near_miss(key, mapping)
        if hit is not None:
            used.add(hit)
            return mapping[hit], f"--map {hit!r}" + ("" if hit == key else " (near miss)")
        is_top = s.level == top or not stack  # "=== X ===" before the page's first "== Y ==": no section above it
        gathered = bool(stack) and inherited is not None and normalize(stack[-1][3]) in OVERVIEWS
        if not is_top and inherited != UNKNOWN and not gathered:
            return None
        found = lookup(s.title, table)
        if found:  # "Overview > Appearance" placed where its overview is: kept under it
            return (FOLLOW if gathered and found[0] == inherited else found[0]), f"heading table: {found[1]}"
        if not is_top:
            return None
        if llm is not None:
            chosen = classify(llm, s.title, s.paragraphs, doc.path, s.line)
            return chosen, f"the LLM chose {chosen or 'none of the six'}"
        text = " ".join(_section_text(doc, s))
        if placer is not None and text:
            best, reason = _best(placer.scores([f"{s.title}. {text[:2000]}"])[0])
            return (UNKNOWN if best is None else None if best == REAL_WORLD else best), reason
        return UNKNOWN, "heading not in the table" + ("" if placer else ", and no content placement (--embedder none)")

    for s in doc.sections:
        if s.level == 0 or s.level < top:  # text before the first heading, or under the document's own title
            if s.paragraphs:
                overview += s.paragraphs
                overview_line = s.line if overview_line is None else overview_line
                report.append((s.line, f"text before the first heading -> {DEMO} > Overview"))
            continue
        while stack and stack[-1][0] >= s.level:
            stack.pop()
        inherited = stack[-1][1] if stack else UNKNOWN
        where = " > ".join([*(t for *_, t in stack), s.title])
        decided = decide(s, inherited)
        if decided is not None and decided[0] is not FOLLOW:
            current, reason = decided
            own_name = current not in (None, UNKNOWN) and normalize(s.title) == normalize(current)
            path = () if own_name else (s.title,)
        else:
            current, path = inherited, stack[-1][2] + (s.title,)
            path = path if len(path) <= 4 else (*path[:3], s.title)  # "######" is the deepest heading
            reason = decided[1] if decided else f"with {stack[-1][3]!r}"
            decided = None
        stack.append((s.level, current, path, s.title))
        if current is None:
            report.append((s.line, f"{where!r} dropped ({reason})"))
            if decided is not None:
                dropped.append((s.line, f"section {where!r}"))
            continue
        if current == UNKNOWN:
            report.append((s.line, f"{where!r} not placed: {reason}; map it with --map {s.title!r}=ATTRIBUTE"))
            if reason.startswith(TIE):
                ties.append(report[-1])
            dropped.append((s.line, f"section {where!r}"))
            continue
        report.append((s.line, f"{where!r} -> {current} ({reason})"))
        kept = list(s.paragraphs)
        if placer is not None and len(kept) > 1:
            kept = _move_paragraphs(placer, s, where, current, kept, out, report, ties)
        if kept or normalize(s.title) not in OVERVIEWS:  # an overview heading stays only if something is under it
            out[current].append((path, kept, s.line, repr(where)))
    unused = sorted(set(mapping) - used)
    if unused:
        headings = "; ".join(s.title for s in headed)
        raise DataError(doc.path, None, f"--map {', '.join(map(repr, unused))} matches no heading of the document; "
                                        f"its headings: {headings}")
    real = [(n, f) for n, f, _ in doc.facts if REAL_WORLD_FIELDS.search(f)]
    dropped += [(n, f"infobox field {f!r} (real world)") for n, f in real]
    kept_facts = [(n, f, v) for n, f, v in doc.facts if not REAL_WORLD_FIELDS.search(f)]
    if kept_facts:
        facts = " ".join(f"{f}: {v.rstrip('.')}." for _, f, v in kept_facts)
        out[DEMO].insert(0, (("Infobox",), [facts], kept_facts[0][0], "the infobox"))
        report.append((kept_facts[0][0], f"infobox: {len(kept_facts)} field(s) -> {DEMO} > Infobox "
                                         f"({', '.join(f for _, f, _ in kept_facts)})"
                                         + (f"; {len(real)} real-world field(s) dropped" if real else "")))
    if overview:
        out[DEMO].insert(0, (("Overview",), overview, overview_line, "the text before the first heading"))
    lines = [f"# {name}", ""]
    origins: dict[int, tuple[int, str]] = {1: (0, "the persona's title, the character's name")}
    for attribute in ATTRIBUTES:
        origins[len(lines) + 1] = (0, f"the persona's heading {attribute!r}")
        lines += [f"## {attribute}", ""]
        for depth, title, paragraphs, origin in _joined(out[attribute]):
            if depth > 2:
                origins[len(lines) + 1] = origin
                lines += [f"{'#' * depth} {title}", ""]
            for p, origin in paragraphs:  # a source line that reads as a heading ("# note" in a .txt) stays prose
                origins[len(lines) + 1] = origin
                lines += ["\n".join(t.lstrip("#").lstrip() if HEADING_LINE.match(t) else t for t in p.split("\n")), ""]
    placed = {a: sum(len(p) for _, p, _, _ in out[a]) for a in ATTRIBUTES}
    empty = [a for a, n in placed.items() if not n]
    report.sort(key=lambda r: r[0])
    return Plan("\n".join(lines).rstrip("\n") + "\n", report, placed, empty, sorted(dropped), sorted(doc.rendered),
                sorted(ties), origins)


@dataclass
class _Heading:
    """A heading of the persona being written: its paragraphs (text, origin) and subsections by title."""

    origin: tuple[int, str]  # (source line, the source's heading path) of its first section
    paragraphs: list[tuple[str, tuple[int, str]]] = field(default_factory=list)
    children: dict[str, _Heading] = field(default_factory=dict)
    title: str = ""


def _joined(entries: list[tuple[tuple[str, ...], list[str], int, str]]
            ) -> list[tuple[int, str, list[tuple[str, tuple[int, str]]], tuple[int, str]]]:
    """An attribute's sections, each given by its heading path under the attribute, as ``(depth, title,
    [(paragraph, origin)], origin)`` in the order they first come, a subsection under its section, and sections of
    one path joined into the first with their subsections (the lead and an "Overview" section, two "History"
    sections, paragraphs moved one by one out of one section): a heading path may not repeat (rpa_lib.data).

    >>> [(d, t, [p for p, _ in ps]) for d, t, ps, _ in _joined([(("Overview",), ["Lead."], 1, ""),
    ...     (("History",), [], 2, ""), (("History", "Youth"), ["A."], 3, ""), (("Personality",), ["Shy."], 4, ""),
    ...     (("History", "Youth"), ["B."], 5, ""), (("Overview",), ["More."], 6, "")])]
    [(2, '', []), (3, 'Overview', ['Lead.', 'More.']), (3, 'History', []), (4, 'Youth', ['A.', 'B.']), \
(3, 'Personality', ['Shy.'])]
    """
    root = _Heading((0, ""))
    for path, paragraphs, line, where in entries:
        node = root
        for title in path:
            parsed = HEADING_LINE.match(f"### {title}")
            key = parsed.group(2).strip() if parsed else title  # as the persona's reader will read it
            node = node.children.setdefault(key, _Heading((line, where), title=title))
        node.paragraphs += [(p, (line, where)) for p in paragraphs]

    def walk(node: _Heading, depth: int):
        yield depth, node.title, node.paragraphs, node.origin
        for child in node.children.values():
            yield from walk(child, depth + 1)

    return list(walk(root, 2))


def _section_text(doc: SourceDocument, section) -> list[str]:
    """The section's paragraphs, its subsections' included."""
    below = itertools.takewhile(lambda s: s.level > section.level, doc.sections[doc.sections.index(section) + 1:])
    return [*section.paragraphs, *(p for s in below for p in s.paragraphs)]


def _move_paragraphs(placer, s, where, attribute, paragraphs, out, report, ties) -> list[str]:
    """The paragraphs that stay; one clearly closer to another attribute (:data:`MOVE_MARGIN`) moves there, unless
    a third attribute is as close (:data:`NEAR_TIE`): then it stays, reported in ``report`` and ``ties``."""
    kept = []
    for n, (p, score) in enumerate(zip(paragraphs, placer.scores(paragraphs), strict=True), start=1):
        best, reason = _best({a: score[a] for a in ATTRIBUTES})
        clear = max(score[a] for a in ATTRIBUTES) - score[attribute] >= MOVE_MARGIN
        what = f"paragraph {n} of {s.title!r} ({p[:40]!r}...)"
        if clear and best:
            out[best].append(((s.title,), [p], s.line, repr(where)))
            report.append((s.line, f"{what} -> {best} (content: {score[best]:.2f} against {attribute} "
                                   f"{score[attribute]:.2f})"))
            continue
        kept.append(p)
        if clear:
            report.append((s.line, f"{what} stays in {attribute}: {reason}"))
            ties.append(report[-1])
    return kept


CLASSIFY_PROMPT = ("A person is turning notes about a fictional character into a profile with six parts: {options}. "
                   "Below is one section of the notes, its heading and its opening. Which part does it belong to? "
                   "Answer with the part's name, or 'none of these' if it is about the real world (production, "
                   "reception, trivia) rather than the character.\n\nHeading: {heading}\nOpening: {opening}")


def classify(llm, heading: str, paragraphs: list[str], path: Path = Path(), line: int | None = None) -> str | None:
    """The attribute ``llm`` chooses for a heading the table does not know (None: none); DataError if it fails."""
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
    """``--map`` values (``"Heading=Attribute"``, ``"Heading=none"``) as table entries; ValueError for another."""
    table = {}
    for item in items or []:
        heading, sep, attribute = item.rpartition("=")
        attribute = attribute.strip()
        match = next((a for a in ATTRIBUTES if a.lower() == attribute.lower()), None)
        if not sep or not heading.strip() or (match is None and attribute.lower() != "none"):
            raise ValueError(f"--map {item!r}: expected 'HEADING=ATTRIBUTE' with one of {', '.join(ATTRIBUTES)} "
                             "or none")
        if not normalize(heading):
            raise ValueError(f"--map {item!r}: the heading has no letter or digit to match")
        table[normalize(heading)] = match
    return table


def new_character(slug: str, source: str | Path, *, name: str | None = None, work: str,
                  data: Dataset | str | Path | None = None, mapping: dict[str, str | None] | None = None, llm=None,
                  embedder=None, page: str | None = None, mbti: str = "", sloan: str = "",
                  document: SourceDocument | None = None) -> Imported:
    """Import ``source`` as character ``slug``. ``name`` defaults to the document's title; ``embedder`` (a name,
    embedder or :class:`ContentPlacer`) places by content, None by headings only; ``page`` picks an export's page;
    ``document``: ``source`` (that page) read already (:func:`~rpa_lib.authoring.sources.source_document`), not read
    again."""
    ds = user_dataset(data)
    if not SLUG.match(slug):
        raise DataError(ds.characters_dir / slug, None,
                        f"slug {slug!r} must be lowercase words joined by hyphens, e.g. 'ada-lindqvist'")
    if (ds.characters_dir / slug).exists():
        raise DataError(ds.characters_dir / slug, None, f"character {slug!r} already exists; pick another slug")
    labels = ds.labels_path.read_text(encoding="utf-8") if ds.labels_path.is_file() else ""
    if any(row.get("slug") == slug for row in csv.DictReader(io.StringIO(labels))):
        raise DataError(ds.labels_path, None, f"labels.csv already has a row for {slug!r}")
    for kind, value in (("mbti", mbti), ("sloan", sloan)):
        if value and not TYPE_PATTERNS[kind].match(value):
            raise DataError(ds.labels_path, None, f"--{kind} {value!r} is not a valid type: expected "
                                                  + ("four capitals such as INTJ" if kind == "mbti" else
                                                     "five capitals such as RCOAI (S/R, L/C, O/U, A/E, I/N)"))
    doc = read_source(source, page) if document is None else document
    name = (name or doc.title or "").strip()
    if not name or "\n" in name:
        raise DataError(source, None, "--name must be the character's name on one line (the document has no title)")
    placer = ContentPlacer(embedder) if embedder is not None and not isinstance(embedder, ContentPlacer) else embedder
    done = plan(doc, name, {**HEADING_TABLE, **(mapping or {})}, llm, mapping=mapping, placer=placer)
    if not any(done.placed.values()):
        raise DataError(source, None, "no section was placed under any attribute. Report:\n  "
                        + "\n  ".join(f"line {n}: {r}" for n, r in done.report))
    ds.characters_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".import-{slug}-", dir=ds.characters_dir))
    try:
        folder = staging / "characters" / slug
        folder.mkdir(parents=True)
        (folder / "persona.md").write_text(done.text, encoding="utf-8")
        (folder / "IMPORT.md").write_text(report_file(source, doc, done), encoding="utf-8")
        problems = validate(Dataset(staging), [slug], full=False)
        if problems:  # named by the source's lines: the staged file is gone when the user reads this
            raise DataError(source, None, "the imported persona does not validate (nothing written):\n  "
                            + "\n  ".join(_in_source(p, folder / "persona.md", staging, done) for p in problems))
        row = io.StringIO()
        new_row = [slug, name, work.strip(), mbti, sloan]
        csv.writer(row, lineterminator="\n").writerows([new_row] if labels else [LABEL_COLUMNS, new_row])
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
    warnings = [f"line {n}: {r}" for n, r in done.ties] + [
        f"no text under {a}: no section or paragraph of the source was placed there; methods answer from the other "
        "attributes" for a in done.empty]
    return Imported(slug, ds.persona_path(slug), [f"line {n}: {r}" for n, r in done.report], done.placed, warnings,
                    doc.notes)


def _in_source(problem: str, persona: Path, staging: Path, done: Plan) -> str:
    """A problem of the staged ``persona`` (``"<persona>:9: heading path ... repeats line 5: ..."``) told by the
    source's lines and headings it came from, naming no staged file.

    >>> done = Plan("", [], {}, [], [], [], [], {5: (1, "the text before the first heading"), 9: (2, "'Overview'")})
    >>> _in_source("/s/persona.md:9: heading path 'X' repeats line 5: merge the two", Path("/s/persona.md"), Path("/s"),
    ...            done)
    "line 2 ('Overview'): heading path 'X' repeats line 1 (the text before the first heading): merge the two"
    """

    def source_line(n: str) -> str:  # line 0: a line the importer writes (the title, an attribute's heading)
        line, where = done.origins.get(int(n), (None, ""))
        return f"line {line} ({where})" if line else where or f"line {n} of the persona"

    m = re.match(rf"{re.escape(str(persona))}(?::(\d+))?: (.*)", problem, re.S)
    if m is None:
        return problem.replace(str(staging), "(staged import)")
    line, what = m.groups()
    what = re.sub(r"\brepeats line (\d+)", lambda r: f"repeats {source_line(r.group(1))}", what)
    return f"{source_line(line)}: {what}" if line else f"the persona: {what}"


def report_file(source, doc: SourceDocument, done: Plan) -> str:
    """``IMPORT.md``: the source, every placement, the empty attributes, templates rendered and what was dropped."""
    kinds = Counter(re.sub(r" ['(].*", "", what) for _, what in done.dropped)
    out = [f"# Import report\n\nImported from `{Path(source).name}` ({doc.format}) by "
           "`python -m rpa_lib.authoring new-character`. Lines are the source file's.\n"]
    out += [f"- {n}" for n in doc.notes]
    out.append("\n## Placements\n")
    out += [f"- line {n}: {r}" for n, r in done.report] or ["- nothing was placed"]
    out.append(f"\n## Near ties by content, left to the headings ({len(done.ties)})\n")
    out += [f"- line {n}: {r}" for n, r in done.ties] or ["- none"]
    out.append("\n## Attributes with no text\n")
    out += ([f"- {a}: methods answer from the other attributes" for a in done.empty]
            or ["- none: every attribute has text"])
    out.append(f"\n## Templates rendered as text ({len(done.rendered)})\n")
    out += [f"- line {n}: {what}" for n, what in done.rendered] or ["- none"]
    out.append(f"\n## Dropped ({len(done.dropped)}: " + (", ".join(f"{k} x{v}" for k, v in sorted(kinds.items()))
                                                         or "nothing") + ")\n")
    out += [f"- line {n}: {what}" for n, what in done.dropped] or ["- nothing"]
    return "\n".join(out) + "\n"
