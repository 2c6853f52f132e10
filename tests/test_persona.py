"""The persona parser: structure, heading paths, exact offsets, and an error naming file, line and problem
for every malformed input."""

from __future__ import annotations

import pytest

from rpa_lib.persona import ATTRIBUTES, PersonaError, list_characters, load_persona, parse_persona

VALID = """\
# Test Person

## Demographic Information

I am a test person from Nowhere.

## Activity

### Morning

I walk the dog.
Then I make coffee.

I read the news.

## Belief and Value

I believe in tests.

## Psychological Traits

I am calm.

## Skill and Expertise

### Languages

#### Python

I write Python.

## Social Relationships

I have a dog.
"""


def line_of(text: str, line: str) -> int:
    """1-based number of the last line of ``text`` equal to ``line``."""
    lines = text.split("\n")
    return len(lines) - lines[::-1].index(line)


# ---------------------------------------------------------------- well-formed input


def test_valid_template_parses(write_persona):
    path = write_persona(VALID, slug="test-person")
    p = parse_persona(path)
    assert (p.slug, p.name, p.path) == ("test-person", "Test Person", path)
    assert [s.headings[1] for s in p.sections] == list(ATTRIBUTES)
    morning = p.sections[1]
    assert morning.headings == ("Test Person", "Activity", "Morning")
    # Lines not separated by a blank line are one paragraph.
    assert [par.text for par in morning.paragraphs] == ["I walk the dog.\nThen I make coffee.", "I read the news."]
    assert p.sections[4].headings == ("Test Person", "Skill and Expertise", "Languages", "Python")
    assert p.sections[4].paragraphs[0].context == "Test Person > Skill and Expertise > Languages > Python"
    assert p.sections[4].paragraphs[0].attribute == "Skill and Expertise"


@pytest.mark.parametrize("slug", ["ada-lindqvist", "bram-okafor"])
def test_fixture_offsets_and_lines(slug, fixture_characters_dir):
    p = load_persona(slug, fixture_characters_dir)
    assert p.slug == slug
    lines = p.source.split("\n")
    assert p.paragraphs, "no paragraphs parsed"
    for par in p.paragraphs:
        assert p.source[par.start:par.end] == par.text
        assert par.text == par.text.strip() and "\n\n" not in par.text
        assert lines[par.line - 1].startswith(par.text.split("\n")[0])
        assert par.headings[0] == p.name and par.attribute in ATTRIBUTES
    for s in p.sections:
        assert s.start == s.paragraphs[0].start and s.end == s.paragraphs[-1].end
        assert all(par.headings == s.headings for par in s.paragraphs)
    assert p.longest_paragraph == max(len(par.text) for par in p.paragraphs)
    # Every non-blank, non-heading line of the file belongs to exactly one paragraph.
    prose = [i for i, line in enumerate(lines, start=1) if line.strip() and not line.startswith("#")]
    covered = [par.line + k for par in p.paragraphs for k in range(par.text.count("\n") + 1)]
    assert sorted(covered) == prose


def test_ada_fixture_structure(fixture_characters_dir):
    p = load_persona("ada-lindqvist", fixture_characters_dir)
    assert p.name == "Ada Lindqvist"
    assert len(p.paragraphs) == 13 and len(p.sections) == 12
    storm = [par for par in p.paragraphs if par.headings[-1] == "The Winter Storm"]
    assert [par.line for par in storm] == [17, 19]
    assert storm[0].headings == ("Ada Lindqvist", "Activity", "The Winter Storm")
    per = next(par for par in p.paragraphs if par.text.startswith("My uncle Per"))
    assert per.headings == ("Ada Lindqvist", "Social Relationships", "Family", "Uncle Per")
    assert per.line == 61
    assert per.context == "Ada Lindqvist > Social Relationships > Family > Uncle Per"


def test_crlf_bom_closing_hashes_and_whitespace_blank_lines(write_persona):
    text = "\ufeff" + VALID.replace("## Activity\n", "## Activity ##\n").replace("### Languages", "### C#") \
        .replace("I walk the dog.\nThen I make coffee.\n\n", "I walk the dog.\nThen I make coffee.\n \t\n")
    p = parse_persona(write_persona(text.replace("\n", "\r\n").encode("utf-8")))
    assert p.name == "Test Person"
    assert p.sections[1].headings == ("Test Person", "Activity", "Morning")
    assert p.sections[4].headings[2] == "C#"  # a '#' closing sequence needs a space before it (CommonMark)
    assert [par.text for par in p.sections[1].paragraphs] == ["I walk the dog.\nThen I make coffee.", "I read the news."]
    for par in p.paragraphs:
        assert p.source[par.start:par.end] == par.text


def test_list_characters(tmp_path, fixture_characters_dir):
    assert list_characters(fixture_characters_dir) == ["ada-lindqvist", "bram-okafor"]
    for name in ("b", "a", ".hidden", "_draft"):
        (tmp_path / "chars" / name).mkdir(parents=True)
    (tmp_path / "chars" / "notes.txt").write_text("not a character")
    assert list_characters(tmp_path / "chars") == ["a", "b"]
    assert list_characters(tmp_path / "missing") == []


# ---------------------------------------------------------------- malformed input

BAD_UTF8 = VALID.encode("utf-8").replace(b"I believe in tests.", b"I believe in \xff\xfe tests.")

