"""``python -m rpa_lib chat --character frieren --method amadeus``: talk to a character in the terminal.

Each answer is followed by what the method used: the knowledge chunks, the chunks Guided Selection kept (or
its failure), the extracted attributes, and the LLM calls (cache hits included). ``--question`` answers one
question and exits. The LLM comes from ``--llm`` or the environment (default: the embedded SmolLM2).
"""

from __future__ import annotations

import argparse
import sys
import textwrap

from rpa_lib.persona import PersonaError, list_characters


def show(response, width: int = 100) -> None:
    name = response.character
    print(f"\n{name}> " + textwrap.fill(response.reply or "(empty reply)", width, subsequent_indent="  "))
    dim = lambda s: f"\033[2m{s}\033[0m" if sys.stdout.isatty() else s  # noqa: E731
    for chunk in response.knowledge:
        print(dim(f"  knowledge  {chunk.id}  [{chunk.context}]"))
    if response.gs_failed is not None:
        state = "failed: using the top K+1" if response.gs_failed else "selected"
        print(dim(f"  GS {state} after examining {response.examined} chunk(s):"))
        for chunk in response.selected:
            print(dim(f"    {chunk.id}  [{chunk.context}]"))
    for label, text in response.attributes.items():
        print(dim(f"  {label}: " + textwrap.shorten(text, width - len(label) - 4)))
    cached = sum(c.cached for c in response.calls)
    print(dim(f"  {len(response.calls)} LLM call(s), {cached} from cache"))


def chat(args) -> int:
    from rpa_lib.llm import get_llm
    from rpa_lib.methods import build_method

    if args.character not in list_characters():
        print(f"unknown character {args.character!r}; known: {', '.join(list_characters())}", file=sys.stderr)
        return 2
    llm = get_llm(args.llm)
    method = build_method(args.method, llm=llm, embedder=args.embedder, k=args.k, max_tokens=args.max_tokens)
    print(f"{args.method} · {llm.label} · embedder {args.embedder}. Empty line or Ctrl-D to quit.")
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
    c.add_argument("--character", required=True, help="slug, e.g. frieren")
    c.add_argument("--method", default="amadeus", choices=["no_rag", "naive_rag", "amadeus"])
    c.add_argument("--llm", help="e.g. local, openai:gpt-4.1, fake (default: environment, else local)")
    c.add_argument("--embedder", default="minilm")
    c.add_argument("--k", type=int, default=3, help="knowledge chunks per question")
    c.add_argument("--max-tokens", type=int, default=160)
    c.add_argument("--question", help="answer this one question and exit")
    args = parser.parse_args(argv)
    try:
        return chat(args)
    except PersonaError as e:
        print(e, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
