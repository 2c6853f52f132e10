"""Add, replace or delete one paragraph of a persona under a heading path (``"Activity > Journey"``), rewriting
``persona.md`` atomically only when the result still parses, and bring its indexes up to date. This module does not
create or delete headings, and does not change QA pairs whose evidence an edit removed (the validator reports them).

``add_paragraph("tove-marsh", "History > The fog winter", "I still check the rope posts every spring.")``
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass
from pathlib import Path

from rpa_lib.data.dataset import Dataset, user_dataset
from rpa_lib.errors import DataError
from rpa_lib.persona import HEADING_SEPARATOR, Persona, parse_persona
from rpa_lib.retrieval import retriever


@dataclass(frozen=True)
class Edit:
    slug: str
    action: str  # added | replaced | deleted
    headings: tuple[str, ...]
    text: str  # the paragraph added, or the one deleted or replaced
    l_max_before: int
    l_max_after: int

    def __str__(self) -> str:
        note = f"; l_max {self.l_max_before} -> {self.l_max_after}" if self.l_max_before != self.l_max_after else ""
        return (f"{self.action} a paragraph of {len(self.text)} characters under "
                f"{HEADING_SEPARATOR.join(self.headings)}{note}")


def _section_span(persona: Persona, under: str) -> tuple[tuple[str, ...], int, list]:
    """``(heading path, offset after its heading line, its own paragraphs)`` for ``under``; the character's name
    may lead it, and the attribute may be left out when the rest of the path names one section."""
    wanted = tuple(h.strip() for h in under.split(">") if h.strip())
    if wanted[:1] != (persona.name,):
        wanted = (persona.name, *wanted)
    after = list(itertools.accumulate(len(line) + 1 for line in persona.source.split("\n")))  # offset after line n+1
    ends: dict[tuple[str, ...], int] = {}  # heading path -> offset after its heading line (the first, if repeated)
    for line, path in persona.headings:
        ends.setdefault(path, min(after[line - 1], len(persona.source)))
    if wanted not in ends:  # the attribute may be left out when the rest of the path is unique
        tails = [h for h in ends if len(h) > 2 and h[2:] == wanted[1:]]
        wanted = tails[0] if len(tails) == 1 else wanted
    if wanted in ends:
        return wanted, ends[wanted], [p for s in persona.sections if s.headings == wanted for p in s.paragraphs]
    known = sorted({HEADING_SEPARATOR.join(s.headings[1:]) for s in persona.sections})
    raise DataError(persona.path, None, f"no heading path {under!r}; paths with text: {'; '.join(known[:12])}"
                                        + (" ..." if len(known) > 12 else ""))


def _write(persona: Persona, text: str, action: str, headings: tuple[str, ...], paragraph: str) -> Edit:
    """Write ``text`` over persona.md if it still parses; the :class:`Edit` it made."""
    path = persona.path
    tmp = path.with_name(".persona.md.tmp")
    tmp.write_text(text, encoding="utf-8")
    try:
        new = parse_persona(tmp, persona.slug)
    except DataError as e:
        tmp.unlink()
        raise DataError(path, e.line, f"the edit would break the persona ({e.problem}); nothing changed") from None
    os.replace(tmp, path)
    return Edit(persona.slug, action, headings, paragraph, persona.longest_paragraph, new.longest_paragraph)


def _clean(text: str) -> str:
    if any(not line.strip() for line in text.strip().splitlines()):  # two paragraphs would be joined into one
        raise ValueError("the text holds a blank line: add one paragraph at a time")
    text = " ".join(text.split())
    if not text:
        raise ValueError("the paragraph is empty")
    if text.startswith("#"):
        raise ValueError("a paragraph cannot start with '#' (that would be a heading)")
    return text


def add_paragraph(slug: str, under: str, text: str, *, position: int | None = None,
                  data: Dataset | str | Path | None = None) -> Edit:
    """Add ``text`` as one paragraph under ``under``: at the end of the section's own text, or at ``position``
    (1-based) among its paragraphs."""
    ds = user_dataset(data)
    persona, text = ds.persona(slug), _clean(text)
    headings, heading_end, paragraphs = _section_span(persona, under)
    if position is not None and not 1 <= position <= len(paragraphs) + 1:
        raise ValueError(f"position {position} is outside 1..{len(paragraphs) + 1} for {under!r}")
    if position is not None and position <= len(paragraphs):
        at = paragraphs[position - 1].start
        new = persona.source[:at] + text + "\n\n" + persona.source[at:]
    else:
        at = paragraphs[-1].end if paragraphs else heading_end
        new = persona.source[:at].rstrip("\n") + "\n\n" + text + "\n\n" + persona.source[at:].lstrip("\n")
    return _write(persona, new.rstrip("\n") + "\n", "added", headings, text)


def _find(persona: Persona, under: str, index: int | None, containing: str | None):
    headings, _, paragraphs = _section_span(persona, under)
    if (index is None) == (containing is None):
        raise ValueError("give exactly one of index (1-based) or containing (text of the paragraph)")
    if index is not None:
        if not 1 <= index <= len(paragraphs):
            raise ValueError(f"{under!r} has {len(paragraphs)} paragraph(s); index {index} is outside "
                             f"1..{len(paragraphs)}")
        return headings, paragraphs[index - 1]
    if not containing.strip():  # "" is in every paragraph
        raise ValueError("containing is empty: give text of the paragraph to find")
    hits = [p for p in paragraphs if containing in p.text]
    if len(hits) != 1:
        raise ValueError(f"{len(hits)} paragraphs under {under!r} contain {containing[:40]!r}; expected exactly one")
    return headings, hits[0]


def delete_paragraph(slug: str, under: str, *, index: int | None = None, containing: str | None = None,
                     data: Dataset | str | Path | None = None) -> Edit:
    """Delete one paragraph under ``under``: the ``index``-th (1-based) or the one that contains ``containing``."""
    persona = user_dataset(data).persona(slug)
    headings, par = _find(persona, under, index, containing)
    if len(persona.paragraphs) == 1:
        raise ValueError("cannot delete the persona's only paragraph")
    new = persona.source[: par.start].rstrip("\n") + "\n\n" + persona.source[par.end:].lstrip("\n")
    return _write(persona, new.rstrip("\n") + "\n", "deleted", headings, par.text)


def replace_paragraph(slug: str, under: str, text: str, *, index: int | None = None, containing: str | None = None,
                      data: Dataset | str | Path | None = None) -> Edit:
    """Replace one paragraph under ``under`` (chosen as in :func:`delete_paragraph`) with ``text``."""
    persona, text = user_dataset(data).persona(slug), _clean(text)
    headings, par = _find(persona, under, index, containing)
    return _write(persona, persona.source[: par.start] + text + persona.source[par.end:], "replaced", headings,
                  par.text)


def refresh_indexes(slug: str, *, embedder: str = "minilm", splitters=("vanilla", "ats", "acts"),
                    data: Dataset | str | Path | None = None) -> dict[str, str]:
    """Open each splitter's retriever, which updates its saved index in place or rebuilds it when the split changes
    (ATS/ACTS after l_max changed): ``{splitter: what happened}``."""
    ds = user_dataset(data)
    return {s: str(retriever(slug, s, embedder, ds).change) for s in splitters}
