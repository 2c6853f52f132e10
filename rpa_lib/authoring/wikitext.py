"""Read a MediaWiki XML export (Special:Export) into headed sections of clean paragraphs: the newest revision of
one page, its wikitext parsed with ``mwparserfromhell``, common templates rendered as text (:data:`RENDERED`), an
infobox's fields kept as facts, and everything else removed and noted with its line in the XML file. This module
does not follow transclusions, expand parser functions or write anything."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from rpa_lib.authoring.document import SourceDocument, SourceSection, sentence, tidy
from rpa_lib.errors import DataError

DROPPED_TAGS = {"ref", "references", "table", "gallery", "math", "syntaxhighlight", "source", "score", "timeline"}
# namespaces of a link that shows no text in the article, by their names casefolded: a picture ("file": File, 6, and
# Media, -2) or the page's category (14); the English names and common local ones (German, French, Spanish, Italian,
# Portuguese, Russian, Polish, Japanese, Chinese, Dutch, Swedish, Czech, Turkish, Ukrainian, Korean, Arabic, Hebrew),
# with those an export's <siteinfo> names added while it is read (:data:`_SITE_NAMESPACES`: name -> kind)
LINK_NAMESPACES = {
    **dict.fromkeys("file image media datei bild medium fichier média archivo imagen medio immagine arquivo ficheiro "
                    "imagem файл изображение медиа plik grafika ファイル 画像 メディア 文件 檔案 档案 图像 圖像 媒体 媒體 "
                    "bestand afbeelding fil soubor dosya зображення 파일 ملف קובץ".split(), "file"),
    **dict.fromkeys("category kategorie catégorie categoría categoria категория kategoria カテゴリ 分类 分類 categorie "
                    "kategori категорія 분류 تصنيف קטגוריה".split(), "category"),
}
ENGLISH_LINKS = {"file", "image", "media", "category"}  # reported by their own name ("image link 'A.png'")
SITE_KINDS = {"6": "file", "-2": "file", "14": "category"}  # <namespace key=...> of an export's <siteinfo>
_SITE_NAMESPACES: ContextVar[Mapping[str, str]] = ContextVar("site_namespaces", default=MappingProxyType({}))
# [[es:Himmel]], [[DE:Himmel]], [[simple:Himmel]], [[zh-min-nan:Himmel]]: a link to another language's page, its
# code in lower or upper case (:func:`_interlanguage`; "Re:Zero" and "Ran: The Film" are page titles)
INTERLANGUAGE = re.compile(r"((?:[a-z]{2,3}(?:-[a-z]{2,8})*|simple)):(?!\s)", re.I)
MAGIC_WORD = re.compile(r"__[A-Z]+__")  # __NOTOC__, __NOEDITSECTION__
# an opening or closing layout tag left unpaired (a <div> never closed): the parser keeps it as text
STRAY_TAG = re.compile(r"</?(?:div|span|center|font|small|big|p|blockquote|u|s|b|i|sup|sub|abbr|poem)\b[^<>\n]*>", re.I)
# "#REDIRECT [[Target]]" as the page's first line, in English and the common languages' own words
REDIRECT = re.compile(r"\s*#(?:redirect|weiterleitung|перенаправление|redirection|redirección|rinvia|"
                      r"redirecionamento|przekieruj|patrz|転送|リダイレクト|重定向|doorverwijzing|omdirigering|"
                      r"přesměruj|yönlendirme)\s*:?\s*\[\[([^\]|#]*)", re.I)
# templates that mark a disambiguation page (and any "... disambiguation", e.g. {{Human name disambiguation}})
DISAMBIGUATION = {"disambiguation", "disambig", "dab", "disamb", "hndis", "geodis", "begriffsklärung",
                  "homonymie", "desambiguación", "desambiguacion", "disambigua", "desambiguação", "ujednoznacznienie",
                  "неоднозначность", "многозначность", "曖昧さ回避", "aimai", "消歧义", "消歧義"}
MAY_REFER_TO = re.compile(r"\b(?:may|can|might)\s+(?:also\s+)?refer\s+to(?:\s+(?:any|one)\s+of\s+the\s+following)?"
                          r"\s*:", re.I)  # a disambiguation page's lead: "Corwen may refer to:"
TABBER = re.compile(r"<tabber[^>]*>(.*?)</tabber>", re.I | re.S)  # Fandom's tabs: "|-|Anime=" opens each
TABBER_LABEL = re.compile(r"(?:^|\|-\|)(\s*)(?:\|-\|)?(\s*)[^=\n|\[\]{}<>]{1,60}=")
LIST_TAGS = {"li", "dd", "dt"}
ITEM = "\u2022"  # marks a list item in the stripped text until paragraphs are made
# private-use code points, which no page's text holds, mark until they are joined: a <br> in a template's argument or
# an infobox field, a definition list's term (";Likes") and its definitions (":tea")
BREAK, TERM, DEFINITION = "\ue000", "\ue001", "\ue002"
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")
DATES = {"date", "birth date", "death date", "start date", "end date", "birth date and age", "death date and age",
         "birth year and age", "death year and age", "dob", "start date and age", "film date", "release date"}
WRAPPERS = {"nowrap", "nobr", "small", "big", "em", "strong", "sic", "abbr", "tooltip", "tt", "ruby", "lang", "transl",
            "nihongo", "visible anchor", "smallcaps", "sc", "mono", "quote", "blockquote", "text", "linktext", "w",
            "wp", "ill", "as written", "ship", "hlist", "flatlist", "plainlist", "ubl", "unbulleted list", "circa",
            "c.", "floruit", "fl."}  # their first argument; {{anchor}} shows no text, so it is dropped
LISTS = {"hlist", "flatlist", "plainlist", "ubl", "unbulleted list"}  # {{plainlist|\n* A\n* B}}: entries
LINKS = {"link", "l", "wl", "wikilink", "main link", "color", "colour", "font color"}  # text: display or page
CHARACTERS = {"ndash": "\u2013", "nd": "\u2013", "mdash": "\u2014", "md": "\u2014", "snd": " \u2013 ",
              "spnd": " \u2013 ", "spaced ndash": " \u2013 ", "spd": " \u2013 ", "smd": " \u2014 ",
              "spaced mdash": " \u2014 ", "nbsp": " ", "space": " ", "sp": " ", "thinsp": " ", "!": "|", "=": "=",
              "middot": " \u00b7 ", "dot": " \u00b7 ", "\u00b7": " \u00b7 ", "bull": " \u2022 ", "'s": "'s",
              "'": "'", "br": " ", "break": " "}  # {{br}}: as <br> (:func:`_strip`)
PAGE_NAMES = {"pagename", "basepagename", "fullpagename", "subpagename", "pagenamee"}
RENDERED = DATES | WRAPPERS | LINKS | set(CHARACTERS) | PAGE_NAMES | {"convert", "cvt", "val", "age"}
INFOBOX_FIELDS = 3  # named fields that make a template at the top of a page an infobox
PICTURE_WORDS = {"image", "img", "picture", "photo", "caption", "alt", "text", "size", "upright", "width", "logo",
                 "embed", "signature", "module", "footnotes", "file"}  # an infobox field named with these only
STYLE_FIELD = re.compile(r"(?:bg|background|border|box|header|title|text|tab|theme|accent|font|label)? ?colou?r")
CSS_COLOUR = re.compile(r"#[0-9a-f]{3,8}|rgba?\(.*\)", re.I)
IMAGE_FILE = re.compile(r"[^\n]*\.(?:png|jpe?g|gif|svg|webp)", re.I)  # "Bild = Ilse.jpg": a bare file name


@dataclass(frozen=True)
class Page:
    title: str
    revisions: list[tuple[str, str, str]]  # (timestamp, id, wikitext), in file order
    namespaces: dict[str, str] = field(default_factory=dict)  # the export's names of links shown as no text -> kind
    ns: str = ""  # its namespace's number, "0" for an article; "" when the export gives none
    redirect: str = ""  # the page it redirects to (<redirect title="..."/>)

    def newest(self) -> int:
        """The index of the newest revision (by timestamp, the later in the file on a tie)."""
        return max(range(len(self.revisions)), key=lambda i: (self.revisions[i][0], i))

    def not_an_article(self) -> str | None:
        """Why the page is no character's article (another namespace, a redirect, a disambiguation page), or None:
        ``"is not an article: namespace 14 ('Category')"``."""
        if self.ns not in ("", "0"):
            prefix = self.title.partition(":")[0] if ":" in self.title else ""
            return f"is not an article: namespace {self.ns}" + (f" ({prefix!r})" if prefix else "")
        if self.redirect:
            return f"is a redirect to {self.redirect!r}: import that page"
        return not_an_article(self.revisions[self.newest()][2]) if self.revisions else None


def not_an_article(wikitext: str) -> str | None:
    """Why a page's wikitext is no article to import, or None: a redirect (``#REDIRECT [[Corwen Ashlar]]``, also in
    other languages: ``#WEITERLEITUNG``) or a disambiguation page (``{{disambiguation}}``, ``{{dab}}``,
    ``__DISAMBIG__``, or a lead that "may refer to:"), named with the pages it lists.

    >>> not_an_article("#REDIRECT [[Corwen Ashlar]]"), not_an_article("== Personality ==\\nQuiet.") is None
    ("is a redirect to 'Corwen Ashlar': import that page", True)
    """
    redirect = REDIRECT.match(wikitext)
    if redirect:
        return f"is a redirect to {redirect.group(1).strip()!r}: import that page"
    names = {_namespace_key(n)
             for n in re.findall(r"\{\{\s*(?:template\s*:\s*)?([^{}|<>\n]+?)\s*(?=\||\}\})", wikitext, re.I)}
    lead = re.split(r"^=+[^=\n].*=+[ \t]*$", wikitext, maxsplit=1, flags=re.M)[0]
    if (names & DISAMBIGUATION or any(n.endswith(" disambiguation") for n in names) or "__DISAMBIG__" in wikitext
            or MAY_REFER_TO.search(re.sub(r"<!--.*?-->", "", lead, flags=re.S))):
        listed = list(dict.fromkeys(t.strip() for t in re.findall(r"^[*#]+[^\[\n]*\[\[([^\]|#]+)", wikitext, re.M)))
        return ("is a disambiguation page, not an article" + (f": it lists {'; '.join(listed[:5])}"
                                                              f"{'; ...' if len(listed) > 5 else ''}" if listed else "")
                + "; import the article of the character you mean")
    return None


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def export_pages(path: Path, text: str) -> list[Page]:
    """The pages of an export with their revisions; DataError when it is no MediaWiki export."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError as e:
        raise DataError(path, e.position[0], f"not well-formed XML ({e})") from None
    if _local(root.tag) != "mediawiki":
        raise DataError(path, None,
                        f"not a MediaWiki export: the root element is <{_local(root.tag)}>, not <mediawiki>")
    pages, namespaces, numbers = [], {}, {}  # numbers: a namespace's name -> its number, for a page without <ns>
    for el in root:
        if _local(el.tag) == "siteinfo":  # <namespaces><namespace key="6">Datei</namespace>: this wiki's names
            for ns in el.iterfind("{*}namespaces/*"):
                if ns.get("key") in SITE_KINDS and (ns.text or "").strip():
                    namespaces[_namespace_key(ns.text)] = SITE_KINDS[ns.get("key")]
                if (ns.text or "").strip():
                    numbers[_namespace_key(ns.text)] = (ns.get("key") or "").strip()
        if _local(el.tag) != "page":
            continue
        title, ns = ((el.findtext(f"{{*}}{tag}") or "").strip() for tag in ("title", "ns"))  # {*}: any or no namespace
        redirect = next(((r.get("title") or "").strip() for r in el.iterfind("{*}redirect")), "")
        revisions = [(r.findtext("{*}timestamp", "").strip(), r.findtext("{*}id", "").strip(),
                      r.findtext("{*}text", "")) for r in el.iterfind("{*}revision")]
        if not ns and ":" in title:  # an old export: the title's prefix, if the <siteinfo> names it
            ns = numbers.get(_namespace_key(title.partition(":")[0]), "")
        pages.append(Page(title, revisions, namespaces, ns, redirect))
    if not pages:
        raise DataError(path, None, "the export holds no <page>")
    return pages


