"""The wiki importer on article shapes a probe with realistic pages found it mishandling: a subsection heading
before the page's first section, File/Category and interlanguage links in other languages, real-world sections,
disambiguation, redirect and non-article pages, list templates in an infobox, apostrophe markup, UTF-16 files, the
age/br/possessive templates, a pronunciation left in the lead, definition-list terms inside lists, a heading that
near-misses a different word, a non-article page named with --page and headings inside a <div>. Every page here
is written for these tests, about invented characters, with the structure of the real ones."""

from __future__ import annotations

import re

import pytest

from rpa_lib.authoring import cli
from rpa_lib.authoring.importer import new_character
from rpa_lib.data import Dataset
from rpa_lib.errors import DataError
from wiki_export import export

WORK = "The Salt Roads"


def wiki_persona(tmp_path, wikitext: str, name: str = "Corwen Ashlar", **kw) -> str:
    """The persona imported from ``wikitext`` saved as a page's ``.wiki`` file (headings only, no model)."""
    source = tmp_path / "page.wiki"
    source.write_text(wikitext, encoding="utf-8")
    new_character("corwen", source, name=name, work=WORK, data=tmp_path / "d", **kw)
    return Dataset(tmp_path / "d").persona("corwen").source


def each_page(tmp_path, source) -> tuple[int, str, str]:
    """``new-character --each-page`` over ``source``: (status, stdout, stderr)."""
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(["new-character", "--each-page", "--work", WORK, "--from", str(source), "--embedder", "none",
                         "--data-dir", str(tmp_path / "d")])
    return code, out.getvalue(), err.getvalue()


# A short article whose first heading is a level-3 one the heading table does not know: an editor's "===" where
# "==" was meant, before the page's first level-2 heading (here References).
SUBSECTION_FIRST = """'''Corwen Ashlar''' is a mapmaker in the novel ''The Salt Roads''.

=== Personality ===
Corwen is stubborn and curious, and slow to trust a stranger.

=== The Lantern Incident ===
In the winter of the great fog he lit every lantern of the harbour by himself.

== References ==
{{reflist}}
"""


def test_a_subsection_before_the_first_section_is_placed_as_a_section(tmp_path):
    """It was an IndexError (no section above it to follow); now it is a section of its own, placed or reported."""
    text = wiki_persona(tmp_path, SUBSECTION_FIRST)
    assert "Corwen is stubborn and curious" in text and "lantern" not in text  # not placed: no table entry, no model
    report = (tmp_path / "d" / "characters" / "corwen" / "IMPORT.md").read_text()
    assert "'The Lantern Incident' not placed: heading not in the table" in report
    assert "--map 'The Lantern Incident'=ATTRIBUTE" in report


def test_each_page_reports_a_page_that_fails_unexpectedly_and_imports_the_others(tmp_path, monkeypatch):
    """One page's bug stopped the whole batch with a traceback; now it is skipped like a page it refuses."""
    source = tmp_path / "two.xml"
    source.write_text(export(("Corwen Ashlar", SUBSECTION_FIRST), ("Elsa Rook", "== Personality ==\nShe is calm.\n")),
                      encoding="utf-8")
    real = cli.new_character

    def failing(slug, *args, **kw):
        if slug == "corwen-ashlar":
            raise IndexError("list index out of range")
        return real(slug, *args, **kw)

    monkeypatch.setattr(cli, "new_character", failing)
    code, out, err = each_page(tmp_path, source)
    assert code == 1 and "Traceback" not in err
    assert "skipped page 'Corwen Ashlar': unexpected error (IndexError: list index out of range)" in err
    assert "1 of 2 page(s) not imported: Corwen Ashlar" in err
    assert Dataset(tmp_path / "d").persona("elsa-rook").source.count("She is calm.") == 1
    with pytest.raises(IndexError):  # one page, not --each-page: the error is not hidden
        cli.main(["new-character", "corwen-ashlar", "--page", "Corwen Ashlar", "--work", WORK, "--from", str(source),
                  "--embedder", "none", "--data-dir", str(tmp_path / "d2")])


def test_each_page_imports_a_page_with_a_subsection_first(tmp_path):
    source = tmp_path / "two.xml"
    source.write_text(export(("Corwen Ashlar", SUBSECTION_FIRST), ("Elsa Rook", "== Personality ==\nShe is calm.\n")),
                      encoding="utf-8")
    code, out, err = each_page(tmp_path, source)
    assert code == 0, err
    assert "Corwen is stubborn" in Dataset(tmp_path / "d").persona("corwen-ashlar").source


# A German article: a picture with the German File name and its options (miniatur, links), categories, and links to
# the same article in other languages, written as editors do (lowercase, uppercase, "simple").
GERMAN = """[[Datei:Corwen im Hafen.jpg|miniatur|links|Corwen im Hafen von [[Port Vell]]]]
'''Corwen Ashlar''' ist ein Kartenzeichner aus dem Roman ''Die Salzstraßen''.

== Aussehen ==
[[Bild:Corwen Mantel.png|mini|Sein grauer Mantel]]
Corwen ist groß und trägt einen grauen Mantel.

== Charakter ==
Corwen ist stur und neugierig.

[[Kategorie:Figur (Die Salzstraßen)]]
[[kategorie:Fiktiver Kartograph]]
[[en:Corwen Ashlar]]
[[DE:Corwen Ashlar]]
[[simple:Corwen Ashlar]]
[[zh-min-nan:Corwen Ashlar]]
"""
GERMAN_MAP = ["Aussehen=Demographic Information", "Charakter=Psychological Traits"]


