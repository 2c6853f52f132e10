"""The dataset validator and loaders: every problem reported with its file (and line), on a broken copy of the
fixture dataset; the command line's exit status; and the repository's own data/."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rpa_lib import paths
from rpa_lib.data import (
    DataError,
    Dataset,
    dataset_statistics,
    empty_attributes,
    load_labels,
    load_qa,
    load_questionnaire,
    main,
    validate,
)

ADA = "ada-lindqvist"


def qa_path(data_dir: Path, slug: str = ADA) -> Path:
    return data_dir / "characters" / slug / "qa.jsonl"


def edit_qa(data_dir: Path, lineno: int, slug: str = ADA, **changes) -> Path:
    """Change fields of the QA object on line ``lineno`` (1-based), keeping every other line as it is."""
    path = qa_path(data_dir, slug)
    lines = path.read_text(encoding="utf-8").split("\n")
    lines[lineno - 1] = json.dumps({**json.loads(lines[lineno - 1]), **changes})
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def replace_line(path: Path, lineno: int, new: str) -> None:
    lines = path.read_text(encoding="utf-8").split("\n")
    lines[lineno - 1] = new
    path.write_text("\n".join(lines), encoding="utf-8")


def edit_questionnaire(data_dir: Path, name: str, fn) -> Path:
    path = data_dir / "questionnaires" / f"{name}.json"
    obj = json.loads(path.read_text())
    fn(obj)
    path.write_text(json.dumps(obj, indent=1))
    return path


# ---------------------------------------------------------------- valid data


def test_fixtures_are_valid(fixture_data):
    assert validate(fixture_data, full=False) == []


def test_fixtures_fail_the_full_counts(fixture_data):
    """``full=True`` adds the dataset-wide counts, which two 6-question fixture characters cannot meet."""
    problems = validate(fixture_data, full=True)
    qa = qa_path(fixture_data)
    persona = qa.parent / "persona.md"
    assert f"{qa}: 6 QA pairs in the paper set, expected 30" in problems
    assert f"{persona}: median 1.0 paragraphs per subsection, expected at least 3" in problems
    assert f"{qa}: 0 QA pair(s) whose evidence spans two paragraphs of one subsection, expected at least 3" in problems
    assert any("characters of paragraph text in all personas, expected at least 600,000" in p for p in problems)
    assert any(p.startswith(str(fixture_data / "questionnaires" / "mbti.json")) and "8 items, expected 60" in p
               for p in problems)


def test_real_dataset_is_valid():
    """The repository's data/ passes the full validator (counts included): 15 characters of at least 40,000
    paragraph characters with several paragraphs per subsection, 30 QA each (5 per attribute) plus at least 3 whose
    evidence spans two paragraphs, labels, questionnaires with 60 / 120 balanced items."""
    problems = validate(paths.DATA_DIR, full=True)
    assert problems == [], "\n".join(problems)


def test_captions_name_the_repositorys_dataset_as_its_own():
    """Captions say which data a number comes from: ours, in the paper's design, not the paper's Korean one."""
    from rpa_lib.data import Dataset

    assert Dataset(paths.DATA_DIR).describe() == "CharacterRAG-EN, our English dataset in the paper's design (data/)"


def test_loaders_on_fixtures(fixture_data):
    qa = load_qa(ADA, fixture_data)
    assert [q.id for q in qa] == [f"{ADA}-{i:02d}" for i in range(1, 7)]
    assert qa[0].attribute == "Demographic Information" and isinstance(qa[0].evidence, tuple)
    assert [r["slug"] for r in load_labels(fixture_data)] == ["ada-lindqvist", "bram-okafor"]
    mbti = load_questionnaire("mbti", fixture_data)
    assert (mbti.points, mbti.midpoint, len(mbti.items)) == (7, 4.0, 8)
    assert mbti.dimension("EI").high == "E"


def test_dataset_statistics(fixture_data):
    per_char, per_par = dataset_statistics(fixture_data)
    assert per_char.character.tolist() == ["ada-lindqvist", "bram-okafor"]
    assert per_char.qa_pairs.tolist() == [6, 6]
    assert per_char.set_index("character").paragraphs["ada-lindqvist"] == 13
    assert len(per_par) == per_char.paragraphs.sum()
    assert per_char.longest_paragraph.tolist() == per_par.groupby("character", sort=False).length.max().tolist()


# ---------------------------------------------------------------- problems, each with file and line


def test_evidence_not_found_verbatim(data_copy):
    path = edit_qa(data_copy, 3, evidence=["I believe a promise to strangers weighs more than gold."])
    problems = validate(data_copy, full=False)
    assert len(problems) == 2
    assert problems[0].startswith(f"{path}:3: evidence of {ADA}-03 not found verbatim in persona.md")
    # and the answer's "friends" is now in no evidence string ("much" is a stop word; tests/test_grounding.py)
    assert problems[1].startswith(f"{path}:3: the answer of {ADA}-03 uses 'friends': persona words")


def test_bad_json_line(data_copy):
    path = qa_path(data_copy)
    replace_line(path, 2, '{"id": "ada-lindqvist-02", "question": "unterminated')
    problems = validate(data_copy, full=False)
    assert [p for p in problems if p.startswith(f"{path}:2: not valid JSON")], problems
    with pytest.raises(DataError) as info:
        load_qa(ADA, data_copy)
    assert (info.value.path, info.value.line) == (path, 2)


@pytest.mark.parametrize("line", ["42", "[1, 2]", '"a string"', "null"])
def test_json_line_that_is_not_an_object(data_copy, line):
    path = qa_path(data_copy)
    replace_line(path, 5, line)
    problems = validate(data_copy, full=False)
    assert f"{path}:5: not a JSON object" in problems


def test_unknown_attribute(data_copy):
    path = edit_qa(data_copy, 2, attribute="Hobbies")
    assert validate(data_copy, full=False) == [f"{path}:2: unknown attribute 'Hobbies'"]


def test_missing_field(data_copy):
    path = qa_path(data_copy)
    obj = json.loads(path.read_text().split("\n")[3])
    del obj["answer"]
    replace_line(path, 4, json.dumps(obj))
    assert validate(data_copy, full=False) == [f"{path}:4: missing field(s): answer"]


def test_duplicate_id(data_copy):
    path = edit_qa(data_copy, 4, id=f"{ADA}-01")
    problems = validate(data_copy, full=False)
    assert f"{path}:4: duplicate id '{ADA}-01' (first at line 1)" in problems


@pytest.mark.parametrize("column,value", [("mbti", "XXXX"), ("mbti", "istj"), ("sloan", "RCOA"), ("sloan", "ABCDE")])
def test_bad_label_type(data_copy, column, value):
    path = data_copy / "labels.csv"
    header, *rows = path.read_text().strip().split("\n")
    cols = header.split(",")
    cells = rows[1].split(",")
    cells[cols.index(column)] = value
    rows[1] = ",".join(cells)
    path.write_text("\n".join([header, *rows]) + "\n")
    assert validate(data_copy, full=False) == [f"{path}:3: {column} '{value}' of 'bram-okafor' is not a valid type"]


def test_labels_and_folders_disagree(data_copy):
    path = data_copy / "labels.csv"
    text = path.read_text().replace("bram-okafor,", "bram-okafor-typo,")
    path.write_text(text)
    problems = validate(data_copy, full=False)
    assert f"{path}: no row for character 'bram-okafor'" in problems
    assert any(p.startswith(f"{path}: row for 'bram-okafor-typo' but no folder") for p in problems)


def test_questionnaire_keyed_only_one_way(data_copy):
    def all_high(q):
        for item in q["items"]:
            if item["dimension"] == "EI":
                item["keyed"] = "high"

    path = edit_questionnaire(data_copy, "mbti", all_high)
    problems = validate(data_copy, full=False)
    assert len(problems) == 1 and problems[0].startswith(f"{path}: dimension EI: items must be keyed both ways")
    with pytest.raises(DataError, match="dimension EI: items must be keyed both ways"):
        load_questionnaire("mbti", data_copy)


def test_questionnaire_item_problems(data_copy):
    def break_items(q):
        q["items"][0]["dimension"] = "XY"
        q["items"][1]["keyed"] = "sideways"
        q["items"][2]["id"] = q["items"][3]["id"]
        q["scale"]["labels"] = q["scale"]["labels"][:3]

    path = edit_questionnaire(data_copy, "bigfive", break_items)
    problems = [p for p in validate(data_copy, full=False) if p.startswith(f"{path}: ")]
    text = "\n".join(problems)
    for words in ["scale has 5 points but 3 labels", "item bf-001: field 'dimension': unknown dimension 'XY'",
                  "item bf-002: field 'keyed' must be 'high' or 'low', not 'sideways'", "item id 'bf-004' appears 2 times"]:
        assert words in text


def test_malformed_questionnaire_json(data_copy):
    path = data_copy / "questionnaires" / "mbti.json"
    path.write_text('{"name": "mbti",\n  "scale": oops}')
    problems = validate(data_copy, full=False)
    assert problems == [f"{path}:2: not valid JSON (Expecting value)"]


def test_all_problems_are_collected(data_copy):
    """The validator reports every problem at once (loaders stop at the first)."""
    edit_qa(data_copy, 2, attribute="Hobbies")
    edit_qa(data_copy, 5, slug="bram-okafor", evidence=["not in the persona"])
    (data_copy / "characters" / "carol").mkdir()
    problems = validate(data_copy, full=False)
    assert any(p.startswith(f"{qa_path(data_copy)}:2: unknown attribute") for p in problems)
    assert any(p.startswith(f"{qa_path(data_copy, 'bram-okafor')}:5: evidence of bram-okafor-05") for p in problems)
    assert f"{data_copy / 'characters' / 'carol' / 'persona.md'}: character folder has no persona.md" in problems
    assert f"{data_copy / 'labels.csv'}: no row for character 'carol'" in problems


def test_persona_errors_reach_the_validator(data_copy):
    persona = data_copy / "characters" / ADA / "persona.md"
    persona.write_text(persona.read_text().replace("## Activity", "## Hobbies"))
    problems = validate(data_copy, full=False)
    assert problems == [f"{persona}:13: unknown attribute heading 'Hobbies'; expected one of "
                        "Demographic Information, Activity, Belief and Value, Psychological Traits, "
                        "Skill and Expertise, Social Relationships"]


def test_one_character_only(data_copy):
    edit_qa(data_copy, 2, slug="bram-okafor", attribute="Hobbies")
    assert validate(data_copy, characters=[ADA], full=False) == []
    assert len(validate(data_copy, characters=["bram-okafor"], full=False)) == 1


# ---------------------------------------------------------------- command line


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rpa_lib.data", "validate", *args], capture_output=True, text=True,
                          cwd=paths.ROOT, timeout=60)


def test_cli_ok_on_fixtures(fixture_data):
    r = _cli("--data-dir", str(fixture_data), "--no-counts")
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip() == f"OK: 2 character(s) checked in {fixture_data}, 0 problem(s)"  # --no-counts: no figures


def test_cli_fails_on_a_broken_copy(data_copy):
    path = edit_qa(data_copy, 2, attribute="Hobbies")
    r = _cli("--data-dir", str(data_copy), "--no-counts")
    assert r.returncode == 1
    assert f"{path}:2: unknown attribute 'Hobbies'" in r.stdout
    assert "FAILED: 2 character(s) checked" in r.stdout


def test_main_returns_the_exit_status(data_copy, capsys):
    assert main(["validate", "--data-dir", str(data_copy), "--no-counts", "--character", ADA]) == 0
    edit_qa(data_copy, 1, evidence=["nowhere"])
    assert main(["validate", "--data-dir", str(data_copy), "--no-counts", "--character", ADA]) == 1
    assert "FAILED: 1 character(s) checked" in capsys.readouterr().out


def test_questionnaire_missing_field_names_the_item_and_field(data_copy):
    path = edit_questionnaire(data_copy, "mbti", lambda q: q["items"][4].pop("keyed"))
    item_id = json.loads(path.read_text())["items"][4]["id"]
    with pytest.raises(DataError, match=rf"mbti.json: item {item_id}: missing field 'keyed'"):
        load_questionnaire("mbti", data_copy)


def test_questionnaire_field_of_the_wrong_type_names_the_file_and_the_field(data_copy):
    edit_questionnaire(data_copy, "mbti", lambda q: q["scale"].update(points="seven"))
    with pytest.raises(DataError, match=r"mbti.json: scale: field 'points' must be a whole number, not 'seven'"):
        load_questionnaire("mbti", data_copy)


def test_dataset_checks_characters(data_copy):
    from rpa_lib.data import Dataset

    ds = Dataset(data_copy)
    assert ds.characters() == ["ada-lindqvist", "bram-okafor"]
    assert ds.characters(["bram-okafor"]) == ["bram-okafor"]
    with pytest.raises(DataError, match="characters must be a list of slugs"):
        ds.characters("ada-lindqvist")
    with pytest.raises(DataError, match="unknown character\\(s\\) 'nobody'; known: ada-lindqvist, bram-okafor"):
        ds.characters(["nobody"])
    assert ds.qa_path("ada-lindqvist") == data_copy / "characters" / "ada-lindqvist" / "qa.jsonl"
    assert Dataset(data_copy) == ds and len({ds, Dataset(data_copy)}) == 1


def test_persona_error_is_a_data_error():
    from rpa_lib.persona import PersonaError

    assert issubclass(PersonaError, DataError) and issubclass(DataError, ValueError)


# ---------------------------------------------------------------- question sets and grounded answers


def test_question_sets_paper_by_default(data_copy):
    """The paper set is the default; a pair marked ``"set": "multi"`` is returned only when asked for."""
    edit_qa(data_copy, 6, set="multi")
    assert [q.id for q in load_qa(ADA, data_copy)] == [f"{ADA}-{i:02d}" for i in range(1, 6)]
    assert [q.id for q in load_qa(ADA, data_copy, set="multi")] == [f"{ADA}-06"]
    assert len(load_qa(ADA, data_copy, set="all")) == 6
    with pytest.raises(ValueError, match="unknown QA set 'extra'"):
        load_qa(ADA, data_copy, set="extra")


def test_real_dataset_question_sets():
    """450 paper-design pairs (30 a character, ids 01-30) and 75 multi-paragraph pairs (ids 31-35)."""
    ds = paths.DATA_DIR
    slugs = [p.name for p in sorted((ds / "characters").iterdir())]
    paper = [q for s in slugs for q in load_qa(s, ds)]
    multi = [q for s in slugs for q in load_qa(s, ds, set="multi")]
    assert (len(paper), len(multi)) == (450, 75)
    assert {int(q.id[-2:]) for q in paper} == set(range(1, 31)) and {int(q.id[-2:]) for q in multi} == set(range(31, 36))


def test_unknown_question_set_in_file(data_copy):
    path = edit_qa(data_copy, 2, set="bonus")
    assert validate(data_copy, full=False) == [f"{path}:2: unknown set 'bonus'; known: paper, multi"]


def test_reading_a_pair_whose_evidence_is_not_in_the_persona_names_it(data_copy):
    path = edit_qa(data_copy, 2, evidence=["A sentence the persona never says."])
    with pytest.raises(DataError, match=rf"{re.escape(str(path))}:2: evidence of {ADA}-02 not found verbatim in "
                                        r"persona.md: 'A sentence the persona never says.'"):
        Dataset(data_copy).qa(ADA)  # what the notebooks read: a recall or a reference from it would be quietly low


def test_a_subsection_left_with_no_text_is_named(data_copy):
    persona = Dataset(data_copy).persona(ADA)
    path = next(p.headings for p in persona.paragraphs if len(p.headings) == 3)  # an attribute's first subsection
    held = [p for p in persona.paragraphs if p.headings == path]
    source = persona.source[: held[0].start] + persona.source[held[-1].end:]  # its paragraphs cut, its heading kept
    persona.path.write_text(source, encoding="utf-8")
    lineno = next(n for n, h in persona.headings if h == path)
    problem = f"{persona.path}:{lineno}: heading {' > '.join(path[1:])!r} has no text under it"
    assert problem in validate(data_copy)  # full: a problem
    assert problem in empty_attributes(data_copy)  # --no-counts: a warning


def test_a_title_that_is_not_the_name_in_labels_is_named(data_copy):
    persona = Dataset(data_copy).persona(ADA)
    persona.path.write_text(persona.source.replace("# Ada Lindqvist", "# Ada Lindkvist", 1), encoding="utf-8")
    assert f"{data_copy / 'labels.csv'}: name 'Ada Lindqvist' of {ADA!r} is not the title of {persona.path} " \
           "('Ada Lindkvist'): prompts would name the one, chunk headings the other" in validate(data_copy, full=False)


def test_a_misspelled_field_is_named_not_ignored(data_copy):
    path = edit_qa(data_copy, 2, sett="multi")  # ignored, the pair would count in the paper set
    assert validate(data_copy, full=False) == [
        f"{path}:2: unknown field(s) 'sett'; known: id, question, answer, attribute, evidence, set"]


def test_answer_fact_missing_from_evidence(data_copy):
    """A number and a name the answer uses but no evidence string holds are flagged; a sentence-initial ordinary
    word ("Because") is not."""
    path = edit_qa(data_copy, 2, answer="She kept lanterns burning for 5 nights with Skelde's help.")
    problems = validate(data_copy, full=False)
    assert problems == [f"{path}:2: the answer of {ADA}-02 uses '5', 'Skelde', found in no evidence string (add the "
                        f"persona sentence that says it)"]


def test_grounding_reads_number_words_and_sentence_starts():
    from rpa_lib.data.grounding import numbers, persona_names, ungrounded

    assert numbers("two hundred and fifty thousand yen, or 1,000") >= {250000, 1000}
    assert numbers("fifty thousand yen") >= {50000}
    names = persona_names("I met Himmel on the road. After that, after all, Himmel left. Reading is fun; reading.")
    assert names == {"Himmel"}
    assert ungrounded("Reading books; Himmel paid 250,000 yen.", ["It cost two hundred and fifty thousand yen."],
                      names=names) == ["Himmel"]
    assert ungrounded("Himmel's sword.", ["Himmel's sword was fake."], names=names) == []


# ---------------------------------------------------------------- malformed fields: reported, never a traceback


@pytest.mark.parametrize("evidence", [[1, 2], ["I keep the lamp.", None], [], {"a": 1}])
def test_qa_evidence_of_the_wrong_type_is_reported_and_the_pair_left_out(data_copy, evidence):
    path = edit_qa(data_copy, 3, evidence=evidence)
    assert validate(data_copy, full=False) == [f"{path}:3: evidence must be a non-empty list of non-empty strings, "
                                               f"not {evidence!r}"]
    with pytest.raises(DataError) as info:
        load_qa(ADA, data_copy)
    assert (info.value.path, info.value.line) == (path, 3)


def _write_labels(data_dir: Path, *rows: str) -> Path:
    path = data_dir / "labels.csv"
    path.write_text("\n".join(["slug,name,work,mbti,sloan", "ada-lindqvist,Ada Lindqvist,Test Fixtures,ISTJ,RCOAN",
                               *rows]) + "\n")
    return path


@pytest.mark.parametrize("row,problem", [
    ("bram-okafor,Bram Okafor", "row 'bram-okafor' has 2 field(s), expected 5 (slug,name,work,mbti,sloan): no work, "
                                "mbti, sloan"),
    ("bram-okafor,Bram Okafor,Test Fixtures,ESFP,SLUAI,x", "row 'bram-okafor' has 6 field(s), expected 5 "
                                                           "(slug,name,work,mbti,sloan)"),
    ("bram-okafor,Bram Okafor,,ESFP,SLUAI", "row 'bram-okafor': field 'work' is empty")])
def test_labels_row_with_missing_fields_names_the_row_and_field(data_copy, row, problem):
    from rpa_lib.data import Dataset

    path = _write_labels(data_copy, row)
    problems = validate(data_copy, full=False)
    assert problems[0] == f"{path}:3: {problem}", problems
    with pytest.raises(DataError, match="labels.csv:3: row 'bram-okafor'"):
        Dataset(data_copy).profile("bram-okafor")


def test_labels_repeated_slug_names_both_rows(data_copy):
    from rpa_lib.data import Dataset

    path = _write_labels(data_copy, "bram-okafor,Bram Okafor,Test Fixtures,ESFP,SLUAI",
                         "bram-okafor,Bram the Baker,Other Work,INTJ,RCOAN")
    assert validate(data_copy, full=False) == [f"{path}:4: slug 'bram-okafor' has a second row (first at line 3): "
                                               "one row per character"]
    with pytest.raises(DataError, match="second row"):  # never a name from one row and a type from the other
        Dataset(data_copy).types("mbti", ["bram-okafor"])


@pytest.mark.parametrize("edit,problem", [
    (lambda q: q["dimensions"][0].update(id=["E"]), "dimension 1: field 'id' must be a string, not ['E']"),
    (lambda q: q["dimensions"][1].update(high_name=3), "dimension 2: field 'high_name' must be a string, not 3"),
    (lambda q: q["items"][0].update(statement=None), "item mbti-01: field 'statement' must be a string, not None"),
    (lambda q: q["scale"].update(labels="agree"), "scale: field 'labels' must be a list of strings, not 'agree'"),
    (lambda q: q.update(dimensions={"EI": {}}), "questionnaire: field 'dimensions' must be a list, not {'EI': {}}"),
    (lambda q: q["scale"].update(points=7.5), "scale: field 'points' must be a whole number, not 7.5")])
def test_questionnaire_field_types_are_checked(data_copy, edit, problem):
    path = edit_questionnaire(data_copy, "mbti", edit)
    assert validate(data_copy, full=False) == [f"{path}: {problem}"]
    with pytest.raises(DataError, match=re.escape(problem)):
        load_questionnaire("mbti", data_copy)


def test_repeated_heading_path_is_a_problem(data_copy):
    """Two ``### Duty`` under Belief and Value: their chunks would carry one context and the two-paragraph check
    would take them for one subsection."""
    persona = data_copy / "characters" / ADA / "persona.md"
    persona.write_text(persona.read_text().replace("### Honesty", "### Duty"))
    assert validate(data_copy, full=False) == [f"{persona}:31: heading path 'Belief and Value > Duty' repeats line "
                                               "27: merge the two or rename one"]