def read_mediawiki(path: Path, text: str, page: str | None = None, pages: list[Page] | None = None) -> SourceDocument:
    """The newest revision of one page (``page``: its title, needed when the export holds several; ``pages``: the
    export's, when :func:`export_pages` has read them already); DataError for an unnamed or unknown page, one that
    is no article, or one without wikitext."""
    pages = export_pages(path, text) if pages is None else pages
    titles = [p.title for p in pages]
    if page is None and len(pages) > 1:
        raise DataError(path, None, f"the export holds {len(pages)} pages ({'; '.join(titles)}): name one with "
                                    "--page TITLE, or import each as its own character with --each-page")
    chosen = pages[0] if page is None else next((p for p in pages if p.title == page), None)
    if chosen is None:
        raise DataError(path, None, f"no page titled {page!r}; pages: {'; '.join(titles)}")
    problem = chosen.not_an_article()  # another namespace, a redirect, a disambiguation page: --each-page skips it
    if problem:
        raise DataError(path, None, f"page {chosen.title!r} {problem}")
    if not chosen.revisions:
        raise DataError(path, None, f"page {chosen.title!r} has no <revision>")
    newest = chosen.newest()
    stamp, rev_id, body = chosen.revisions[newest]
    if not body.strip():
        raise DataError(path, None, f"page {chosen.title!r} has no wikitext (<revision><text> is missing or empty)")
    doc = parse_wikitext(body, _text_line(text, chosen.title, newest), chosen.title, chosen.namespaces)
    doc.path = path
    n = len(chosen.revisions)
    doc.notes.append(f"page {chosen.title!r} of {len(pages)} in the export; revision {newest + 1} of {n}"
                     f"{f' (id {rev_id})' if rev_id else ''}{f', {stamp}' if stamp else ''}"
                     f"{', the newest' if n > 1 else ''}")
    return doc


