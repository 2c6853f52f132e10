"""How much context each method put in front of its LLM: characters, tokens and items per question, and the budget
that makes Naive RAG show as much as AMADEUS.

A method's context is the text of its context items (the runner's ``context`` column); the role-play prompt's fixed
parts are the same for every method and are not counted. Tokens are counted with one tokenizer for every method and
LLM, :data:`TOKENIZER`. Not here: choosing a method's budget or building tables.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache

import pandas as pd

from rpa_lib.evaluation.runner import check_failures

TOKENIZER = "all-MiniLM-L6-v2 WordPiece"
CONTEXT_COLUMNS = ("context_chars", "context_tokens", "context_items")


def load_tokenizer(path):
    """A ``tokenizer.json`` as a :class:`tokenizers.Tokenizer` without padding or truncation."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(path))
    tok.no_padding()
    tok.no_truncation()
    return tok


@cache
def wordpiece_tokenizer():
    """The :data:`TOKENIZER`, read offline from its package and kept."""
    from rpa_lib.embeddings import minilm_path

    return load_tokenizer(minilm_path() / "tokenizer.json")


_COUNTS: dict[str, int] = {}  # text -> tokens: the same chunks come back in many contexts, and tables are remade
_COUNTS_LIMIT = 200_000


def count_tokens(texts: list[str]) -> list[int]:
    """Tokens of each text under :data:`TOKENIZER`, without special tokens, memoized.
    ``count_tokens(["hello world"]) == [2]``"""
    new = list(dict.fromkeys(t for t in texts if t not in _COUNTS))
    if new:
        if len(_COUNTS) + len(new) > _COUNTS_LIMIT:  # start over (with every text of this call)
            _COUNTS.clear()
            new = list(dict.fromkeys(texts))
        encoded = wordpiece_tokenizer().encode_batch(new, add_special_tokens=False)
        _COUNTS.update(zip(new, (len(e.ids) for e in encoded), strict=True))
    return [_COUNTS[t] for t in texts]


def _texts(context) -> list[str]:
    if context is None or (isinstance(context, float) and pd.isna(context)):
        return []
    return [item["text"] if isinstance(item, dict) else item.text for item in context]


def context_columns(context) -> dict[str, int]:
    """The :data:`CONTEXT_COLUMNS` of one job's context items (dicts or :class:`~rpa_lib.methods.ContextItem`).
    ``context_columns([{"text": "hello world"}]) == {"context_chars": 11, "context_tokens": 2, "context_items": 1}``"""
    texts = _texts(context)
    return {"context_chars": sum(map(len, texts)), "context_tokens": sum(count_tokens(texts)),
            "context_items": len(texts)}


def context_sizes(rows: pd.DataFrame, by: Iterable[str] = ("method",), *, tokens: bool = True) -> pd.DataFrame:
    """Per group of ``by``, over the rows without an error: ``questions`` and the means of :data:`CONTEXT_COLUMNS`
    (tokens and ``tokenizer`` left out with ``tokens=False``), from the ``context`` column or the sizes already
    measured (:func:`context_columns`)."""
    by = list(by)
    ok = rows[rows.error.isna()] if "error" in rows else rows
    measured = ["context_chars", *(["context_tokens"] if tokens else []), "context_items"]
    out = []
    for key, g in ok.groupby(by, sort=False):
        sizes = g
        if "context" in g or "context_chars" not in g:  # not measured yet
            texts = [_texts(c) for c in g.context]
            sizes = pd.DataFrame({"context_chars": [sum(map(len, t)) for t in texts],
                                  "context_items": [len(t) for t in texts]})
            if tokens:  # one batch for the whole group, summed back per question
                flat = iter(count_tokens([x for t in texts for x in t]))
                sizes["context_tokens"] = [sum(next(flat) for _ in t) for t in texts]
        out.append({**dict(zip(by, key, strict=True)), "questions": len(g),
                    **{c: float(sizes[c].mean()) for c in measured}, **({"tokenizer": TOKENIZER} if tokens else {})})
    return pd.DataFrame(out, columns=[*by, "questions", *measured, *(["tokenizer"] if tokens else [])])


def matched_budget(rows: pd.DataFrame, method: str = "amadeus") -> int:
    """``method``'s mean context characters per answered question, rounded: the ``budget_chars`` that gives Naive
    RAG as much context. None answered: :class:`~rpa_lib.methods.FailedItems`; no rows: ValueError."""
    mine = rows[rows.method == method]
    answered = mine[mine.error.isna()] if "error" in mine else mine
    if answered.empty and len(mine):  # every row failed: say why, not that there is nothing to measure
        check_failures(mine, f"matching a budget to {method!r}")
    sizes = context_sizes(answered, tokens=False)
    if sizes.empty:
        raise ValueError(f"no answered rows of {method!r} to match a budget to; run it first")
    return max(1, round(sizes.context_chars.iloc[0]))


def matched_budgets(rows: pd.DataFrame, by: str, groups: Iterable[str], method: str = "amadeus", *,
                    given: int | None = None) -> dict[str, int]:
    """``{group: budget_chars}`` for each of ``groups`` (values of ``rows[by]``: a task, question set or
    questionnaire): ``given``, else :func:`matched_budget` of that group's rows alone, so no set is given another
    set's mean; a group ``method`` has no row in is left out (nothing to match).
    ``matched_budgets(rows, "task", ["CharacterRAG", "MBTI"]) == {"CharacterRAG": 1929, "MBTI": 1993}``"""
    out = {}
    for group in groups:
        mine = rows[rows[by] == group]
        if given or (mine.method == method).any():
            out[group] = given or matched_budget(mine, method)  # none answered: FailedItems names why
    return out


def with_context(table: pd.DataFrame, sizes: pd.DataFrame, on: str | list[str] = "method") -> pd.DataFrame:
    """``table`` with the context columns of ``sizes`` joined on ``on`` after its own, rounded (items to 0.1)."""
    keep = [c for c in CONTEXT_COLUMNS if c in sizes]
    on = [on] if isinstance(on, str) else list(on)
    right = sizes[[*on, *keep]].round({c: 1 if c == "context_items" else 0 for c in keep})
    return table.merge(right, on=on, how="left")
