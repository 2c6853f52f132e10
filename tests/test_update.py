"""Persona updates without a rebuild (issue 23): paragraphs added, replaced or deleted update the saved hnswlib index
in place (mark_deleted + add_items, only new chunks embedded), and search then gives exactly what a fresh build
gives; when ATS/ACTS's l_max changes the whole split is redone, and the index is rebuilt and says so."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from rpa_lib.authoring.cli import main as authoring_cli
from rpa_lib.authoring.edit import add_paragraph, delete_paragraph, refresh_indexes, replace_paragraph
from rpa_lib.authoring.importer import new_character
from rpa_lib.data import Dataset
from rpa_lib.errors import DataError
from rpa_lib.index import VectorIndex, exact_search
from rpa_lib.retrieval import _RETRIEVERS, Retriever, retriever

MARKDOWN = Path(__file__).parent / "fixtures" / "import" / "tove-marsh.md"
QUERIES = ["Who is your sister?", "What happened in the fog?", "What tea do you like?", "How do you read the water?",
           "Who keeps the lighthouse?", "What do you charge for a crossing?", "Where were you born?"]
NEW = ("Every spring I walk the rope posts at low water and replace any that the ice has loosened, because the "
       "next fog will not wait for me to be ready.")


@pytest.fixture
def tove(data_copy) -> Dataset:
    new_character("tove-marsh", MARKDOWN, name="Tove Marsh", work="The Saltgate Ferry", data=data_copy)
    return Dataset(data_copy)


def open_retriever(ds: Dataset, splitter: str, root: Path) -> Retriever:
    return Retriever.for_character("tove-marsh", splitter, "hash-64", characters_dir=ds.characters_dir, index_root=root)


def results(r: Retriever, k: int = 4):
    return [[(h.chunk.id, h.chunk.text, round(h.score, 5)) for h in hits] for hits in r.search_many(QUERIES, k)]


def assert_same_as_fresh(ds: Dataset, splitter: str, updated: Retriever, tmp_path: Path) -> None:
    fresh = open_retriever(ds, splitter, tmp_path / f"fresh-{len(list(tmp_path.iterdir()))}")
    assert fresh.change.kind == "built"
    assert [c.id for c in updated.chunks] == [c.id for c in fresh.chunks]
    assert updated.index.live == len(fresh.chunks)
    for k in (1, 4, len(fresh.chunks)):
        assert results(updated, k) == results(fresh, k)


def test_vector_index_update_matches_exact_search():
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(300, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    index = VectorIndex(16).build(vectors[:200], [f"v{i}" for i in range(200)])
    gone = list(range(0, 200, 7))
    index.update(gone, vectors[200:], [f"v{i}" for i in range(200, 300)])
    live = [i for i in range(300) if i not in gone]
    queries = rng.normal(size=(20, 16)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    ids, scores = index.search(queries, 10)
    top, sims = exact_search(vectors[live], queries, 10)
    assert ids == [[f"v{live[j]}" for j in row] for row in top]
    np.testing.assert_allclose(scores, sims, atol=1e-5)
    assert index.live == len(live) and index.search(queries[:1], 10_000)[0][0].__len__() == len(live)
    with pytest.raises(ValueError, match="already deleted"):
        index.update([0], vectors[:0], [])


@pytest.mark.parametrize("splitter", ["vanilla", "ats", "acts"])
def test_adding_a_paragraph_updates_in_place_and_searches_like_a_fresh_build(tove, tmp_path, splitter):
    root = tmp_path / "indexes"
    before = open_retriever(tove, splitter, root)
    assert before.change.kind == "built"
    old_texts = {c.text for c in before.chunks}
    # Near the end: Vanilla's document-wide chunks after an insertion shift until a boundary falls in place again
    # (this small persona has no paragraph longer than a chunk to force one), so an early insertion here redoes
    # more than half of them and rebuilds (test_an_early_vanilla_insertion_rebuilds_and_says_why).
    edit = add_paragraph("tove-marsh", "Relationships > Friends > Pell Arden", NEW, data=tove)
    assert edit.l_max_before == edit.l_max_after  # a short paragraph: the ATS/ACTS chunk length stays
    after = open_retriever(tove, splitter, root)
    new_texts = [c.text for c in after.chunks if c.text not in old_texts]
    assert after.change.kind == "updated" and after.change.added == len(new_texts) >= 1
    assert sorted(after.change.embedded) == sorted(new_texts)  # only new chunks were embedded
    assert after.change.added < len(after.chunks) / 2
    assert any(NEW in c.body for c in after.chunks)
    assert_same_as_fresh(tove, splitter, after, tmp_path)
    assert open_retriever(tove, splitter, root).change.kind == "loaded"  # the updated index was saved


def test_equal_scores_rank_in_document_order_however_the_index_was_built(data_copy, tmp_path):
    """hnswlib returns tied chunks in its own slot order, which an in-place update changes; the retriever orders
    them by position, so an updated and a fresh index rank alike (and a warm re-run asks the same prompts)."""
    characters = data_copy / "characters"
    root = tmp_path / "indexes"

    def opened(where: Path) -> Retriever:
        return Retriever.for_character("ada-lindqvist", "acts", "hash-64", characters_dir=characters, index_root=where)

    opened(root)
    persona = characters / "ada-lindqvist" / "persona.md"
    blocks = persona.read_text().split("\n\n")
    n = next(i for i, b in enumerate(blocks) if i > 2 and not b.startswith("#"))
    blocks[n] += " Extra words here."  # one paragraph edited: its chunk is replaced in place
    persona.write_text("\n\n".join(blocks))
    updated, fresh = opened(root), opened(tmp_path / "fresh")
    assert (updated.change.kind, fresh.change.kind) == ("updated", "built")
    position = {c.id: n for n, c in enumerate(fresh.chunks)}
    everything = len(fresh.chunks)
    for query in ("hello", "What do you fear?", "Do you like big parties?", "Where do you live?"):
        hits = fresh.search(query, everything)
        assert [h.chunk.id for h in updated.search(query, everything)] == [h.chunk.id for h in hits], query
        assert all(a.score > b.score or (a.score == b.score and position[a.chunk.id] < position[b.chunk.id])
                   for a, b in zip(hits, hits[1:]))
    assert len({h.score for h in fresh.search("hello", everything)}) < everything  # it has ties


def test_delete_and_replace_update_in_place(tove, tmp_path):
    root = tmp_path / "indexes"
    open_retriever(tove, "vanilla", root)
    edit = delete_paragraph("tove-marsh", "Relationships > Family > Edda Marsh", containing="eels", data=tove)
    assert edit.action == "deleted" and "eels" in edit.text
    assert "eels" not in tove.persona("tove-marsh").source
    after = open_retriever(tove, "vanilla", root)
    assert after.change.kind == "updated" and after.change.deleted >= 1
    assert_same_as_fresh(tove, "vanilla", after, tmp_path)
    replace_paragraph("tove-marsh", "Relationships > Friends > Pell Arden", "Pell keeps the lighthouse, and we "
                      "signal with lamps after dark.", index=1, data=tove)
    after = open_retriever(tove, "vanilla", root)
    assert after.change.kind == "updated" and after.change.added >= 1 and after.change.deleted >= 1
    assert_same_as_fresh(tove, "vanilla", after, tmp_path)


def test_a_vanilla_insertion_that_moves_most_chunks_rebuilds_and_says_why(tove, tmp_path, caplog):
    """Vanilla's chunks run over the whole document (heading lines included); an insertion in "Fair fares" moves
    the boundaries of most of this small persona's 7 chunks, so the index is rebuilt, and the log says why."""
    root = tmp_path / "indexes"
    open_retriever(tove, "vanilla", root)
    add_paragraph("tove-marsh", "Beliefs > Fair fares", NEW, data=tove)
    after = open_retriever(tove, "vanilla", root)
    assert after.change.kind == "built" and after.change.reason == "more than 50% of the chunks changed"
    assert "more than 50% of the chunks changed" in caplog.text
    assert_same_as_fresh(tove, "vanilla", after, tmp_path)


