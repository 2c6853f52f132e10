"""One runner for every evaluation: :func:`run_jobs` maps a method over (character, question) jobs and
:func:`run_verdicts` a judge over what to judge, one row per job, a failed job a row with its ``error`` (never
dropped, never a default value); :func:`check_failures` raises on failures and pending batch items. It builds no
method or judge and writes no file.

Example::

    rows = run_jobs(method, qa_jobs(dataset, ["frieren"]))  # or questionnaire_jobs(questionnaire, characters)
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import pandas as pd

from rpa_lib.data import QA, Dataset, Questionnaire
from rpa_lib.llm.plan import acting
from rpa_lib.llm.reply import Pending
from rpa_lib.llm.usage import item_calls
from rpa_lib.methods.base import ContextItem, Response

OK, UNPARSED, FAILED, PENDING = "ok", "unparsed", "failed", "pending"  # the status of a verdict row
VERDICT_FIELDS = ["answer", "value", "status", "problem", "error", "coerced"]
TRACE_COLUMNS = ["llm_calls", "cached_calls"]  # a verdict row's trace: the calls its verdict made
JOB_COLUMNS = ["method", "character", "question_id", "question"]  # then the jobs' meta, then the results
RESULT_COLUMNS = ["reply", "context", "chunk_ids", "details", "llm_calls", "cached_calls", "seconds", "coerced_calls",
                  "prompt_tokens", "completion_tokens", "error"]
COLUMNS = [*JOB_COLUMNS, *RESULT_COLUMNS]


@dataclass(frozen=True)
class Job:
    character: str
    id: str  # the question's id: a QA id or a questionnaire item id
    question: str
    meta: dict[str, Any] = field(default_factory=dict, hash=False)  # columns carried into the row (attribute, ...)


def spread(items: list, key, n: int | None) -> list:
    """``n`` items taken in turn from each ``key`` group, so a subset covers every group (None: all).
    ``spread([1, 2, 3, 4], lambda i: i % 2, 2) == [1, 2]``"""
    if n is not None and n < 0:
        raise ValueError(f"n must be None (all) or 0 or more, not {n!r}")  # items[:-1] would drop the last
    if n is None or n >= len(items):
        return list(items)
    groups: dict = {}
    for item in items:
        groups.setdefault(key(item), []).append(item)
    order = [g[i] for i in range(max(map(len, groups.values()))) for g in groups.values() if i < len(g)]
    chosen = set(map(id, order[:n]))
    return [item for item in items if id(item) in chosen]


def qa_items(dataset: Dataset, characters: list[str], per_character: int | None = None,
             set: str = "paper") -> list[tuple[str, QA]]:
    """``(character, QA)`` of each character's pairs in one question set (:meth:`~rpa_lib.data.Dataset.qa`), all or
    ``per_character`` of them spread over the six attributes; each QA file is read once."""
    _check_characters(characters)
    if per_character is not None and (isinstance(per_character, bool) or not isinstance(per_character, int)
                                      or per_character < 0):
        raise ValueError(f"per_character must be None (all) or an int of 0 or more, not {per_character!r}")
    return [(c, q) for c in characters for q in spread(dataset.qa(c, set), lambda q: q.attribute, per_character)]


def qa_jobs(dataset: Dataset, characters: list[str], per_character: int | None = None,
            set: str = "paper") -> list[Job]:
    """The questions of :func:`qa_items` as jobs."""
    return [Job(c, q.id, q.question, {"attribute": q.attribute, "set": q.set})
            for c, q in qa_items(dataset, characters, per_character, set)]


QUESTIONNAIRE_TASKS = {"mbti": "MBTI", "bigfive": "BFI"}  # questionnaire -> its task name in Tables 2 and 6


def questionnaire_jobs(questionnaire: Questionnaire, characters: list[str]) -> list[Job]:
    """Every item's interview question for every character."""
    _check_characters(characters)
    return [Job(c, i.id, i.question, {"questionnaire": questionnaire.name, "dimension": i.dimension, "keyed": i.keyed})
            for c in characters for i in questionnaire.items]


