"""Read a user's source document into headed sections of clean paragraphs (:class:`SourceDocument`): Markdown
(``.md``, ``.markdown``), plain text (``.txt``), a MediaWiki XML export (``.xml``) or a page's wikitext as its
"Edit source" shows it (``.wiki``, ``.wikitext``; both :mod:`.wikitext`). Markup,
tables and code blocks go (each noted with its line); the first two-column table before the first section becomes
infobox facts. This module does not place sections (:mod:`~rpa_lib.authoring.importer` does), rewrite prose or
write anything."""

from __future__ import annotations

import re
from pathlib import Path

from rpa_lib.authoring.document import SourceDocument, SourceSection, sentence, tidy
from rpa_lib.authoring.wikitext import BREAK, Page, not_an_article, parse_wikitext, read_mediawiki
from rpa_lib.errors import DataError
from rpa_lib.persona import HEADING_LINE

FORMATS = {".md": "markdown", ".markdown": "markdown", ".txt": "text", ".xml": "mediawiki", ".wiki": "wikitext",
           ".wikitext": "wikitext"}
URL = re.compile(r"^(?:https?|ftp)://?[^/]", re.I)  # "https:/" too: a Path made of a web address keeps one slash
BOMS = ((b"\xff\xfe\x00\x00", "utf-32"), (b"\x00\x00\xfe\xff", "utf-32"), (b"\xff\xfe", "utf-16"),
        (b"\xfe\xff", "utf-16"))  # byte order marks: the codec reads the order from them (UTF-32's first)
WIKI_HEADING = re.compile(r"^(={2,6})[ \t]*[^=\n].*?[ \t]*\1[ \t]*$", re.M)  # "== History ==": wikitext's


def read_text_source(path: str | Path) -> tuple[Path, str, str]:
    """``(path, format, text)`` of a source file; DataError when it is no text to import."""
    if URL.match(str(path)):  # Path("https://x") is "https:/x": read the text as given
        raise DataError(path, None, "a web address, not a file: the importer reads files only and fetches nothing "
                                    "(it works offline); save the page as a file (a wiki's Special:Export gives "
                                    "MediaWiki XML) and give its path")
    path = Path(path)
    if path.is_dir():
        raise DataError(path, None, "a folder, not a file: give the document itself")
    if not path.is_file():
        raise DataError(path, None, "file not found")
    fmt = FORMATS.get(path.suffix.lower())
    raw = path.read_bytes()
    bom = next((codec for mark, codec in BOMS if raw.startswith(mark)), None) or _utf16(raw)
    if bom is None and b"\0" in raw[:8192]:
        raise DataError(path, None,
                        "a binary file, not text: export the document as Markdown, plain text or MediaWiki XML")
    try:
        text = raw.decode(bom or "utf-8").lstrip("\ufeff").replace("\r\n", "\n")
    except UnicodeDecodeError as e:
        if bom:
            raise DataError(path, None, f"not {bom.upper()} text though it starts as such (byte {e.start}): save it "
                                        "as UTF-8") from None
        line = raw[: e.start].count(b"\n") + 1
        raise DataError(path, line,
                        f"not UTF-8 text (byte {e.start}): save it as UTF-8, or it is a binary file") from None
    if not text.strip():  # white space or a byte order mark alone
        raise DataError(path, None, "empty file: nothing to import")
    if fmt is None:
        raise DataError(path, None, f"unknown format {path.suffix or '(no file name ending)'!r}: expected "
                                    f"{', '.join(FORMATS)} (Markdown, plain text, a MediaWiki XML export or a "
                                    "page's wikitext)")
    return path, fmt, text


def _utf16(raw: bytes) -> str | None:
    """``"utf-16-le"`` or ``"utf-16-be"`` for UTF-16 text without a byte order mark, told by its zero bytes: mostly
    Latin text has one in every other byte, all on the same side; None for anything else."""
    sample = raw[:8192]
    if len(sample) < 4 or len(raw) % 2:
        return None
    even, odd = sample[0::2].count(0), sample[1::2].count(0)
    if min(even, odd) == 0 and max(even, odd) >= len(sample) // 4:
        return "utf-16-be" if even else "utf-16-le"
    return None


def read_source(path: str | Path, page: str | None = None) -> SourceDocument:
    """The document at ``path`` as sections (``page``: which page of a MediaWiki export); DataError for a file
    that is no text, of an unknown format or without headings."""
    return source_document(*read_text_source(path), page)