def test_file_category_and_language_links_of_other_languages_leave_no_text(tmp_path):
    from rpa_lib.authoring.importer import parse_mapping

    text = wiki_persona(tmp_path, GERMAN, mapping=parse_mapping(GERMAN_MAP))
    assert "Corwen Ashlar ist ein Kartenzeichner" in text and "Corwen ist groß und trägt" in text
    assert "Corwen ist stur und neugierig." in text
    for leak in ("miniatur", "mini", "links|", "Mantel.png", "Sein grauer Mantel", "Kategorie", "Figur", "en:", "DE:",
                 "simple:", "zh-min-nan"):
        assert leak not in text, leak
    report = (tmp_path / "d" / "characters" / "corwen" / "IMPORT.md").read_text()
    assert "file link 'Corwen im Hafen.jpg' (Datei:)" in report and "file link 'Corwen Mantel.png' (Bild:)" in report
    assert "category link 'Fiktiver Kartograph' (kategorie:)" in report
    from rpa_lib.authoring.wikitext import parse_wikitext  # a title with a colon is no language's code

    kept = parse_wikitext("== Hobbies ==\nHe watches [[Re:Zero]] and [[Ran: The Film]].[[FR:Corwen]]\n")
    assert kept.sections[1].paragraphs == ["He watches Re:Zero and Ran: The Film."]


@pytest.mark.parametrize("picture, category", [
    ("[[Файл:Корвен.jpg|мини|слева|Корвен в гавани]]", "[[Категория:Персонажи]]"),  # Russian
    ("[[Fichier:Corwen.jpg|vignette|gauche|Corwen au port]]", "[[Catégorie:Personnage de roman]]"),  # French
    ("[[Archivo:Corwen.jpg|miniaturadeimagen|Corwen en el puerto]]", "[[Categoría:Personajes]]"),  # Spanish
    ("[[Immagine:Corwen.jpg|thumb|Corwen al porto]]", "[[Categoria:Personaggi]]"),  # Italian
    ("[[Ficheiro:Corwen.jpg|miniaturadaimagem|Corwen no porto]]", "[[Categoria:Personagens]]"),  # Portuguese
    ("[[Plik:Corwen.jpg|mały|Corwen w porcie]]", "[[Kategoria:Postacie]]"),  # Polish
    ("[[ファイル:Corwen.jpg|サムネイル|港のコーウェン]]", "[[カテゴリ:登場人物]]"),  # Japanese
    ("[[文件:Corwen.jpg|thumb|港口的科温]]", "[[分类:虚构人物]]"),  # Chinese
])
def test_pictures_and_categories_are_dropped_in_each_common_language(tmp_path, picture, category):
    text = wiki_persona(tmp_path, f"{picture}\n'''Corwen''' is a mapmaker.\n\n== Personality ==\nHe is stubborn.\n\n"
                                  f"{category}\n")
    overview = text.split("### Overview")[1].split("##")[0]
    assert overview.strip() == "Corwen is a mapmaker." and "He is stubborn." in text
    assert category.strip("[]").split(":")[1] not in text


def test_an_exports_own_namespace_names_are_dropped_too(tmp_path):
    """A Croatian wiki's "Datoteka" and "Kategorija" are in no built-in list: the export's <siteinfo> names them."""
    siteinfo = ('<namespaces><namespace key="-2" case="first-letter">Mediji</namespace>'
                '<namespace key="0" case="first-letter" />'
                '<namespace key="6" case="first-letter">Datoteka</namespace>'
                '<namespace key="14" case="first-letter">Kategorija</namespace></namespaces>')
    page = ("[[Datoteka:Corwen.jpg|mini|lijevo|Corwen u luci]]\n'''Corwen''' je kartograf.\n\n== Personality ==\n"
            "He is stubborn.\n\n[[kategorija:Likovi]]\n")
    source = tmp_path / "hr.xml"
    source.write_text(export(("Corwen", page), siteinfo=siteinfo), encoding="utf-8")
    new_character("corwen", source, work=WORK, data=tmp_path / "d")
    text = Dataset(tmp_path / "d").persona("corwen").source
    assert "Corwen je kartograf." in text and "lijevo" not in text and "Likovi" not in text


# A Wikipedia article about a literary character: the story's sections, then the real world's, named as such
# articles name them.
REAL_WORLD = """{{Infobox character
| name = Corwen Ashlar
| occupation = Mapmaker
| family = Elsa Rook (wife)
}}
'''Corwen Ashlar''' is the protagonist of the novel ''The Salt Roads''.

== Fictional character biography ==
Corwen was born in Port Vell and drew his first chart of the harbour at twelve.

== Personality ==
Corwen is stubborn and curious.

== Publication history ==
The character first appeared in a short story printed in a magazine in 1998.

== Concept and design ==
The author based the character on a surveyor she met while travelling.

=== Character design ===
The cover artist gave him a grey coat to set him apart from the sailors.

== Casting ==
Several actors auditioned for the role in the radio adaptation.

== Voice acting ==
In the audiobook he is voiced by a stage actor.

== Themes ==
Critics read the novel as a story about mapping as a form of power.

== Analysis ==
A literary scholar compared his journeys with the explorers' diaries.

== Critical response ==
Reviewers praised the character's dry humour.

== Reception and legacy ==
The novel sold well and the character became popular with readers.

== In popular culture ==
A board game about charting coastlines named its lead figure after him.

== Development ==
=== Early drafts ===
The first drafts made him a sailor rather than a mapmaker.

== References ==
{{reflist}}
"""
REAL_SECTIONS = ("Publication history", "Concept and design", "Casting", "Voice acting", "Themes", "Analysis",
                 "Critical response", "Reception and legacy", "In popular culture", "Development")


