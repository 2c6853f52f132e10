"""``python -m rpa_lib.authoring COMMAND``: ``new-character``, ``qa-scaffold``, ``qa-promote``, ``add-paragraph``
and ``delete-paragraph`` on one's own character, in the user's data folder unless ``--data-dir`` names another. Bad
input exits 2 with the error on stderr; Ctrl-C exits 130 (``qa-scaffold`` keeps the pairs made so far); output cut
short by a closed pipe (``| head``) exits 141 without a traceback."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rpa_lib import paths
from rpa_lib.authoring import edit
from rpa_lib.authoring.importer import ContentPlacer, new_character, parse_mapping, slugify
from rpa_lib.authoring.scaffold import promote, qa_scaffold
from rpa_lib.authoring.sources import read_text_source, source_document
from rpa_lib.authoring.wikitext import export_pages
from rpa_lib.data.dataset import user_dataset
from rpa_lib.embeddings import KNOWN_MODELS, get_embedder, is_local
from rpa_lib.errors import DataError, closed_pipe
from rpa_lib.llm import get_llm


def _embedder(name: str) -> None:
    """ValueError, before anything is written, when ``--embedder`` names no embedder or one whose weights are not on
    this machine (the cache of vectors must be writable too); ``none`` and ``tfidf`` need nothing."""
    if name in ("none", "tfidf"):
        return
    get_embedder(name)  # an unknown name or a bad hash-N: ValueError
    if not is_local(name):
        model = KNOWN_MODELS[name][0] if name in KNOWN_MODELS else name
        raise ValueError(f"--embedder {name}: the weights of {model} are not on this machine; download them once "
                         f"with network access (`hf download {model}`), or use --embedder minilm (installed) or none")
    paths.check_cache_folders()


def _positive(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, not {text!r}")
    return int(text)


def _new_character(args) -> int:
    path, fmt, text = read_text_source(args.source)
    pages = export_pages(path, text) if fmt == "mediawiki" else []
    if args.list_pages:
        for p in pages:
            print(f"{p.title}  ({len(p.revisions)} revision(s))")
        return 0 if pages else 2
    if args.each_page and not pages:
        raise DataError(path, None, "--each-page is for a MediaWiki export")
    given = [o for o, v in (("SLUG", args.slug), ("--name", args.name), ("--mbti", args.mbti), ("--sloan", args.sloan))
             if v]
    if args.each_page and given:  # one value for every page: each would get it, or (SLUG, --name) it was ignored
        raise ValueError(f"--each-page names each character by its page's title: {', '.join(given)} would apply to "
                         "every page; import such a page alone with --page TITLE")
    jobs = ([(slugify(p.title), p.title, p.title) for p in pages] if args.each_page
            else [(args.slug, args.name, args.page)])
    if not args.each_page and not args.slug:
        raise ValueError("give the new character's SLUG (or --each-page for every page of an export)")
    if not (args.work or "").strip():  # a blank one would be a labels.csv row the dataset's validation refuses
        raise ValueError("give the work the character is from: --work TITLE")
    if args.embedder == "tfidf":  # fitted on one persona's own text, it has no vectors for a page's headings
        raise ValueError("--embedder tfidf cannot place a page's headings by content; use minilm (installed), a "
                         "paper model, hash-N or none")
    _embedder(args.embedder)
    llm = None
    if args.classify_with_llm:
        llm = get_llm(None if args.classify_with_llm == "default" else args.classify_with_llm)
    ds, mapping, failed = user_dataset(args.data_dir), parse_mapping(args.map), []
    placer = None if args.embedder == "none" else ContentPlacer(args.embedder)  # once for every page
    for slug, name, page in jobs:
        try:
            # --each-page: the page read once, and refused before its slug if it is no article (a category, template
            # or talk page, a redirect, a disambiguation page), has no wikitext or no headings
            document = source_document(path, fmt, text, page, pages) if args.each_page else None
            if not slug:
                raise DataError(path, None, f"page {page!r}: its title gives no slug (no Latin letter or digit); "
                                            f"import it with --page {page!r} and a SLUG of your choice")
            done = new_character(slug, args.source, name=name, work=args.work, data=ds, llm=llm, mapping=mapping,
                                 page=page, mbti=args.mbti, sloan=args.sloan, embedder=placer, document=document)
        except Exception as e:  # a page refused, or a bug on one page: the others are still imported
            if not args.each_page:
                raise
            failed.append(page)
            why = e if isinstance(e, DataError) else (
                f"unexpected error ({type(e).__name__}: {e}); nothing written for it. This is a bug of the importer: "
                "please report it with the page")
            print(f"skipped page {page!r}: {why}", file=sys.stderr)
            continue
        print(done.summary())
        placements = [line for line in done.report if line not in done.warnings]  # a near tie: once, as a warning
        for prefix, lines in (("read: ", done.notes), ("", placements), ("warning: ", done.warnings)):
            for line in lines:
                print(f"  {prefix}{line}")
        print(f"  Every placement, rendered template and dropped item: {done.persona_path.with_name('IMPORT.md')}")
        where = f" --data-dir {ds.root}" if args.data_dir else ""
        print(f"Validated. Next: python -m rpa_lib.authoring qa-scaffold {slug}{where}; "
              f"python -m rpa_lib chat --character {slug}{where}")
    if failed:
        print(f"error: {len(failed)} of {len(jobs)} page(s) not imported: {'; '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def _qa_scaffold(args) -> int:
    llm = get_llm(args.llm)
    print(f"Proposing up to {args.per_attribute} pair(s) per attribute with {llm.label}, one short call each "
          "(Ctrl-C stops and keeps what is done):", file=sys.stderr)
    result = qa_scaffold(args.slug, llm, data=user_dataset(args.data_dir), per_attribute=args.per_attribute)
    print(result.summary())
    for failure in result.failed:
        print(f"  failed: {failure}", file=sys.stderr)
    print(f"Open {result.path} in a spreadsheet, correct the rows, set reviewed=yes, then: "
          f"python -m rpa_lib.authoring qa-promote {args.slug}")
    return 130 if result.interrupted else 1 if result.failed else 0


def _qa_promote(args) -> int:
    n, path = promote(args.slug, data=user_dataset(args.data_dir))
    print(f"{n} reviewed pair(s) written to {path}")
    return 0


def _edit(args) -> int:
    ds = user_dataset(args.data_dir)
    _embedder(args.embedder)  # before the edit: a later failure would leave it made, and a retry would make it twice
    if args.command == "add-paragraph":
        done = edit.add_paragraph(args.slug, args.under, args.text, position=args.position, data=ds)
    else:
        done = edit.delete_paragraph(args.slug, args.under, index=args.index, containing=args.containing, data=ds)
    print(done)
    if args.embedder != "none":
        for splitter, change in edit.refresh_indexes(args.slug, embedder=args.embedder, data=ds).items():
            print(f"  {splitter} index ({args.embedder}): {change}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rpa_lib.authoring",
                                     description="Your own character, in the user data folder (user_data/).")
    sub = parser.add_subparsers(dest="command", required=True)
    commands = {}

    def command(name, fn, help):
        p = sub.add_parser(name, help=help)
        p.add_argument("--data-dir", type=Path, help="dataset folder (default: $RPA_USER_DATA_DIR, else user_data/)")
        commands[name] = fn
        return p

    n = command("new-character", _new_character, "import a document as a new character")
    n.add_argument("slug", nargs="?", help="lowercase, hyphenated, e.g. tove-marsh (not with --each-page)")
    n.add_argument("--name", help="the character's name (default: the document's or page's title)")
    n.add_argument("--work", help="the work the character is from (required, but not with --list-pages)")
    n.add_argument("--from", dest="source", required=True, type=Path,
                   help=".md, .markdown, .txt, a MediaWiki export .xml or a page's wikitext .wiki")
    pages = n.add_mutually_exclusive_group()
    pages.add_argument("--page", help="the page of a MediaWiki export of several (its title)")
    pages.add_argument("--each-page", action="store_true", help="import each page of an export as its own character")
    pages.add_argument("--list-pages", action="store_true", help="list the pages of an export and stop")
    n.add_argument("--map", action="append", metavar="HEADING=ATTRIBUTE",
                   help="place a heading, a subsection's too (repeatable; =none drops it)")
    n.add_argument("--embedder", default="minilm", help="place unknown headings and mixed paragraphs by content "
                                                        "with this embedder (default minilm, offline; none: off)")
    n.add_argument("--classify-with-llm", nargs="?", const="default", metavar="LLM",
                   help="let an LLM place headings the table does not know (off by default)")
    n.add_argument("--mbti", default="", help="optional MBTI type for labels.csv")
    n.add_argument("--sloan", default="", help="optional Big Five SLOAN type for labels.csv")
    s = command("qa-scaffold", _qa_scaffold, "propose QA pairs for review (qa_review.csv)")
    s.add_argument("slug")
    s.add_argument("--llm", help="e.g. local, openai:gpt-4.1, fake (default: environment, else local)")
    s.add_argument("--per-attribute", type=_positive, default=5, help="pairs per attribute at most (default 5)")
    command("qa-promote", _qa_promote, "write the reviewed rows of qa_review.csv to qa.jsonl").add_argument("slug")
    for name, help in (("add-paragraph", "add a paragraph under a heading path"),
                       ("delete-paragraph", "delete a paragraph under a heading path")):
        e = command(name, _edit, help + " and update the indexes in place")
        e.add_argument("slug")
        e.add_argument("--under", required=True, help='heading path, e.g. "Activity > The fog winter"')
        e.add_argument("--embedder", default="minilm", help="indexes to update (none: only edit the file)")
        if name == "add-paragraph":
            e.add_argument("--text", required=True)
            e.add_argument("--position", type=int, help="1-based place among the section's paragraphs (default: last)")
        else:
            e.add_argument("--index", type=int, help="1-based number of the paragraph in its section")
            e.add_argument("--containing", help="text that only the paragraph to delete contains")
    args = parser.parse_args(argv)
    try:
        if not getattr(args, "list_pages", False):  # every other command writes there
            paths.check_writable(args.data_dir or paths.user_data_dir(),
                                 "data folder" + ("" if args.data_dir else " (RPA_USER_DATA_DIR)"))
        return commands[args.command](args)
    except (DataError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # one line, not a traceback into torch; qa-scaffold keeps its pairs on its own
        print("interrupted: nothing more was written", file=sys.stderr)
        return 130
    except BrokenPipeError:  # what was written stays
        return closed_pipe()
