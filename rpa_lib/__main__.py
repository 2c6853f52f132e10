"""``python -m rpa_lib chat --character frieren --method amadeus``: talk to a character in the terminal.

Each answer is followed by what reached the LLM (context items by role, with their persona chunk ids), the method's
details and the LLM calls. The character comes from ``data/``, else the user's data folder (or ``--data-dir``); the
method's settings follow what the engine can do. It records no results. Bad input (an unknown character, method or
embedder, an empty question, a missing folder) exits 2 before any call; a failed call (no key, no server) 1; Ctrl-C
during an answer 130; a closed pipe 141; each says why in one line (after the usage so far, once the chat began).
"""

from __future__ import annotations

import argparse
import sys
import textwrap
import warnings
from pathlib import Path

from rpa_lib.data import Dataset, user_dataset
from rpa_lib.display import details_lines
from rpa_lib.embeddings import get_embedder
from rpa_lib.errors import DataError, closed_pipe
from rpa_lib.explore import empty_attributes_note, method_settings, warning_notes
from rpa_lib.llm import LLMError, get_llm
from rpa_lib.methods import METHODS, build_method
from rpa_lib.methods.registry import method_label
from rpa_lib.paths import user_data_dir


def show(response, width: int = 100) -> None:
    """The reply, then what reached the LLM (context items by role, with their chunk ids), details and LLM calls."""
    print(f"\n{response.character}> " + textwrap.fill(response.reply or "(empty reply)", width, subsequent_indent="  "))
    dim = lambda s: f"\033[2m{s}\033[0m" if sys.stdout.isatty() else s  # noqa: E731
    for item in response.context:
        source = ", ".join(item.chunk_ids) or "not from the persona"
        label = f" [{item.label}]" if item.label else ""
        shown = textwrap.shorten(item.text, 70) if item.role == "attribute" else source
        print(dim(f"  {item.role:<10} {shown}{label}"))
    for line in details_lines(response.details):
        print(dim(f"  {line}"))
    cached = sum(c.cached for c in response.calls)
    print(dim(f"  {len(response.calls)} LLM call(s), {cached} from cache"))


def dataset_for(character: str, data_dir: str | None):
    """``data_dir``'s dataset, else the paper's ``data/`` when it has ``character``, else the user's data folder."""
    if data_dir:
        return Dataset(data_dir)
    paper, user = Dataset(), user_dataset()
    return user if character not in paper.slugs() and character in user.slugs() else paper


def _ask() -> str:
    try:
        return input("you> ").strip()
    except (EOFError, KeyboardInterrupt):  # Ctrl-D or Ctrl-C at the prompt: the end of the chat
        print()
        return ""


def chat(args) -> int:
    if args.question is not None and not args.question.strip():
        raise ValueError("--question is empty: ask something, or leave --question out to chat")
    if args.data_dir and not Path(args.data_dir).is_dir():
        raise DataError(args.data_dir, None, "--data-dir: no such folder")
    dataset = dataset_for(args.character, args.data_dir)
    try:
        dataset.characters([args.character])  # a clear error for an unknown slug
    except DataError as e:
        if args.data_dir:
            raise
        yours = user_dataset().slugs() if user_data_dir().is_dir() else []
        where = (f"looked in data/ and in your data folder {user_data_dir()}"
                 + (f", which holds: {', '.join(yours)}" if yours else ", which holds none"))
        raise DataError(e.path, None, f"{e.problem} ({where})") from None
    llm = get_llm(args.llm)
    settings = method_settings(args.method, llm, embedder=args.embedder, k=args.k)
    method = build_method(args.method, llm=llm, dataset=dataset, max_tokens=args.max_tokens, **settings)
    if getattr(method.settings, "embedder", "tfidf") != "tfidf":
        get_embedder(method.settings.embedder)  # a mistyped embedder fails now, not after the first question
    if hasattr(llm, "openai_client"):
        llm.openai_client()  # so does a missing API key
    print(f"{method_label(args.method)} · {llm.label} · {dataset.describe()} · {method.settings}. "
          "Empty line or Ctrl-D to quit.")
    if note := empty_attributes_note(dataset, args.character):
        print(f"note: {note}")
    if args.question is not None:
        print(f"you> {args.question}")
    try:
        for question in [args.question.strip()] if args.question is not None else iter(_ask, ""):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                response = method.respond(args.character, question)
            show(response)
            for line in warning_notes(caught):
                print(f"  {line}")
    finally:  # also after Ctrl-C or a failed call: what was spent so far
        print(f"\n{llm.usage.summary()}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rpa_lib", description="Retrieval-augmented role-playing agents.")
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("chat", help="talk to a character in the terminal")
    c.add_argument("--character", required=True, help="slug, e.g. frieren, or one imported with "
                                                       "python -m rpa_lib.authoring new-character")
    c.add_argument("--data-dir", help="dataset folder (default: data/, else your data folder user_data/)")
    c.add_argument("--method", default="amadeus", choices=list(METHODS), help="a registered method (default: amadeus, 5 LLM calls an answer)")
    c.add_argument("--llm", help="e.g. local, openai:gpt-4.1, fake (default: environment, else local)")
    c.add_argument("--embedder", help="retrieval embedder (default: the method's, minilm)")
    c.add_argument("--k", type=int, help="knowledge chunks per question (default: the method's)")
    c.add_argument("--max-tokens", type=int, default=160)
    c.add_argument("--question", help="answer this one question and exit")
    args = parser.parse_args(argv)
    try:
        return chat(args)
    except (ValueError, LLMError) as e:  # bad input (DataError too): 2; a failed call (no key, no server, ...): 1
        print(f"error: {e}", file=sys.stderr)
        return 1 if isinstance(e, LLMError) else 2
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (| head)
        return closed_pipe()


if __name__ == "__main__":
    sys.exit(main())
