"""A source document read for import: headed sections of clean paragraphs, plus what the reader removed, rendered
or took from an infobox, each with its source line. The readers build it and the importer places it; this module
reads no file and decides nothing."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class SourceSection:
    """The paragraphs under one heading of the source, up to the next heading. Level 0: text before any heading."""

    level: int
    title: str
    line: int  # 1-based line of the heading in the source file
    paragraphs: list[str] = field(default_factory=list)


@dataclass
class SourceDocument:
    path: Path
    format: str  # markdown | text | mediawiki
    title: str | None  # a single level-1 heading (Markdown) or the page title (MediaWiki)
    sections: list[SourceSection]
    removed: list[tuple[int, str]] = field(default_factory=list)  # (line, what was removed), e.g. a table
    rendered: list[tuple[int, str]] = field(default_factory=list)  # (line, template rendered as text)
    facts: list[tuple[int, str, str]] = field(default_factory=list)  # (line, field, value) of an infobox
    notes: list[str] = field(default_factory=list)  # e.g. which page and revision of an export was read


def sentence(text: str) -> str:
    """A list item as a sentence. ``sentence("likes tea") == "likes tea."``"""
    text = text.strip()
    return text if not text or text[-1] in ".!?:;\"'" else text + "."


_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u00a0": " "})


def tidy(text: str) -> str:
    """Straight quotes, single spaces, no space before punctuation, no empty brackets and no separator left at a
    bracket's edge (by removed markup: a pronunciation, a footnote).

    >>> tidy("a \u201cquoted\u201d word ( ) , here"), tidy("Corwen ( ; born 1870) and Sora (Sora, ) are")
    ('a "quoted" word, here', 'Corwen (born 1870) and Sora (Sora) are')
    """
    text = text.translate(_QUOTES)
    text = re.sub(r"\(\s*[,;]?\s*\)", "", text)
    text = re.sub(r"\(\s*[,;]\s*", "(", re.sub(r"\s*[,;]\s*\)", ")", text))  # "(; born 1870)", "(Sora, )"
    text = re.sub(r"\s+", " ", text).strip()
    return re.sub(r"\s+([,.;:!?])", r"\1", text)
