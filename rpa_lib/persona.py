"""Parse a persona document (``data/characters/<slug>/persona.md``; format in ``data/README.md``) into sections and
paragraphs, each with its heading path and its character offsets in the source. It only reads and checks structure:
it does not split text (see ``splitters``) and does not judge content.
"""

from __future__ import annotations

import os
import re
from bisect import bisect_left
from dataclasses import dataclass, field
from pathlib import Path

from rpa_lib.errors import DataError
from rpa_lib.paths import CHARACTERS_DIR, user_data_dir

ATTRIBUTES = ("Demographic Information", "Activity", "Belief and Value", "Psychological Traits", "Skill and Expertise",
              "Social Relationships")

HEADING_SEPARATOR = " > "


def heading_path(headings: tuple[str, ...]) -> str:
    """A heading path as one line.

    >>> heading_path(("Frieren", "Activity"))
    'Frieren > Activity'
    """
    return HEADING_SEPARATOR.join(headings)


HEADING_LINE = re.compile(r"^(#{1,6})[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")  # a Markdown heading; "### C#" keeps its "#"


class PersonaError(DataError):
    """A persona file that breaks the format (the file, the line and the problem)."""


@dataclass(frozen=True)
class Paragraph:
    """One block of prose, with where it sits in the document and in the file."""

    text: str
    headings: tuple[str, ...]  # ("Frieren", "Activity", "Journey to find Aureole")
    start: int  # character offset of the first character in the source
    end: int  # offset one past the last character
    line: int  # 1-based line number of the first line

    @property
    def attribute(self) -> str | None:
        return self.headings[1] if len(self.headings) > 1 else None

    @property
    def context(self) -> str:
        return heading_path(self.headings)


@dataclass(frozen=True)
class Section:
    """The body under one heading path, up to the next heading: a contiguous slice of the source."""

    headings: tuple[str, ...]
    start: int
    end: int
    paragraphs: tuple[Paragraph, ...]


@dataclass(frozen=True)
class Persona:
    slug: str
    name: str
    source: str
    path: Path
    sections: tuple[Section, ...] = field(repr=False)
    headings: tuple[tuple[int, tuple[str, ...]], ...] = field(repr=False)  # (line, path) of each heading

    @property
    def paragraphs(self) -> list[Paragraph]:
        return [p for s in self.sections for p in s.paragraphs]

    @property
    def longest_paragraph(self) -> int:
        """The AMADEUS l_max in characters: the length of the persona's longest paragraph."""
        return max(len(p.text) for p in self.paragraphs)

    @property
    def empty_attributes(self) -> list[str]:
        """The attributes with no paragraph (an imported character's may have none)."""
        return [a for a in ATTRIBUTES if not any(p.attribute == a for p in self.paragraphs)]


def read_text(path: Path) -> str:
    """A UTF-8 file's text, every way reading it can fail a :class:`PersonaError` naming the file."""
    if not path.is_file():
        raise PersonaError(path, None, "file not found")
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise PersonaError(path, line, f"not valid UTF-8 (byte {e.start}: {e.reason})") from None
    if not text.strip():
        raise PersonaError(path, None, "empty file")
    return text.lstrip("\ufeff").replace("\r\n", "\n")


