"""``python -m rpa_lib.data validate|grounding``: check a dataset (exit 1 on a problem, 2 on bad input). It authors
nothing: an authoring command given here exits 2 with a line naming ``python -m rpa_lib.authoring``."""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

from rpa_lib.data.dataset import Dataset
from rpa_lib.data.stats import structure_figures
from rpa_lib.data.validate import empty_attributes, grounding_report, validate
from rpa_lib.errors import DataError

AUTHORING_COMMANDS = ("new-character", "qa-scaffold", "qa-promote", "add-paragraph", "delete-paragraph")


def _validate(args) -> int:
    ds = Dataset(args.data_dir)
    problems = validate(ds, args.character, full=not args.no_counts)
    for p in problems:
        print(p)
    slugs = args.character or ds.slugs()
    if args.no_counts:
        for warning in empty_attributes(ds, slugs):
            print(f"warning: {warning}")
    if not problems and not args.no_counts:
        try:
            print(", ".join(f"{k.replace('_', ' ')} {v:,}" for k, v in structure_figures(ds, args.character).items()))
        except DataError as e:  # a new character without reviewed QA pairs yet: no figures, not a problem
            print(f"(no dataset figures: {e})")
    print(f"{'FAILED' if problems else 'OK'}: {len(slugs)} character(s) checked in {ds.root}, "
          f"{len(problems)} problem(s)")
    return 1 if problems else 0


def _grounding(args) -> int:
    report = grounding_report(Dataset(args.data_dir), args.character)
    if args.csv:
        rows = ([f.qa.id, word, ""] for f in report.flagged for word in f.unreviewed)
        csv.writer(sys.stdout, lineterminator="\n").writerows(rows)
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


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] and argv[0] in AUTHORING_COMMANDS:
        print(f"error: '{argv[0]}' moved: run python -m rpa_lib.authoring {argv[0]} {' '.join(argv[1:])}".rstrip(),
              file=sys.stderr)
        return 2
    parser = argparse.ArgumentParser(prog="python -m rpa_lib.data", description="Check a dataset (data/ by default). "
                                     "Authoring a character: python -m rpa_lib.authoring.")
    sub = parser.add_subparsers(dest="command", required=True)
    v = sub.add_parser("validate", help="check every file of the dataset")
    g = sub.add_parser("grounding", help="the content-word grounding check, pair by pair, with a summary")
    for p in (v, g):
        p.add_argument("--data-dir", type=Path, help="dataset folder (default: the repository's data/)")
        p.add_argument("--character", action="append", help="check only this character (repeatable)")
    v.add_argument("--no-counts", action="store_true", help="skip dataset-wide counts (for small sets, new characters)")
    g.add_argument("--unreviewed", action="store_true", help="list only pairs with an unreviewed word")
    g.add_argument("--csv", action="store_true",
                   help="print the unreviewed flags as id,word,reason rows (reason empty)")
    args = parser.parse_args(argv)
    try:
        if args.data_dir and not args.data_dir.is_dir():
            raise DataError(args.data_dir, None, "--data-dir: no such folder")
        if args.character:
            Dataset(args.data_dir).characters(args.character)  # an unknown slug is bad input, not a failed check
        return _grounding(args) if args.command == "grounding" else _validate(args)
    except (DataError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