MALFORMED = {
    # name: (content, line of the problem or None, words the message must contain)
    "no title": ("\n\n" + VALID.split("\n", 1)[1], 4, "must start with a '# <character name>' title"),
    "no heading at all": ("Just some prose.\n\nMore prose.\n", 1, "must start with a '# <character name>' title"),
    "text before the title": ("A preface.\n\n" + VALID, 1, "text before the '#' title"),
    "text before the title, after blank lines": ("\n\nStray words\n" + VALID, 3, "text before the '#' title"),
    "hash-text before the title": ("#notes to self\n" + VALID, 1, "text before the '#' title"),
    "two titles": (VALID + "\n# Another Person\n\nHello.\n", line_of(VALID, "") + 1, "a second '#' title"),
    "unknown attribute": (VALID.replace("## Activity", "## Hobbies"), 7, "unknown attribute heading 'Hobbies'"),
    "misspelled attribute": (VALID.replace("## Belief and Value", "## Beliefs and Values"), 16,
                             "unknown attribute heading 'Beliefs and Values'"),
    "duplicated attribute": (VALID + "\n## Activity\n\nMore walking.\n", line_of(VALID, "") + 1,
                             "attribute 'Activity' appears twice (first at line 7)"),
    "missing attribute": (VALID.split("## Social Relationships")[0], None,
                          "missing attribute section(s): Social Relationships"),
    "skipped level under an attribute": (VALID.replace("### Morning", "#### Morning"), 9, "heading level 4 skips a level"),
    "skipped level under the title": (VALID.replace("## Demographic Information\n", "### Demographic Information\n"),
                                      3, "heading level 3 skips a level"),
    "headings but no text": ("# Test Person\n\n" + "".join(f"## {a}\n\n" for a in ATTRIBUTES), None, "no paragraphs"),
    "empty file": ("", None, "empty file"),
    "only whitespace": ("  \n\n\t\n", None, "empty file"),
    "not UTF-8": (BAD_UTF8, line_of(VALID, "I believe in tests."), "not valid UTF-8"),
    "UTF-16": (VALID.encode("utf-16"), 1, "not valid UTF-8"),
}


@pytest.mark.parametrize("case", MALFORMED, ids=list(MALFORMED))
def test_malformed_persona_names_file_line_and_problem(case, write_persona):
    content, line, words = MALFORMED[case]
    path = write_persona(content)
    with pytest.raises(PersonaError) as info:
        parse_persona(path)
    e = info.value
    assert e.path == path
    assert e.line == line, f"{case}: reported line {e.line}, expected {line}: {e}"
    assert words in e.problem
    where = f"{path}:{line}" if line else f"{path}"
    assert str(e) == f"{where}: {e.problem}"


def test_line_numbers_of_malformed_cases_point_at_the_culprit():
    """The expected lines above are computed, not guessed: check the text really is on those lines."""
    for case, want in [("unknown attribute", "## Hobbies"), ("misspelled attribute", "## Beliefs and Values"),
                       ("skipped level under an attribute", "#### Morning"), ("two titles", "# Another Person"),
                       ("duplicated attribute", "## Activity"), ("no title", "## Demographic Information"),
                       ("text before the title, after blank lines", "Stray words")]:
        content, line, _ = MALFORMED[case]
        assert content.split("\n")[line - 1] == want, case


@pytest.mark.parametrize("demoted", ["### Psychological Traits", "#### Psychological Traits"])
def test_an_attribute_heading_at_another_level_is_named_with_its_line(demoted, fixture_characters_dir,
                                                                      write_persona):
    text = (fixture_characters_dir / "ada-lindqvist" / "persona.md").read_text(encoding="utf-8")
    text = text.replace("### Honesty", "### Honesty\n\n#### Her word") if "####" in demoted else text
    path = write_persona(text.replace("## Psychological Traits", demoted))  # a subsection of Belief and Value
    with pytest.raises(PersonaError) as info:
        parse_persona(path)
    level = demoted.count("#")
    assert info.value.line == path.read_text().split("\n").index(demoted) + 1
    assert info.value.problem == (f"'Psychological Traits' is a level-{level} heading ({'#' * level}); "
                                  "an attribute section is level 2 (##)")


def test_missing_file(tmp_path):
    with pytest.raises(PersonaError, match="file not found") as info:
        parse_persona(tmp_path / "nowhere" / "persona.md")
    assert info.value.path == tmp_path / "nowhere" / "persona.md"


def test_character_folder_without_persona(tmp_path):
    (tmp_path / "ghost").mkdir()
    (tmp_path / "ghost" / "qa.jsonl").write_text("")
    with pytest.raises(PersonaError, match="no persona.md") as info:
        load_persona("ghost", tmp_path)
    assert info.value.path == tmp_path / "ghost" / "persona.md"
    assert str(tmp_path / "ghost" / "persona.md") in str(info.value)


def test_unknown_slug_lists_known_characters(fixture_characters_dir):
    with pytest.raises(PersonaError) as info:
        load_persona("nobody", fixture_characters_dir)
    message = str(info.value)
    assert "unknown character 'nobody'" in message
    assert "known: ada-lindqvist, bram-okafor" in message


def test_unknown_slug_in_empty_folder(tmp_path):
    with pytest.raises(PersonaError, match="known: none"):
        load_persona("nobody", tmp_path)