def test_real_world_sections_are_dropped_by_the_heading_table(tmp_path):
    text = wiki_persona(tmp_path, REAL_WORLD)
    assert "drew his first chart" in text and "Corwen is stubborn and curious." in text
    for leak in ("magazine", "surveyor", "cover artist", "auditioned", "audiobook", "Critics", "scholar",
                 "Reviewers", "sold well", "board game", "first drafts"):
        assert leak not in text, leak
    report = (tmp_path / "d" / "characters" / "corwen" / "IMPORT.md").read_text()
    for heading in REAL_SECTIONS:  # real world by its heading, not merely left unplaced
        assert f"line {REAL_WORLD.split(f'== {heading} ==')[0].count(chr(10)) + 1}: {heading!r} dropped (heading " \
               f"table:" in report, heading
    assert "'Concept and design > Character design' dropped (with 'Concept and design')" in report
    from rpa_lib.authoring.importer import lookup

    assert lookup("Character design")[0] is None and lookup("Spell casting")[0] == "Skill and Expertise"


# A disambiguation page as Wikipedia writes one: a lead that "may refer to:", lists of links, the template at the end.
DISAMBIGUATION = """'''Corwen''' may refer to:

== Characters ==
* [[Corwen Ashlar]], the mapmaker of ''The Salt Roads''
* [[Corwen Vale]], a knight in ''The Ashen Crown''

== Places ==
* [[Corwen (town)]], a harbour town

== See also ==
* [[Corwin (disambiguation)]]

{{disambiguation|human name}}
"""


@pytest.mark.parametrize("page", [
    DISAMBIGUATION,
    DISAMBIGUATION.replace("may refer to:", "is a given name.").replace("{{disambiguation|human name}}", "{{dab}}"),
    DISAMBIGUATION.replace("may refer to:", "is a given name.").replace("{{disambiguation|human name}}", "{{Disambig}}"),
    DISAMBIGUATION.replace("{{disambiguation|human name}}", ""),  # the lead alone says it
    DISAMBIGUATION.replace("may refer to:", "is a given name.").replace("{{disambiguation|human name}}",
                                                                        "__DISAMBIG__"),
])
def test_a_disambiguation_page_is_named_as_one_not_imported(tmp_path, page):
    with pytest.raises(DataError, match=r"page\.wiki: the page is a disambiguation page, not an article: it lists "
                                        r"Corwen Ashlar; Corwen Vale; Corwen \(town\); Corwin \(disambiguation\)"):
        wiki_persona(tmp_path, page)
    assert not (tmp_path / "d" / "characters").exists()


def test_an_article_that_mentions_disambiguation_is_still_imported(tmp_path):
    text = wiki_persona(tmp_path, "{{About|the mapmaker|the town|Corwen (town)}}\n'''Corwen Ashlar''' is a mapmaker."
                                  "{{Disambiguation needed|date=May 2024}}\n\n== Personality ==\nHe is stubborn.\n")
    assert "Corwen Ashlar is a mapmaker." in text and "He is stubborn." in text


@pytest.mark.parametrize("redirect", ["#REDIRECT [[Corwen Ashlar]]\n\n{{Redirect category shell|{{R from short name}}}}\n",
                                      "#redirect[[Corwen Ashlar#Early life|Corwen]]\n",
                                      "#WEITERLEITUNG [[Corwen Ashlar]]\n",
                                      "#ПЕРЕНАПРАВЛЕНИЕ [[Corwen Ashlar]]\n"])
def test_a_redirect_page_says_where_it_points(tmp_path, redirect):
    """It was "no headings found", which said nothing of what the file holds."""
    with pytest.raises(DataError, match=r"page\.wiki: the page is a redirect to 'Corwen Ashlar': import that page"):
        wiki_persona(tmp_path, redirect)


ARTICLE = "'''Elsa Rook''' is a harbour pilot.\n\n== Personality ==\nShe is calm and careful.\n"


def test_each_page_skips_redirects_disambiguation_and_other_namespaces_saying_why(tmp_path):
    source = tmp_path / "export.xml"
    xml = export(("Elsa Rook", ARTICLE), ("Category:Salt Roads characters", "Characters of the novels.\n\n"
                                                                             "== Personality ==\nx\n"),
                 ("Template:Salt Roads", "{{Navbox\n| title = The Salt Roads\n}}\n== Personality ==\nx\n"),
                 ("Corwen", DISAMBIGUATION), ("Корвен", "#ПЕРЕНАПРАВЛЕНИЕ [[Elsa Rook]]\n"),
                 ("Corwen Ashlar (mapmaker)", "#OHJAUS [[Elsa Rook]]\n"), ns=(0, 14, 10, 0, 0, 0))
    source.write_text(xml.replace("<title>Corwen Ashlar (mapmaker)</title>",  # the export names its target
                                  '<title>Corwen Ashlar (mapmaker)</title>\n    <redirect title="Elsa Rook" />'),
                      encoding="utf-8")
    code, out, err = each_page(tmp_path, source)
    assert code == 1 and "Traceback" not in err
    for line in ("page 'Category:Salt Roads characters' is not an article: namespace 14 ('Category')",
                 "page 'Template:Salt Roads' is not an article: namespace 10 ('Template')",
                 "page 'Corwen' is a disambiguation page, not an article: it lists Corwen Ashlar;",
                 "page 'Корвен' is a redirect to 'Elsa Rook': import that page",  # not "its title gives no slug"
                 "page 'Corwen Ashlar (mapmaker)' is a redirect to 'Elsa Rook'"):
        assert line in err, line
    assert "5 of 6 page(s) not imported" in err
    assert [p.name for p in (tmp_path / "d" / "characters").iterdir()] == ["elsa-rook"]
    with pytest.raises(DataError, match="page 'Corwen Ashlar \\(mapmaker\\)' is a redirect to 'Elsa Rook'"):
        new_character("corwen", source, work=WORK, data=tmp_path / "d", page="Corwen Ashlar (mapmaker)")


