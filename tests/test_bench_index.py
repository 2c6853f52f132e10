"""The index benchmark on tiny sizes (hash embedder, fixture characters): recall and the CLI dispatcher.

No timing is asserted; the real run is ``python -m benchmarks index``.
"""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks import __main__ as dispatcher
from benchmarks.index import (
    DEFAULTS,
    character_row,
    grow,
    load_corpus,
    measure,
    perturb,
    size_rows,
    smallest_ef,
    table,
)
from rpa_lib.splitters import PAPER_SPLITTERS


@pytest.fixture
def corpus(fixture_characters_dir):
    return load_corpus("hash-64", fixture_characters_dir)


def test_corpus_has_every_character_and_splitter(corpus):
    assert [name for name, _, _ in corpus.groups] == [
        f"{slug}:{s}" for slug in ("ada-lindqvist", "bram-okafor") for s in PAPER_SPLITTERS]
    assert len(corpus.chunks) <= sum(len(v) for _, v, _ in corpus.groups)  # duplicate texts embedded once
    assert corpus.questions.shape[1] == corpus.chunks.shape[1] == 64
    assert corpus.skipped == []


def test_grown_vectors_keep_the_real_ones_and_unit_norm(corpus):
    rng = np.random.default_rng(0)
    base = grow(corpus.chunks, 500, rng)
    assert base.shape == (500, 64)
    assert np.array_equal(base[:len(corpus.chunks)], corpus.chunks)
    assert np.allclose(np.linalg.norm(base, axis=1), 1, atol=1e-5)
    sources = np.array([0, 0, 1])
    copies = perturb(corpus.chunks, 3, rng, sources=sources)
    assert ((copies * corpus.chunks[sources]).sum(axis=1) > 0.3).all()  # near their sources, not random


def test_index_is_exact_at_500_vectors(corpus):
    rng = np.random.default_rng(0)
    m = measure(grow(corpus.chunks, 500, rng), grow(corpus.questions, 50, rng), k=10)
    assert m.recall[DEFAULTS.ef] == 1.0
    assert smallest_ef(m.recall) is not None
    assert len(m.latency_ms) == len(m.exact_ms) == 50


def test_the_table_rows_are_the_measured_numbers(corpus):
    rng = np.random.default_rng(0)
    rows, dims = size_rows(corpus, [300], grow(corpus.questions, 20, rng), 1, rng)
    row, worst = character_row(corpus)
    assert [r["vectors"] for r in rows] == ["300"] and set(dims) == {300}
    # HNSW is approximate even at 300 vectors: a miss or two in 200 queries is its behaviour, not a table error
    assert rows[0]["recall"] >= 0.99 and rows[0]["smallest_ef"] is not None and rows[0]["worst_of"] == 0
    assert row["worst_of"] == len(corpus.groups) and 0 < row["recall"] <= 1  # the worst of the per-character indexes
    assert (worst is None) == (row["recall"] == 1.0) and (worst is None or worst in [g[0] for g in corpus.groups])
    assert all(r["build_s"] >= 0 and r["hnsw_p50_ms"] > 0 and r["exact_p50_ms"] > 0 for r in [*rows, row])
    assert len(table([*rows, row], DEFAULTS.ef).splitlines()) == 2 + 2  # header, rule, one line per row


def test_a_character_that_does_not_parse_is_skipped_and_named(data_copy):
    (data_copy / "characters" / "bram-okafor" / "persona.md").write_text("no title, no sections\n")
    corpus = load_corpus("hash-64", data_copy / "characters")
    assert {name.split(":")[0] for name, _, _ in corpus.groups} == {"ada-lindqvist"}
    assert len(corpus.skipped) == 1 and corpus.skipped[0].startswith("bram-okafor: ")


def test_dispatcher_names_unknown_and_unwritten_benchmarks(monkeypatch, capsys):
    assert dispatcher.main(["nope"]) == 2
    assert "unknown benchmark 'nope'" in capsys.readouterr().err
    monkeypatch.setattr(dispatcher, "BENCHMARKS", ("index", "absent"))
    assert dispatcher.main(["absent"]) == 2
    assert "not written yet" in capsys.readouterr().err