def _text_line(xml: str, title: str, revision: int = 0) -> int:
    """The XML file's line where the page's ``revision``-th ``<text ...>`` tag ends."""
    from xml.sax.saxutils import escape

    at = max(xml.find(f"<title>{escape(title)}</title>"), 0)
    for _ in range(revision + 1):
        at = xml.find("<text", at + 1)
        if at < 0:
            return 1
    return xml.count("\n", 0, xml.find(">", at) + 1) + 1


def parse_wikitext(wikitext: str, first_line: int = 1, title: str | None = None,
                   namespaces: Mapping[str, str] | None = None) -> SourceDocument:
    """Wikitext into sections (level = the number of ``=``), line numbers counted from ``first_line``; ``title``:
    the page's, shown for ``{{PAGENAME}}``; ``namespaces``: the wiki's own names of File and Category links
    (:attr:`Page.namespaces`), dropped as :data:`LINK_NAMESPACES` are."""
    import mwparserfromhell
    from mwparserfromhell.nodes import Heading

    wikitext = TABBER.sub(lambda m: TABBER_LABEL.sub(r"\1\2", m.group(1)), MAGIC_WORD.sub("", wikitext))  # same lines
    wikitext = "\n".join(map(_quotes, wikitext.split("\n")))
    token = _SITE_NAMESPACES.set(namespaces or {})
    try:
        code = mwparserfromhell.parse(wikitext)
        doc = SourceDocument(Path(), "mediawiki", title, [])
        parts: list[tuple[int, str, int, list]] = [(0, "", first_line, [])]  # (level, title, line, nodes)
        line = first_line
        for node in _unwrapped(code.nodes):
            if isinstance(node, Heading):
                parts.append((node.level, tidy(_strip(mwparserfromhell.parse(str(node.title)), line, doc)), line, []))
            else:
                parts[-1][3].append(node)
            line += str(node).count("\n")
        for level, heading, at, nodes in parts:
            body = _strip(mwparserfromhell.parse("".join(map(str, nodes))), at, doc, top=level == 0)
            doc.sections.append(SourceSection(level, heading, at, _paragraphs(body)))
        return doc
    finally:
        _SITE_NAMESPACES.reset(token)


