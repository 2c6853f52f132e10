"""``python -m rpa_lib.authoring`` given what a researcher mistypes: each mistake is one ``error:`` line naming the
file, option or folder and what is wrong, status 2, and nothing written; a closed pipe is no traceback. Content
placement is off (``--embedder none``) or the hashing embedder, so no model loads."""

from __future__ import annotations

import subprocess
import sys

import pytest

from rpa_lib.authoring.cli import main
from rpa_lib.data import Dataset

SOURCE = ("# Ada Lind\n\n## Personality\n\nAda is calm and curious about the sea and its birds.\n\n"
          "## History\n\nShe was born in a fishing town on the northern coast.\n")


@pytest.fixture
def source(tmp_path):
    path = tmp_path / "ada.md"
    path.write_text(SOURCE, encoding="utf-8")
    return path


def new_ada(source, data, *, work: str = "W", embedder: str = "none", extra: tuple[str, ...] = ()) -> int:
    """``new-character ada`` from ``source`` into ``data``: its exit status."""
    return main(["new-character", "ada", "--work", work, "--from", str(source), "--data-dir", str(data),
                 "--embedder", embedder, *extra])


def errors(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    return err


@pytest.mark.parametrize("given, problem", [
    ("https://en.wikipedia.org/wiki/Ada_Lind", "a web address, not a file: the importer reads files only and fetches "
                                               "nothing (it works offline)"),
    ("http://example.com/ada.md", "a web address, not a file"),
    ("{tmp}", "a folder, not a file: give the document itself"),
])
def test_a_url_or_a_folder_as_the_source_says_what_it_is(tmp_path, capsys, given, problem):
    code = new_ada(given.format(tmp=tmp_path), tmp_path / "d")
    assert code == 2 and problem in errors(capsys)
    assert not (tmp_path / "d" / "characters").exists()


def test_a_blank_work_is_refused_not_written_as_an_empty_labels_row(tmp_path, source, capsys):
    """The row used to be written; the dataset then refused every command ("field 'work' is empty")."""
    assert new_ada(source, tmp_path / "d", work="  ") == 2
    assert "give the work the character is from: --work TITLE" in errors(capsys)
    assert not (tmp_path / "d" / "labels.csv").exists()


def test_a_data_folder_that_is_a_file_is_named(tmp_path, source, capsys):
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    assert new_ada(source, a_file) == 2  # was NotADirectoryError, status 1
    assert f"error: data folder {a_file}: cannot write there ({a_file} is not a folder)" in errors(capsys)


def test_a_type_in_lowercase_says_what_a_valid_one_is(tmp_path, source, capsys):
    assert new_ada(source, tmp_path / "d", extra=("--mbti", "intj")) == 2
    assert "--mbti 'intj' is not a valid type: expected four capitals such as INTJ" in errors(capsys)


@pytest.mark.parametrize("value", ["0", "-3", "two"])
def test_qa_scaffold_refuses_a_count_below_one(tmp_path, capsys, value):
    """0 or -3 pairs per attribute used to write an empty review file and exit 0."""
    with pytest.raises(SystemExit) as info:
        main(["qa-scaffold", "ada", "--llm", "fake", "--data-dir", str(tmp_path / "d"), "--per-attribute", value])
    assert info.value.code == 2
    assert f"--per-attribute: expected a whole number of at least 1, not '{value}'" in errors(capsys)


@pytest.fixture
def imported(tmp_path, source):
    data = tmp_path / "d"
    assert new_ada(source, data) == 0
    return data


@pytest.mark.parametrize("embedder, problem", [
    ("nosuch", "unknown embedder 'nosuch'"),
    ("hash-x", "the hashing embedder takes a positive dimension"),
])
def test_a_bad_embedder_is_named_before_the_persona_is_edited(imported, capsys, embedder, problem):
    """The paragraph used to be added, then the index update failed: a retry would add it twice."""
    persona = Dataset(imported).persona_path("ada")
    before = persona.read_text(encoding="utf-8")
    capsys.readouterr()
    assert main(["add-paragraph", "ada", "--under", "History", "--text", "She rows out at dawn.",
                 "--data-dir", str(imported), "--embedder", embedder]) == 2
    assert problem in errors(capsys)
    assert persona.read_text(encoding="utf-8") == before


def test_a_cache_folder_below_a_file_is_named_before_the_persona_is_edited(imported, tmp_path, monkeypatch, capsys):
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("RPA_CACHE_DIR", str(tmp_path / "a-file" / "cache"))
    persona = Dataset(imported).persona_path("ada")
    before = persona.read_text(encoding="utf-8")
    capsys.readouterr()
    assert main(["add-paragraph", "ada", "--under", "History", "--text", "She rows out at dawn.",
                 "--data-dir", str(imported), "--embedder", "hash-64"]) == 2
    assert "cache folder (RPA_CACHE_DIR)" in errors(capsys) and persona.read_text(encoding="utf-8") == before


def test_a_paper_embedder_without_its_weights_is_named_before_the_import(tmp_path, source, capsys, monkeypatch):
    def missing(name):
        raise RuntimeError(f"{name} is not in the Hugging Face cache")

    monkeypatch.setattr("rpa_lib.model_files.model_folder", missing)  # as on a machine without the weights
    assert new_ada(source, tmp_path / "d", embedder="bge-m3") == 2
    assert "--embedder bge-m3: the weights of BAAI/bge-m3 are not on this machine" in errors(capsys)
    assert not (tmp_path / "d" / "characters").exists()


def test_tfidf_cannot_place_an_imported_page_and_says_so(tmp_path, source, capsys):
    assert new_ada(source, tmp_path / "d", embedder="tfidf") == 2
    assert "--embedder tfidf cannot place a page's headings by content" in errors(capsys)
    assert not (tmp_path / "d" / "characters").exists()


def test_list_pages_piped_to_head_ends_quietly(tmp_path):
    """``new-character --from export.xml --list-pages | head -1``: status 141, no BrokenPipeError traceback."""
    pages = "".join(f"<page><title>Page {i}</title><ns>0</ns><revision><text>== History ==\nText {i}.</text>"
                    "</revision></page>\n" for i in range(20000))
    export = tmp_path / "many.xml"
    export.write_text(f"<mediawiki>\n{pages}</mediawiki>\n", encoding="utf-8")
    proc = subprocess.Popen([sys.executable, "-m", "rpa_lib.authoring", "new-character", "--from", str(export),
                             "--list-pages"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout.readline().startswith(b"Page 0 ")
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141 and "Traceback" not in err and "BrokenPipe" not in err, err
