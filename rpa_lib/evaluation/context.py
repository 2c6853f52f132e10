"""How much context each method put in front of its LLM: characters and tokens per question, and the budget
that makes Naive RAG show as much as AMADEUS.

A method's context is the text of its context items (persona chunks, CRAG strips, GS passages, AE attributes,
graph descriptions, a boundary note), as :func:`rpa_lib.methods.run_jobs` keeps them in the ``context`` column;
the role-play prompt's fixed instructions, the character's name and the question are the same for every method
and are not counted. Tokens are counted with one tokenizer for every method and every LLM,
:data:`TOKENIZER` (the all-MiniLM-L6-v2 WordPiece tokenizer shipped with the embedded embedder, so the count
needs no download); a GPT or Llama tokenizer gives other absolute numbers, but the ratio between methods is what
a table compares.

Not here: choosing a method's budget (:class:`rpa_lib.methods.baselines.NaiveRAGSettings` takes one) or
building tables (the notebooks join :func:`context_sizes` to their own tables with :func:`with_context`).

>>> rows = pd.DataFrame({"method": ["a", "a", "b"], "error": [None, None, None],
...                      "context": [[{"text": "abcd"}], [{"text": "ab"}, {"text": "cd"}], []]})
>>> context_sizes(rows, tokens=False)[["method", "questions", "context_chars", "context_items"]].to_dict("records")
[{'method': 'a', 'questions': 2, 'context_chars': 4.0, 'context_items': 1.5}, {'method': 'b', 'questions': 1, 'context_chars': 0.0, 'context_items': 0.0}]
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

import pandas as pd

from rpa_lib.evaluation.runner import check_failures

TOKENIZER = "all-MiniLM-L6-v2 WordPiece"
CONTEXT_COLUMNS = ("context_chars", "context_tokens", "context_items")
_TOKENIZER = None
_LOCK = threading.Lock()


def wordpiece_tokenizer():
    """The :data:`TOKENIZER` (one per process; no padding, no truncation), read offline from its package."""
    global _TOKENIZER
    with _LOCK:
        if _TOKENIZER is None:
            from tokenizers import Tokenizer

            from rpa_lib.embeddings import minilm_path

            tok = Tokenizer.from_file(str(minilm_path() / "tokenizer.json"))
            tok.no_padding()
            tok.no_truncation()
            _TOKENIZER = tok
        return _TOKENIZER


_COUNTS: dict[str, int] = {}  # text -> tokens: the same chunks come back in many contexts, and tables are remade
_COUNTS_LIMIT = 200_000


def count_tokens(texts: list[str]) -> list[int]:
    """Tokens of each text under :data:`TOKENIZER`, without special tokens. ``count_tokens(["hello world"]) == [2]``
    Texts counted before are not tokenized again."""
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
    """``context_chars``, ``context_tokens`` and ``context_items`` of one job's context items (dicts or
    :class:`~rpa_lib.methods.ContextItem`), for tables that keep the sizes and not the texts.
    ``context_columns([{"text": "hello world"}]) == {"context_chars": 11, "context_tokens": 2, "context_items": 1}``"""
    texts = _texts(context)
    return {"context_chars": sum(map(len, texts)), "context_tokens": sum(count_tokens(texts)),
            "context_items": len(texts)}


def context_sizes(rows: pd.DataFrame, by: Iterable[str] = ("method",), *, tokens: bool = True) -> pd.DataFrame:
    """Per group of ``by`` (default: per method), over the rows without an error: ``questions``, the mean
    ``context_chars`` and ``context_tokens`` per question (tokens: :data:`TOKENIZER`; left out with
    ``tokens=False``), the mean number of ``context_items``, and ``tokenizer``. A method without context has 0.
    The rows carry either the runner's ``context`` column or the sizes (:func:`context_columns`) already."""
    by = list(by)
    ok = rows[rows.error.isna()] if "error" in rows else rows
    out = []
    for key, g in ok.groupby(by, sort=False):
        row = dict(zip(by, key if isinstance(key, tuple) else (key,), strict=True))
        row["questions"] = len(g)
        if "context" not in g and "context_chars" in g:  # sizes measured already
            row["context_chars"] = float(g.context_chars.mean())
            if tokens:
                row["context_tokens"] = float(g.context_tokens.mean())
            row["context_items"] = float(g.context_items.mean())
            if tokens:
                row["tokenizer"] = TOKENIZER
            out.append(row)
            continue
        texts = [_texts(c) for c in g.context]
        row["context_chars"] = float(pd.Series([sum(map(len, t)) for t in texts]).mean())
        if tokens:
            flat = count_tokens([x for t in texts for x in t])
            per, i = [], 0
            for t in texts:
                per.append(sum(flat[i:i + len(t)]))
                i += len(t)
            row["context_tokens"] = float(pd.Series(per).mean())
        row["context_items"] = float(pd.Series([len(t) for t in texts]).mean())
        if tokens:
            row["tokenizer"] = TOKENIZER
        out.append(row)
    cols = [*by, "questions", "context_chars", *(["context_tokens"] if tokens else []), "context_items",
            *(["tokenizer"] if tokens else [])]
    return pd.DataFrame(out, columns=cols)


def matched_budget(rows: pd.DataFrame, method: str = "amadeus") -> int:
    """The mean context characters per question of ``method``'s rows without error, rounded: the
    ``budget_chars`` that gives Naive RAG as much context as that method showed. When none was answered:
    :class:`~rpa_lib.methods.FailedItems` naming its failed rows and their cause, else ValueError (no rows)."""
    mine = rows[rows.method == method]
    answered = mine[mine.error.isna()] if "error" in mine else mine
    if answered.empty and len(mine):  # every row failed: say why, not that there is nothing to measure
        check_failures(mine, f"matching a budget to {method!r}")
    sizes = context_sizes(answered, tokens=False)
    if sizes.empty:
        raise ValueError(f"no answered rows of {method!r} to match a budget to; run it first")
    return max(1, round(sizes.context_chars.iloc[0]))


def with_context(table: pd.DataFrame, sizes: pd.DataFrame, on: str | list[str] = "method") -> pd.DataFrame:
    """``table`` with the context columns of ``sizes`` joined on ``on`` (rounded: characters and tokens to whole
    numbers, items to one decimal), placed after the table's own columns."""
    keep = [c for c in ("context_chars", "context_tokens", "context_items") if c in sizes]
    on = [on] if isinstance(on, str) else list(on)
    right = sizes[[*on, *keep]].copy()
    for c in keep:
        right[c] = right[c].round(1 if c == "context_items" else 0)
    return table.merge(right, on=on, how="left")