@pytest.mark.parametrize("splitter", ["ats", "acts"])
def test_a_new_longest_paragraph_redoes_the_whole_split_and_says_so(tove, tmp_path, caplog, splitter):
    root = tmp_path / "indexes"
    before = open_retriever(tove, splitter, root)
    long = " ".join([NEW] * 4)
    edit = add_paragraph("tove-marsh", "Abilities > Repairs", long, position=1, data=tove)
    assert edit.l_max_after == len(long) > edit.l_max_before
    assert "l_max" in str(edit)
    after = open_retriever(tove, splitter, root)
    assert after.change.kind == "built" and "the whole split is redone" in after.change.reason
    assert f"'chunk_length': {edit.l_max_before}" in after.change.reason
    assert "the whole split is redone" in caplog.text
    assert_same_as_fresh(tove, splitter, after, tmp_path)
    # deleting it again shrinks l_max back: another full redo
    delete_paragraph("tove-marsh", "Abilities > Repairs", index=1, data=tove)
    again = open_retriever(tove, splitter, root)
    assert again.change.kind == "built" and results(again) == results(before)


def test_the_memoised_retriever_follows_an_edit(tove):
    first = retriever("tove-marsh", "vanilla", "hash-64", tove)
    assert retriever("tove-marsh", "vanilla", "hash-64", tove) is first
    add_paragraph("tove-marsh", "Relationships > Friends > Pell Arden", "Pell taught me the lamp signals.", data=tove)
    second = retriever("tove-marsh", "vanilla", "hash-64", tove)
    assert second is not first and second.change.kind == "updated"
    assert any("lamp signals" in h.chunk.body for h in second.search("Who taught you the lamp signals?", 3))
    assert sum(k[1] == "tove-marsh" and k[2] == "vanilla" for k in _RETRIEVERS) == 1  # the stale one is gone
    # refresh_indexes goes through the same memo: the retriever above, and what opening it did
    assert refresh_indexes("tove-marsh", embedder="hash-64", splitters=("vanilla",), data=tove) == {
        "vanilla": f"updated (+{second.change.added} -{second.change.deleted} chunks)"}