def _namespace_key(name: str) -> str:
    """A namespace name as :data:`LINK_NAMESPACES` holds it: ``" Datei_X "`` -> ``"datei x"``."""
    return " ".join(name.replace("_", " ").split()).casefold()


def _link_namespace(title: str) -> tuple[str, str, str] | None:
    """``(kind, the name as written, target)`` of a File, Media or Category link in any language the importer
    knows (``"Datei:A.jpg"`` -> ``("file", "Datei", "A.jpg")``); None for another link, or one with a leading colon
    (``[[:Category:X]]`` shows its text)."""
    prefix, colon, target = title.partition(":")
    name = _namespace_key(prefix)
    kind = (_SITE_NAMESPACES.get().get(name) or LINK_NAMESPACES.get(name)) if colon else None
    return (kind, prefix.strip(), target.strip()) if kind else None


def _interlanguage(title: str) -> bool:
    """Is ``[[title]]`` a link to another language's page? ``"de:Corwen"``, ``"DE:Corwen"``, ``"simple:Corwen"``
    are; ``"Re:Zero"`` (a code in mixed case) and ``"Ran: The Film"`` (a space after the colon) are not."""
    m = INTERLANGUAGE.match(title.strip())
    return bool(m) and (m.group(1).islower() or m.group(1).isupper())


