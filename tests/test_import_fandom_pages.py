"""Importing two more pages written like real character articles, about invented characters:
``sora-amakawa.xml`` (a Fandom anime page as Special:Export: an infobox over many lines with a tabber image and
``{{Ruby}}``, ``{{Nihongo}}`` and ``{{tt}}`` values, "hair color" fields, named and reused ``<ref>`` tags, a
``{{Quote}}``, ``__TOC__``, a comment, ``== {{Anchor|x}}Heading ==``, a personality section called "Character" with a
definition list and nested bullets, a tabber, ``{{Spoiler}}``, a wiki table, a gallery, ``=== [[Link|Text]] ===``)
and ``ilse-brandauer.wiki`` (a German page's wikitext: German headings and infobox fields)."""

from __future__ import annotations

from pathlib import Path

from rpa_lib.authoring.cli import main as authoring_cli

SOURCES = Path(__file__).parent / "fixtures" / "import"


def imported(tmp_path, source: str, slug: str, *options: str) -> tuple[str, str]:
    """``(persona.md, IMPORT.md)`` of the documented command, headings only (no content placer)."""
    assert authoring_cli(["new-character", slug, "--work", "Lantern Runners", "--from", str(SOURCES / source),
                          "--embedder", "none", "--data-dir", str(tmp_path), *options]) == 0
    folder = tmp_path / "characters" / slug
    return (folder / "persona.md").read_text(encoding="utf-8"), (folder / "IMPORT.md").read_text(encoding="utf-8")


def section(text: str, attribute: str) -> str:
    return text.split(f"## {attribute}\n")[1].split("\n## ")[0]


def test_an_anchor_in_a_heading_leaves_the_heading_its_own_name(tmp_path):
    text, report = imported(tmp_path, "sora-amakawa.xml", "sora")
    assert "### Appearance\n\nSora is a short girl" in section(text, "Demographic Information")
    assert "Before the timeskip, her hair is cut short" in text  # the tabber's tabs, each a paragraph
    assert "### Character\n\nSora is stubborn, cheerful and very loud." in section(text, "Psychological Traits")
    assert "LooksAppearance" not in text + report and "- line 53: template {{anchor}}" in report


def test_ruby_tooltip_and_colour_fields_of_an_infobox_are_kept(tmp_path):
    text, report = imported(tmp_path, "sora-amakawa.xml", "sora")
    infobox = text.split("### Infobox\n\n")[1].split("\n")[0]
    for kept in ("kanji: 天川 空.", "alias: The Lantern; Sky-chan (by Mei).", "hair color: Black. eye color: Amber.",
                 "family: Haruto Amakawa (father); Chiyo Amakawa (mother, deceased); Rin Amakawa (younger brother)."):
        assert kept in infobox, kept
    assert "- line 22: {{ruby}} -> '天川' (infobox)" in report and "- line 22: infobox field 'image'" in report
    for gone in ("Morikawa", "Harmon", "Chapter 1", "png", "second-year uniform"):  # real world, image, caption
        assert gone not in infobox, gone


def test_a_definition_list_reads_term_colon_definition_and_no_markup_is_left(tmp_path):
    text, report = imported(tmp_path, "sora-amakawa.xml", "sora")
    psych = section(text, "Psychological Traits")
    assert "Likes: Melon bread, rooftops, thunderstorms watched from indoors. Dislikes: Silence at dinner" in psych
    assert "Habits: She counts the streetlights on her way home. She hums when she is nervous." in psych
    assert ("\"If the light goes out, I'll just carry another one.\" (Sora Amakawa to Kaito Mizuhara) Sora Amakawa is"
            in text)  # the quote kept as said, by whom, not as narration
    assert "- line 48: {{quote}} -> " in report
    assert "#### Kaito\n\nKaito is Sora's classmate" in text and "#### Summer Festival Arc\n" in text
    for gone in ("{{", "}}", "<", ">", "[[", "''", "|", "__", "tabber", "Pre-Timeskip", "fan-made", "\u2022", "\u2023",
                 "Afterglow", "Creator interview", "popularity poll", "page 4", "Navbox"):
        assert gone not in text, gone
    for dropped in ("- line 89: table", "- line 108: gallery", "- line 64: <ref> footnote ({{cite web}})",
                    "- line 77: template {{spoiler}}", "- line 121: category link 'Characters'"):
        assert dropped in report, dropped


def test_a_german_page_keeps_its_age_field_drops_its_image_and_maps_its_headings(tmp_path):
    maps = [f"--map={h}={a}" for h, a in (("Aussehen", "Demographic Information"), ("Geschichte", "Activity"),
                                          ("Persönlichkeit", "Psychological Traits"),
                                          ("Fähigkeiten", "Skill and Expertise"),
                                          ("Beziehungen", "Social Relationships"), ("Einzelnachweise", "none"))]
    text, report = imported(tmp_path, "ilse-brandauer.wiki", "ilse", "--name", "Ilse Brandauer", *maps)
    assert "Geschlecht: weiblich. Alter: 34. Herkunft: Kellmar." in text  # "Alter" (age) is no image's alt text
    assert "jpg" not in text and "- line 1: infobox field 'Bild'" in report  # a bare file name is an image
    assert "Bildunterschrift" not in text and "infobox field 'Bildunterschrift'" in report  # and its caption
    assert "Jorgen Brandauer: Ihr jüngerer Bruder" in section(text, "Social Relationships")
    assert "Wetterkunde." in section(text, "Skill and Expertise") and "Kategorie" not in text
