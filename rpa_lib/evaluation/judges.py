"""The LLM judges of the QA evaluation (AMADEUS Table 6, RAGEval key-point labels) and the check of their validity.

- :func:`judge_llm`: the judge, built in the LLM layer (:func:`rpa_lib.llm.judge_llm`, re-exported here): an LLM
  chosen apart from the role-play LLM (``RPA_JUDGE_MODEL`` and ``RPA_JUDGE_BASE_URL``, else the role-play LLM's
  settings), through the same cached LLM layer; every notebook and the price check build it alike.
- :func:`judge_acc`, :func:`judge_acc_l`, :func:`judge_hs`, :func:`label_keypoint`: one verdict each, by
  constrained choice (``llm.choose``), never by parsing free text. A judge that gives no allowed option after
  the LLM layer's re-asks has an *unparseable* verdict: a :class:`Verdict` with status ``"unparsed"`` and a NaN
  value, counted by the tables, never replaced by a default. A fault (network, server, bug) is not a verdict:
  it is raised, and the verdict runner (:func:`rpa_lib.methods.run_verdicts`) records it as a failed item.
- :func:`judge_check`: the judge on the known-quality cases of :func:`rpa_lib.evaluation.known_quality.
  judge_check_cases`, and its agreement with them (:func:`check_agreement`, :func:`check_summary`).

The prompts are :mod:`rpa_lib.evaluation.judge_prompts`'; key-point extraction is :mod:`rpa_lib.evaluation.
keypoints`. Running the judges over a run's answers and building the tables is :mod:`rpa_lib.evaluation.qa`'s
job; this module writes nothing and draws nothing.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
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

# ---- the judge LLM ---------------------------------------------------------------------------------------------


def judge_id(judge) -> str:
    """A file-name-safe id of a judge (its model id, which changes with the weights or the served model).
    ``judge_id(FakeLLM()) == "fake-fake"``"""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", str(getattr(judge, "model_id", None) or judge.label)).strip("-.")


# ---- one verdict ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """One judge verdict. ``answer``: the option's meaning (``"yes"``, ``"7"``, ``"covered"``), None when the
    judge's answer could not be parsed; ``value``: its number (1/0 for ACC, 1-10 for a scale; NaN when unparsed
    or, for key-point labels, always); ``problem``: why it is unparsed; ``coerced``: the judge's reply matched no
    option and the LLM layer took the option of the highest score (logprobs mode) in its place: a verdict, counted
    apart beside the unparsed ones."""

    metric: str
    answer: str | None
    value: float
    status: str  # "ok" | "unparsed"
    problem: str | None = None
    coerced: bool = False


def unparseable(error: BaseException) -> bool:
    """Is this LLM error the judge's answer being unparseable (no allowed option or valid JSON after the
    re-asks: :class:`~rpa_lib.llm.LLMNoValidAnswer`), as opposed to a fault that no answer came back from?"""
    return isinstance(error, LLMNoValidAnswer)


def choose_or_unparsed(judge, metric: str, messages: list[dict], options: dict[str, object]):
    """The judge's reply to a constrained choice among ``options``, or an ``"unparsed"`` :class:`Verdict` when
    no allowed option came back after the re-asks; a fault is raised."""
    try:
        return judge.choose(messages, list(options), name=metric)
    except LLMNoValidAnswer as exc:
        return Verdict(metric, None, math.nan, UNPARSED, str(exc))


def choose_verdict(judge, metric: str, messages: list[dict], options: dict[str, object]) -> Verdict:
    """The judge's constrained choice among ``options`` (option -> its meaning: a float value or a label), as a
    :class:`Verdict`; unparseable: status ``"unparsed"``; a fault is raised."""
    reply = choose_or_unparsed(judge, metric, messages, options)
    if isinstance(reply, Verdict):
        return reply
    meaning = options[reply.text]
    if isinstance(meaning, str):
        return Verdict(metric, meaning, math.nan, OK, coerced=reply.coerced)
    return Verdict(metric, reply.text, float(meaning), OK, coerced=reply.coerced)


def judge_acc(judge, name: str, question: str, gold: str, reply: str) -> Verdict:
    """ACC: 1.0 when the judge says the response contains the correct answer, 0.0 when not."""
    return choose_verdict(judge, "acc", acc_messages(name, question, gold, reply), ACC_OPTIONS)


def judge_acc_l(judge, name: str, question: str, gold: str, reply: str) -> Verdict:
    """ACC_L: 1-10, how well the response reflects the correct answer."""
    return choose_verdict(judge, "acc_l", acc_l_messages(name, question, gold, reply), SCALE_OPTIONS)


def judge_hs(judge, name: str, question: str, context: Sequence[dict], reply: str, gold: str | None = None, *,
             reference: bool = False) -> Verdict:
    """HS: 1-10, 1 when the response states only facts of the passages (and of ``gold``, for a QA question;
    None for an interview question). The passages are ``context``: the method's own (``reference=False``) or one
    reference shared by every method (``reference=True``, :func:`rpa_lib.evaluation.qa.hs_references`). No
    passages: ValueError."""
    if not context:
        raise ValueError("HS needs passages to judge against; a method without retrieved context gets no HS")
    return choose_verdict(judge, "hs", hs_messages(name, question, context, reply, gold, reference=reference),
                          SCALE_OPTIONS)


def label_keypoint(judge, name: str, question: str, key_point: str, reply: str) -> Verdict:
    """One key point against one response: ``answer`` is ``"covered"``, ``"not_covered"`` or
    ``"contradicted"`` (RAGEval's labels, :data:`rpa_lib.evaluation.metrics.keypoints.LABELS`), None unparsed."""
    return choose_verdict(judge, "keypoint", keypoint_label_messages(name, question, key_point, reply),
                          KEYPOINT_OPTIONS)


# ---- the judge check ------------------------------------------------------------------------------------------


def _judge_case(judge, case: dict) -> Verdict:
    if case["metric"] == "acc":
        return judge_acc(judge, case["name"], case["question"], case["gold"], case["reply"])
    if case["metric"] == "acc_l":
        return judge_acc_l(judge, case["name"], case["question"], case["gold"], case["reply"])
    return judge_hs(judge, case["name"], case["question"], case["context"], case["reply"], case["gold"])


CHECK_COLUMNS = ["item", "character", "qa_id", "attribute", "case", "metric", "reply", "answer", "value", "status",
                 "problem", "error", "judge", "coerced"]


def judge_check(cases: list[dict], judge, *, workers: int | None = None,
                progress: bool = True) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Run the judge on the check cases (:func:`rpa_lib.evaluation.known_quality.judge_check_cases`). Returns
    ``(verdicts, agreement)``: one row per case with the judge's answer, value, status and error; and one row per
    check of :data:`~rpa_lib.evaluation.known_quality.CHECKS` with the cases it has, how many the judge got right
    (``agree``), how many it could not decide (a verdict unparseable or failed, never counted as agreement or
    disagreement) and ``agreement`` = agree / decided; ``coerced``: of the decided cases, those with a verdict the
    LLM layer coerced from logprobs (the judge's reply matched no option). A pair check (ACC_L, HS) agrees when the
    first value is strictly above the second."""
    verdicts = run_verdicts(
        judge, cases, lambda case: _judge_case(judge, case),
        lambda case: {**{k: case[k] for k in CHECK_COLUMNS[:7]}, "judge": judge.label},
        columns=CHECK_COLUMNS, desc="judge check", workers=workers, progress=progress)
    return verdicts, check_agreement(verdicts)


def check_agreement(verdicts: pd.DataFrame) -> pd.DataFrame:
    """The agreement table of :func:`judge_check` from its verdict rows (see there; rows saved before the
    ``coerced`` column count none coerced)."""
    def rows(item, metric, case):
        return verdicts[(verdicts.item == item) & (verdicts.metric == metric) & (verdicts.case == case)]

    def value(item, metric, case):
        hit = rows(item, metric, case)
        return (float(hit.value.iloc[0]) if hit.status.iloc[0] == OK else None) if len(hit) else "absent"

    def coerced(item, metric, case) -> bool:
        hit = rows(item, metric, case) if case is not None and "coerced" in verdicts else []
        return bool(len(hit)) and bool(hit.coerced.iloc[0])

    pairs = {"acc: gold answer": ("acc", "gold", None), "acc: another character's answer": ("acc", "other", None),
             "acc: denial of the gold answer": ("acc", "denial", None),
             "acc_l: gold above another character's": ("acc_l", "gold", "other"),
             "hs: invented addition above plain": ("hs", "invented", "gold")}
    out = []
    items = list(dict.fromkeys(verdicts.item)) if len(verdicts) else []
    for check, (metric, first, second) in pairs.items():
        expected = CHECKS[check][1]
        cases = agree = undecided = forced = 0
        for item in items:
            a = value(item, metric, first)
            b = value(item, metric, second) if second else None
            if a == "absent" or b == "absent":
                continue
            cases += 1
            if a is None or (second and b is None):
                undecided += 1
            else:
                agree += a > b if second else a == (1.0 if expected == "yes" else 0.0)
                forced += coerced(item, metric, first) or coerced(item, metric, second)
        decided = cases - undecided
        out.append({"check": check, "metric": metric, "expected": expected, "cases": cases, "agree": agree,
                    "undecided": undecided, "agreement": agree / decided if decided else np.nan,
                    "what": CHECKS[check][2], "coerced": forced})
    return pd.DataFrame(out)


def check_summary(agreement: pd.DataFrame) -> str:
    """One line for captions: ``"judge check: acc: gold answer 5/6, ..."`` (agree / decided; undecided and
    coerced noted)."""
    parts = []
    for r in agreement.itertuples():
        decided = r.cases - r.undecided
        notes = [f"{r.undecided} undecided"] if r.undecided else []
        notes += [f"{r.coerced} coerced"] if getattr(r, "coerced", 0) else []
        parts.append(f"{r.check} {r.agree}/{decided}" + (f" ({', '.join(notes)})" if notes else ""))
    return "judge check: " + "; ".join(parts)