def _check_characters(characters) -> None:
    if isinstance(characters, str):
        raise TypeError(f"characters must be a list of slugs, e.g. [{characters!r}], not str {characters!r}")


def _check_jobs(jobs: list) -> None:
    """TypeError or ValueError naming the first job that is not a :class:`Job` of text, or whose ``meta`` would
    replace a column of its row."""
    for n, job in enumerate(jobs):
        if not isinstance(job, Job):
            raise TypeError(f"jobs[{n}]: expected a Job(character, id, question), not {type(job).__name__} {job!r}")
        if not isinstance(job.character, str) or not isinstance(job.question, str):
            raise TypeError(f"jobs[{n}]: character and question must be str, got {job.character!r}, {job.question!r}")
        if not isinstance(job.meta, dict):
            raise TypeError(f"jobs[{n}]: meta must be a dict, not {type(job.meta).__name__} {job.meta!r}")
        taken = [k for k in job.meta if k in COLUMNS or k == "pending"]
        if taken:
            raise ValueError(f"jobs[{n}]: meta key(s) {', '.join(map(repr, taken))} would replace the row's own "
                             f"column(s); rename them")


def run_jobs(method, jobs: Iterable[Job], *, step: str = "respond", llm=None, desc: str | None = None,
             workers: int | None = None, progress: bool = True) -> pd.DataFrame:
    """One row per job (:data:`COLUMNS`, the jobs' ``meta``); ``step="context"`` stops before the reply."""
    if step not in ("respond", "context"):
        raise ValueError(f"step must be 'respond' or 'context', not {step!r}")
    if not hasattr(method, step) or not hasattr(method, "name"):
        raise TypeError(f"method must be a method object (build_method(name)), not {type(method).__name__} "
                        f"{method!r}")
    if isinstance(jobs, Job):
        raise TypeError("jobs must be a list of Job, not one Job: pass [job]")
    jobs = list(jobs)
    _check_jobs(jobs)
    fn = method.respond if step == "respond" else method.context
    rows = [{"method": method.name, "character": job.character, "question_id": job.id, "question": job.question,
             **job.meta, **dict.fromkeys(RESULT_COLUMNS)} for job in jobs]

    def answer(numbered: tuple[int, Job]):
        index, job = numbered
        try:
            with acting(job.character):  # whom each call is for: a dry run records it, replicas route by it
                return fn(job.character, job.question)
        except Exception as e:  # LLM.map keeps only the message: count the calls its error carries now, else None
            if getattr(e, "calls", None) is not None:  # (rpa_lib.methods.base.charged)
                rows[index].update(_call_counts(e.calls))
            raise

    outcomes = (llm or method.llm).map(answer, list(enumerate(jobs)),
                                       desc=desc or f"{method.name} · {step}", workers=workers, progress=progress)
    for job, row, out in zip(jobs, rows, outcomes, strict=True):
        row.update(pending=out.pending, error=out.error)
        if out.ok:
            r = out.value
            if step == "context":  # the context step as a Response without a reply, so chunk ids come from one place
                r = Response(job.character, job.question, method.name, None, r.items, r.calls, r.details)
            row.update(reply=r.reply, context=[asdict(i) for i in r.context], chunk_ids=r.chunk_ids(),
                       details=r.details, **_call_counts(r.calls))
    meta = list(dict.fromkeys(k for j in jobs for k in j.meta))
    waiting = ["pending"] if any(o.pending for o in outcomes) else []  # a column only in batch rounds
    return pd.DataFrame(rows, columns=[*JOB_COLUMNS, *meta, *RESULT_COLUMNS, *waiting])


def _call_counts(calls: list) -> dict:
    """A row's account of its calls: how many, cached, coerced, and what they took in this run (seconds, tokens; a
    call answered from the cache took none), so a method's cost is read from its own rows."""
    return {"llm_calls": len(calls), "cached_calls": sum(c.cached for c in calls),
            "seconds": round(sum(c.seconds for c in calls), 3), "coerced_calls": sum(c.coerced for c in calls),
            "prompt_tokens": sum(c.prompt_tokens for c in calls),
            "completion_tokens": sum(c.completion_tokens for c in calls)}