def parse_persona(path: Path | str, slug: str | None = None) -> Persona:
    """Parse ``persona.md``; ``slug`` defaults to the name of its folder.

    >>> parse_persona(CHARACTERS_DIR / "frieren" / "persona.md").name
    'Frieren'
    """
    path = Path(path)
    text = read_text(path)
    slug = slug or path.parent.name

    newlines = [m.start() for m in re.finditer("\n", text)]  # line numbers by bisection, not a count per paragraph
    # (line, level, line start, body start, title) of each heading
    heading_lines = [(bisect_left(newlines, m.start()) + 1, len(m.group(1)), m.start(), m.end() + 1, m.group(2).strip())
                     for m in re.finditer(HEADING_LINE.pattern, text, re.MULTILINE)]

    if not heading_lines or heading_lines[0][1] != 1:
        first = heading_lines[0][0] if heading_lines else 1
        raise PersonaError(path, first, "the document must start with a '# <character name>' title")
    titles = [h for h in heading_lines if h[1] == 1]
    if len(titles) > 1:
        raise PersonaError(path, titles[1][0], "a second '#' title; only one is allowed (the character's name)")
    before = text[: heading_lines[0][2]]
    if before.strip():
        raise PersonaError(path, before[: len(before) - len(before.lstrip())].count("\n") + 1,
                           "text before the '#' title")

    name = heading_lines[0][4]
    path_stack: list[str] = [name]
    seen_attributes: dict[str, int] = {}
    sections: list[Section] = []
    headings: list[tuple[int, tuple[str, ...]]] = []
    for i, (lineno, level, _, body_start, title) in enumerate(heading_lines):
        if level > 1:
            if level > len(path_stack) + 1:
                raise PersonaError(path, lineno,
                                   f"heading level {level} skips a level under {' > '.join(path_stack)!r}")
            if level == 2:
                if title not in ATTRIBUTES:
                    raise PersonaError(path, lineno,
                                       f"unknown attribute heading {title!r}; expected one of {', '.join(ATTRIBUTES)}")
                if title in seen_attributes:
                    raise PersonaError(path, lineno,
                                       f"attribute {title!r} appears twice (first at line {seen_attributes[title]})")
                seen_attributes[title] = lineno
            path_stack = path_stack[: level - 1] + [title]
        headings.append((lineno, tuple(path_stack)))
        body_end = heading_lines[i + 1][2] if i + 1 < len(heading_lines) else len(text)
        paragraphs = tuple(_paragraphs(text, min(body_start, body_end), body_end, tuple(path_stack), newlines))
        if paragraphs:
            sections.append(Section(tuple(path_stack), paragraphs[0].start, paragraphs[-1].end, paragraphs))

    missing = [a for a in ATTRIBUTES if a not in seen_attributes]
    for lineno, level, _, _, title in heading_lines[1:]:
        if title in missing:  # "### Psychological Traits": made a subsection of the attribute above it
            raise PersonaError(path, lineno, f"{title!r} is a level-{level} heading ({'#' * level}); an attribute "
                                             "section is level 2 (##)")
    if missing:
        raise PersonaError(path, None, f"missing attribute section(s): {', '.join(missing)}")
    if not sections:
        raise PersonaError(path, None, "no paragraphs: the document has headings but no text")
    return Persona(slug=slug, name=name, source=text, path=path, sections=tuple(sections), headings=tuple(headings))


def _paragraphs(text: str, start: int, end: int, headings: tuple[str, ...], newlines: list[int]):
    """The blank-line separated blocks of ``text[start:end]`` (``newlines``: the offsets of ``text``'s newlines)."""
    for m in re.finditer(r"\S(?:.|\n(?![ \t]*\n))*", text[start:end]):
        block = m.group(0).rstrip()
        a = start + m.start()
        yield Paragraph(block, headings, a, a + len(block), bisect_left(newlines, a) + 1)


def load_persona(slug: str, characters_dir: Path | None = None) -> Persona:
    """A character by slug from ``data/characters`` (or another folder); PersonaError naming those known if unknown."""
    root = Path(characters_dir or CHARACTERS_DIR)
    folder = root / slug
    if not root.is_dir():
        raise PersonaError(root, None, "no such folder: the dataset has no characters/ folder there")
    if not folder.is_dir():
        known = ", ".join(list_characters(root)) or "none"
        mine = user_data_dir() / "characters"  # a character of one's own, asked of the paper's dataset
        hint = (f"; {slug!r} is in {mine.parent}: name that dataset (dataset= or data_dir)"
                if root.resolve() != mine.resolve() and (mine / slug).is_dir() else "")
        raise PersonaError(folder, None, f"unknown character {slug!r}; known: {known}{hint}")
    path = folder / "persona.md"
    if not path.is_file():
        raise PersonaError(path, None, "character folder has no persona.md")
    return parsed_file(path, parse_persona, slug)  # a Persona is immutable: callers share one


_PARSED: dict[tuple, tuple[tuple[int, int], object]] = {}  # (file, parser, args) -> ((mtime, size), result)


def parsed_file(path: Path, parse, *args):
    """``parse(path, *args)``, memoized until the file's modification time or size changes; the result is shared,
    so callers must not change it."""
    stat = path.stat()
    where = (os.path.abspath(path), parse.__qualname__, args)
    held = _PARSED.get(where)
    if held is None or held[0] != (stat.st_mtime_ns, stat.st_size):
        held = _PARSED[where] = ((stat.st_mtime_ns, stat.st_size), parse(path, *args))
    return held[1]


def list_characters(characters_dir: Path | None = None) -> list[str]:
    """Slugs of all character folders, sorted (folders without persona.md too: they fail on load)."""
    root = Path(characters_dir or CHARACTERS_DIR)
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))
