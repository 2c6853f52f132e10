"""Benchmark the hnswlib index of :mod:`rpa_lib.index` against exact search at 1K, 10K and 100K vectors.

``python -m benchmarks index`` prints a Markdown table and writes it to ``results/bench_index.md``.

The vectors have the structure of real sentence embeddings, not of uniform random ones. They start from the
all-MiniLM-L6-v2 embeddings (384-d) of the corpus's own chunks: every character in ``data/characters`` whose
persona and QA parse, the paper's three splitters (Vanilla, ATS, ACTS), duplicate texts removed (Vanilla and ATS cut a short section into
the same chunk). A size up to that count is a random subset of them. A larger size is all of them plus
perturbed copies, each ``normalize(v + e)`` with ``v`` a real vector drawn uniformly and ``e ~ N(0, s^2 C)``,
``C`` the real vectors' covariance and ``s = NOISE_SCALE = 0.75``: a Gaussian mixture with one component on each
real chunk. At that scale a copy is about as similar to its source (median cosine ~0.83) as a real chunk is to
its nearest other chunk (~0.85), and the grown set keeps the real vectors' effective dimension (participation
ratio ~66); all three are measured and printed with the table. Noise scaled per dimension only (a diagonal
``C``) would spread over directions the real vectors do not use, nearly doubling the effective dimension and
making the set harder to index than real embeddings (recall@10 at 100K fell from ~0.99 to ~0.95 when tried).
The queries are the paper set's QA questions (``data/characters/*/qa.jsonl``), embedded as queries, 200 drawn at random;
perturbed copies, made the same way from the questions, are added only if there are fewer questions than that.

For each size: build time with the defaults ``HnswParams()`` but two threads (the library builds
single-threaded; two threads make 100K quick but the graph is not bit-for-bit reproducible), query latency p50
(one query at a time), recall@10 against :func:`rpa_lib.index.exact_search` at the default ef, the smallest ef
in ``EF_LADDER`` with recall@10 >= 0.99, and exact-search latency p50. A last row indexes the real chunks of each
character x splitter on its own, single-threaded as :class:`~rpa_lib.retrieval.Retriever` does, queried with
that character's questions at k = min(10, index size); it reports the minimum recall over those indexes.

This module measures the defaults; it does not tune or change them.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass, replace
from importlib.metadata import version
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits  # installed with scikit-learn

from rpa_lib.index import HnswParams, VectorIndex, exact_search

SIZES = (1_000, 10_000, 100_000)
EF_LADDER = (16, 32, 64, 128, 256, 512)
NOISE_SCALE = 0.75
K = 10
TARGET_RECALL = 0.99
DEFAULTS = HnswParams()


@dataclass(frozen=True)
class Corpus:
    """Embedded chunks and questions of every character that parses."""

    chunks: np.ndarray  # unique chunk vectors, all characters and splitters
    questions: np.ndarray  # every QA question, embedded as a query
    groups: list[tuple[str, np.ndarray, np.ndarray]]  # ("frieren:acts", its chunk vectors, its question vectors)
    skipped: list[str]  # "slug: error" for each character left out


@dataclass(frozen=True)
class Measurement:
    size: int
    build_s: float
    latency_ms: np.ndarray  # HNSW, one entry per query
    exact_ms: np.ndarray  # exact search, one entry per query
    recall: dict[int, float]  # ef -> mean recall@k over the queries


def load_corpus(embedder_name: str = "minilm", characters_dir: Path | None = None) -> Corpus:
    """Chunk and question vectors of every character in ``characters_dir`` whose persona and QA parse."""
    from rpa_lib.data import load_qa
    from rpa_lib.embeddings import embed, get_embedder
    from rpa_lib.persona import list_characters, load_persona
    from rpa_lib.splitters import PAPER_SPLITTERS, split

    data_dir = Path(characters_dir).parent if characters_dir else None
    chunk_sets, question_sets, skipped = [], [], []
    for slug in list_characters(characters_dir):
        try:
            persona = load_persona(slug, characters_dir)
            chunks = [(f"{slug}:{s}", [c.text for c in split(persona, s)], slug) for s in PAPER_SPLITTERS]
            questions = [qa.question for qa in load_qa(slug, data_dir)]
        except (ValueError, AssertionError) as e:  # PersonaError and DataError are ValueErrors
            skipped.append(f"{slug}: {e}")
            continue
        chunk_sets += chunks
        question_sets.append((slug, questions))
    if not question_sets:
        raise RuntimeError("no character parses; nothing to benchmark" + "".join(f"\n  {s}" for s in skipped))

    embedder = get_embedder(embedder_name)
    texts = sorted({t for _, ts, _ in chunk_sets for t in ts})
    row = {t: i for i, t in enumerate(texts)}
    chunks = embed(embedder, texts)
    questions = {slug: embed(embedder, qs, kind="query") for slug, qs in question_sets}
    groups = [(name, chunks[[row[t] for t in ts]], questions[slug]) for name, ts, slug in chunk_sets]
    return Corpus(chunks, np.concatenate(list(questions.values())), groups, skipped)


def perturb(real: np.ndarray, n: int, rng: np.random.Generator, scale: float = NOISE_SCALE,
            sources: np.ndarray | None = None) -> np.ndarray:
    """``n`` unit vectors, each a row of ``real`` (``sources``, default uniform draws) plus Gaussian noise whose
    covariance is ``scale**2`` x that of the rows. ``perturb(v, 5, rng).shape == (5, v.shape[1])``"""
    sources = rng.integers(len(real), size=n) if sources is None else sources
    # z @ basis, z standard normal, has covariance basis.T @ basis = scale^2 * cov(real)   (SVD of centred rows)
    _, spread, axes = np.linalg.svd(real - real.mean(axis=0), full_matrices=False)
    basis = (scale * spread[:, None] / np.sqrt(max(len(real) - 1, 1)) * axes).astype(np.float32)
    out = np.empty((n, real.shape[1]), np.float32)
    for start in range(0, n, 10_000):  # in blocks, to keep the temporaries small at 100K
        block = out[start:start + 10_000]
        block[:] = rng.standard_normal((len(block), len(basis)), dtype=np.float32) @ basis
        block += real[sources[start:start + 10_000]]
        block /= np.linalg.norm(block, axis=1, keepdims=True)
    return out


def grow(real: np.ndarray, n: int, rng: np.random.Generator, scale: float = NOISE_SCALE) -> np.ndarray:
    """``n`` vectors shaped like ``real``: a random subset of its rows, or all of them then perturbed copies.

    ``(grow(v, 3 * len(v), rng)[:len(v)] == v).all()``
    """
    if n <= len(real):
        return real[rng.choice(len(real), size=n, replace=False)]
    return np.concatenate([real, perturb(real, n - len(real), rng, scale)])


def measure(base: np.ndarray, queries: np.ndarray, k: int = K, threads: int = 1, params: HnswParams = DEFAULTS,
            ladder: tuple[int, ...] = EF_LADDER) -> Measurement:
    """Build an index over ``base`` with ``params`` and compare it with exact search on ``queries``."""
    ids = [str(i) for i in range(len(base))]
    start = time.perf_counter()
    index = VectorIndex(base.shape[1], params).build(base, ids, threads=threads)
    build_s = time.perf_counter() - start

    truth, _ = exact_search(base, queries, k)
    recall = {ef: _recall(index, queries, truth, ef) for ef in sorted({*ladder, params.ef})}
    # One thread for BLAS too: on a small machine OpenBLAS's thread hand-off costs more than a single product.
    with threadpool_limits(1):
        latency = _timed(lambda q: index.search(q, k), queries)
        exact = _timed(lambda q: exact_search(base, q, k), queries)
    return Measurement(len(base), build_s, latency, exact, recall)


def _recall(index: VectorIndex, queries: np.ndarray, truth: np.ndarray, ef: int) -> float:
    """Mean recall of ``index`` searched at ``ef`` (a query-time setting: the graph stays the same)."""
    default = index.params
    index.params = replace(default, ef=ef)
    try:
        found, _ = index.search(queries, truth.shape[1])
    finally:
        index.params = default
    return float(np.mean([len({int(i) for i in row} & set(t)) / len(t) for row, t in zip(found, truth.tolist())]))


def _timed(search, queries: np.ndarray) -> np.ndarray:
    """Milliseconds of ``search`` for each query, one at a time (after one untimed warm-up call)."""
    search(queries[:1])
    times = []
    for q in queries:
        start = time.perf_counter()
        search(q[None, :])
        times.append((time.perf_counter() - start) * 1000)
    return np.array(times)


def smallest_ef(recall: dict[int, float], ladder: tuple[int, ...] = EF_LADDER, target: float = TARGET_RECALL):
    """The first ef of ``ladder`` whose recall reaches ``target``, or None. ``smallest_ef({16: .9, 32: 1.0}) == 32``"""
    return next((ef for ef in ladder if ef in recall and recall[ef] >= target), None)


def structure(real: np.ndarray, rng: np.random.Generator, scale: float = NOISE_SCALE) -> tuple[float, float]:
    """(median cosine of a real vector to its nearest other real vector, median cosine of a copy to its source)."""
    sims = real @ real.T
    np.fill_diagonal(sims, -np.inf)
    sources = rng.integers(len(real), size=2_000)
    copies = perturb(real, len(sources), rng, scale, sources)
    return float(np.median(sims.max(axis=1))), float(np.median((copies * real[sources]).sum(axis=1)))


def participation_ratio(vectors: np.ndarray) -> float:
    """Effective dimension (sum of covariance eigenvalues)^2 / (sum of squares). Isotropic 384-d noise: ~384."""
    eigen = np.linalg.eigvalsh(np.cov(vectors.T.astype(np.float64)))
    return float(eigen.sum() ** 2 / (eigen**2).sum())


def table(rows: list[dict], ef: int, k: int = K) -> str:
    """Markdown table of :func:`size_rows` and :func:`character_row` rows."""
    lines = [
        f"| vectors | build (s) | HNSW query p50 (ms) | recall@{k} at ef={ef} | smallest ef with recall@{k} >= "
        f"{TARGET_RECALL} | exact query p50 (ms) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        recall = f"{r['recall']:.4f}" + (" (min)" if r["worst_of"] else "")
        ef_needed = r["smallest_ef"] or f"> {EF_LADDER[-1]}"
        lines.append(f"| {r['vectors']} | {r['build_s']:.3f} | {r['hnsw_p50_ms']:.3f} | {recall} | {ef_needed} | "
                     f"{r['exact_p50_ms']:.3f} |")
    return "\n".join(lines)


def size_rows(corpus: Corpus, sizes: list[int], queries: np.ndarray, threads: int, rng: np.random.Generator,
              params: HnswParams = DEFAULTS) -> tuple[list[dict], dict[int, float]]:
    """One row per size (``vectors``, ``build_s``, ``hnsw_p50_ms``, ``recall`` at the default ef, ``smallest_ef``
    reaching the target recall or None, ``exact_p50_ms``, ``worst_of``: 0), and the effective dimension of each
    grown set."""
    rows, dims = [], {}
    for n in sizes:
        print(f"[bench index] {n:,} vectors: building with {threads} threads ...", file=sys.stderr, flush=True)
        base = grow(corpus.chunks, n, rng)
        dims[n] = participation_ratio(base[rng.choice(n, size=min(n, 20_000), replace=False)])
        m = measure(base, queries, threads=threads, params=params)
        rows.append({"vectors": f"{n:,}", "build_s": m.build_s, "hnsw_p50_ms": float(np.median(m.latency_ms)),
                     "recall": m.recall[params.ef], "smallest_ef": smallest_ef(m.recall),
                     "exact_p50_ms": float(np.median(m.exact_ms)), "worst_of": 0})
    return rows, dims


def character_row(corpus: Corpus, params: HnswParams = DEFAULTS) -> tuple[dict, str | None]:
    """The row for one index per character x splitter (the worst recall over the ``worst_of`` indexes, median
    timings), and the worst index if its recall is below 1."""
    print(f"[bench index] {len(corpus.groups)} character x splitter indexes ...", file=sys.stderr, flush=True)
    per = [measure(vectors, qs, k=min(K, len(vectors)), params=params) for _, vectors, qs in corpus.groups]
    worst = {ef: min(m.recall[ef] for m in per) for ef in per[0].recall}
    recall, name = min(zip((m.recall[params.ef] for m in per), (name for name, _, _ in corpus.groups)))
    sizes = [m.size for m in per]
    row = {"vectors": f"{min(sizes)}-{max(sizes)}: one character x splitter (min of {len(per)})",
           "build_s": float(np.median([m.build_s for m in per])),
           "hnsw_p50_ms": float(np.median(np.concatenate([m.latency_ms for m in per]))),
           "recall": worst[params.ef], "smallest_ef": smallest_ef(worst),
           "exact_p50_ms": float(np.median(np.concatenate([m.exact_ms for m in per]))), "worst_of": len(per)}
    return row, (name if recall < 1 else None)


def main(argv: list[str] | None = None) -> int:
    from rpa_lib.paths import RESULTS_DIR

    parser = argparse.ArgumentParser(prog="python -m benchmarks index", description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="comma-separated index sizes")
    parser.add_argument("--queries", type=int, default=200, help="number of queries")
    parser.add_argument("--threads", type=int, default=2, help="threads for the builds at those sizes")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--characters-dir", type=Path, default=None, help="default: data/characters")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "bench_index.md")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    rng = np.random.default_rng(args.seed)
    load_before = os.getloadavg()[0]

    corpus = load_corpus(characters_dir=args.characters_dir)
    queries = grow(corpus.questions, args.queries, rng)
    nn_cos, copy_cos = structure(corpus.chunks, rng)
    rows, dims = size_rows(corpus, sizes, queries, args.threads, rng)
    row, worst = character_row(corpus)
    rows.append(row)

    p, n_real, n_questions = DEFAULTS, len(corpus.chunks), len(corpus.questions)
    notes = [
        f"Vectors: all-MiniLM-L6-v2 (384-d) embeddings of the {n_real:,} distinct chunks of "
        f"{len(corpus.groups) // 3} characters x 3 splitters (vanilla, ats, acts: the paper's). A size up to {n_real:,} is a "
        f"random subset of them; a larger size is all of them plus perturbed copies normalize(v + e), v a real chunk "
        f"vector drawn uniformly, e ~ N(0, {NOISE_SCALE}^2 x covariance of the real vectors): a Gaussian mixture "
        f"with one component on each real chunk. Median cosine of a copy to its source: {copy_cos:.3f}; of a real "
        f"chunk to its nearest other chunk: {nn_cos:.3f}. Effective dimension (participation ratio of the "
        f"covariance spectrum): real chunks {participation_ratio(corpus.chunks):.0f}; "
        + ", ".join(f"{n:,}: {d:.0f}" for n, d in dims.items()) + ".",
        f"Queries: {len(queries)} of the {n_questions} QA questions (embedded as queries)"
        + (f", {len(queries) - n_questions} of them perturbed copies." if len(queries) > n_questions
           else ", drawn at random."),
        f"Index: rpa_lib.index.VectorIndex with HnswParams() defaults (M={p.M}, ef_construction={p.ef_construction}, "
        f"ef={p.ef}), built with {args.threads} threads at the sizes above and single-threaded, as the library "
        f"builds, per character. Recall@{K} = share of exact_search's top {K} that the index returns, averaged over "
        f"queries; ef ladder {', '.join(map(str, EF_LADDER))}. Latency: one query at a time on one thread, BLAS "
        f"included (VectorIndex.search / exact_search, wall clock, median). Last row: the real chunks of each "
        f"character x splitter in an index of their own, queried with that character's questions at "
        f"k = min({K}, size); build is the median per index, recall the minimum"
        + (f" (at {worst})." if worst else "."),
        f"Machine: {os.cpu_count()} CPUs, load average {load_before:.1f} before and {os.getloadavg()[0]:.1f} after "
        f"(other processes share the CPUs, so timings are indicative); hnswlib {version('hnswlib')}, numpy "
        f"{np.__version__}, seed {args.seed}. Command: `python -m benchmarks index`.",
    ]
    notes += [f"Skipped (did not parse): {s}" for s in corpus.skipped]
    text = table(rows, p.ef) + "\n\n" + "\n\n".join(notes) + "\n"
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(f"[bench index] wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