def test_each_page_reads_the_export_once_and_checks_each_page_once(tmp_path, monkeypatch):
    """The export was parsed again for every page imported and each page checked twice (is it an article?), once
    before its slug and once as it was read; now once each, with the same refusals."""
    from rpa_lib.authoring import wikitext

    source = tmp_path / "export.xml"
    source.write_text(export(("Elsa Rook", ARTICLE), ("Corwen", "#REDIRECT [[Elsa Rook]]\n"),
                             ("Tamsin Hale", "== Personality ==\nShe laughs often.\n")), encoding="utf-8")
    calls = {"export_pages": 0, "not_an_article": 0}
    parse, check = wikitext.export_pages, wikitext.Page.not_an_article

    def counted_parse(*args):
        calls["export_pages"] += 1
        return parse(*args)

    def counted_check(page):
        calls["not_an_article"] += 1
        return check(page)

    for module in (cli, wikitext):
        monkeypatch.setattr(module, "export_pages", counted_parse)
    monkeypatch.setattr(wikitext.Page, "not_an_article", counted_check)
    code, out, err = each_page(tmp_path, source)
    assert code == 1 and "page 'Corwen' is a redirect to 'Elsa Rook': import that page" in err
    assert Dataset(tmp_path / "d").slugs() == ["elsa-rook", "tamsin-hale"]
    assert calls == {"export_pages": 1, "not_an_article": 3}


# A Wikipedia infobox whose multi-valued fields are bulleted lists in {{plainlist}} / {{flatlist}}, as the infobox
# guidelines ask, next to {{ubl}} and <br>.
LIST_INFOBOX = """{{Infobox character
| name = Corwen Ashlar
| family = {{plainlist|
* [[Tobin Ashlar]] (father)
* Maud Ashlar (mother)
}}
| occupation = {{flatlist|
* Mapmaker
* Harbour pilot
}}
| home = {{Plainlist|1=
* Port Vell, Salt Coast
* Harrowmere
}}
| aliases = {{ubl|The Lantern|Old Salt}}
| spouse = Elsa Rook<br />(m. 1896)
}}
'''Corwen Ashlar''' is a mapmaker.

== Personality ==
He is stubborn.
"""


def test_list_templates_in_an_infobox_keep_their_entries_apart(tmp_path):
    """The entries ran together ("Tobin Ashlar (father) Maud Ashlar (mother)"); now "; " separates them as <br>."""
    text = wiki_persona(tmp_path, LIST_INFOBOX)
    assert ("family: Tobin Ashlar (father); Maud Ashlar (mother). occupation: Mapmaker; Harbour pilot. "
            "home: Port Vell, Salt Coast; Harrowmere. aliases: The Lantern; Old Salt. spouse: Elsa Rook; (m. 1896).") \
        in text


# Bold and italic markup as editors leave it: a possessive right after an italic title, an italic title before a full
# stop, and a bold name whose closing quotes were forgotten.
APOSTROPHES = """'''Corwen Ashlar is a mapmaker in ''The Salt Roads''.

== Biography ==
After ''Dune'''s sequel came out he read nothing else for a year. He kept a copy of ''Maps''. The ''Grey Heron'''s
crew took him to Harrowmere.
"""


def test_bold_and_italic_quotes_the_parser_leaves_do_not_reach_the_persona(tmp_path):
    """They leaked as "Dune'''s", "Maps''" and a literal "'''"; a possessive keeps one apostrophe."""
    text = wiki_persona(tmp_path, APOSTROPHES)  # the unclosed bold hid the heading below it: "no headings found"
    assert "Corwen Ashlar is a mapmaker in The Salt Roads." in text and "## Activity\n\n### Biography\n" in text
    assert "After Dune's sequel came out" in text and "a copy of Maps. The Grey Heron's crew" in text
    assert "''" not in text
    from rpa_lib.authoring.wikitext import parse_wikitext  # each leak alone, in a section of its own

    doc = parse_wikitext("== Biography ==\nAfter ''Dune'''s sequel came out he kept a copy of ''Maps''.\n\n"
                         "'''Corwen is tall.\n\nHis copy of l'''Odyssée'' lay open.\n\nThe letter ''s'' was his mark.\n")
    assert doc.sections[1].paragraphs == ["After Dune's sequel came out he kept a copy of Maps.", "Corwen is tall.",
                                          "His copy of l'Odyssée lay open.", "The letter s was his mark."]


UTF16_PAGE = ("{{Infobox character\r\n| name = Corwen Ashlar\r\n| home = Port Vell\r\n}}\r\n"
              "'''Corwen Ashlar''' is a mapmaker.\r\n\r\n== Personality ==\r\nCorwen is stubborn and curious.\r\n")