def _unwrapped(nodes):
    """The nodes with a tag that holds headings (``<div>``, ``<center>``) replaced by its contents, as MediaWiki makes
    a ``== Personality ==`` line inside one a section; a table's are dropped with it."""
    from mwparserfromhell.nodes import Tag

    for node in nodes:
        if (isinstance(node, Tag) and node.contents and node.contents.filter_headings()
                and str(node.tag).strip().lower() not in DROPPED_TAGS):
            yield from _unwrapped(node.contents.nodes)
        else:
            yield node


def template_name(node) -> str:
    """``{{Birth_date|...}}`` -> ``"birth date"``."""
    return " ".join(str(node.name).strip().replace("_", " ").lower().split())


def render_template(node, title: str = "") -> str | None:
    """The text a template of :data:`RENDERED` shows (``title``: the page's, for ``{{PAGENAME}}``); None for the
    others (dropped).

    >>> import mwparserfromhell as m
    >>> [render_template(m.parse(t).filter_templates()[0]) for t in ("{{birth date|1021|3|12}}", "{{cite book}}",
    ...                                                            "{{Link|Flamme}}", "{{ndash}}")]
    ['12 March 1021', None, 'Flamme', '–']
    """
    name = template_name(node)
    if name.startswith("lang-"):
        name = "lang"
    if name not in RENDERED:
        return None
    if name in CHARACTERS:
        return CHARACTERS[name]
    if name in PAGE_NAMES:
        return title
    args = [a for p in node.params if not p.showkey and (a := _plain(p.value, title))]
    if name in ("color", "colour", "font color"):  # {{color|red|text}}: the text
        return args[-1] if args else ""
    if name in LINKS or name in ("lang", "transl"):  # {{link|page|shown}}, {{lang|fr|texte}}: the second, else first
        return args[1] if len(args) > 1 else (args[0] if args else "")
    if name == "age":  # {{age|1870|5|4|1900|1|1}}: years between two dates; one date alone is an age "today"
        return _age(args)
    if name in DATES:
        return _date(args)
    if name in ("convert", "cvt"):
        return _convert(args)
    if name == "val":
        unit = next((_plain(p.value) for p in node.params if str(p.name).strip() in ("u", "ul")), "")
        return f"{args[0]} {unit}".strip() if args else ""
    if name in LISTS:  # entries, as arguments or as a bulleted list in one: "A; B", as <br> separates them
        return "; ".join(e for p in node.params if (not p.showkey or str(p.name).strip().isdigit())  # "|1=\n* A"
                         and (e := _plain(p.value, title, br="; ")))
    if name in ("quote", "blockquote"):  # {{Quote|words|speaker|source}}: said, and by whom, not narration
        words, who = (_argument(node, names, title) for names in (("1", "text", "quote"), ("2", "author", "sign")))
        return (words if words[:1] in ('"', "\u201c", "\u300c") else f'"{words}"') + (f" ({who})" if who else "") \
            if words else ""
    if name in ("circa", "c."):
        return f"c. {args[0]}" if args else "c."
    if name in ("floruit", "fl."):
        return f"fl. {args[0]}" if args else ""
    return args[0] if args else ""


def _argument(node, names: tuple[str, ...], title: str) -> str:
    """The first of a template's arguments ``names`` (positional ones by number) that has text, as plain text."""
    return next((text for n in names if node.has(n) and (text := _plain(node.get(n).value, title))), "")


def _age(args: list[str]) -> str | None:
    """Whole years from the first date to the second, ``["1870", "5", "4", "1900", "1", "1"]`` -> "29"; None (dropped)
    unless both dates are given in full: an age "today" is no fact of the character."""
    import datetime

    if len(args) != 6:
        return None
    try:
        born, then = (datetime.date(*map(int, args[i:i + 3])) for i in (0, 3))
    except ValueError:  # not numbers, or no such day
        return None
    years = then.year - born.year - ((then.month, then.day) < (born.month, born.day))
    return str(years) if years >= 0 else None


def _date(args: list[str]) -> str:
    """``["1021", "3", "12"]`` -> "12 March 1021"; a single argument as it is."""
    nums = args[:3]
    if len(nums) >= 2 and all(a.isdigit() for a in nums):
        year, month = nums[0], int(nums[1])
        day = f"{int(nums[2])} " if len(nums) > 2 else ""
        return f"{day}{MONTHS[month - 1]} {year}" if 1 <= month <= 12 else " ".join(nums)
    return args[0] if args else ""