def source_document(path: Path, fmt: str, text: str, page: str | None = None,
                    pages: list[Page] | None = None) -> SourceDocument:
    """:func:`read_source` of a file :func:`read_text_source` has read (``pages``: a MediaWiki export's, when
    :func:`~rpa_lib.authoring.wikitext.export_pages` has read them already), so that each page of an export is
    read once."""
    if page is not None and fmt != "mediawiki":
        raise DataError(path, None, f"--page {page!r} is for a MediaWiki export; this is {fmt}")
    if fmt == "mediawiki":
        doc = read_mediawiki(path, text, page, pages)
    elif fmt == "wikitext":
        problem = not_an_article(text)
        if problem:  # "no headings found" said nothing of what the page is
            raise DataError(path, None, f"the page {problem}")
        doc = parse_wikitext(text)
        doc.path, doc.title = path, title_heading(doc.sections)  # "= Corwen Ashlar =" atop the page
    else:
        doc = read_lines(path, text, fmt)
    if not any(s.level > 0 for s in doc.sections):
        wiki = fmt in ("markdown", "text") and WIKI_HEADING.search(text)
        raise DataError(path, None, "no headings found: the importer needs headings (e.g. 'Personality', "
                                    "'Abilities') to place text under the six attributes"
                        + (f"; its lines such as {wiki.group(0).strip()!r} are wikitext headings: save the file "
                           "as .wiki to import it as wikitext" if wiki else ""))
    return doc


_UNDERLINE = {"=": 1, "-": 2, "~": 3}
_NUMBERED = re.compile(r"^(\d+(?:\.\d+)*)[ \t]+([A-Z][^.!?]{0,78})$")
_LIST = re.compile(r"^[ \t]*(?:[-*+]|\d+[.)])[ \t]+(.*)$")
_SITE_LINE = re.compile(r"^From [^.]{0,60}\b(?:Wikipedia|wiki|Wiki|encyclopedia)\b[^.]{0,60}\.?$")
_BR = re.compile(r"<br\s*/?>", re.I)
_CONTENTS = re.compile(r"^(?:table of )?contents\s*(?:\[\s*(?:hide|show)\s*\])?$", re.I)
_TOC_LINE = re.compile(r"^\d+(?:\.\d+)*\.?\s+\S")
_FENCE = re.compile(r"^[ \t]*(```|~~~)")
# an inline link or image, "[text](destination "title")": its text may hold brackets ("[[1]](#cite_note-1)"), its
# destination balanced parentheses ("wiki/Grey_Heron_(ship)") or angle brackets, its title quotes or parentheses
_LINK = re.compile(r"""(!?)\[((?:[^\[\]]|\[(?:[^\[\]]|\[[^\[\]]*\])*\])*)\]\(\s*
    (<[^<>\n]*>|(?:[^\s()]|\((?:[^\s()]|\([^\s()]*\))*\))*)
    (?:\s+(?:"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|\((?:[^()\\]|\\.)*\)))?\s*\)""", re.X)
_NOTE = re.compile(r"\s*\[[^\[\]]*\]\s*")  # a footnote's link shows "[1]", "[a]", "[note 2]"
_NOTE_TARGET = re.compile(r"#cite_(?:note|ref)\b")  # ... and goes to "#cite_note-1"
_EDIT = re.compile(r"\\?\[\s*edit(?:\s*\|\s*edit source)?\s*\\?\]\s*$", re.I)  # a wiki's [edit] links after a heading


def read_lines(path: Path, text: str, fmt: str) -> SourceDocument:
    """Markdown (``fmt="markdown"``) or plain text (``"text"``) into sections; see ``docs/your_own_character.md``."""
    text = re.sub(r"<!--.*?-->", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)  # lines kept
    lines = text.split("\n")
    sections = [SourceSection(0, "", 1)]
    removed: list[tuple[int, str]] = []
    block: list[str] = []  # lines of the paragraph being read
    items: list[str] = []  # list items of the paragraph being read
    fence_at = table_end = 0
    tables: list[tuple[int, list[list[str]], bool]] = []  # (line, rows, before the first section)
    rows: list[list[str]] = []

    def flush() -> None:
        if block and _SITE_LINE.match(" ".join(block)):  # "From Wikipedia, the free encyclopedia"
            removed.append((i - len(block), "the wiki's tagline"))
            block.clear()
        if block and _CONTENTS.match(block[0]) and all(_TOC_LINE.match(b) for b in block[1:]):
            removed.append((i - len(block) - len(items), "table of contents"))  # "Contents", then a list
            block.clear()
            items.clear()
        parts = [clean_inline(" ".join(block))] if block else []
        parts += [sentence(clean_inline(i)) for i in items]
        joined = " ".join(p for p in parts if p)
        if joined:
            sections[-1].paragraphs.append(joined)
        block.clear()
        items.clear()

    i = 0
    while i < len(lines):
        line, lineno = lines[i], i + 1
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        i += 1
        if fence_at:
            if _FENCE.match(line):
                fence_at = table_end = 0
            continue
        if _FENCE.match(line):
            flush()
            fence_at = lineno
            removed.append((lineno, "code block"))
            continue
        heading = _heading(line, nxt, fmt, bool(block or items))
        if heading:
            flush()
            level, title, underlined = heading
            title = _EDIT.sub("", clean_inline(_EDIT.sub("", title)))  # "[edit]", "[[edit](/w/index.php?...)]"
            sections.append(SourceSection(level, tidy(title), lineno))
            i += underlined  # skip the underline
            continue
        stripped = line.strip()
        if not stripped or re.fullmatch(r"(\*\s*){3,}|(-\s*){3,}|(_\s*){3,}", stripped):
            flush()
        elif stripped.startswith("|"):
            flush()
            if table_end != lineno - 1:
                table_at, rows = lineno, []
                tables.append((table_at, rows, all(s.level <= 1 for s in sections)))  # lead: under the title at most
            rows.append([cell(c) for c in stripped.strip("|").split("|")])
            table_end = lineno
        elif re.match(r"^\[\^[^\]]+\]:", stripped) or re.match(r"^\[[^\]]+\]:\s*\S+$", stripped):
            flush()  # a footnote or link definition
        elif _LIST.match(line):
            if block and not (len(block) == 1 and _CONTENTS.match(block[0])):  # "Contents" stays with its list
                flush()
            items.append(_LIST.match(line).group(1))
        elif items and line.startswith((" ", "\t")):
            items[-1] += " " + stripped  # a list item's continuation line
        else:
            if items:
                flush()
            block.append(re.sub(r"^>\s?", "", stripped))
    flush()
    facts = []
    for at, rows, lead in tables:  # the first table, two columns, before the first section: an infobox, its rows facts
        ruled = [all(re.fullmatch(r":?-+:?", c.strip()) for c in r) for r in rows]
        head = rows[0] if len(rows) > 1 and ruled[1] else []  # the row above "|---|" is a header, never a fact
        rows = [r for r, rule in zip(rows, ruled, strict=True) if not rule and r is not head]
        if lead and not facts and rows and all(len(r) == 2 for r in rows):
            facts += [(at, k.rstrip(":"), v) for k, v in rows if k and v]
            if any(head):  # column labels ("Field | Value") or the box's title: listed, in case it was a fact
                removed.append((at, f"table header row {' | '.join(c for c in head if c)!r}"))
        else:
            removed.append((at, "table"))
    return SourceDocument(path, fmt, title_heading(sections), sections, removed, facts=facts)


