"""Benchmark a persona update in place against a rebuild, on a persona of at least 1M characters.

``python -m benchmarks update`` prints a Markdown table and writes it to ``results/bench_update.md``.

The persona is made by concatenating the repository's personas (``data/characters``): under each of the six
attributes, one ``###`` subsection per character and copy (``### Frieren, copy 2``) holding that character's
subsections of the attribute one level deeper, repeated until it has ``--min-chars`` characters of paragraph text
(default 1,000,000). Then, per splitter:

1. **full build**: split, embed every chunk with an empty embedding cache, build and save the hnswlib index;
2. one paragraph is added at the end of a section in the middle of the document (:func:`rpa_lib.authoring.edit.
   add_paragraph`), short enough to leave l_max as it is;
3. **update in place**: what opening the retriever then does (parse, split, match chunks by text, embed only the new
   ones, ``mark_deleted`` + ``add_items``, save);
4. **rebuild, cached embeddings**: a fresh index of the edited persona in another folder, with the embedding cache
   as it was before step 3 (the behaviour before in-place updates: vectors reused by content hash, so only the new
   chunks are embedded, but the index built again);
5. the updated and the rebuilt index must give the same top-10 for 100 QA questions: the same scores rank by
   rank and the same chunks (chunks of equal score, copies of one text, in any order; :func:`same_ranking`).

Steps 2 to 5 are repeated (``--repeats``, default 3, with the paragraph deleted again in between) and the
medians printed; the full build runs once. Times are wall-clock seconds on the machine's CPU, single-threaded
hnswlib, with the embedder named in the table. This module measures; it does not tune anything.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from rpa_lib.persona import ATTRIBUTES, load_persona


def big_persona(characters_dir: Path | None, min_chars: int) -> tuple[str, int, int]:
    """``(persona.md text, paragraph characters, characters used)`` concatenating every repository persona."""
    from rpa_lib.persona import list_characters

    personas = []
    for slug in list_characters(characters_dir):
        try:
            personas.append(load_persona(slug, characters_dir))
        except Exception:  # a broken persona is left out of the generator, not fatal
            continue
    per_copy = sum(len(p.text) for persona in personas for p in persona.paragraphs)
    copies = max(1, -(-min_chars // per_copy))
    lines = ["# Everyone", ""]
    for attribute in ATTRIBUTES:
        lines += [f"## {attribute}", ""]
        for copy in range(1, copies + 1):
            for persona in personas:
                lines += [f"### {persona.name}, copy {copy}", ""]
                shown: tuple[str, ...] = ()  # the heading path written last, below the attribute
                for section in persona.sections:
                    if section.headings[1] != attribute:
                        continue
                    path = section.headings[2:6]  # one level deeper each; six levels at most
                    same = next((i for i, (a, b) in enumerate(zip(shown, path)) if a != b), min(len(shown), len(path)))
                    lines += [x for i in range(same, len(path)) for x in (f"{'#' * (i + 4)} {path[i]}", "")]
                    shown = path
                    lines += [x for p in section.paragraphs for x in (p.text, "")]
    return "\n".join(lines), per_copy * copies, len(personas)


def questions(characters_dir: Path | None, n: int = 100) -> list[str]:
    import json

    from rpa_lib.paths import CHARACTERS_DIR

    out = []
    for path in sorted(Path(characters_dir or CHARACTERS_DIR).glob("*/qa.jsonl")):
        out += [json.loads(line)["question"] for line in path.read_text().splitlines() if line.strip()]
    return out[:: max(1, len(out) // n)][:n]


def same_ranking(a, b) -> bool:
    """The same scores rank by rank, and the same chunks at every score but the last. The persona repeats the
    repository's texts, so chunks with equal scores (copies of one text) may come in either order, and at the
    last score either index may have cut a different copy."""
    scores = [round(h.score, 5) for h in a]
    if scores != [round(h.score, 5) for h in b]:
        return False
    above = lambda hits: sorted((round(h.score, 5), h.chunk.id) for h in hits if round(h.score, 5) != scores[-1])  # noqa: E731
    return above(a) == above(b)


TEXTS = ("I still keep a small notebook of everything that happened that season, and I read it again whenever I "
         "doubt what I remember.",
         "On quiet evenings I write letters I never send, and keep them in a tin box under the window.",
         "I learned to whistle a tune backwards once, only to prove to a friend that it could be done.")


def run(splitter: str, embedder: str, root: Path, queries: list[str], repeats: int) -> dict:
    """Time the full build once, then ``repeats`` times: add a paragraph, update in place, rebuild into a fresh
    folder from cached embeddings, compare the two, delete the paragraph again (untimed)."""
    from rpa_lib.authoring.edit import add_paragraph, delete_paragraph
    from rpa_lib.retrieval import Retriever

    chars = root / "characters"
    open_ = lambda where: Retriever.for_character("everyone", splitter, embedder, characters_dir=chars,  # noqa: E731
                                                  index_root=root / where)
    start = time.perf_counter()
    built = open_(f"idx-{splitter}")
    full = time.perf_counter() - start
    middle = built.persona.sections[len(built.persona.sections) // 2]
    under = " > ".join(middle.headings[1:])
    updates, rebuilds, changes, same = [], [], [], True
    for n in range(repeats):
        text = TEXTS[n % len(TEXTS)]
        edit = add_paragraph("everyone", under, text, data=root)
        if edit.l_max_before != edit.l_max_after:
            raise AssertionError("the benchmark's paragraph changed l_max")
        # The rebuild gets the embedding cache as it was before the update, so both embed the new chunks.
        before = root / f"cache-before-{splitter}-{n}"
        shutil.copytree(os.environ["RPA_CACHE_DIR"], before)
        start = time.perf_counter()
        updated = open_(f"idx-{splitter}")
        updates.append(time.perf_counter() - start)
        changes.append(updated.change)
        cache, os.environ["RPA_CACHE_DIR"] = os.environ["RPA_CACHE_DIR"], str(before)
        try:
            start = time.perf_counter()
            rebuilt = open_(f"idx-{splitter}-fresh-{n}")
            rebuilds.append(time.perf_counter() - start)
        finally:
            os.environ["RPA_CACHE_DIR"] = cache
        same &= all(same_ranking(a, b) for a, b in zip(updated.search_many(queries, 10),
                                                        rebuilt.search_many(queries, 10), strict=True))
        delete_paragraph("everyone", under, containing=text[:60], data=root)
        open_(f"idx-{splitter}")  # the deletion, applied in place (untimed), so the next round starts the same
    return {"splitter": splitter, "chunks": len(updated.chunks), "full": full, "update": statistics.median(updates),
            "rebuild": statistics.median(rebuilds), "change": str(changes[-1]),
            "kind": "updated" if all(c.kind == "updated" for c in changes) else "not updated",
            "identical": same, "embedder": built.embedder.label, "repeats": repeats}


def main(argv: list[str] | None = None) -> int:
    from rpa_lib.paths import RESULTS_DIR

    parser = argparse.ArgumentParser(prog="python -m benchmarks update", description=__doc__.split("\n")[0])
    parser.add_argument("--embedder", default="minilm", help="minilm (default), hash-64 for a quick run, ...")
    parser.add_argument("--splitters", default="vanilla,acts")
    parser.add_argument("--min-chars", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3, help="updates and cached rebuilds timed (the median)")
    parser.add_argument("--characters-dir", type=Path, default=None, help="default: data/characters")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "bench_update.md")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-update-") as tmp:
        root = Path(tmp)
        text, n_chars, n_personas = big_persona(args.characters_dir, args.min_chars)
        (root / "characters" / "everyone").mkdir(parents=True)
        (root / "characters" / "everyone" / "persona.md").write_text(text, encoding="utf-8")
        queries = questions(args.characters_dir)
        saved = os.environ.get("RPA_CACHE_DIR")
        os.environ["RPA_CACHE_DIR"] = str(root / "cache")  # an empty embedding cache: the full build embeds all
        try:
            rows = [run(s, args.embedder, root, queries, args.repeats) for s in args.splitters.split(",") if s.strip()]
        finally:
            if saved is None:
                os.environ.pop("RPA_CACHE_DIR", None)
            else:
                os.environ["RPA_CACHE_DIR"] = saved
        paragraphs = len(load_persona("everyone", root / "characters").paragraphs)
    lines = [f"Persona: {n_chars:,} characters of paragraph text in {paragraphs:,} paragraphs ({n_personas} repository "
             f"personas, concatenated). Embedder: {rows[0]['embedder'] if rows else args.embedder}. One paragraph "
             "added in the middle of the document and deleted again, "
             f"{args.repeats} times; times in seconds: the full build once, the others the median of the repeats.", "",
             "| splitter | chunks | full build (empty embedding cache) | rebuild, cached embeddings | update in place | "
             "what the update did | update vs full build | update vs cached rebuild | same top-10 as the rebuild (ties in "
             "any order) |",
             "|---|---:|---:|---:|---:|---|---:|---:|---|"]
    for r in rows:
        lines.append(f"| {r['splitter']} | {r['chunks']:,} | {r['full']:.1f} | {r['rebuild']:.2f} | {r['update']:.2f} | "
                     f"{r['change']} | {r['full'] / r['update']:.0f}x faster | {r['rebuild'] / r['update']:.1f}x faster | "
                     f"{'yes' if r['identical'] else 'NO'} |")
    table = "\n".join(lines)
    print(table)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(table + "\n")
    print(f"\nwritten to {args.out}")
    return 0 if all(r["identical"] and r["kind"] == "updated" for r in rows) else 1