def _convert(args: list[str]) -> str:
    """The source value with its unit: ``["6", "ft", "2", "in", "m"]`` -> "6 ft 2 in"."""
    if len(args) >= 4 and args[1] in ("-", "to", "and", "or", "by", "x", "+/-"):
        return f"{args[0]} {args[1]} {args[2]} {args[3]}"
    shown = args[:2]
    for i in range(2, len(args) - 2, 2):  # a compound value (feet and inches, stones and pounds)
        if re.fullmatch(r"[\d.,/]+", args[i]):
            shown += args[i:i + 2]
        else:
            break
    return " ".join(shown)


def _plain(code, title: str = "", br: str = " ") -> str:
    """Wikicode as one line of plain text, as :func:`_strip` makes it but recording nothing and with no list bullets:
    a template's argument or an infobox field. ``title``: the page's, for ``{{PAGENAME}}``; ``br``: what separates
    entries (split by ``<br>``, or list items when it is not a space)."""
    import mwparserfromhell

    doc = SourceDocument(Path(), "mediawiki", title, [])
    text = _strip(mwparserfromhell.parse(str(code)), 0, doc, item="" if br == " " else BREAK, br=BREAK)
    parts = [tidy(t) for t in text.split(BREAK)]
    return br.join(p.rstrip(",;") if br != " " else p for p in parts if p)  # entries: "A,<br>B" is "A; B"


def picture_field(field: str, value: str, pictures: set[str] = frozenset()) -> bool:
    """Is an infobox field about the box's picture or style rather than the character? Named with picture words
    only ("image", "photo caption", "alt text"), a style colour ("title color") or holding one ("#ffcc00"), holding
    a bare image file ("Bild = Ilse.jpg"), or named after a field in ``pictures`` ("Bildunterschrift" after "Bild").
    "hair color", "favorite colour", "signature move" and "image song" are facts."""
    name = re.sub(r"\d+", "", field.lower()).strip()
    words = name.split()
    return (set(words) <= PICTURE_WORDS and words not in ([], ["text"]) or bool(STYLE_FIELD.fullmatch(name))
            or bool(CSS_COLOUR.fullmatch(value)) or bool(IMAGE_FILE.fullmatch(value))
            or " " not in name and any(name.startswith(p) for p in pictures))


def _top_templates(code) -> list:
    """The templates that open a page, before its first text, with :data:`INFOBOX_FIELDS` named fields or more: a
    Fandom infobox such as ``{{Character|name=...|race=...}}``, whatever the template is called."""
    from mwparserfromhell.nodes import Comment, Template, Text

    out = []
    for node in code.nodes:
        if isinstance(node, Template):
            if sum(p.showkey for p in node.params) >= INFOBOX_FIELDS:
                out.append(node)
        elif not isinstance(node, Comment) and not (isinstance(node, Text) and not str(node).strip()):
            break
    return out


