"""Importing a character from one's own document (issue 23): Markdown and a MediaWiki XML export written for these
tests (tests/fixtures/import, two invented characters), validation, a question answered by AMADEUS on the fake
backend, bad inputs that write nothing, and the QA scaffold's review-then-promote path."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

from rpa_lib.authoring.cli import main as authoring_cli
from rpa_lib.authoring.importer import lookup, new_character, parse_mapping
from rpa_lib.authoring.scaffold import promote, qa_scaffold, read_review, review_path
from rpa_lib.data import Dataset, validate
from rpa_lib.data.cli import main as data_cli
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
    assert done.report[0] == "line 1: text before the first heading -> Demographic Information > Overview"
    assert "line 14: 'History > Learning the river' -> Activity (with 'History')" in done.report  # every placement
    assert done.report[-2:] == [
        "line 70: 'Trivia' dropped (heading table: heading 'trivia')",
        "line 75: 'Fan Theories' not placed: heading not in the table, and no content placement (--embedder none); "
        "map it with --map 'Fan Theories'=ATTRIBUTE"]
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
    for gone in ("{{", "Chapter 1", "<ref", "[[", "'''", "Category", "wikitable", "Early sketch",
                 "Citation needed", "real clock"):
        assert gone not in text, gone
    assert "I came to the workshop of Master Vell when I was twelve." in text  # a piped link keeps its shown text
    assert "Cleaning and oiling pocket watches. Cutting small gears" in text  # a list becomes sentences
    assert "## Skill and Expertise\n\n### Skills\n" in text
    assert "### Infobox" in text  # its fields are facts; its image is dropped
    assert [r for r in done.report if "dropped" in r] == [
        "line 68: 'Behind the scenes' dropped (heading table: heading 'behind the scenes')",
        "line 71: 'Gallery' dropped (heading table: heading 'gallery')",
        "line 74: 'References' dropped (heading table: heading 'references')"]
    report = (data_copy / "characters" / "wren-ashby" / "IMPORT.md").read_text()
    assert "- line 62: table" in report and "- line 14: infobox field 'image'" in report
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
    (b"\xff\xfe#\x00 \x00T", "utf16.txt", "not UTF-16 text though it starts as such"),  # cut in a character
    (b"# Tove\n\n## Personality\n\nKind.\n", "notes.docx", "unknown format '.docx'"),
    (b"<html><body>no</body></html>", "page.xml", "not a MediaWiki export"),
    (b"<mediawiki><page><title>A</title>", "broken.xml", "not well-formed XML"),
    (b"# Tove\n\n## Trivia\n\nShe was drawn in 1962.\n", "trivia.md", "no section was placed under any attribute"),
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
    assert lookup("Powers and Abilities")[0] == "Skill and Expertise" and lookup("Fan Theories") is None
    assert lookup("Early life and family")[0] == "Activity"  # the longest entry found in it: "early life"
    assert lookup("Family & Friends!")[0] == "Social Relationships"
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
    assert "line 75: 'Fan Theories' -> Psychological Traits (the LLM chose Psychological Traits)" in done.report
    assert "### Fan Theories" in Dataset(data_copy).persona("tove-two").source

    before = snapshot(data_copy)  # an LLM that never answers with an option: a clear error, nothing written
    with pytest.raises(DataError, match=r"tove-marsh.md:75: the LLM could not place section 'Fan Theories'"):
        new_character("tove-three", MARKDOWN, name="Tove Marsh", work="W", data=data_copy,
                      llm=FakeLLM(lambda kind, messages, spec: "banana"))
    assert snapshot(data_copy) == before


def test_the_command_line_imports_and_reports(data_copy, capsys, tmp_path):
    code = authoring_cli(["new-character", "wren-ashby", "--name", "Wren Ashby", "--work", "Tollbridge Tales",
                     "--from", str(WIKI), "--data-dir", str(data_copy), "--embedder", "none"])
    out = capsys.readouterr().out
    assert code == 0 and "line 68: 'Behind the scenes' dropped" in out and "Validated." in out
    assert data_cli(["validate", "--character", "wren-ashby", "--no-counts", "--data-dir", str(data_copy)]) == 0
    empty = tmp_path / "empty.md"
    empty.write_text("")
    assert authoring_cli(["new-character", "x", "--name", "X", "--work", "W", "--from", str(empty),
                     "--data-dir", str(data_copy)]) == 2
    assert f"{empty}: empty file" in capsys.readouterr().err


def question_rule(kind, messages, spec):
    """Asks about the sentence it is given: a question for every sentence but those about tea (no question:
    the row gets a placeholder)."""
    sentence = messages[-1]["content"].rsplit('Sentence: "', 1)[1].rsplit('"', 1)[0]
    return "I like this." if "tea" in sentence else f'Question: "Is it true that {sentence[:30].lower()}?"'


def write_rows(path, table):
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, list(table[0]))
        writer.writeheader()
        writer.writerows(table)


def test_qa_scaffold_asks_one_sentence_at_a_time_and_promotes_only_reviewed_rows(data_copy):
    new_character("tove-marsh", MARKDOWN, name="Tove Marsh", work="W", data=data_copy)
    ds = Dataset(data_copy)
    result = qa_scaffold("tove-marsh", FakeLLM(question_rule), data=data_copy, per_attribute=2)
    assert result.added == 12 and not result.failed and not result.interrupted and result.empty == []
    rows, problems = read_review(result.path)
    assert problems == [] and {r["reviewed"] for r in rows} == {"no"}
    assert [r["id"] for r in rows] == [f"tove-marsh-{n:02d}" for n in range(1, 13)]
    assert all(r["evidence_1"] in ds.persona("tove-marsh").source and r["answer"] == r["evidence_1"] for r in rows)
    assert [r["attribute"] for r in rows] == [a for a in ATTRIBUTES for _ in range(2)]
    assert all(r["question"].startswith("Is it true that") for r in rows if "tea" not in r["evidence_1"])
    assert all(r["note"].startswith("placeholder") for r in rows if "tea" in r["evidence_1"])
    assert not ds.qa_path("tove-marsh").exists()
    with pytest.raises(DataError, match="no row is marked reviewed=yes"):
        promote("tove-marsh", data=data_copy)

    # A person marks two rows reviewed in a spreadsheet, and breaks the evidence of a third one.
    with open(result.path, newline="") as f:
        table = list(csv.DictReader(f))
    table[0]["reviewed"], table[3]["reviewed"] = "yes", "YES"
    table[4].update(reviewed="yes", evidence_1="I love weak milky tea.")
    write_rows(result.path, table)
    with pytest.raises(DataError, match=r"line 6: evidence of tove-marsh-05 not found verbatim"):
        promote("tove-marsh", data=data_copy)
    assert not ds.qa_path("tove-marsh").exists()
    table[4]["reviewed"] = "no"
    write_rows(result.path, table)
    assert promote("tove-marsh", data=data_copy)[0] == 2
    lines = [json.loads(line) for line in ds.qa_path("tove-marsh").read_text().splitlines()]
    assert [q["id"] for q in lines] == ["tove-marsh-01", "tove-marsh-04"]
    assert [q.id for q in ds.qa("tove-marsh")] == ["tove-marsh-01", "tove-marsh-04"]
    assert validate(ds, ["tove-marsh"], full=False) == []  # each answer is its evidence sentence: nothing to flag
    # A person rewrites an answer with persona words its evidence lacks: the content-word check flags them until
    # they are reviewed (data/README.md, "Validation").
    lines[0]["answer"] = "She runs the ferry and keeps the winter lamps."
    ds.qa_path("tove-marsh").write_text("".join(json.dumps(q) + "\n" for q in lines))
    flagged = [p.split(": ", 1)[1] for p in validate(ds, ["tove-marsh"], full=False)]
    assert len(flagged) == 1 and flagged[0].startswith("the answer of tove-marsh-01 uses '")
    words = re.findall(r"'([^']+)'", flagged[0].split(":")[0])
    ds.grounding_reviewed_path.write_text("id,word,reason\n" + "".join(f"tove-marsh-01,{w},checked\n" for w in words))
    assert validate(ds, ["tove-marsh"], full=False) == []

    # A second scaffold run appends after the existing ids and keeps the person's review; it asks about sentences not
    # asked about before (Skill and Expertise has none left).
    again = qa_scaffold("tove-marsh", FakeLLM(question_rule), data=data_copy, per_attribute=1)
    rows = read_review(again.path)[0]
    assert len(rows) == 17 and rows[0]["reviewed"] == "yes" and rows[-1]["id"] == "tove-marsh-17"
    assert "Skill and Expertise" not in {r["attribute"] for r in rows[12:]} and again.empty == []


def test_qa_scaffold_with_the_default_fake_writes_placeholder_rows_with_progress(data_copy, capsys):
    new_character("tove-marsh", MARKDOWN, name="Tove Marsh", work="W", data=data_copy)
    assert authoring_cli(["qa-scaffold", "tove-marsh", "--llm", "fake", "--per-attribute", "2",
                     "--data-dir", str(data_copy)]) == 0
    captured = capsys.readouterr()
    assert "12 pair(s) written" in captured.out and "12 with a placeholder question" in captured.out
    assert "[12/12] Social Relationships" in captured.err and "left" in captured.err


def test_qa_scaffold_stops_cleanly_on_ctrl_c_and_keeps_the_pairs_made(data_copy):
    new_character("tove-marsh", MARKDOWN, name="Tove Marsh", work="W", data=data_copy)
    asked = []

    def rule(kind, messages, spec):
        asked.append(1)
        if len(asked) == 4:
            raise KeyboardInterrupt
        return "Where do you live?"

    result = qa_scaffold("tove-marsh", FakeLLM(rule), data=data_copy, per_attribute=2)
    assert result.interrupted and result.added == 3 and "interrupted" in result.summary()
    assert len(read_review(result.path)[0]) == 3


def test_promote_reads_the_review_file_strictly_and_names_every_bad_row(data_copy):
    new_character("tove-marsh", MARKDOWN, name="Tove Marsh", work="W", data=data_copy)
    result = qa_scaffold("tove-marsh", FakeLLM(question_rule), data=data_copy, per_attribute=1)
    lines = result.path.read_text().splitlines()
    lines[1] = lines[1].replace(",no,", ",yes,")
    lines[2] = lines[2].replace(",no,", ",yes,").replace(",Is it", ',"Is it', 1)  # a quote never closed
    lines[4] = lines[4] + ",extra"
    lines[5] = ",".join(lines[5].split(",")[:3])
    result.path.write_text("\n".join(lines) + "\n")
    before = snapshot(data_copy)
    with pytest.raises(DataError) as caught:
        promote("tove-marsh", data=data_copy)
    message = str(caught.value)
    assert "nothing promoted" in message
    assert "line 5: 10 field(s), the header has 9" in message and "line 6: 3 field(s), the header has 9" in message
    assert "line 3:" in message  # the quote: a merged row or invalid CSV, named where it opens
    assert snapshot(data_copy) == before

    # A row validate would reject (an answer with a name no evidence has) is refused, named by its line.
    result.path.unlink()
    qa_scaffold("tove-marsh", FakeLLM(question_rule), data=data_copy, per_attribute=1)
    with open(result.path, newline="") as f:
        table = list(csv.DictReader(f))
    table[0].update(reviewed="yes", answer="Tove met Queen Ilsabet.")
    write_rows(result.path, table)
    with pytest.raises(DataError, match=r"line 2: the answer of tove-marsh-01 uses 'Queen', 'Ilsabet'"):
        promote("tove-marsh", data=data_copy)
    assert not Dataset(data_copy).qa_path("tove-marsh").exists()


def test_chat_talks_to_an_imported_character(data_copy, capsys):
    from rpa_lib.__main__ import main as rpa_main

    new_character("tove-marsh", MARKDOWN, name="Tove Marsh", work="The Saltgate Ferry", data=data_copy)
    code = rpa_main(["chat", "--character", "tove-marsh", "--data-dir", str(data_copy), "--llm", "fake",
                     "--embedder", "hash-64", "--question", "Who is your sister?"])
    out = capsys.readouterr().out
    assert code == 0 and "you> Who is your sister?" in out and "tove-marsh:acts:" in out
    assert rpa_main(["chat", "--character", "nobody", "--data-dir", str(data_copy), "--llm", "fake"]) == 2
    assert "unknown character(s) 'nobody'" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["rpa_lib.authoring.sources", "rpa_lib.authoring.wikitext", "rpa_lib.authoring.document", "rpa_lib.authoring.scaffold", "rpa_lib.authoring.importer"])
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


def test_qa_scaffold_keeps_each_pair_as_it_comes_a_reviewers_columns_and_asks_no_sentence_twice(data_copy):
    new_character("tove-marsh", MARKDOWN, name="Tove Marsh", work="W", data=data_copy)
    path, on_disk = review_path(Dataset(data_copy), "tove-marsh"), []

    def rule(kind, messages, spec):  # what a kill at this call would leave
        on_disk.append(len(read_review(path)[0]) if path.is_file() else 0)
        return "Where do you live?"

    first = qa_scaffold("tove-marsh", FakeLLM(rule), data=data_copy, per_attribute=1)
    assert on_disk == list(range(first.added))
    with open(first.path, newline="") as f:
        table = list(csv.DictReader(f))
    table[0]["reviewer_comment"] = "check the date"
    write_rows(first.path, table)
    again = qa_scaffold("tove-marsh", FakeLLM(rule), data=data_copy, per_attribute=1)
    rows = read_review(again.path)[0]
    assert rows[0]["reviewer_comment"] == "check the date" and len(rows) == first.added + again.added
    evidence = [r["evidence_1"] for r in rows]
    assert again.added > 0 and len(set(evidence)) == len(evidence)  # the second run asked about new sentences only
