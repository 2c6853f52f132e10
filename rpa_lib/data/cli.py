"""``python -m rpa_lib.data COMMAND``: the dataset's command line.

- ``validate [--character SLUG] [--data-dir DIR] [--no-counts]``: check every file of a dataset, print each
  problem with its file and line, exit 1 when there is any.
- ``grounding [--character SLUG] [--data-dir DIR] [--unreviewed] [--csv]``: the content-word grounding check, pair
  by pair (each flagged word, with its review if ``grounding_reviewed.csv`` has one) and a summary; ``--csv`` prints
  the unreviewed flags as rows to review and add to that file. Exits 1 when a flag is unreviewed or a row is stale.
- ``new-character SLUG --name NAME --work WORK --from FILE``: import a Markdown, plain-text or MediaWiki XML
  document as a new character (:mod:`rpa_lib.data.importer`).
- ``qa-scaffold SLUG`` and ``qa-promote SLUG``: LLM-proposed QA pairs for review, then the reviewed ones into
  ``qa.jsonl`` (:mod:`rpa_lib.data.scaffold`).
- ``add-paragraph SLUG --under PATH --text TEXT`` and ``delete-paragraph SLUG --under PATH (--index N |
  --containing TEXT)``: edit a persona and update its indexes in place (:mod:`rpa_lib.data.edit`).

Bad input exits 2 with the error (naming the file and the problem) on stderr.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

from rpa_lib.data.dataset import Dataset
from rpa_lib.data.validate import grounding_report, validate
from rpa_lib.errors import DataError


def _validate(args) -> int:
    ds = Dataset(args.data_dir)
    problems = validate(ds, args.character, full=not args.no_counts)
    for p in problems:
        print(p)
    slugs = args.character or ds.slugs()
    if not problems:
        from rpa_lib.data.stats import structure_figures

        try:
            print(", ".join(f"{k.replace('_', ' ')} {v:,}" for k, v in structure_figures(ds, args.character).items()))
        except DataError as e:  # a new character without reviewed QA pairs yet: no figures, not a problem
            print(f"(no dataset figures: {e})")
    print(grounding_report(ds, args.character).summary())
    print(f"{'FAILED' if problems else 'OK'}: {len(slugs)} character(s) checked in {ds.root}, {len(problems)} problem(s)")
    return 1 if problems else 0


def _grounding(args) -> int:
    report = grounding_report(Dataset(args.data_dir), args.character)
    if args.csv:
        writer = csv.writer(sys.stdout, lineterminator="\n")
        for f in report.flagged:
            for word in f.unreviewed:
                writer.writerow([f.qa.id, word, ""])
        print(report.summary(), file=sys.stderr)
        return 1 if report.problems() else 0
    for f in report.flagged:
        if args.unreviewed and not f.unreviewed:
            continue
        words = [f"{w} (reviewed: {f.reviewed[w]})" if w in f.reviewed else w for w in f.words]
        print(f"{f.path}:{f.qa.line}: {f.qa.id}: {'; '.join(words)}")
    for p in report.file_problems + report.stale_problems():
        print(p)
    print(report.summary())
    return 1 if report.problems() else 0


def _new_character(args) -> int:
    from rpa_lib.data.importer import new_character, parse_mapping

    llm = None
    if args.classify_with_llm:
        from rpa_lib.llm import get_llm

        llm = get_llm(None if args.classify_with_llm == "default" else args.classify_with_llm)
    done = new_character(args.slug, args.source, name=args.name, work=args.work, data=args.data_dir,
                         mapping=parse_mapping(args.map), llm=llm, mbti=args.mbti, sloan=args.sloan)
    print(done.summary())
    print("Not placed or removed (lines of the source):" if done.report else "Every section was placed.")
    for line in done.report:
        print(f"  {line}")
    print(f"Validated. Next: python -m rpa_lib.data qa-scaffold {args.slug}; "
          f"python -m rpa_lib chat --character {args.slug}")
    return 0


def _qa_scaffold(args) -> int:
    from rpa_lib.data.scaffold import qa_scaffold
    from rpa_lib.llm import get_llm

    llm = get_llm(args.llm)
    result = qa_scaffold(args.slug, llm, data=args.data_dir, per_attribute=args.per_attribute)
    print(result.summary())
    for failure in result.failed:
        print(f"  failed: {failure}", file=sys.stderr)
    print(f"Open {result.path} in a spreadsheet, correct the rows, set reviewed=yes, then: "
          f"python -m rpa_lib.data qa-promote {args.slug}")
    return 1 if result.failed else 0


def _qa_promote(args) -> int:
    from rpa_lib.data.scaffold import promote

    n, path = promote(args.slug, data=args.data_dir)
    print(f"{n} reviewed pair(s) written to {path}")
    return 0


def _edit(args) -> int:
    from rpa_lib.data import edit

    if args.command == "add-paragraph":
        done = edit.add_paragraph(args.slug, args.under, args.text, position=args.position, data=args.data_dir)
    else:
        done = edit.delete_paragraph(args.slug, args.under, index=args.index, containing=args.containing,
                                     data=args.data_dir)
    print(done)
    if args.embedder != "none":
        for splitter, change in edit.refresh_indexes(args.slug, embedder=args.embedder, data=args.data_dir).items():
            print(f"  {splitter} index ({args.embedder}): {change}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rpa_lib.data", description="The dataset under data/.")
    sub = parser.add_subparsers(dest="command", required=True)
    commands = {}

    def command(name, fn, help):
        p = sub.add_parser(name, help=help)
        p.add_argument("--data-dir", type=Path, help="dataset folder (default: the repository's data/)")
        commands[name] = fn
        return p

    v = command("validate", _validate, "check every file of the dataset")
    v.add_argument("--character", action="append", help="check only this character (repeatable)")
    v.add_argument("--no-counts", action="store_true", help="skip dataset-wide counts (for small sets, new characters)")
    g = command("grounding", _grounding, "the content-word grounding check, pair by pair, with a summary")
    g.add_argument("--character", action="append", help="check only this character (repeatable)")
    g.add_argument("--unreviewed", action="store_true", help="list only pairs with an unreviewed word")
    g.add_argument("--csv", action="store_true", help="print the unreviewed flags as id,word,reason rows (reason empty)")
    n = command("new-character", _new_character, "import a document as a new character")
    n.add_argument("slug", help="lowercase, hyphenated, e.g. tove-marsh")
    n.add_argument("--name", required=True, help="the character's name (the persona's title)")
    n.add_argument("--work", required=True, help="the work the character is from")
    n.add_argument("--from", dest="source", required=True, type=Path, help=".md, .markdown, .txt or MediaWiki .xml")
    n.add_argument("--map", action="append", metavar="HEADING=ATTRIBUTE", help="place a heading (repeatable; =none drops it)")
    n.add_argument("--classify-with-llm", nargs="?", const="default", metavar="LLM",
                   help="let an LLM place headings the table does not know (off by default)")
    n.add_argument("--mbti", default="", help="optional MBTI type for labels.csv")
    n.add_argument("--sloan", default="", help="optional Big Five SLOAN type for labels.csv")
    s = command("qa-scaffold", _qa_scaffold, "propose QA pairs for review (qa_review.csv)")
    s.add_argument("slug")
    s.add_argument("--llm", help="e.g. local, openai:gpt-4.1, fake (default: environment, else local)")
    s.add_argument("--per-attribute", type=int, default=5)
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
        return commands[args.command](args)
    except (DataError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
