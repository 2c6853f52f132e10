"""Read a MediaWiki XML export (Special:Export, one page) into headed sections of clean paragraphs.

The XML is read with the standard library (any export schema version: namespaces are ignored); the page's
wikitext is parsed with ``mwparserfromhell``, never with regular expressions. What is removed: templates
(infoboxes, citation and navigation boxes), ``<ref>`` footnotes and ``<references/>``, comments, tables and
galleries (each table is noted with its line for the import report), file, image and category links, and all
formatting; a link keeps its shown text. List items become sentences of one paragraph. Heading lines are
counted in the XML file, so the import report points at the line a person can open.

This module reads only the first page of an export (``page=`` picks another by title), does not follow
templates or transclusions (their text is not in the export) and writes nothing.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from rpa_lib.data.sources import SourceDocument, SourceSection, sentence, tidy
from rpa_lib.errors import DataError

DROPPED_TAGS = {"ref", "references", "table", "gallery", "math", "syntaxhighlight", "source", "score", "timeline"}
DROPPED_LINKS = ("file:", "image:", "category:", "media:")
LIST_TAGS = {"li", "dd", "dt"}
ITEM = "\u2022"  # marks a list item in the stripped text until paragraphs are made


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def read_mediawiki(path: Path, text: str, page: str | None = None) -> SourceDocument:
    """The page of a MediaWiki export as a :class:`SourceDocument`; DataError naming the file otherwise."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError as e:
        raise DataError(path, e.position[0], f"not well-formed XML ({e})") from None
    if _local(root.tag) != "mediawiki":
        raise DataError(path, None, f"not a MediaWiki export: the root element is <{_local(root.tag)}>, not <mediawiki>")
    pages = []
    for el in root:
        if _local(el.tag) == "page":
            fields = {_local(c.tag): c for c in el}
            revision = fields.get("revision")
            body = next((c for c in revision if _local(c.tag) == "text"), None) if revision is not None else None
            pages.append(((fields["title"].text or "").strip() if "title" in fields else "", body))
    if not pages:
        raise DataError(path, None, "the export holds no <page>")
    title, body = next((p for p in pages if page is None or p[0] == page), (None, None))
    if title is None:
        raise DataError(path, None, f"no page titled {page!r}; pages: {', '.join(t for t, _ in pages)}")
    if body is None or not (body.text or "").strip():
        raise DataError(path, None, f"page {title!r} has no wikitext (<revision><text> is missing or empty)")
    first_line = _text_line(text, title)
    doc = parse_wikitext(body.text, first_line)
    doc.path, doc.title = path, title
    return doc


def _text_line(xml: str, title: str) -> int:
    """The line of the XML file where the page's wikitext starts (the ``<text ...>`` tag's line)."""
    from xml.sax.saxutils import escape

    at = xml.find(f"<title>{escape(title)}</title>")
    at = xml.find("<text", max(at, 0))
    if at < 0:
        return 1
    return xml.count("\n", 0, xml.find(">", at) + 1) + 1


def parse_wikitext(wikitext: str, first_line: int = 1) -> SourceDocument:
    """Wikitext into sections (level = the number of ``=``), line numbers counted from ``first_line``.

    >>> d = parse_wikitext("Lead {{Infobox|x=1}}text.<ref>a source</ref>\\n== Personality ==\\nI am '''calm'''.")
    >>> [(s.level, s.title, s.paragraphs) for s in d.sections]
    [(0, '', ['Lead text.']), (2, 'Personality', ['I am calm.'])]
    """
    import mwparserfromhell
    from mwparserfromhell.nodes import Heading

    code = mwparserfromhell.parse(wikitext)
    removed: list[tuple[int, str]] = []
    parts: list[tuple[int, str, int, list]] = [(0, "", first_line, [])]  # (level, title, line, nodes)
    line = first_line
    for node in code.nodes:
        if isinstance(node, Heading):
            parts.append((node.level, tidy(_strip(mwparserfromhell.parse(str(node.title)), line, removed)), line, []))
        else:
            parts[-1][3].append(node)
        line += str(node).count("\n")
    sections = []
    for level, title, at, nodes in parts:
        body = _strip(mwparserfromhell.parse("".join(map(str, nodes))), at, removed)
        sections.append(SourceSection(level, title, at, _paragraphs(body)))
    return SourceDocument(Path(), "mediawiki", None, sections, removed)


def _strip(code, line: int, removed: list[tuple[int, str]]) -> str:
    """Plain text of a piece of wikicode: what this module removes is removed, tables noted at ``line`` + offset."""
    from mwparserfromhell.nodes import Comment, Tag, Template, Wikilink

    text = str(code)
    for node in code.filter(recursive=True):
        try:
            if isinstance(node, Tag) and str(node.tag).strip().lower() in DROPPED_TAGS:
                if str(node.tag).strip().lower() == "table":
                    offset = text.find(str(node))
                    removed.append((line + (text.count("\n", 0, offset) if offset >= 0 else 0), "table"))
                code.remove(node)
            elif isinstance(node, Template | Comment):
                code.remove(node)
            elif isinstance(node, Wikilink) and str(node.title).strip().lower().startswith(DROPPED_LINKS):
                code.remove(node)
            elif isinstance(node, Tag) and str(node.tag).strip().lower() in LIST_TAGS:
                code.replace(node, ITEM)
        except ValueError:  # already gone with an enclosing node that was removed
            continue
    return code.strip_code(normalize=True, collapse=False)


def _paragraphs(text: str) -> list[str]:
    """Blank-line separated blocks as one-line paragraphs; list items (``ITEM`` lines) become sentences."""
    out = []
    for block in text.split("\n\n"):
        prose, items = [], []
        for raw in block.split("\n"):
            raw = raw.strip()
            if raw.startswith(ITEM):
                items.append(sentence(tidy(raw.lstrip(ITEM + "*#:; "))))
            elif items and raw:
                items[-1] = sentence(tidy(items[-1] + " " + raw))
            elif raw:
                prose.append(raw)
        joined = " ".join(p for p in [tidy(" ".join(prose)), *items] if p)
        if joined:
            out.append(joined)
    return out
