"""``python -m rpa_lib.data validate [--character SLUG] [--data-dir DIR] [--no-counts]``: check every file of a
dataset, print each problem with its file and line, exit 1 when there is any."""

from __future__ import annotations

import argparse
from pathlib import Path

from rpa_lib.data.dataset import Dataset
from rpa_lib.data.validate import validate


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rpa_lib.data", description="Check the dataset under data/.")
    sub = parser.add_subparsers(dest="command", required=True)
    v = sub.add_parser("validate", help="check every file of the dataset")
    v.add_argument("--character", action="append", help="check only this character (repeatable)")
    v.add_argument("--data-dir", type=Path, help="dataset folder (default: the repository's data/)")
    v.add_argument("--no-counts", action="store_true", help="skip dataset-wide counts (for small fixture sets)")
    args = parser.parse_args(argv)
    ds = Dataset(args.data_dir)
    problems = validate(ds, args.character, full=not args.no_counts)
    for p in problems:
        print(p)
    slugs = args.character or ds.slugs()
    if not problems:
        from rpa_lib.data.stats import structure_figures

        print(", ".join(f"{k.replace('_', ' ')} {v:,}" for k, v in structure_figures(ds, args.character).items()))
    print(f"{'FAILED' if problems else 'OK'}: {len(slugs)} character(s) checked in {ds.root}, {len(problems)} problem(s)")
    return 1 if problems else 0