@pytest.mark.parametrize("name, content", [
    ("page.wiki", b"\xff\xfe" + UTF16_PAGE.encode("utf-16-le")),  # Notepad's "Unicode", PowerShell 5's Out-File
    ("page.wiki", b"\xfe\xff" + UTF16_PAGE.encode("utf-16-be")),  # "Unicode big endian"
    ("page.wiki", UTF16_PAGE.encode("utf-16-le")),  # no byte order mark
    ("page.xml", ('<?xml version="1.0" encoding="UTF-16"?>\r\n' + export(("Corwen Ashlar", UTF16_PAGE.replace(
        "\r\n", "\n")))).encode("utf-16")),  # an export re-saved as UTF-16, its declaration saying so
])
def test_a_utf16_file_is_read_as_text(tmp_path, name, content):
    """It was "a binary file, not text"."""
    source = tmp_path / name
    source.write_bytes(content)
    new_character("corwen", source, name="Corwen Ashlar", work=WORK, data=tmp_path / "d")
    text = Dataset(tmp_path / "d").persona("corwen").source
    assert "name: Corwen Ashlar. home: Port Vell." in text and "Corwen is stubborn and curious." in text


# Templates of a Wikipedia biography's lead and infobox: an age between two dates, {{br}} between an infobox field's
# entries and in text, and the apostrophe templates editors use after italics.
TEMPLATES = """{{Infobox character
| name = Corwen Ashlar
| relatives = Tobin Ashlar (father){{br}}Maud Ashlar (mother)
| age = {{age|1870|5|4}}
}}
'''Corwen Ashlar''' is a mapmaker in ''The Salt Roads''.

== Biography ==
Corwen left Port Vell in 1900, when he was {{age|1870|5|4|1900|1|1}} years old.{{br}}He sailed on the
''Grey Heron''{{'}}s first voyage, and ''The Salt Roads''{{'s}} second part follows him north.
"""


def test_age_br_and_apostrophe_templates_render_as_text(tmp_path):
    """{{age}} showed its first argument ("1870 years old"), {{br}} joined words, {{'}} and {{'s}} vanished."""
    text = wiki_persona(tmp_path, TEMPLATES)
    assert "when he was 29 years old. He sailed on the Grey Heron's first voyage, and The Salt Roads's second" in text
    assert "relatives: Tobin Ashlar (father); Maud Ashlar (mother)." in text and "age:" not in text  # age "today"
    report = (tmp_path / "d" / "characters" / "corwen" / "IMPORT.md").read_text()
    assert "{{age}} -> '29'" in report and "template {{age}}" in report  # the one-date age is listed as dropped


# A Wikipedia lead: a pronunciation template (not rendered, dropped) before the birth date in brackets, and a
# footnote template after a name in another script.
PRONUNCIATION = """'''Corwen Ashlar''' ({{IPAc-en|ˈ|k|ɔːr|w|ən|_|ˈ|æ|ʃ|l|ər}}; born {{birth date|1870|5|4}}) is a mapmaker
in ''The Salt Roads''. His sister '''Sora''' ({{lang|ja|天川 空}}, {{efn|Her name is written with the sky's
character.}}) keeps the lighthouse.

== Personality ==
He is stubborn.
"""


def test_a_dropped_pronunciation_leaves_no_separator_in_its_brackets(tmp_path):
    """The lead read "Corwen Ashlar (; born 4 May 1870)"."""
    text = wiki_persona(tmp_path, PRONUNCIATION)
    assert "Corwen Ashlar (born 4 May 1870) is a mapmaker in The Salt Roads. His sister Sora (天川 空) keeps" in text


# A Fandom personality section: definition-list terms indented (":;") and inside a bulleted list ("*;"), as editors
# nest them.
NESTED_TERMS = """== Personality ==
Corwen is stubborn and curious.
:; Temper
:: Slow to anger, slower to forgive.
* Hobbies
*; Fishing
*: He fishes at dawn from the harbour wall.
*; Chess
*: He plays against the lighthouse keeper.
"""


def test_a_term_inside_a_list_reads_as_a_term_and_leaves_no_marker(tmp_path):
    """A private-use marker (U+E001) was left before each such term in persona.md."""
    text = wiki_persona(tmp_path, NESTED_TERMS)
    assert ("Corwen is stubborn and curious. Temper: Slow to anger, slower to forgive. Hobbies. Fishing: He fishes at "
            "dawn from the harbour wall. Chess: He plays against the lighthouse keeper.") in text
    assert not any("\ue000" <= c <= "\uf8ff" for c in text)


# A Fandom-style article: the lead, an "Overview" section that only gathers Appearance and Personality, a History with
# subsections, and a second "History" section (with its own "Youth") that a later editor added after Relationships.
OVERVIEW_AND_REPEATS = """{{Infobox character
| name = Wren Hollis
| occupation = Lamplighter
| home = Harrowmere
}}
'''Wren Hollis''' is the lamplighter of Harrowmere in the novel ''The Salt Roads''.

== Overview ==
=== Appearance ===
Wren is a wiry woman of forty with cropped grey hair and a burn scar on her left hand.

=== Personality ===
Wren is blunt and impatient, but she never leaves a lamp unlit.

== History ==
=== Youth ===
Wren grew up above her father's chandlery and learned to trim wicks at six.

=== The Long Dark ===
When the oil ships stopped coming she kept the harbour lit with fish oil for a winter.

== Relationships ==
Wren's only friend is the ferryman Oskar Dunn.

== History ==
=== Youth ===
At twelve she ran away to the lighthouse at Gull Point and was sent home a week later.
"""