def _strip(code, line: int, doc: SourceDocument, top: bool = False, item: str = ITEM, br: str = " ") -> str:
    """Plain text of wikicode; infobox fields go to ``doc.facts``, what is removed or rendered to ``doc.removed`` or
    ``doc.rendered`` with its line. ``top``: the text before the first heading, where an infobox may have any name
    (:func:`_top_templates`); ``item``: what a list item's bullet becomes, ``br``: what a ``<br>`` becomes.
    Each node is visited once, outer before inner, and the node lists rebuilt once at the end (mwparserfromhell's
    ``remove`` searches the whole tree per node: thousands of footnotes took minutes); a node inside a removed or
    replaced one is noted but not changed again."""
    from mwparserfromhell.nodes import Comment, Tag, Template, Wikilink
    from mwparserfromhell.utils import parse_anything

    text, cursor, counted = str(code), [0], [0, 0]  # nodes come in document order: search from the last one found

    def at(node) -> int:
        offset = text.find(str(node), cursor[0])
        offset = text.find(str(node)) if offset < 0 else offset
        cursor[0] = max(offset, cursor[0])
        if offset < 0:
            return line
        if offset < counted[0]:  # before the last one counted: count from the start
            counted[:] = [0, 0]
        counted[:] = [offset, counted[1] + text.count("\n", counted[0], offset)]
        return line + counted[1]

    changed: dict[int, list] = {}  # id(node) -> the nodes that take its place (none: removed)
    contexts: dict[int, object] = {}  # id(Wikicode) -> the Wikicode whose nodes change
    gone: set[int] = set()  # ids of the nodes inside a removed or replaced one

    def replace(node, context, value) -> None:  # value None: removed
        if id(node) in gone:  # as Wikicode.remove and .replace, which find no such node in the code any more
            raise ValueError(node)
        changed[id(node)] = [] if value is None else parse_anything(value).nodes
        contexts[id(context)] = context

    def noted(where: int, name: str, shown: str | None, how: str = "") -> None:
        if shown is None:
            doc.removed.append((where, f"template {{{{{name}}}}}"))
        else:
            doc.rendered.append((where, f"{{{{{name}}}}} -> {shown!r}{how}"))

    title = doc.title or ""
    boxes = _top_templates(code) if top else []
    for node, context, parent in _nodes(code):
        if parent is not None and (id(parent) in gone or id(parent) in changed):
            gone.add(id(node))
        tag = str(node.tag).strip().lower() if isinstance(node, Tag) else None
        try:
            if tag in DROPPED_TAGS:
                if tag in ("table", "gallery"):
                    doc.removed.append((at(node), tag))
                elif tag == "ref":
                    inner = ([f"{{{{{template_name(t)}}}}}" for t in node.contents.filter_templates()]
                             if node.contents else [])
                    doc.removed.append((at(node), "<ref> footnote" + (f" ({', '.join(inner)})" if inner else "")))
                replace(node, context, None)
            elif isinstance(node, Template):
                name = template_name(node)
                where = at(node)
                if name in ("br", "break"):  # a line break, as <br>: a space, or what separates a field's entries
                    replace(node, context, br)
                elif name.startswith("infobox") or name.endswith("infobox") or any(node is b for b in boxes):
                    for inner in (t for p in node.params for t in p.value.filter_templates(recursive=True)):
                        noted(where, template_name(inner), render_template(inner, title), " (infobox)")
                    pictures: set[str] = set()  # fields that held an image file: "Bild" (its caption "Bildunterschrift")
                    for p in node.params:
                        field = str(p.name).strip().replace("_", " ")
                        value = _plain(p.value, title, br="; ")  # "[[A]]<br>[[B]]": two entries
                        if picture_field(field, value, pictures):
                            if value or p.value.filter_wikilinks():  # [[File:...]]: no text, but dropped
                                doc.removed.append((where, f"infobox field {field!r}"))
                            if IMAGE_FILE.fullmatch(value):
                                pictures.add(field.lower())
                        elif value:
                            doc.facts.append((where, field, value))
                    replace(node, context, None)
                else:
                    shown = render_template(node, title)
                    replace(node, context, shown)
                    noted(where, name, shown)
            elif isinstance(node, Wikilink) and (link := _link_namespace(str(node.title).strip())):
                kind, written, target = link
                english = _namespace_key(written) in ENGLISH_LINKS  # "image link 'A.png'", "file link 'B.jpg' (Datei:)"
                doc.removed.append((at(node), f"{_namespace_key(written) if english else kind} link {target!r}"
                                              + ("" if english else f" ({written}:)")))
                replace(node, context, None)
            elif isinstance(node, Comment) or (isinstance(node, Wikilink) and _interlanguage(str(node.title))
                                               and node.text is None):  # [[wp:X|text]] keeps its text
                replace(node, context, None)
            elif tag in LIST_TAGS:
                replace(node, context, {"dt": TERM, "dd": DEFINITION}.get(tag, item) if item == ITEM else item)
            elif tag == "br":
                replace(node, context, br)
        except ValueError:  # already gone with an enclosing node that was removed
            continue
    for context in contexts.values():  # each changed node list rebuilt once
        context.nodes[:] = [new for node in context.nodes for new in changed.get(id(node), (node,))]
    return STRAY_TAG.sub("", code.strip_code(normalize=True, collapse=False))


def _nodes(code):
    """``(node, the Wikicode holding it, the node holding that or None)`` for every node of ``code``, in document order,
    a node before those inside it (as ``code.filter(recursive=True)`` lists them)."""
    stack = [(iter(code.nodes), code, None)]
    while stack:
        nodes, context, parent = stack[-1]
        node = next(nodes, None)
        if node is None:
            stack.pop()
            continue
        yield node, context, parent
        stack += [(iter(inner.nodes), inner, node) for inner in reversed(list(node.__children__()))]


