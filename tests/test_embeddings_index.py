"""Embedders, the embedding cache, truncation reports, the hnswlib index (recall, caching on disk) and the
retriever on the fixture characters. No model is loaded: the hashing embedder and small fakes stand in."""

from __future__ import annotations

import json
import logging
import re
import shutil
import warnings

import numpy as np
import pytest

from rpa_lib import index as index_module
from rpa_lib.embeddings import (
    Embedder,
    EmbeddingCache,
    HashEmbedder,
    TfidfEmbedder,
    embed,
    get_embedder,
    truncation,
)
from rpa_lib.index import HnswParams, VectorIndex, build_or_load, exact_search
from rpa_lib.retrieval import Retriever


class CountingEmbedder(HashEmbedder):
    """The hashing embedder, recording every batch it is asked to encode."""

    def __init__(self, dim: int = 64, model_id: str | None = None):
        super().__init__(dim)
        self.model_id = model_id or self.model_id
        self.calls: list[tuple[str, list[str]]] = []

    def encode(self, texts, kind="document"):
        self.calls.append((kind, list(texts)))
        return super().encode(texts, kind)


class WordLimitEmbedder(HashEmbedder):
    """A fake model that reads ``max_tokens`` tokens, a token being a word (+2 special tokens)."""

    max_tokens = 8

    def __init__(self):
        super().__init__(16)
        self.model_id, self.label = "fake:words8", "word-limit-8"

    def token_counts(self, texts):
        return [len(t.split()) + 2 for t in texts]


TEXTS = ["The lamp broke in the storm.", "I row the supply boat on Fridays.", "Honey cakes and rye bread.", ""]


# ---------------------------------------------------------------- embedders


def test_hash_embedder_is_deterministic_and_normalized():
    a, b = HashEmbedder(64).encode(TEXTS), HashEmbedder(64).encode(TEXTS)
    assert a.dtype == np.float32 and a.shape == (4, 64)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(np.linalg.norm(a[:3], axis=1), 1.0, rtol=1e-6)
    assert not a[3].any()  # an empty text is the zero vector, not NaN
    # Case and surrounding punctuation do not matter; word order does not either (a bag of words).
    np.testing.assert_allclose(HashEmbedder().encode(["Lamp, storm!"]), HashEmbedder().encode(["storm lamp"]))
    assert HashEmbedder(32).model_id != HashEmbedder(64).model_id
    assert get_embedder("hash-32").encode(["x"]).shape == (1, 32)
    assert get_embedder("hash").model_id == "hash:64"


def test_tfidf_embedder():
    corpus = TEXTS[:3]
    e = TfidfEmbedder(corpus)
    v = e.encode(["storm lamp", "nothing known here zzz"])
    assert v.dtype == np.float32
    assert np.isclose(np.linalg.norm(v[0]), 1.0) and not v[1].any()
    assert TfidfEmbedder(corpus).model_id == e.model_id != TfidfEmbedder(corpus + ["More text."]).model_id
    with pytest.raises(ValueError, match="corpus"):
        get_embedder("tfidf")


# ---------------------------------------------------------------- embedding cache


def test_embedding_cache_hits_and_misses(tmp_path):
    e = CountingEmbedder()
    first = embed(e, TEXTS[:3])
    assert e.calls == [("document", TEXTS[:3])]
    assert (tmp_path / "cache" / "embeddings.sqlite").is_file()  # $RPA_CACHE_DIR, set by conftest

    again = embed(e, TEXTS[:3])
    assert len(e.calls) == 1, "a cached text was encoded again"
    np.testing.assert_array_equal(first, again)

    mixed = embed(e, [TEXTS[2], "A new sentence.", TEXTS[0]])
    assert e.calls[-1] == ("document", ["A new sentence."])
    np.testing.assert_array_equal(mixed[[0, 2]], first[[2, 0]])

    embed(e, TEXTS[:1], kind="query")  # queries and documents are cached apart (instruction models differ)
    assert e.calls[-1] == ("query", TEXTS[:1])

    # A new cache object on the same file (another process, a later session) still hits.
    fresh = CountingEmbedder()
    embed(fresh, TEXTS[:3], cache=EmbeddingCache())
    assert fresh.calls == []


