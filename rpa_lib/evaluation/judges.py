"""The LLM judges of the QA evaluation (AMADEUS Table 6, RAGEval key-point labels) and the check of their validity.

One verdict per call, by constrained choice, never by parsing free text: no allowed option after the LLM layer's
re-asks is an ``"unparsed"`` :class:`Verdict` (NaN, never a default), while a fault is raised for the verdict runner
to record. :func:`judge_check` runs a judge on the known-quality cases. :func:`judge_llm` is re-exported from the
LLM layer. Writes nothing and draws nothing; running the judges over a run is :mod:`rpa_lib.evaluation.qa`'s job.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from rpa_lib.evaluation.judge_prompts import (
    ACC_OPTIONS,
    KEYPOINT_OPTIONS,
    SCALE_OPTIONS,
    acc_l_messages,
    acc_messages,
    hs_messages,
    keypoint_label_messages,
)
from rpa_lib.evaluation.known_quality import CHECKS
from rpa_lib.evaluation.runner import FAILED, OK, UNPARSED, run_verdicts  # noqa: F401  (the statuses, re-exported)
from rpa_lib.llm import LLMNoValidAnswer, judge_llm  # noqa: F401  (judge_llm: re-exported)


def judge_id(judge) -> str:
    """A file-name-safe id of a judge's model. ``judge_id(FakeLLM()) == "fake-fake"``"""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", str(getattr(judge, "model_id", None) or judge.label)).strip("-.")


@dataclass(frozen=True)
class Verdict:
    """One judge verdict. ``answer``: the option's meaning (None unparsed); ``value``: its number (NaN unparsed or
    a label); ``coerced``: the reply matched no option and the LLM layer took the best-scored one instead."""

    metric: str
    answer: str | None
    value: float
    status: str  # "ok" | "unparsed"
    problem: str | None = None
    coerced: bool = False


def choose_verdict(judge, metric: str, messages: list[dict], options: dict[str, object],
                   pick: Callable[[object], str] = lambda reply: reply.text) -> Verdict:
    """The judge's constrained choice among ``options`` (option -> a float value or a label) as a :class:`Verdict`;
    ``pick(reply)`` names the option taken (the reply's text, or a calibrated one)."""
    try:
        reply = judge.choose(messages, list(options), name=metric)
    except LLMNoValidAnswer as exc:
        return Verdict(metric, None, math.nan, UNPARSED, str(exc))
    choice = pick(reply)
    meaning = options[choice]
    if isinstance(meaning, str):
        return Verdict(metric, meaning, math.nan, OK, coerced=reply.coerced)
    return Verdict(metric, choice, float(meaning), OK, coerced=reply.coerced)


def judge_acc(judge, name: str, question: str, gold: str, reply: str) -> Verdict:
    """ACC: 1.0 when the judge says the response contains the correct answer, 0.0 when not."""
    return choose_verdict(judge, "acc", acc_messages(name, question, gold, reply), ACC_OPTIONS)


def judge_acc_l(judge, name: str, question: str, gold: str, reply: str) -> Verdict:
    """ACC_L: 1-10, how well the response reflects the correct answer."""
    return choose_verdict(judge, "acc_l", acc_l_messages(name, question, gold, reply), SCALE_OPTIONS)


def judge_hs(judge, name: str, question: str, context: Sequence[dict], reply: str, gold: str | None = None, *,
             reference: bool = False) -> Verdict:
    """HS: 1-10, 1 when the response states only facts of ``context`` (and of ``gold``, None for an interview
    question); ``reference``: ``context`` is shared by every method. No passages: ValueError."""
    if not context:
        raise ValueError("HS needs passages to judge against; a method without retrieved context gets no HS")
    return choose_verdict(judge, "hs", hs_messages(name, question, context, reply, gold, reference=reference),
                          SCALE_OPTIONS)


def label_keypoint(judge, name: str, question: str, key_point: str, reply: str) -> Verdict:
    """One key point against one response: ``answer`` is one of RAGEval's labels (None unparsed)."""
    return choose_verdict(judge, "keypoint", keypoint_label_messages(name, question, key_point, reply),
                          KEYPOINT_OPTIONS)


def judge_metric(judge, metric: str, name: str, question: str, gold: str | None, reply: str,
                 context: Sequence[dict] = (), *, reference: bool = False) -> Verdict:
    """``metric`` (``"acc"``, ``"acc_l"`` or ``"hs"``) of one reply; HS against ``context`` (:func:`judge_hs`)."""
    if metric == "acc":
        return judge_acc(judge, name, question, gold, reply)
    if metric == "acc_l":
        return judge_acc_l(judge, name, question, gold, reply)
    return judge_hs(judge, name, question, context, reply, gold, reference=reference)


CHECK_COLUMNS = ["item", "character", "qa_id", "attribute", "case", "metric", "reply", "answer", "value", "status",
                 "problem", "error", "judge", "coerced"]


def judge_check(cases: list[dict], judge, *, workers: int | None = None,
                progress: bool = True) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(verdicts, agreement)`` of the judge on the cases of
    :func:`rpa_lib.evaluation.known_quality.judge_check_cases`: a row per case, and :func:`check_agreement`."""
    verdicts = run_verdicts(
        judge, cases, lambda case: judge_metric(judge, case["metric"], case["name"], case["question"], case["gold"],
                                                case["reply"], case["context"]),
        lambda case: {**{k: case[k] for k in CHECK_COLUMNS[:7]}, "judge": judge.label},
        columns=CHECK_COLUMNS, desc="judge check", workers=workers, progress=progress)
    return verdicts, check_agreement(verdicts)


def check_agreement(verdicts: pd.DataFrame) -> pd.DataFrame:
    """Per check of :data:`~rpa_lib.evaluation.known_quality.CHECKS`: its cases, ``agree``, ``undecided`` (an
    unparsed or failed verdict), ``agreement`` = agree / decided and ``coerced`` (of the decided). A pair check
    (ACC_L, HS) agrees when the first value is strictly above the second."""
    found = {}  # (item, metric, case) -> its first verdict row
    for r in verdicts.to_dict("records"):
        found.setdefault((r["item"], r["metric"], r["case"]), r)
    out = []
    items = list(dict.fromkeys(verdicts.item)) if len(verdicts) else []
    for check, (metric, expected, what, first, second) in CHECKS.items():
        cases = agree = undecided = forced = 0
        for item in items:
            rows = [found.get((item, metric, case)) for case in (first, second) if case]
            if None in rows:  # a case absent (another character's answer with a single character)
                continue
            cases += 1
            if any(r["status"] != OK for r in rows):
                undecided += 1
                continue
            values = [float(r["value"]) for r in rows]
            agree += values[0] > values[1] if second else values[0] == (1.0 if expected == "yes" else 0.0)
            forced += any(bool(r.get("coerced", False)) for r in rows)
        decided = cases - undecided
        out.append({"check": check, "metric": metric, "expected": expected, "cases": cases, "agree": agree,
                    "undecided": undecided, "agreement": agree / decided if decided else np.nan,
                    "what": what, "coerced": forced})
    return pd.DataFrame(out)


def check_summary(agreement: pd.DataFrame) -> str:
    """One line for captions: ``"judge check: acc: gold answer 5/6, ..."`` (agree / decided)."""
    parts = []
    for r in agreement.itertuples():
        decided = r.cases - r.undecided
        notes = [f"{n} {what}" for n, what in ((r.undecided, "undecided"), (r.coerced, "coerced")) if n]
        parts.append(f"{r.check} {r.agree}/{decided}" + (f" ({', '.join(notes)})" if notes else ""))
    return "judge check: " + "; ".join(parts)
