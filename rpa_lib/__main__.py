"""``python -m rpa_lib chat --character frieren --method amadeus``: talk to a character in the terminal.

Each answer is followed by what reached the LLM (the context items by role with their persona chunk ids: knowledge,
GS-selected passages, extracted attributes, ...), the method's details (e.g. GS failure) and the LLM calls
(cache hits included). ``--method`` takes any registered method. ``--question`` answers one
question and exits. The LLM comes from ``--llm`` or the environment (default: the embedded SmolLM2). A character
imported with ``python -m rpa_lib.data new-character`` works at once; ``--data-dir`` reads another dataset folder.
"""

from __future__ import annotations

import argparse
import sys
import textwrap

from rpa_lib.errors import DataError
from rpa_lib.methods import METHODS


def show(response, width: int = 100) -> None:
    """The reply, then what reached the LLM (context items by role, with their chunk ids), the method's
    details and the LLM calls."""
    print(f"\n{response.character}> " + textwrap.fill(response.reply or "(empty reply)", width, subsequent_indent="  "))
    dim = lambda s: f"\033[2m{s}\033[0m" if sys.stdout.isatty() else s  # noqa: E731
    for item in response.context:
        source = ", ".join(item.chunk_ids) or "not from the persona"
        label = f" [{item.label}]" if item.label else ""
        shown = textwrap.shorten(item.text, 70) if item.role == "attribute" else source
        print(dim(f"  {item.role:<10} {shown}{label}"))
    for key, value in response.details.items():
        if key != "attributes":
            print(dim(f"  {key}: {value}"))
    cached = sum(c.cached for c in response.calls)
    print(dim(f"  {len(response.calls)} LLM call(s), {cached} from cache"))


def chat(args) -> int:
    from rpa_lib.data import Dataset
    from rpa_lib.llm import get_llm
    from rpa_lib.methods import build_method

    dataset = Dataset(args.data_dir)
    dataset.characters([args.character])  # a clear error for an unknown slug
    llm = get_llm(args.llm)
    settings = {k: v for k, v in (("embedder", args.embedder), ("k", args.k)) if v is not None}
    method = build_method(args.method, llm=llm, dataset=dataset, max_tokens=args.max_tokens, **settings)
    print(f"{args.method} · {llm.label} · {method.settings}. Empty line or Ctrl-D to quit.")
    questions = [args.question] if args.question else None
    while True:
        if questions is not None:
            if not questions:
                break
            question = questions.pop()
            print(f"you> {question}")
        else:
            try:
                question = input("you> ").strip()
            except EOFError:
                break
            if not question:
                break
        show(method.respond(args.character, question))
    print(f"\n{llm.usage.summary()}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rpa_lib", description="Retrieval-augmented role-playing agents.")
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("chat", help="talk to a character in the terminal")
    c.add_argument("--character", required=True, help="slug, e.g. frieren, or one imported with "
                                                       "python -m rpa_lib.data new-character")
    c.add_argument("--data-dir", help="dataset folder (default: the repository's data/)")
    c.add_argument("--method", default="amadeus", choices=list(METHODS), help="a registered method")
    c.add_argument("--llm", help="e.g. local, openai:gpt-4.1, fake (default: environment, else local)")
    c.add_argument("--embedder", help="retrieval embedder (default: the method's, minilm)")
    c.add_argument("--k", type=int, help="knowledge chunks per question (default: the method's)")
    c.add_argument("--max-tokens", type=int, default=160)
    c.add_argument("--question", help="answer this one question and exit")
    args = parser.parse_args(argv)
    try:
        return chat(args)
    except (DataError, ValueError) as e:
        print(e, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