def test_an_overview_with_subsections_and_a_repeated_section_import(tmp_path):
    """Both failed validation ("heading path 'Demographic Information > Overview' repeats line 5"), naming a staged
    file that was already deleted; now each Overview subsection is placed by its own heading, the lead and Overview
    share one heading, and sections of one heading path are joined."""
    text = wiki_persona(tmp_path, OVERVIEW_AND_REPEATS, name="Wren Hollis")
    persona = Dataset(tmp_path / "d").persona("corwen")
    paths = [path[1:] for _, path in persona.headings]
    assert len(paths) == len(set(paths))
    where = {p.text[:20]: p.headings[1:] for p in persona.paragraphs}
    assert where["Wren Hollis is the l"] == ("Demographic Information", "Overview")
    assert where["Wren is a wiry woman"] == ("Demographic Information", "Overview", "Appearance")
    assert where["Wren is blunt and im"] == ("Psychological Traits", "Personality")
    assert where["Wren grew up above h"] == where["At twelve she ran aw"] == ("Activity", "History", "Youth")
    assert where["When the oil ships s"] == ("Activity", "History", "The Long Dark")
    assert text.index("Wren grew up") < text.index("At twelve") < text.index("When the oil ships")
    report = (tmp_path / "d" / "characters" / "corwen" / "IMPORT.md").read_text()
    assert "line 12: 'Overview > Personality' -> Psychological Traits (heading table: heading 'personality')" in report


def test_a_persona_that_does_not_validate_is_told_by_the_source_lines(tmp_path, monkeypatch):
    """A validation problem named the staged persona (".import-corwen-.../persona.md:9"), deleted by the time the
    user reads it; now it names the source's line and heading."""
    from rpa_lib.authoring import importer

    real = importer.validate

    def failing(ds, slugs, full):  # as if the importer had written two sections of one heading path
        persona = ds.persona_path(slugs[0])
        at = {line: n for n, line in enumerate(persona.read_text().split("\n"), start=1)}
        return [*real(ds, slugs, full=full), f"{persona}:{at['#### Youth']}: heading path 'Activity > History > Youth' "
                f"repeats line {at['### Overview']}: merge the two or rename one"]

    monkeypatch.setattr(importer, "validate", failing)
    with pytest.raises(DataError) as caught:
        wiki_persona(tmp_path, OVERVIEW_AND_REPEATS, name="Wren Hollis")
    message = str(caught.value)
    assert message.startswith(f"{tmp_path / 'page.wiki'}: the imported persona does not validate (nothing written)")
    assert ("line 16 ('History > Youth'): heading path 'Activity > History > Youth' repeats line 1 (the text before "
            "the first heading): merge the two or rename one") in message
    assert ".import-" not in message and "persona.md" not in message
    assert not (tmp_path / "d" / "characters" / "corwen").exists()


# A wiki page saved as Markdown by a browser extension: links to pages whose titles hold parentheses, with the link's
# title in quotes, footnote links ("[[1]](#cite_note-1)", inside <sup> too), a picture whose file name has parentheses,
# and each heading's "[edit]" link.
MARKDOWN_COPY = """# Corwen Ashlar

From the Salt Roads Wiki, the free encyclopedia

**Corwen Ashlar** is a mapmaker who sailed on the [*Grey Heron*](https://saltroads.example.org/wiki/Grey_Heron_(ship) "Grey Heron (ship)").[[1]](#cite_note-1) He was born in [Port Vell](/wiki/Port_Vell "Port Vell").

## Personality[[edit](/w/index.php?title=Corwen_Ashlar&action=edit&section=1 "Edit section: Personality")]

![Corwen at the harbour of Port Vell](https://upload.example.org/wiki/Corwen_(2004).jpg)

Corwen is stubborn.<sup>[[3]](https://saltroads.example.org/wiki/Corwen_Ashlar#cite_note-3)</sup> He dislikes [lies (see below)](#Lies_(note)) and keeps his maps in a [tin box](/wiki/Tin_box_(container)).

## Early life[[edit](/w/index.php?title=Corwen_Ashlar&action=edit&section=2 "Edit section: Early life") | [edit source](/w/index.php?title=Corwen_Ashlar&action=edit&section=2)]

He left home at fourteen.[[a]](#cite_note-a)
"""


def test_a_markdown_copy_keeps_no_link_markup(tmp_path):
    """Links stopped at the first ")": 'the Grey Heron "Grey Heron (ship)").[](#cite_note-1)', a paragraph '.jpg)',
    and headings 'Personality[edit]'."""
    source = tmp_path / "corwen.md"
    source.write_text(MARKDOWN_COPY, encoding="utf-8")
    new_character("corwen", source, work=WORK, data=tmp_path / "d")
    text = Dataset(tmp_path / "d").persona("corwen").source
    assert "Corwen Ashlar is a mapmaker who sailed on the Grey Heron. He was born in Port Vell.\n" in text
    assert ("### Personality\n\nCorwen is stubborn. He dislikes lies (see below) and keeps his maps in a tin box.\n"
            in text)
    assert "### Early life\n\nHe left home at fourteen.\n" in text
    for leak in ("](", "[", ")", "cite_note", ".jpg", "edit", "http"):
        assert leak not in text.replace("(see below)", ""), leak


# A page's wikitext copied with its title as a level-1 heading on top (as some wikis' "view source" and offline
# copies show it), then the lead with a citation, then the sections.
TITLED = """= Corwen Ashlar =
'''Corwen Ashlar''' is a mapmaker and smuggler from [[Port Vell]].<ref>{{cite book|last=Marrow|title=The Salt Roads|year=2001}}</ref> He sailed on the ''Grey Heron'' for six years.

== Early life ==
Corwen was born in Port Vell in {{birth date|1870|5|4}}. At fourteen he left home and sailed north.

== Personality ==
Corwen is stubborn and curious, slow to anger but never forgetting an insult.

== Abilities ==
He can survey a coastline from a moving boat and reads the tides.
"""