def test_edit_errors_name_the_problem_and_change_nothing(tove):
    source = tove.persona("tove-marsh").source
    with pytest.raises(DataError, match="no heading path 'Activity > Nowhere'"):
        add_paragraph("tove-marsh", "Activity > Nowhere", NEW, data=tove)
    with pytest.raises(ValueError, match="empty"):
        add_paragraph("tove-marsh", "Activity > History", "  \n ", data=tove)
    with pytest.raises(ValueError, match="cannot start with '#'"):
        add_paragraph("tove-marsh", "Activity > History", "## Sneaky heading", data=tove)
    with pytest.raises(ValueError, match="the text holds a blank line: add one paragraph at a time"):
        add_paragraph("tove-marsh", "Activity > History", "The first.\n\nThe second.", data=tove)  # not joined
    with pytest.raises(ValueError, match="0 paragraphs under"):
        delete_paragraph("tove-marsh", "Personality > Temper", containing="no such words", data=tove)
    with pytest.raises(ValueError, match="index 9 is outside 1..1"):
        delete_paragraph("tove-marsh", "Personality > Temper", index=9, data=tove)
    assert tove.persona("tove-marsh").source == source


def test_a_heading_without_text_of_its_own_gets_the_paragraph_after_its_heading_line(tove):
    add_paragraph("tove-marsh", "Tove Marsh > Activity > History", "My family has kept the crossing for three "
                  "generations.", data=tove)
    persona = tove.persona("tove-marsh")
    par = next(p for p in persona.paragraphs if "three generations" in p.text)
    assert par.headings == ("Tove Marsh", "Activity", "History")
    assert persona.source.index("### History") < par.start < persona.source.index("#### Learning the river")


def test_command_line_add_and_delete(tove, capsys):
    retriever("tove-marsh", "vanilla", "hash-64", tove)
    code = authoring_cli(["add-paragraph", "tove-marsh", "--under", "History > The fog winter", "--text", NEW,
                     "--embedder", "hash-64", "--data-dir", str(tove.root)])
    out = capsys.readouterr().out
    assert code == 0 and "added a paragraph" in out and "vanilla index (hash-64): updated (+" in out
    assert "acts index (hash-64): built" in out  # never opened before: built once
    code = authoring_cli(["delete-paragraph", "tove-marsh", "--under", "History > The fog winter", "--containing", "ice has loosened",
                     "--embedder", "none", "--data-dir", str(tove.root)])
    assert code == 0 and "deleted a paragraph" in capsys.readouterr().out
    assert authoring_cli(["delete-paragraph", "tove-marsh", "--under", "Beliefs > Nothing", "--index", "1",
                     "--data-dir", str(tove.root)]) == 2
    assert "no heading path 'Beliefs > Nothing'" in capsys.readouterr().err
    alone = next(h for h, n in Counter(p.headings for p in tove.persona("tove-marsh").paragraphs).items() if n == 1)
    before = tove.persona("tove-marsh").source
    assert authoring_cli(["delete-paragraph", "tove-marsh", "--under", " > ".join(alone[1:]), "--containing", "",
                          "--data-dir", str(tove.root)]) == 2  # "" is in every paragraph: it would delete this one
    assert "containing is empty" in capsys.readouterr().err and tove.persona("tove-marsh").source == before


def test_the_update_benchmark_runs_on_a_small_generated_persona(fixture_characters_dir, tmp_path, capsys):
    from benchmarks.update import big_persona, main

    text, chars, used = big_persona(fixture_characters_dir, 10_000)
    assert used == 2 and chars >= 10_000 and "### Ada Lindqvist, copy 2" in text
    out = tmp_path / "bench_update.md"
    assert main(["--embedder", "hash-64", "--min-chars", "10000", "--repeats", "2", "--characters-dir",
                 str(fixture_characters_dir), "--out", str(out)]) == 0
    rows = [line for line in out.read_text().splitlines() if line.startswith(("| vanilla", "| acts"))]
    assert len(rows) == 2 and all("| updated (+" in r and r.endswith("| yes |") for r in rows)