def test_embedding_cache_is_invalidated_by_model_id():
    embed(CountingEmbedder(model_id="model-a"), TEXTS[:3])
    other = CountingEmbedder(model_id="model-b")
    embed(other, TEXTS[:3])
    assert other.calls == [("document", TEXTS[:3])]
    same = CountingEmbedder(model_id="model-a")
    embed(same, TEXTS[:3])
    assert same.calls == []


def test_embedding_without_cache_always_encodes(tmp_path):
    e = CountingEmbedder()
    embed(e, TEXTS[:2], cache=False)
    embed(e, TEXTS[:2], cache=False)
    assert len(e.calls) == 2
    assert not (tmp_path / "cache" / "embeddings.sqlite").exists()


def test_explicit_cache_file(tmp_path):
    store = EmbeddingCache(tmp_path / "elsewhere" / "vectors.sqlite")
    v = embed(HashEmbedder(), TEXTS[:2], cache=store)
    assert (tmp_path / "elsewhere" / "vectors.sqlite").is_file()
    keys = [EmbeddingCache.key("hash:64", "document", t) for t in TEXTS[:2]]
    stored = store.get_many(keys)
    np.testing.assert_array_equal(np.stack([stored[k] for k in keys]), v)


# ---------------------------------------------------------------- truncation


def test_truncation_report_counts_long_texts():
    texts = ["one two three", "one two three four five six", "a b c d e f g h i j k l", "x " * 30]
    t = truncation(WordLimitEmbedder(), texts)
    assert (t.n_texts, t.n_truncated, t.max_tokens, t.longest) == (4, 2, 8, 32)
    assert t.share == 0.5
    none = truncation(HashEmbedder(), texts)  # no limit: nothing is truncated
    assert (none.n_truncated, none.max_tokens, none.share) == (0, None, 0.0)


def test_embed_warns_on_truncation():
    texts = ["short text", "a b c d e f g h i j k l", "m n o p q r s t u v w"]
    with pytest.warns(UserWarning, match=r"2 of 3 texts are longer than the 8 tokens word-limit-8 reads \(longest 14\)"):
        embed(WordLimitEmbedder(), texts)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        embed(WordLimitEmbedder(), ["short", "also short"])  # nothing truncated: no warning


class _NoCounts(Embedder):
    model_id, max_tokens = "fake:no-counts", 4

    def encode(self, texts, kind="document"):
        return np.ones((len(texts), 3), np.float32) / np.sqrt(3)


def test_truncation_without_token_counts_reports_nothing():
    assert truncation(_NoCounts(), ["many words in this text"]).n_truncated == 0


# ---------------------------------------------------------------- the index