def test_a_level1_title_atop_wikitext_is_the_pages_title(tmp_path):
    """The title heading took every section under it (not placed: 'Corwen Ashlar > Personality' ...) and its lead was
    lost; now it is the title, as "# Title" is in Markdown, and the name defaults to it."""
    source = tmp_path / "corwen.wiki"
    source.write_text(TITLED, encoding="utf-8")
    new_character("corwen", source, work=WORK, data=tmp_path / "d")
    persona = Dataset(tmp_path / "d").persona("corwen")
    where = {p.text[:20]: p.headings for p in persona.paragraphs}
    assert persona.name == "Corwen Ashlar"
    assert where["Corwen Ashlar is a m"] == ("Corwen Ashlar", "Demographic Information", "Overview")
    assert where["Corwen was born in P"] == ("Corwen Ashlar", "Activity", "Early life")
    assert where["Corwen is stubborn a"] == ("Corwen Ashlar", "Psychological Traits", "Personality")
    assert where["He can survey a coas"] == ("Corwen Ashlar", "Skill and Expertise", "Abilities")
    xml = tmp_path / "export.xml"  # an export's page that repeats its title so
    xml.write_text(export(("Corwen Ashlar", TITLED)), encoding="utf-8")
    new_character("corwen-x", xml, work=WORK, data=tmp_path / "d")
    assert Dataset(tmp_path / "d").persona("corwen-x").source == persona.source


def test_a_long_section_is_stripped_without_searching_the_tree_per_node(monkeypatch):
    """Each footnote, template or picture removed searched the whole section again (mwparserfromhell's remove and
    replace), so a section of thousands of footnotes took minutes; now each node is visited once and the node lists
    rebuilt once. The text, the report's lines and what is rendered are as they were: a footnote inside a picture's
    caption is listed, the templates inside a removed footnote or picture are not."""
    import mwparserfromhell.wikicode as wikicode

    from rpa_lib.authoring.wikitext import parse_wikitext

    searches = []
    search = wikicode.Wikicode._do_strong_search
    monkeypatch.setattr(wikicode.Wikicode, "_do_strong_search",
                        lambda self, *a, **kw: searches.append(a[0]) or search(self, *a, **kw))
    n = 400
    page = "== History ==\n" + "\n\n".join(
        f"Corwen sailed to [[Port Vell|the port]] {i} and mapped the [[coast]] in {{{{date|{1600 + i}}}}}.<ref "
        f'name="r{i}">{{{{cite web|title=T{i}|work={{{{lang|fy|W}}}}}}}}</ref>{{{{sfn|Marrow|2001|p={i}}}}}'
        f"[[File:Map {i}.png|thumb|The port in {{{{date|{1600 + i}}}}}<ref>Marrow, p. {i}.</ref>]]" for i in range(n))
    doc = parse_wikitext(page + "\n")
    assert doc.sections[1].paragraphs == [f"Corwen sailed to the port {i} and mapped the coast in {1600 + i}."
                                          for i in range(n)]
    assert doc.removed == [r for i in range(n) for r in (
        (2 + 2 * i, "<ref> footnote ({{cite web}}, {{lang}})"), (2 + 2 * i, "template {{sfn}}"),
        (2 + 2 * i, f"file link 'Map {i}.png'"), (2 + 2 * i, "<ref> footnote"))]
    assert doc.rendered == [(2 + 2 * i, f"{{{{date}}}} -> '{1600 + i}'") for i in range(n)]
    assert searches == []


# A Fandom-style article on a monk: misspelled headings an editor left (Apperance, Personallity, Backgroud), a section
# on his fasting and one on his magic, and the real-world Casting section of the adaptation.
MONK = """{{Infobox character
| name        = Brother Aldous
| occupation  = Monk; healer
| affiliation = [[Order of the Grey Well]]
| first       = ''The Salt Roads''
}}
'''Brother Aldous''' is a monk of the [[Order of the Grey Well]] in ''[[The Salt Roads]]''.

== Apperance ==
Aldous is a tall, thin man with a shaved head, who wears the grey habit of his order.

== Personallity ==
He is patient and soft-spoken, but stubborn once he has given his word.

== Backgroud ==
Aldous was left at the gates of the Grey Well as an infant and raised by the brothers.

== Fasting ==
Aldous keeps the order's winter fast, eating only bread and water for forty days.

== Magic casting ==
He heals wounds by casting the old wardings of the order, a rite that leaves him weak for days.

== Casting ==
In the 2019 radio adaptation Aldous was voiced by Rhys Morgan.<ref>{{cite web|title=Cast list|work=Radio Times}}</ref>

== References ==
{{reflist}}
"""


def test_a_near_miss_is_a_misspelling_not_another_word(tmp_path):
    """"Fasting" was dropped as a near miss of the real-world "casting", and "Magic casting" for the "casting" in it;
    now a near miss keeps its first letter, "magic casting" is a skill, and the misspellings are still placed."""
    text = wiki_persona(tmp_path, MONK, name="Brother Aldous")
    report = (tmp_path / "d" / "characters" / "corwen" / "IMPORT.md").read_text()
    assert "'Fasting' not placed: heading not in the table" in report  # left to content placement, or --map
    assert "He heals wounds by casting" in text.split("## Skill and Expertise")[1]
    for line in ("'Apperance' -> Demographic Information (heading table: near miss of 'appearance')",
                 "'Personallity' -> Psychological Traits (heading table: near miss of 'personality')",
                 "'Backgroud' -> Activity (heading table: near miss of 'background')"):
        assert line in report, line
    assert "'Casting' dropped (heading table: heading 'casting')" in report and "Rhys Morgan" not in text