def _quotes(line: str) -> str:
    """One line with its bold and italic quotes removed, read as MediaWiki reads them (its ``doQuotes``) but for a
    possessive: they never span lines (mwparserfromhell pairs them across lines, so an unclosed ``'''`` in the lead
    hid every heading below it); a run right after a word and before an "s" is an apostrophe (``''Dune'''s``:
    "Dune's", where MediaWiki shows "Dunes" when another bold is on the line); ``''''`` is an apostrophe and bold;
    when both bold and italic are left open, one bold run is an apostrophe and italic (the first after a one-letter
    word, else after a longer word, else after a space: ``l'''Odyssée''`` is "l'Odyssée").

    >>> [_quotes(t) for t in ("''Dune'''s sequel", "'''Corwen is tall.", "''Heron''''s crew", "l'''Odyssée'' est")]
    ["Dune's sequel", 'Corwen is tall.', "Heron's crew", "l'Odyssée est"]
    """
    if "''" not in line:
        return line
    arr = re.split(r"('{2,})", re.sub(r"(?<=\S)'{2,}(?=s\b)", "'", line))  # text, run, text, run, ..., text
    italics = bold = 0
    for i in range(1, len(arr), 2):
        n = len(arr[i])
        if n == 4 or n > 5:  # the extra quotes are apostrophes: "'" + bold, or the rest + bold italic
            arr[i - 1] += "'" * (1 if n == 4 else n - 5)
            arr[i] = "'''" if n == 4 else "'''''"
        italics += len(arr[i]) in (2, 5)
        bold += len(arr[i]) in (3, 5)
    if italics % 2 and bold % 2:
        single = multi = space = None
        for i in range(1, len(arr), 2):
            if len(arr[i]) == 3:
                last, second = arr[i - 1][-1:], arr[i - 1][-2:-1] or arr[i - 1][:1]  # as PHP's substr gives them
                if last == " ":
                    space = i if space is None else space
                elif second == " ":
                    single = i
                    break
                elif multi is None:
                    multi = i
        arr[next(c for c in (single, multi, space) if c is not None) - 1] += "'"
    return "".join(arr[::2])


def _paragraphs(text: str) -> list[str]:
    """Blank-line separated blocks as one-line paragraphs; list items (``ITEM`` lines) as sentences; a definition
    list's term (``TERM``) with the definitions (``DEFINITION``) after it as one: "Likes: tea; cake."."""
    out = []
    for block in text.split("\n\n"):
        prose, items = [], []
        term = None  # (its item's index, its name, its definitions, the marks before it) while one is open
        for raw in block.split("\n"):
            raw = raw.strip()
            body = raw.lstrip(ITEM + DEFINITION + TERM + " ")
            marks = raw[:len(raw) - len(body)].replace(" ", "")  # "*; Fishing": ITEM TERM, ":; Temper": DEFINITION TERM
            if TERM in marks:  # ";Likes", ";Likes : tea" with its definition on the line, a term in a list
                name, _, definition = (tidy(t) for t in body.partition(DEFINITION))
                term = ((len(items), name.rstrip(":;\uff1a "), [definition] if definition else [],
                         marks[:marks.index(TERM)]) if name else None)
                items.append("")
            elif (term is not None and marks.endswith(DEFINITION) and marks[:-1].startswith(term[3])
                  and not marks[len(term[3]):-1].strip(DEFINITION)):  # ":tea", "::more" under ";Likes"; "*:" under "*;"
                term[2].append(tidy(body))
            elif marks:  # a bullet, or an indented line (":") under no term
                items.append(sentence(tidy(body.lstrip("*#:; "))))
                term = None
            elif items and raw and term is not None:  # the line goes on the last definition, or the term
                if term[2]:
                    term[2][-1] = tidy(f"{term[2][-1]} {raw}")
                else:
                    term = (term[0], tidy(f"{term[1]} {raw}"), [], term[3])
            elif items and raw:
                items[-1] = sentence(tidy(items[-1] + " " + raw))
            elif raw:
                prose.append(raw)
            if term is not None:
                i, name, definitions, _ = term
                items[i] = sentence(f"{name}: {'; '.join(d.rstrip('.;') for d in definitions)}" if definitions else name)
        joined = " ".join(p for p in [tidy(" ".join(prose)), *items] if p)
        if any(m in joined for m in (BREAK, TERM, DEFINITION)):  # a mark in a place not read above: never text
            joined = tidy(re.sub(f"[{BREAK}{TERM}{DEFINITION}]", " ", joined))
        if joined:
            out.append(joined)
    return out