def clustered(n: int, dim: int, clusters: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` unit vectors around ``clusters`` centres (tight and loose clusters), and 200 queries drawn the same way."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(clusters, dim))
    spread = rng.uniform(0.05, 0.6, size=clusters)

    def draw(m):
        which = rng.integers(0, clusters, size=m)
        x = centres[which] + rng.normal(size=(m, dim)) * spread[which, None] * np.linalg.norm(centres, axis=1).mean() / np.sqrt(dim)
        return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)

    return draw(n), draw(200)


@pytest.mark.parametrize("k", [1, 5, 10])
def test_hnsw_recall_is_exact_on_clustered_vectors(k):
    vectors, queries = clustered(2000, 48, 25, seed=k)
    ids = [f"c{i:04d}" for i in range(len(vectors))]
    index = VectorIndex(48).build(vectors, ids)
    found, scores = index.search(queries, k)
    exact, exact_scores = exact_search(vectors, queries, k)
    recall = np.mean([len(set(f) & {ids[j] for j in e}) / k for f, e in zip(found, exact)])
    assert recall == 1.0
    np.testing.assert_allclose(scores, exact_scores, atol=1e-5)
    assert (np.diff(scores, axis=1) <= 1e-6).all(), "results not best first"


def test_exact_search_matches_brute_force():
    vectors, queries = clustered(300, 16, 5, seed=3)
    top, sims = exact_search(vectors, queries, 7)
    full = queries @ vectors.T
    np.testing.assert_array_equal(top, np.argsort(-full, axis=1)[:, :7])
    np.testing.assert_allclose(sims, np.sort(full, axis=1)[:, ::-1][:, :7], rtol=1e-6)


def test_index_edges():
    vectors, queries = clustered(5, 8, 2, seed=0)
    index = VectorIndex(8).build(vectors, list("abcde"))
    ids, scores = index.search(queries[:2], k=50)  # k is capped at the index size
    assert [len(row) for row in ids] == [5, 5] and scores.shape == (2, 5)
    assert sorted(ids[0]) == list("abcde")
    empty = VectorIndex(8).build(np.zeros((0, 8), np.float32), [])
    assert empty.search(queries[:2], 3)[0] == [[], []]
    with pytest.raises(ValueError, match="5 vectors but 4 ids"):
        VectorIndex(8).build(vectors, list("abcd"))


class VectorsFn:
    """``vectors_fn`` for build_or_load that counts how often it is called."""

    def __init__(self, vectors):
        self.vectors, self.calls = vectors, 0

    def __call__(self):
        self.calls += 1
        return self.vectors


def test_build_or_load_reuses_and_rebuilds(tmp_path, caplog):
    vectors, queries = clustered(200, 16, 4, seed=1)
    ids = [f"x{i}" for i in range(200)]
    texts = [f"text {i}" for i in range(200)]
    folder = tmp_path / "idx"
    fn = VectorsFn(vectors)

    index, built = build_or_load(folder, fn, ids, texts, "model-a")
    assert built and fn.calls == 1
    meta = json.loads((folder / "meta.json").read_text())
    assert (meta["model_id"], meta["ids"], meta["dim"], meta["count"]) == ("model-a", ids, 16, 200)
    expected = index.search(queries, 5)

    loaded, built = build_or_load(folder, fn, ids, texts, "model-a")
    assert not built and fn.calls == 1, "an unchanged index was rebuilt"
    got = loaded.search(queries, 5)
    assert got[0] == expected[0]
    np.testing.assert_allclose(got[1], expected[1], atol=1e-6)

    caplog.set_level(logging.WARNING, logger="rpa_lib.index")
    changes = [
        ("model_id", dict(model_id="model-b")),
        ("params", dict(params=HnswParams(M=16))),
        ("content_hash", dict(texts=[*texts[:-1], "text changed"])),
        ("content_hash", dict(ids=[*ids[:-1], "renamed"])),
    ]
    for what, change in changes:
        args = {"ids": ids, "texts": texts, "model_id": "model-a", "params": HnswParams(), **change}
        _, built = build_or_load(folder, fn, args["ids"], args["texts"], args["model_id"], args["params"])
        assert built, f"a change of {what} did not rebuild the index"
        assert what in caplog.text
        caplog.clear()
        # ... and the rebuilt index is then reused as it is.
        _, built = build_or_load(folder, fn, args["ids"], args["texts"], args["model_id"], args["params"])
        assert not built
    assert fn.calls == 1 + len(changes)

    (folder / "index.bin").unlink()
    _, built = build_or_load(folder, fn, ids, texts, "model-a")
    assert built


# ---------------------------------------------------------------- the retriever


def test_retriever_on_fixtures(tmp_path, fixture_characters_dir, monkeypatch):
    builds = []
    original = index_module.VectorIndex.build
    monkeypatch.setattr(index_module.VectorIndex, "build", lambda self, *a, **kw: builds.append(1) or original(self, *a, **kw))

    r = Retriever.for_character("ada-lindqvist", "acts", "hash-1024", characters_dir=fixture_characters_dir)
    assert (tmp_path / "indexes" / "ada-lindqvist" / "acts" / "hash_1024" / "index.bin").is_file()  # $RPA_INDEX_DIR
    hits = r.search("Who is Mira, the harbour master of Skelde, your closest friend?", k=4)
    assert len(hits) == 4
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    assert hits[0].chunk.headings[-1] == "Mira the Harbour Master"
    assert hits[0].chunk.text.startswith("Ada Lindqvist > Social Relationships > Friends > Mira the Harbour Master\n")
    # The scores are the cosine similarities of the chunk and query vectors.
    q = embed(r.embedder, ["Who is Mira, the harbour master of Skelde, your closest friend?"], kind="query")[0]
    chunk_vectors = dict(zip([c.id for c in r.chunks], embed(r.embedder, [c.text for c in r.chunks]), strict=True))
    np.testing.assert_allclose(scores, [float(chunk_vectors[h.chunk.id] @ q) for h in hits], atol=1e-5)

    many = r.search_many(["How do you feel after a market day?", "Who taught you to repair the lamp's clockwork?"], k=3)
    assert many[0][0].chunk.headings[-1] == "Temperament"
    assert many[1][0].chunk.headings[-1] == "Repairs"
    assert len(builds) == 1

    again = Retriever.for_character("ada-lindqvist", "acts", "hash-1024", characters_dir=fixture_characters_dir)
    assert len(builds) == 1, "an unchanged index was rebuilt"
    assert [h.chunk.id for h in again.search("Who is your closest friend?", k=3)] == \
        [h.chunk.id for h in r.search("Who is your closest friend?", k=3)]
    Retriever.for_character("ada-lindqvist", "ats", "hash-1024", characters_dir=fixture_characters_dir)
    assert len(builds) == 2, "another splitter must get its own index"


@pytest.mark.parametrize("splitter", ["vanilla", "ats", "acts"])
def test_retriever_with_tfidf(splitter, fixture_characters_dir):
    r = Retriever.for_character("bram-okafor", splitter, "tfidf", characters_dir=fixture_characters_dir)
    hits = r.search("What do you do with the day-old loaves of bread?", k=3)
    assert "the day-old loaves to the families" in hits[0].chunk.text  # (vanilla chunks may span sections)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert len({h.chunk.id for h in hits}) == 3


# ---------------------------------------------------------------- model identity and stale state


def fake_model(folder, weights: bytes):
    """A folder that looks like a sentence-transformers model (never loaded here)."""
    folder.mkdir(parents=True)
    (folder / "config.json").write_text('{"hidden_size": 8}')
    (folder / "model.safetensors").write_bytes(weights)
    (folder / "README.md").write_text("a model card")
    return folder


def test_model_embedder_ids_name_the_weights_not_the_folder(tmp_path):
    from rpa_lib.embeddings import SentenceTransformerEmbedder
    from rpa_lib.llm import fingerprint

    one = fake_model(tmp_path / "one" / "model", b"A" * 4096)
    two = fake_model(tmp_path / "two" / "model", b"B" * 4096)
    a, b = SentenceTransformerEmbedder(str(one)), SentenceTransformerEmbedder(str(two))
    assert a.label == b.label == "model"  # the readable name stays the folder's
    assert a.model_id != b.model_id and a.model_id.startswith("st:model@") and a._model is None  # nothing loaded
    copy = SentenceTransformerEmbedder(str(shutil.copytree(one, tmp_path / "elsewhere" / "model")))
    assert copy.model_id == a.model_id  # the same bytes elsewhere: the same model
    (one / "README.md").write_text("edited card")
    assert SentenceTransformerEmbedder(str(one)).model_id == a.model_id  # documentation is not the model

    (one / "model.safetensors").write_bytes(b"C" * 4096)  # new weights, same size
    fingerprint.clear_caches()
    changed = CountingEmbedder(model_id=SentenceTransformerEmbedder(str(one)).model_id)
    assert changed.model_id != a.model_id
    embed(CountingEmbedder(model_id=a.model_id), TEXTS[:2])
    embed(changed, TEXTS[:2])
    assert changed.calls == [("document", TEXTS[:2])], "changed weights reused cached vectors"


def test_the_shipped_embedder_id_has_a_fingerprint_and_get_embedder_memo_clears():
    from rpa_lib import embeddings

    embeddings.clear_caches()  # an earlier test in this worker may have loaded the model
    e = get_embedder("minilm")
    assert e.label == "all-MiniLM-L6-v2" and e._model is None
    assert re.fullmatch(r"st:all-MiniLM-L6-v2@[0-9a-f]{12}:[0-9a-f]{8}", e.model_id)
    assert get_embedder("minilm") is e
    embeddings.clear_caches()
    assert get_embedder("minilm") is not e and get_embedder("minilm").model_id == e.model_id


def test_a_missing_model_is_a_clear_error(tmp_path):
    from rpa_lib.embeddings import SentenceTransformerEmbedder

    with pytest.raises(RuntimeError, match="neither a folder nor in the Hugging Face cache"):
        _ = SentenceTransformerEmbedder("no-such-org/no-such-model").model_id
    empty = tmp_path / "empty-model"
    empty.mkdir()
    with pytest.raises(ValueError, match="no weight file"):
        _ = SentenceTransformerEmbedder(str(empty)).model_id


def test_an_index_of_another_dimension_is_rebuilt_never_searched(tmp_path, caplog):
    ids = [f"c{i}" for i in range(50)]
    texts = [f"text {i}" for i in range(50)]
    folder = tmp_path / "idx"
    old = VectorsFn(clustered(50, 384, 3, seed=1)[0])
    index, built = build_or_load(folder, old, ids, texts, "same-model-id")
    assert built and index.dim == 384

    queries = clustered(5, 128, 2, seed=2)[1]
    with pytest.raises(ValueError, match=r"shape \(200, 128\) for an index of 384-d vectors"):
        index.search(queries, 3)  # never handed to hnswlib

    new = VectorsFn(clustered(50, 128, 3, seed=3)[0])
    caplog.set_level(logging.WARNING, logger="rpa_lib.index")
    index, built = build_or_load(folder, new, ids, texts, "same-model-id", dim=128)
    assert built and new.calls == 1 and index.dim == 128 and "dim (384 -> 128)" in caplog.text
    assert len(index.search(queries, 3)[0][0]) == 3
    _, built = build_or_load(folder, new, ids, texts, "same-model-id", dim=128)
    assert not built


def test_a_saved_index_that_disagrees_with_its_metadata_is_rebuilt(tmp_path, caplog):
    ids = [f"c{i}" for i in range(20)]
    texts = [f"text {i}" for i in range(20)]
    folder = tmp_path / "idx"
    fn = VectorsFn(clustered(20, 16, 2, seed=1)[0])
    build_or_load(folder, fn, ids, texts, "m")
    meta = json.loads((folder / "meta.json").read_text())
    (folder / "meta.json").write_text(json.dumps({**meta, "dim": 8}))  # index.bin holds 16-d vectors
    caplog.set_level(logging.WARNING, logger="rpa_lib.index")
    index, built = build_or_load(folder, fn, ids, texts, "m")
    assert built and index.dim == 16 and "unreadable" in caplog.text and "20 vectors of 16 dimensions" in caplog.text
    (folder / "index.bin").write_bytes(b"garbage")
    _, built = build_or_load(folder, fn, ids, texts, "m")
    assert built and fn.calls == 3


def _write_at_once(store, replies, n: int = 12) -> list[str]:
    """``n`` threads released together, each writing one vector and one reply; the errors they met."""
    import threading

    from rpa_lib.llm.cache import Cache

    start, errors = threading.Barrier(n), []

    def work(i: int) -> None:
        try:
            start.wait()
            store.put_many({f"k{i}": np.full(4, i, np.float32)})
            Cache(replies).put(f"key{i}", {"backend": "fake"}, {"text": str(i)})
        except Exception as e:  # collected: an exception in a thread would not fail the test
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def test_many_threads_opening_a_new_cache_file_at_once_all_succeed(tmp_path):
    """Each thread opens its own connection; switching a new file to WAL at the same moment used to fail one of
    them at once with "database is locked" (seen in the LightRAG end-to-end test)."""
    from rpa_lib.llm.cache import Cache

    for round_ in range(5):
        store, replies = EmbeddingCache(tmp_path / f"vectors-{round_}.sqlite"), tmp_path / f"replies-{round_}.sqlite"
        errors = _write_at_once(store, replies)
        assert not errors, errors
        assert len(store.get_many([f"k{i}" for i in range(12)])) == 12
        assert all(Cache(replies).get(f"key{i}") == {"text": str(i)} for i in range(12))
