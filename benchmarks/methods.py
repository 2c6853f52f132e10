"""``python -m benchmarks methods``: LLM calls and tokens of every method, per question and per character.

What each registered method spends per question and, once, per character (indexing), on the fake backend, where
counts are exact and free.

AMADEUS claims that Guided Selection is cheaper than graph-based and web-search-based RAG; this prints the
numbers behind that claim for this repository's implementations: no_rag, naive_rag, amadeus (window 1, and the
default look-ahead window, whose speculative judge calls are spent too), crag (CRAG-offline: web search replaced
by BM25), rolerag and any other registered method. Every method gets a fresh ``FakeLLM`` (cache off) whose rule
answers each prompt kind in its expected format: constrained choices by a hash of the prompt (the positive
option, yes / relevant / same, for a share ``--positive`` of prompts, 0.5 by default: verdicts are a coin toss,
not a judgement, and GS walks further when they are rarer), JSON objects built from the
capitalized words of the text (entities, relations, query entities), short chat replies. Counts are read from
the LLM's usage, so re-asks and speculative calls count. Tokens are whitespace-separated words of the prompts
and replies (the fake's count): prompt sizes are the real prompts', completions are the fake's short ones.

It runs in a temporary cache folder (nothing from an earlier run is reused, nothing is left behind) and does not
measure any real model's verdicts, latency or price; run the methods on a real LLM for those.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import tempfile
import time
from pathlib import Path

from rpa_lib import paths
from rpa_lib.data import Dataset
from rpa_lib.llm import FakeLLM
from rpa_lib.llm.answers import schema_example
from rpa_lib.methods import METHODS, build_method, setting_names
from rpa_lib.reproduce import environment

FIXTURE_DATA = paths.ROOT / "tests" / "fixtures" / "data"
_STOP = {"I", "The", "A", "An", "My", "In", "On", "At", "He", "She", "It", "We", "They", "You", "Your", "When",
         "After", "Before", "His", "Her", "Our", "This", "That", "But", "And", "Yes", "No", "So", "What", "Why", "How",
         "Who", "Where", "Do", "Does", "Did", "Is", "Are", "If", "Tell", "Character", "Question", "Passage", "Reply",
         "List", "Use", "Call", "For", "Then", "Answer", "Give", "Write", "From", "Using", "Describe", "These"}


def _digest(text: str) -> int:
    return int(hashlib.sha256(text.encode("utf-8")).hexdigest()[:8], 16)


def _names(text: str, limit: int) -> list[str]:
    """Capitalized words and runs of them, without common sentence openers. ``_names("I met Uncle Per.", 3)``
    -> ``["Uncle Per"]``"""
    found = []
    for m in re.finditer(r"\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*", text):
        words = m.group(0).split()
        while words and words[0] in _STOP:
            words = words[1:]
        if words and " ".join(words) not in found:
            found.append(" ".join(words))
    return found[:limit]


def _section(text: str, start: str, end: str) -> str:
    i = text.find(start)
    j = text.find(end, i + len(start)) if i >= 0 else -1
    return text[i + len(start):j] if i >= 0 and j >= 0 else text


def bench_rule(kind: str, messages: list[dict], spec, positive: float = 0.5) -> str | dict:
    """Answers every prompt of the methods in its expected format (see the module docstring); a two-option choice
    gets its first option (yes, relevant, same) for a share ``positive`` of prompts, by a hash of the prompt."""
    system, last = messages[0]["content"], messages[-1]["content"]
    if kind == "choose":
        if len(spec) == 2:
            return spec[0] if _digest(last) % 10_000 < positive * 10_000 else spec[1]
        return spec[_digest(last) % len(spec)]
    if kind == "structured":
        props = set(spec.get("properties", {}))
        if props == {"entities", "relations"}:  # graph extraction from one passage
            passage = _section(last, "):\n", "\n\nList the entities")
            names = _names(passage, 8)
            types = ["person", "place", "organization", "event", "object", "activity", "concept"]
            entities = [{"name": n, "type": types[_digest(n) % len(types)],
                         "description": " ".join(passage[passage.find(n):].split()[:20])} for n in names]
            return {"entities": entities,
                    "relations": [{"source": "I", "target": n, "description": f"I know {n}."} for n in names]}
        if props == {"entities"}:  # query analysis
            question = _section(last, "asks ", "\n")
            found = [{"name": n, "type": "person", "relevant": _digest(n) % 5 != 0, "reason": "a guess",
                      "specificity": "specific"} for n in _names(question, 3)]
            return {"entities": [*found, {"name": "hobbies", "type": "activity", "relevant": True, "reason": "a guess",
                                          "specificity": "general"}]}
        if props == {"name", "description"}:  # canonical name of a group of names
            listed = [line[2:] for line in last.splitlines() if line.startswith("- ")]
            return {"name": listed[0] if listed else "entity", "description": " ".join(listed[1:])[:300]}
        return schema_example(spec)
    if "search-engine" in system:  # CRAG's query rewrite
        return ", ".join(_names(last, 1) + sorted(re.findall(r"[a-z]{5,}", _section(last, "asks ", "\n")),
                                                   key=len, reverse=True)[:2])
    return f"fake reply {_digest(last):08x}"


def _spent(llm) -> tuple[int, int, int]:
    u = llm.usage
    return u.calls, u.prompt_tokens, u.completion_tokens


def _delta(after: tuple, before: tuple) -> tuple:
    return tuple(a - b for a, b in zip(after, before, strict=True))


def variants(names: list[str], embedder: str):
    """(row label, method name, settings) for each method to measure; AMADEUS twice (window 1 and default)."""
    for name in names:
        base = {"embedder": embedder} if "embedder" in setting_names(name) else {}
        if name == "amadeus":
            yield "amadeus (window 1)", name, {**base, "window": 1}
            yield "amadeus (default window)", name, base
        else:
            yield name, name, base


def measure(name: str, settings: dict, dataset: Dataset, questions: dict[str, list[str]], positive: float = 0.5) -> dict:
    """Per-question and per-character (indexing) calls and tokens of one method on a fresh fake LLM."""
    llm = FakeLLM(lambda kind, messages, spec: bench_rule(kind, messages, spec, positive), label="bench", cache=False)
    method = build_method(name, llm, dataset=dataset, **settings)
    index = (0, 0, 0)
    has_index = hasattr(method, "index_cost")
    for character in questions:
        before = _spent(llm)
        if has_index:
            method.index_cost(character)
        elif "splitter" in setting_names(name):
            method.retriever(character)  # the embedding index: no LLM call
        index = tuple(a + b for a, b in zip(index, _delta(_spent(llm), before), strict=True))
    before = _spent(llm)
    n = 0
    for character, qs in questions.items():
        for q in qs:
            method.respond(character, q)
            n += 1
    time.sleep(0.2)  # let any speculative call still in flight land in the usage
    calls, prompt, completion = _delta(_spent(llm), before)
    chars = len(questions)
    label = getattr(method, "label", "")
    window = getattr(method, "window", None)
    return {"method": name, "label": label if isinstance(label, str) else "", "window": window,
            "calls_per_question": calls / n, "tokens_per_question": (prompt + completion) / n,
            "index_calls": index[0] / chars if has_index else None,
            "index_tokens": (index[1] + index[2]) / chars if has_index else None}


def run(dataset: Dataset, characters: list[str] | None, per_character: int, embedder: str,
        methods: list[str] | None = None, positive: float = 0.5) -> list[dict]:
    """One row per method variant (see :func:`measure`)."""
    questions = {c: [q.question for q in dataset.qa(c)[:per_character]] for c in dataset.characters(characters)}
    rows = []
    for row, name, settings in variants(methods or list(METHODS), embedder):
        rows.append({"row": row, **measure(name, settings, dataset, questions, positive)})
    return rows


def summary(rows: list[dict], amortize: int) -> list[dict]:
    """The table's rows, as numbers: each method variant named as the table names it (the default window's size, the
    method's label), with its per-question costs, its indexing costs per character (0 without an LLM-built index:
    ``llm_index`` False)
    and its tokens per question with the index spread over ``amortize`` questions."""
    out = []
    for r in rows:
        name = r["row"].replace("default window", f"default window = {r['window']}")
        if r["label"]:
            name += f": {r['label']}"
        has = r["index_calls"] is not None
        out.append({"method": name, "llm_index": has, "calls_per_question": r["calls_per_question"],
                    "tokens_per_question": r["tokens_per_question"], "index_calls": r["index_calls"] if has else 0,
                    "index_tokens": r["index_tokens"] if has else 0,
                    "amortized_tokens": r["tokens_per_question"] + (r["index_tokens"] / amortize if has else 0)})
    return out


def table(rows: list[dict], amortize: int) -> str:
    """Markdown of :func:`summary`."""
    lines = ["| method | LLM calls / question | tokens / question | index LLM calls / character | "
             f"index tokens / character | tokens / question, index spread over {amortize} questions |",
             "|---|---|---|---|---|---|"]
    for r in summary(rows, amortize):
        index = f"{r['index_calls']:.1f} | {r['index_tokens']:,.0f}" if r["llm_index"] else "0 | 0"
        lines.append(f"| {r['method']} | {r['calls_per_question']:.1f} | {r['tokens_per_question']:,.0f} | {index} | "
                     f"{r['amortized_tokens']:,.0f} |")
    return "\n".join(lines)


def command(argv: list[str] | None = None) -> tuple[list[dict], str]:
    """The command line's work: (the :func:`summary` rows, the text :func:`main` prints)."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks methods", description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=FIXTURE_DATA, help="dataset folder (default: the test fixtures)")
    parser.add_argument("--characters", default=None, help="comma-separated slugs (default: every character)")
    parser.add_argument("--questions", type=int, default=3, help="QA questions per character")
    parser.add_argument("--embedder", default="hash-64", help="embedder for every method that retrieves")
    parser.add_argument("--methods", default=None, help="comma-separated method names (default: every registered one)")
    parser.add_argument("--positive", type=float, default=0.5,
                        help="share of yes / relevant / same verdicts the fake gives (GS, CRAG, RoleRAG's name check)")
    parser.add_argument("--amortize", type=int, default=210,
                        help="questions per character to spread indexing over (the paper: 30 QA + 60 MBTI + 120 BFI)")
    args = parser.parse_args(argv)
    dataset = Dataset(args.data)
    characters = args.characters.split(",") if args.characters else None
    with tempfile.TemporaryDirectory(prefix="rpa-bench-methods-") as tmp:
        # A fresh cache: no graph, vector or index from an earlier run is reused, and none is left behind.
        with environment(RPA_CACHE_DIR=tmp, RPA_INDEX_DIR=f"{tmp}/indexes"):
            rows = run(dataset, characters, args.questions, args.embedder,
                       args.methods.split(",") if args.methods else None, args.positive)
    n = len(dataset.characters(characters))
    text = (f"LLM cost per method on the fake backend: {n} character(s) of {args.data}, {args.questions} QA "
            f"question(s) each, embedder {args.embedder}. Tokens are the fake's whitespace words; a hash of the prompt "
            f"answers {args.positive:.0%} of the yes/no-like choices positively.\n\n{table(rows, args.amortize)}\n\n"
            "Index: one-off LLM work per character before any question (RoleRAG's graph); the embedding indexes "
            "of the other methods need no LLM call.")
    return summary(rows, args.amortize), text


def main(argv: list[str] | None = None) -> int:
    print(command(argv)[1])
    return 0