def title_heading(sections: list[SourceSection]) -> str | None:
    """The document's title: its first heading when that is its only level-1 heading (``# Corwen Ashlar``,
    ``= Corwen Ashlar =``), else None."""
    headed = [s for s in sections if s.level > 0]
    return headed[0].title if headed and headed[0].level == 1 and sum(s.level == 1 for s in headed) == 1 else None


def _heading(line: str, nxt: str, fmt: str, in_paragraph: bool) -> tuple[int, str, int] | None:
    """``(level, title, 1 if the next line is its underline else 0)``, or None."""
    if fmt == "markdown":
        m = HEADING_LINE.match(line)
        if m:
            return len(m.group(1)), m.group(2), 0
    stripped = line.strip()
    if stripped and not in_paragraph and re.fullmatch(r"[=~-]{3,}\s*", nxt) and not _LIST.match(line):
        if fmt == "markdown" and nxt.strip()[0] == "~":
            return None
        return _UNDERLINE[nxt.strip()[0]], stripped, 1
    if fmt == "text" and not in_paragraph and not nxt.strip():
        m = _NUMBERED.match(stripped)
        if m:
            return m.group(1).count(".") + 2, m.group(2), 0
    return None


def cell(text: str) -> str:
    """A table cell as plain prose, its entries split by ``<br>`` joined with "; ": ``Ann,<br>Bo`` -> "Ann; Bo"."""
    entries = clean_inline(_BR.sub(BREAK, text)).split(BREAK)  # split after the links are read: [A<br>B](url)
    return "; ".join(part for part in (tidy(e).rstrip(",;") for e in entries) if part)


def _link_text(m: re.Match) -> str:
    """What an inline link shows as prose: its text (an image in it gone); nothing for an image or a footnote's
    link."""
    image, label, destination = m.groups()
    return "" if image or _NOTE.fullmatch(label) or _NOTE_TARGET.search(destination) else _LINK.sub(_link_text, label)


def clean_inline(text: str) -> str:
    """One line of Markdown as plain prose.

    >>> clean_inline("I *love* [tea](http://x) and **cake**[^1].<br>")
    'I love tea and cake.'
    >>> clean_inline('On the [*Heron*](/wiki/Heron_(ship) "Heron (ship)").[[1]](#cite_note-1) ![A](/A_(1).jpg)')
    'On the Heron.'
    """
    text = _LINK.sub(_link_text, text)  # images go, links keep their text, a footnote's link goes
    text = re.sub(r"\[\^[^\]]+\]", "", text)  # footnote markers
    text = re.sub(r"\[([^\]]+)\]\[[^\]]*\]", r"\1", text)  # reference links
    text = re.sub(r"\[\d+\]", "", text)  # numbered reference markers
    text = _BR.sub(" ", text)  # a line break between words
    text = re.sub(r"</?[A-Za-z][^>]*>", "", text)  # HTML tags
    text = re.sub(r"`([^`]*)`", r"\1", text)
    text = re.sub(r"(\*\*|__|~~)(.+?)\1", r"\2", text)
    text = re.sub(r"(?<![\w*])[*_](?=\S)(.+?)(?<=\S)[*_](?![\w*])", r"\1", text)
    return tidy(text)
