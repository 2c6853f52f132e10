"""One runner for every evaluation: map a method over (character, question) jobs and keep one row per job.

Example::

    jobs = qa_jobs(dataset, ["frieren"])         # or questionnaire_jobs(questionnaire, characters)
    rows = run_jobs(method, jobs)                # a DataFrame, one row per job

Jobs run through the LLM layer's ``map`` (its concurrency and progress bar); every completed LLM call is in
the LLM cache, so a re-run costs only what had not completed. A failed job is a row with its ``error`` (and no
reply), never dropped and never a default value. ``step="context"`` stops before the reply (what chunk
statistics need). Scoring the rows is each evaluation's job.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

import pandas as pd

from rpa_lib.data import Dataset, Questionnaire

COLUMNS = ["method", "character", "question_id", "question", "reply", "context", "chunk_ids", "details", "llm_calls",
           "cached_calls", "seconds", "error"]


@dataclass(frozen=True)
class Job:
    character: str
    id: str  # the question's id: a QA id or a questionnaire item id
    question: str
    meta: dict[str, Any] = field(default_factory=dict, hash=False)  # columns carried into the row (attribute, item, ...)


def spread(items: list, key, n: int | None) -> list:
    """``n`` items taken in turn from each ``key`` group (in order of first appearance, then file order), so a
    subset covers every group; all items when ``n`` is None. ``spread([1, 2, 3, 4], lambda i: i % 2, 2) == [1, 2]``"""
    if n is None or n >= len(items):
        return list(items)
    groups: dict = {}
    for item in items:
        groups.setdefault(key(item), []).append(item)
    order = [g[i] for i in range(max(map(len, groups.values()))) for g in groups.values() if i < len(g)]
    chosen = set(map(id, order[:n]))
    return [item for item in items if id(item) in chosen]


def qa_jobs(dataset: Dataset, characters: list[str], per_character: int | None = None) -> list[Job]:
    """The QA questions of each character: all, or ``per_character`` of them spread over the six attributes
    (taken in turn from each attribute, in file order)."""
    return [Job(c, q.id, q.question, {"attribute": q.attribute}) for c in characters
            for q in spread(dataset.qa(c), lambda q: q.attribute, per_character)]


def questionnaire_jobs(questionnaire: Questionnaire, characters: list[str]) -> list[Job]:
    """Every item's interview question for every character."""
    return [Job(c, i.id, i.question, {"questionnaire": questionnaire.name, "dimension": i.dimension, "keyed": i.keyed})
            for c in characters for i in questionnaire.items]


def run_jobs(method, jobs: Iterable[Job], *, step: str = "respond", llm=None, desc: str | None = None,
             workers: int | None = None, progress: bool = True) -> pd.DataFrame:
    """One row per job (columns :data:`COLUMNS` plus the jobs' ``meta`` keys): the reply (``step="respond"``;
    None for ``"context"``), the context items as dicts, the distinct persona chunk ids in front of the LLM,
    the method's details, the LLM calls made and served from the cache, their seconds, and the error."""
    if step not in ("respond", "context"):
        raise ValueError(f"step must be 'respond' or 'context', not {step!r}")
    jobs = list(jobs)
    fn = method.respond if step == "respond" else method.context
    outcomes = (llm or method.llm).map(lambda job: fn(job.character, job.question), jobs,
                                       desc=desc or f"{method.name} · {step}", workers=workers, progress=progress)
    rows = []
    for job, out in zip(jobs, outcomes, strict=True):
        row = {"method": method.name, "character": job.character, "question_id": job.id, "question": job.question,
               **job.meta}
        r = out.value
        if out.ok:
            items = r.context if step == "respond" else r.items
            row.update(reply=r.reply if step == "respond" else None, context=[asdict(i) for i in items],
                       chunk_ids=list(dict.fromkeys(i for it in items for i in it.chunk_ids)), details=r.details,
                       llm_calls=len(r.calls), cached_calls=sum(c.cached for c in r.calls),
                       seconds=round(sum(c.seconds for c in r.calls), 3), error=None)
        else:
            row.update(reply=None, context=None, chunk_ids=None, details=None, llm_calls=None, cached_calls=None,
                       seconds=None, error=out.error)
        rows.append(row)
    meta = list(dict.fromkeys(k for j in jobs for k in j.meta))
    return pd.DataFrame(rows, columns=[*COLUMNS[:4], *meta, *COLUMNS[4:]])


def failures(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows whose job failed."""
    return rows[rows.error.notna()]


class FailedItems(RuntimeError):
    """Too many items of a run failed for its table to mean anything; the message gives the count and the
    first error. Raised after the completed items were saved (and their LLM calls cached)."""


def check_failures(rows: pd.DataFrame, what: str, max_share: float = 0.0) -> None:
    """Raise :class:`FailedItems` when the share of ``rows`` with an ``error`` is above ``max_share`` (default 0:
    any failure fails the run), naming ``what``, the count and the first error. A table is never computed from
    failed items as if they were answers."""
    failed = failures(rows)
    if len(rows) and len(failed) / len(rows) > max_share:
        first = failed.iloc[0]
        where = " ".join(str(first[k]) for k in ("method", "character", "question_id", "item", "unit") if k in first)
        raise FailedItems(f"{what}: {len(failed)} of {len(rows)} item(s) failed (allowed share {max_share:g}); "
                          f"first: {where}: {first['error']}")


def index_costs(methods: Iterable, characters: list[str]) -> pd.DataFrame:
    """What building each character's index took, one row per (method, character), for the methods that build
    one (those with ``index_cost``: LightRAG, RoleRAG); an index not yet built or cached is built now. No rows
    when no method builds an index."""
    return pd.DataFrame([{"method": m.name, **m.index_cost(c).to_dict()}
                         for m in methods if hasattr(m, "index_cost") for c in characters])