# A talk page as editors write one (a WikiProject banner, then threads signed with user and talk links) and a user
# page (Babel boxes, an About me section).
TALK = """{{WikiProject Novels|class=C|importance=low}}

== Personality section too long? ==
The Personality section retells the plot of chapter 12. Should we cut it? [[User:Mira|Mira]] ([[User talk:Mira|talk]]) 10:02, 3 May 2024 (UTC)
:Agreed, she is calm and careful and that is all the source says. [[User:Tobin|Tobin]] ([[User talk:Tobin|talk]]) 11:40, 3 May 2024 (UTC)
"""
USER = """{{Babel|en|de-2}}
== About me ==
I am Mira, a librarian from Leeds. I have read ''[[The Salt Roads]]'' five times.

== Articles I started ==
* [[Elsa Rook]]
* [[Corwen Ashlar]]
"""


@pytest.mark.parametrize("page, ns, wikitext", [("Talk:Elsa Rook", 1, TALK), ("User:Mira", 2, USER)])
def test_a_page_named_with_page_is_refused_as_each_page_skips_it(tmp_path, capsys, page, ns, wikitext):
    """--page imported a talk or user page as a character ("Personality section too long?" -> Psychological Traits,
    "About me" -> Demographic Information); now the check that makes --each-page skip it refuses it, as it does the
    only page of an export."""
    refused = f"page '{page}' is not an article: namespace {ns} ('{page.split(':')[0]}')"
    two, one = tmp_path / "two.xml", tmp_path / "one.xml"
    two.write_text(export(("Elsa Rook", ARTICLE), (page, wikitext), ns=(0, ns)), encoding="utf-8")
    one.write_text(export((page, wikitext), ns=(ns,)), encoding="utf-8")
    assert cli.main(["new-character", "elsa", "--page", page, "--work", WORK, "--from", str(two), "--embedder",
                     "none", "--data-dir", str(tmp_path / "d")]) == 2
    assert f"error: {two}: {refused}\n" == capsys.readouterr().err
    with pytest.raises(DataError, match=re.escape(refused)):
        new_character("elsa", one, work=WORK, data=tmp_path / "d")
    assert not (tmp_path / "d" / "characters").exists()


# An article laid out in two columns, each a <div> with a style, its sections inside (as Fandom and older Wikipedia
# pages do), then a full-width section after {{clear}}.
COLUMNS = """{{Infobox character
| name       = Elsa Rook
| occupation = Harbour pilot
| home       = [[Port Vell]]
}}
'''Elsa Rook''' is a harbour pilot in ''[[The Salt Roads]]''.

<div style="float:left; width:48%;">
== Personality ==
Elsa is calm and careful, and never raises her voice on deck.

=== Fears ===
She fears fog more than storms.
</div>
<div style="float:right; width:48%;">
== Abilities ==
She can bring a ship through the Narrows at night by the sound of the bell buoys.
</div>
{{clear}}

== Relationships ==
She is married to [[Corwen Ashlar]].
"""


def test_headings_inside_a_div_are_sections(tmp_path):
    """The parser holds a <div> as one tag node, so its headings were read as text of the lead ("Personality Elsa is
    calm ..."); now they are sections, as MediaWiki shows them, with their own lines."""
    wiki_persona(tmp_path, COLUMNS, name="Elsa Rook")
    where = {p.text[:20]: p.headings[1:] for p in Dataset(tmp_path / "d").persona("corwen").paragraphs}
    assert where["Elsa Rook is a harbo"] == ("Demographic Information", "Overview")
    assert where["Elsa is calm and car"] == ("Psychological Traits", "Personality")
    assert where["She fears fog more t"] == ("Psychological Traits", "Personality", "Fears")
    assert where["She can bring a ship"] == ("Skill and Expertise", "Abilities")
    assert where["She is married to Co"] == ("Social Relationships", "Relationships")
    report = (tmp_path / "d" / "characters" / "corwen" / "IMPORT.md").read_text()
    assert "line 9: 'Personality' -> Psychological Traits" in report and "line 16: 'Abilities' -> Skill" in report


UNCLOSED = """'''Brannoc Hale''' is the lighthouse keeper of Skerry Rock in ''[[The Salt Roads]]''.
<div style="float:right; margin-left:1em;">[[File:Brannoc.png|200px]]
<center><small>Brannoc in the first chapter</small>

== Personality ==
Brannoc is <span style="color:#800">gruff</span> with strangers and gentle with his dog.</span>

== Abilities ==
He can read the weather from the colour of the sea.
</div></div>
"""


def test_an_unpaired_layout_tag_leaves_no_markup_in_the_persona(tmp_path):
    """A <div> or <center> never closed, and a stray closing tag, are text to the parser: they reached persona.md
    as '<div style=...>' and '</span>'."""
    wiki_persona(tmp_path, UNCLOSED, name="Brannoc Hale")
    persona = (tmp_path / "d" / "characters" / "corwen" / "persona.md").read_text()
    assert not re.search(r"</?(div|center|span|small)", persona), persona
    assert "Brannoc is gruff with strangers and gentle with his dog." in persona
    assert "He can read the weather from the colour of the sea." in persona
