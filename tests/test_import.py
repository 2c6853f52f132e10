"""Importing a character from one's own document (issue 23): Markdown and a MediaWiki XML export written for these
tests (tests/fixtures/import, two invented characters), validation, a question answered by AMADEUS on the fake
backend, bad inputs that write nothing, and the QA scaffold's review-then-promote path."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from rpa_lib.data import Dataset, validate
from rpa_lib.data.cli import main as data_cli
from rpa_lib.data.importer import UNKNOWN, new_character, parse_mapping, place
from rpa_lib.data.scaffold import promote, qa_scaffold, read_review
from rpa_lib.errors import DataError
from rpa_lib.llm import FakeLLM
from rpa_lib.methods import build_method
from rpa_lib.persona import ATTRIBUTES

SOURCES = Path(__file__).parent / "fixtures" / "import"
MARKDOWN, WIKI = SOURCES / "tove-marsh.md", SOURCES / "wren-ashby.xml"


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (hidden ones too) with its bytes: to show that a failed import wrote nothing."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_markdown_import_places_sections_validates_and_reports(data_copy):
    done = new_character("tove-marsh", MARKDOWN, name="Tove Marsh", work="The Saltgate Ferry", data=data_copy)
    ds = Dataset(data_copy)
    assert validate(ds, ["tove-marsh"], full=False) == []
    persona = ds.persona("tove-marsh")
    assert persona.name == "Tove Marsh" and all(done.placed[a] >= 2 for a in ATTRIBUTES)
    contexts = {p.context for p in persona.paragraphs}
    assert "Tove Marsh > Activity > History > The fog winter" in contexts
    assert "Tove Marsh > Social Relationships > Relationships > Family > Edda Marsh" in contexts
    assert "Tove Marsh > Demographic Information > Overview" in contexts  # the text under the '#' title
    text = persona.source
    assert "**" not in text and "Saltgate ferry, a flat-bottomed boat" in text
    assert "painted blue" not in text and "readers think" not in text  # Trivia and the unknown section left out
    assert done.report == [
        "line 1: text before the first heading placed under Demographic Information > Overview",
        "line 70: section 'Trivia' not placed: left out on purpose (its heading maps to none of the six attributes "
        "in the table)",
        "line 75: section 'Fan Theories' not placed: heading not in the table (map it with --map 'Fan Theories'="
        "ATTRIBUTE, or use --classify-with-llm)"]
    assert "line 75" in (data_copy / "characters" / "tove-marsh" / "IMPORT.md").read_text()
    assert ds.profile("tove-marsh") == ("Tove Marsh", "The Saltgate Ferry")
    assert ds.characters(["tove-marsh"]) == ["tove-marsh"]
    row = next(r for r in ds.labels() if r["slug"] == "tove-marsh")
    assert (row["mbti"], row["sloan"]) == ("", "")  # types are optional ...
    with pytest.raises(DataError, match="no mbti type for tove-marsh"):  # ... and what needs them says so
        ds.types("mbti", ["ada-lindqvist", "tove-marsh"])
    assert ds.types("mbti", ["ada-lindqvist"]) == {"ada-lindqvist": "ISTJ"}
    assert validate(ds, full=False) == []  # the whole fixture dataset, labels included, still validates


def test_mediawiki_import_strips_templates_references_and_markup(data_copy):
    done = new_character("wren-ashby", WIKI, name="Wren Ashby", work="Tollbridge Tales", data=data_copy, mbti="ENTP")
    ds = Dataset(data_copy)
    assert validate(ds, ["wren-ashby"], full=False) == []
    text = ds.persona("wren-ashby").source
    for gone in ("{{", "Infobox", "Chapter 1", "<ref", "[[", "'''", "Category", "wikitable", "Early sketch",
                 "Citation needed", "real clock"):
        assert gone not in text, gone
    assert "I came to the workshop of Master Vell when I was twelve." in text  # a piped link keeps its shown text
    assert "Cleaning and oiling pocket watches. Cutting small gears" in text  # a list becomes sentences
    assert "## Skill and Expertise\n\n### Skills\n" in text
    assert [r.split(":")[0] for r in done.report] == ["line 14", "line 62", "line 68", "line 71", "line 74"]
    assert "line 62: table removed" in done.report
    assert next(r for r in ds.labels() if r["slug"] == "wren-ashby")["mbti"] == "ENTP"


def test_an_imported_character_answers_with_amadeus_on_the_fake_backend(data_copy):
    new_character("wren-ashby", WIKI, name="Wren Ashby", work="Tollbridge Tales", data=data_copy)

    def rule(kind, messages, spec):
        last = messages[-1]["content"]
        if kind == "choose":
            return "yes" if "jackdaw" in last else "no"
        if kind == "structured":
            return {"belief_and_value": "repair first", "psychological_traits": "curious"}
        return "SYSTEM:" + messages[0]["content"]

    method = build_method("amadeus", FakeLLM(rule), dataset=data_copy, embedder="hash-64", k=3)
    r = method.respond("wren-ashby", "What did you find in the town hall tower?")
    used = [i for i in r.context if i.role in ("selected", "knowledge")]
    assert used and all(cid.startswith("wren-ashby:acts:") for i in used for cid in i.chunk_ids)
    assert "Wren Ashby from Tollbridge Tales" in r.reply and "jackdaw's nest" in r.reply
    assert any(i.role == "selected" and "jackdaw" in i.text for i in r.context)


@pytest.mark.parametrize("content, name, problem", [
    (b"", "empty.md", "empty file"),
    (b"   \n\n", "blank.txt", "empty file"),
    (b"Just one paragraph of prose with no headings at all.\n", "flat.md", "no headings found"),
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "picture.md", "a binary file"),
    (b"\xff\xfe# T\x00i\x00", "utf16.txt", "binary file"),
    (b"# Tove\n\n## Personality\n\nKind.\n", "notes.docx", "unknown format '.docx'"),
    (b"<html><body>no</body></html>", "page.xml", "not a MediaWiki export"),
    (b"<mediawiki><page><title>A</title>", "broken.xml", "not well-formed XML"),
    (b"# Tove\n\n## Personality\n\nKind and slow to anger.\n", "partial.md", "no section placed under 'Demographic"),
])
def test_bad_input_is_a_clear_error_and_writes_nothing(data_copy, tmp_path, content, name, problem):
    source = tmp_path / name
    source.write_bytes(content)
    before = snapshot(data_copy)
    with pytest.raises(DataError, match=problem) as caught:
        new_character("newcomer", source, name="Newcomer", work="W", data=data_copy)
    assert str(source) in str(caught.value)
    assert snapshot(data_copy) == before


def test_an_existing_or_malformed_slug_or_a_bad_type_writes_nothing(data_copy):
    before = snapshot(data_copy)
    with pytest.raises(DataError, match="'ada-lindqvist' already exists"):
        new_character("ada-lindqvist", MARKDOWN, name="Tove Marsh", work="W", data=data_copy)
    with pytest.raises(DataError, match="lowercase words joined by hyphens"):
        new_character("Tove Marsh", MARKDOWN, name="Tove Marsh", work="W", data=data_copy)
    with pytest.raises(DataError, match="mbti 'XYZW' is not a valid type"):
        new_character("tove-marsh", MARKDOWN, name="Tove Marsh", work="W", data=data_copy, mbti="XYZW")
    (data_copy / "labels.csv").write_text((data_copy / "labels.csv").read_text() + "ghost,Ghost,W,,\n")
    before = snapshot(data_copy)
    with pytest.raises(DataError, match="already has a row for 'ghost'"):
        new_character("ghost", MARKDOWN, name="Ghost", work="W", data=data_copy)
    assert snapshot(data_copy) == before


def test_the_table_the_map_option_and_the_optional_llm_classification(data_copy):
    assert place("Powers and Abilities") == "Skill and Expertise" and place("Fan Theories") == UNKNOWN
    assert place("Early life and family") == "Activity"  # the longest entry found in it: "early life"
    assert place("Family & Friends!") == "Social Relationships"
    assert parse_mapping(["Fan Theories=belief and value", "Quotes=none"]) == {"fan theories": "Belief and Value",
                                                                               "quotes": None}
    with pytest.raises(ValueError, match="expected 'HEADING=ATTRIBUTE'"):
        parse_mapping(["Fan Theories=Gossip"])
    done = new_character("tove-marsh", MARKDOWN, name="Tove Marsh", work="W", data=data_copy,
                         mapping=parse_mapping(["Fan Theories=Belief and Value", "Trivia=Activity"]))
    text = Dataset(data_copy).persona("tove-marsh").source
    assert "### Fan Theories" in text and "### Trivia" in text and "painted blue since 1962." in text
    assert not any("not placed" in r for r in done.report)

    asked = []

    def rule(kind, messages, spec):
        asked.append(messages[-1]["content"])
        return "Psychological Traits"

    done = new_character("tove-two", MARKDOWN, name="Tove Marsh", work="W", data=data_copy, llm=FakeLLM(rule))
    assert len(asked) == 1 and "Heading: Fan Theories" in asked[0]  # only the heading the table does not know
    assert "line 75: section 'Fan Theories' placed by the LLM: Psychological Traits" in done.report
    assert "### Fan Theories" in Dataset(data_copy).persona("tove-two").source

    before = snapshot(data_copy)  # an LLM that never answers with an option: a clear error, nothing written
    with pytest.raises(DataError, match=r"tove-marsh.md:75: the LLM could not place section 'Fan Theories'"):
        new_character("tove-three", MARKDOWN, name="Tove Marsh", work="W", data=data_copy,
                      llm=FakeLLM(lambda kind, messages, spec: "banana"))
    assert snapshot(data_copy) == before


def test_the_command_line_imports_and_reports(data_copy, capsys, tmp_path):
    code = data_cli(["new-character", "wren-ashby", "--name", "Wren Ashby", "--work", "Tollbridge Tales",
                     "--from", str(WIKI), "--data-dir", str(data_copy)])
    out = capsys.readouterr().out
    assert code == 0 and "line 68: section 'Behind the scenes' not placed" in out and "Validated." in out
    assert data_cli(["validate", "--character", "wren-ashby", "--no-counts", "--data-dir", str(data_copy)]) == 0
    empty = tmp_path / "empty.md"
    empty.write_text("")
    assert data_cli(["new-character", "x", "--name", "X", "--work", "W", "--from", str(empty),
                     "--data-dir", str(data_copy)]) == 2
    assert f"{empty}: empty file" in capsys.readouterr().err


def evidence_rule(kind, messages, spec):
    """Quotes the first sentence of the first passage as evidence (found), and adds one pair whose evidence is
    paraphrased (not found), so both paths of the check run."""
    passage = messages[-1]["content"].split("Passages:\n", 1)[1].split("\n")[1]
    first = passage.split(". ")[0] + ("." if ". " in passage else "")
    return {"pairs": [{"question": "What do you do?", "answer": "Runs a ferry.", "evidence": first},
                      {"question": "Any pets?", "answer": "A cat.", "evidence": "I have a cat called Mast."}]}


def test_qa_scaffold_keeps_only_verbatim_evidence_and_promotes_only_reviewed_rows(data_copy):
    new_character("tove-marsh", MARKDOWN, name="Tove Marsh", work="W", data=data_copy)
    ds = Dataset(data_copy)
    result = qa_scaffold("tove-marsh", FakeLLM(evidence_rule), data=data_copy, per_attribute=2)
    assert result.added == 6 and sum(result.dropped.values()) == 6 and not result.failed
    rows, problems = read_review(result.path)
    assert problems == [] and {r["reviewed"] for r in rows} == {"no"}
    assert [r["id"] for r in rows] == [f"tove-marsh-{n:02d}" for n in range(1, 7)]
    assert all(r["evidence_1"] in ds.persona("tove-marsh").source for r in rows)
    assert not ds.qa_path("tove-marsh").exists()
    with pytest.raises(DataError, match="no row is marked reviewed=yes"):
        promote("tove-marsh", data=data_copy)

    # A person marks two rows reviewed in a spreadsheet, and breaks the evidence of a third one.
    with open(result.path, newline="") as f:
        table = list(csv.DictReader(f))
    table[0]["reviewed"], table[3]["reviewed"] = "yes", "YES"
    table[4].update(reviewed="yes", evidence_1="I love weak milky tea.")
    with open(result.path, "w", newline="") as f:
        writer = csv.DictWriter(f, list(table[0]))
        writer.writeheader()
        writer.writerows(table)
    with pytest.raises(DataError, match=r"line 6: evidence not found verbatim"):
        promote("tove-marsh", data=data_copy)
    assert not ds.qa_path("tove-marsh").exists()
    table[4]["reviewed"] = "no"
    with open(result.path, "w", newline="") as f:
        writer = csv.DictWriter(f, list(table[0]))
        writer.writeheader()
        writer.writerows(table)
    assert promote("tove-marsh", data=data_copy)[0] == 2
    lines = [json.loads(line) for line in ds.qa_path("tove-marsh").read_text().splitlines()]
    assert [q["id"] for q in lines] == ["tove-marsh-01", "tove-marsh-04"]
    assert [q.id for q in ds.qa("tove-marsh")] == ["tove-marsh-01", "tove-marsh-04"]
    # The fake answer "Runs a ferry." uses persona words its evidence (the first sentence of a passage) lacks: the
    # content-word check flags them until a person reviews them (data/README.md, "Validation").
    flagged = [p.split(": ", 1)[1].split(":")[0] for p in validate(ds, ["tove-marsh"], full=False)]
    assert flagged == ["the answer of tove-marsh-01 uses 'runs'", "the answer of tove-marsh-04 uses 'runs', 'ferry'"]
    ds.grounding_reviewed_path.write_text("id,word,reason\ntove-marsh-01,runs,checked\ntove-marsh-04,runs,checked\n"
                                          "tove-marsh-04,ferry,checked\n")
    assert validate(ds, ["tove-marsh"], full=False) == []

    # A second scaffold run appends after the existing ids and keeps the person's review.
    again = qa_scaffold("tove-marsh", FakeLLM(evidence_rule), data=data_copy, per_attribute=1)
    rows = read_review(again.path)[0]
    assert len(rows) == 12 and rows[0]["reviewed"] == "yes" and rows[-1]["id"] == "tove-marsh-12"


def test_qa_scaffold_with_the_default_fake_drops_and_counts_everything(data_copy, capsys):
    new_character("tove-marsh", MARKDOWN, name="Tove Marsh", work="W", data=data_copy)
    assert data_cli(["qa-scaffold", "tove-marsh", "--llm", "fake", "--data-dir", str(data_copy)]) == 0
    out = capsys.readouterr().out
    assert "0 pair(s) written" in out and "6 dropped because their evidence is not verbatim" in out


def test_chat_talks_to_an_imported_character(data_copy, capsys):
    from rpa_lib.__main__ import main as rpa_main

    new_character("tove-marsh", MARKDOWN, name="Tove Marsh", work="The Saltgate Ferry", data=data_copy)
    code = rpa_main(["chat", "--character", "tove-marsh", "--data-dir", str(data_copy), "--llm", "fake",
                     "--embedder", "hash-64", "--question", "Who is your sister?"])
    out = capsys.readouterr().out
    assert code == 0 and "you> Who is your sister?" in out and "tove-marsh:acts:" in out
    assert rpa_main(["chat", "--character", "nobody", "--data-dir", str(data_copy), "--llm", "fake"]) == 2
    assert "unknown character(s) 'nobody'" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["rpa_lib.data.sources", "rpa_lib.data.wikitext", "rpa_lib.data.importer"])
def test_the_examples_in_the_docstrings(name):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted and not result.failed


def test_plain_text_with_underlined_and_numbered_headings(data_copy, tmp_path):
    source = tmp_path / "juno.txt"
    source.write_text(
        "Juno Pike\n=========\n\nJuno Pike is a beekeeper.\n\n"
        "1 Profile\n\nI am Juno Pike, and I keep forty hives on the chalk downs.\n\n"
        "2 History\n\n2.1 The swarm year\n\nThe year I turned twenty, nine hives swarmed in one week and I caught\n"
        "seven of the swarms in borrowed baskets.\n\n"
        "3 Beliefs\n\nI believe bees should keep enough honey for their own winter.\n\n"
        "Personality\n-----------\n\nI am patient, and I hum when I work.\n\n"
        "Skills\n------\n\n- reading a hive by its sound\n- rearing queens\n\n"
        "Relationships\n-------------\n\nMy neighbour Ansel lends me his cart at harvest.\n", encoding="utf-8")
    new_character("juno-pike", source, name="Juno Pike", work="W", data=data_copy)
    persona = Dataset(data_copy).persona("juno-pike")
    contexts = {p.context: p.text for p in persona.paragraphs}
    assert contexts["Juno Pike > Activity > History > The swarm year"].startswith("The year I turned twenty, nine hives "
                                                                                "swarmed in one week and I caught seven")
    assert contexts["Juno Pike > Skill and Expertise > Skills"] == "reading a hive by its sound. rearing queens."
    assert contexts["Juno Pike > Demographic Information > Overview"] == "Juno Pike is a beekeeper."