def chunk_ids(context: list[dict] | None, *roles: str) -> list[str]:
    """The distinct persona chunk ids of these roles (all when none given) in a :func:`run_jobs` row's ``context``."""
    return Response("", "", "", "", [ContextItem(**c) for c in context or []]).chunk_ids(*roles)


def answer_tasks(methods: Sequence, tasks: dict[str, list[Job]], *, llm=None, skip: Callable | None = None,
                 on_block: Callable[[pd.DataFrame], None] | None = None, workers: int | None = None,
                 progress: bool = True) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One :func:`run_jobs` block per (task, method), rows marked with their ``task``; ``skip(task, method)`` says
    why a method is not asked, ``on_block(rows so far)`` runs after each block. Returns rows and timing rows."""
    blocks, timing = [], []
    for task, jobs in tasks.items():
        for method in methods:
            reason = skip(task, method) if skip else None
            if reason:
                print(f"{method.name:>10} · {task:<12} {reason}")
                continue
            start = time.perf_counter()
            rows = run_jobs(method, jobs, llm=llm, desc=f"{method.name} · {task}", workers=workers, progress=progress)
            rows.insert(0, "task", task)
            seconds = time.perf_counter() - start
            blocks.append(rows)
            if on_block is not None:
                on_block(pd.concat(blocks, ignore_index=True))
            failed = int(rows.error.notna().sum())
            timing.append({"step": "answer", "task": task, "method": method.name, "items": len(rows), "failed": failed,
                           "seconds": round(seconds, 1)})
            print(f"{method.name:>10} · {task:<12} {len(rows)} answers, {failed} failed, {seconds:.0f} s")
    answers = pd.concat(blocks, ignore_index=True) if blocks else pd.DataFrame(columns=["task", "method", "error"])
    return answers, pd.DataFrame(timing)


def run_verdicts(judge, jobs: Iterable, verdict: Callable[[Any], Any], describe: Callable[[Any], dict], *,
                 columns: Sequence[str] | None = None, desc: str = "judge", workers: int | None = None,
                 progress: bool = True) -> pd.DataFrame:
    """``verdict(job)`` for every job through ``judge.map``: per job ``describe(job)``, :data:`VERDICT_FIELDS`, from
    a :class:`~rpa_lib.evaluation.judges.Verdict`, a plain value (:data:`OK`) or an error (:data:`FAILED`), and the
    calls it made (``llm_calls``, ``cached_calls``: the verdict's trace, failed calls included). A job whose
    ``describe`` names a ``character`` makes its calls for that character (:func:`rpa_lib.llm.plan.acting`)."""
    jobs = list(jobs)
    described = [describe(job) for job in jobs]
    traces: list[list[bool]] = [[] for _ in jobs]

    def traced(numbered: tuple[int, Any]):
        index, job = numbered
        token = item_calls.set(traces[index])
        try:
            with acting(described[index].get("character")):
                return verdict(job)
        finally:
            item_calls.reset(token)

    outcomes = judge.map(traced, list(enumerate(jobs)), desc=desc, workers=workers, progress=progress) if jobs else []
    rows = []
    for o in outcomes:
        index = o.item[0]
        v = o.value
        if not o.ok:
            fields = (None, math.nan, PENDING if o.pending else FAILED, None, o.error, False)
        elif hasattr(v, "status"):
            fields = (v.answer, v.value, v.status, v.problem, None, bool(getattr(v, "coerced", False)))
        else:
            fields = (None, v, OK, None, None, False)
        rows.append({**described[index], **dict(zip(VERDICT_FIELDS, fields, strict=True)),
                     "llm_calls": len(traces[index]), "cached_calls": sum(traces[index])})
    return pd.DataFrame(rows, columns=[*columns, *TRACE_COLUMNS] if columns else None)


def pending_mask(rows: pd.DataFrame) -> pd.Series:
    """Which rows wait for a batch round: marked ``pending``, of status :data:`PENDING` or with a ``Pending`` error
    (an item's error that says its answer is not in yet, as LLM.map writes it)."""
    mask = pd.Series(False, index=rows.index)
    if "pending" in rows:
        mask |= rows.pending.eq(True)
    if "status" in rows:
        mask |= rows.status.eq(PENDING)
    if "error" in rows:
        mask |= rows.error.map(lambda e: isinstance(e, str) and e.startswith(f"{Pending.__name__}:")).astype(bool)
    return mask


def failures(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows whose job failed (pending rows are not failures)."""
    return rows[rows.error.notna() & ~pending_mask(rows)]


class FailedItems(RuntimeError):
    """Too many items of a run failed for its table to mean anything (raised after what completed was saved)."""


class PendingItems(RuntimeError):
    """Items of a run wait for a batch round's answers (not a failure: ``reproduce --batch`` runs the next round)."""


NAMED = 10  # failed items a FailedItems message names
_WHERE = ("part", "where", "task", "method", "character", "question_id", "qa_id", "item", "unit", "sample_id",
          "reply_id", "rater", "metric", "mode", "dimension", "case")


def _where(row: dict) -> str:
    return " ".join(str(row[k]) for k in _WHERE if k in row and row[k] is not None
                    and not (isinstance(row[k], float) and math.isnan(row[k])))


def failed_items(**parts: pd.DataFrame | None) -> pd.DataFrame:
    """Every failed item of a run, one row per failure (``part``, ``where``, ``error``; ``pending`` in batch
    rounds): ``failed_items(answers=..., verdicts=..., labels=...)``."""
    out = []
    for part, frame in parts.items():
        if frame is None or not len(frame) or "error" not in frame:
            continue
        failed = frame.error.notna()
        out += [{"part": part, "where": _where({k: v for k, v in r.items() if k not in ("part", "where")}),
                 "error": r["error"], "pending": pending}
                for r, pending in zip(frame[failed].to_dict("records"), pending_mask(frame)[failed], strict=True)]
    frame = pd.DataFrame(out, columns=["part", "where", "error", "pending"])
    return frame if frame.pending.any() else frame.drop(columns="pending")


def check_failures(rows: pd.DataFrame, what: str, max_share: float = 0.0) -> None:
    """Raise :class:`PendingItems` when rows are pending, else :class:`FailedItems` when the share of failed
    ``rows`` (a run's rows, or :func:`failed_items`' listing: any row) is above ``max_share``."""
    waiting = int(pending_mask(rows).sum())
    if waiting:
        raise PendingItems(f"{what}: {waiting} item(s) wait for a batch round (of {len(rows)}); no table is written "
                           "from them: reproduce --batch runs the next round")
    failed = failures(rows)
    listing = "part" in rows.columns and "where" in rows.columns  # failed_items' listing: any row fails the run
    named = [f"{r['part']} {r['where']}" if listing else _where(r) for r in failed.to_dict("records")]
    more = f" ({len(named) - NAMED} more)" if len(named) > NAMED else ""
    listed = f"; failed items: {', '.join(named[:NAMED])}{more}" if len(named) > 1 else ""
    first = f"first: {named[0]}: {failed.error.iloc[0]}{listed}" if named else ""
    if listing and named:
        counts = ", ".join(f"{n} {part}" for part, n in failed.part.value_counts(sort=False).items())
        raise FailedItems(f"{what}: {len(failed)} item(s) failed ({counts}); {first}")
    if not listing and len(rows) and len(failed) / len(rows) > max_share:
        raise FailedItems(f"{what}: {len(failed)} of {len(rows)} item(s) failed (allowed share {max_share:g}); {first}")


def index_costs(methods: Iterable, characters: list[str]) -> pd.DataFrame:
    """What building each character's index took, for the methods with ``index_cost`` (built now if need be);
    ``index``: ``built`` in this process, or loaded from ``disk``, whose build calls an earlier run paid."""
    return pd.DataFrame([{"method": m.name, "index": m.index(c).source, **m.index_cost(c).to_dict()}
                         for m in methods if hasattr(m, "index_cost") for c in characters])
