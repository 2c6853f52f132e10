"""The LLM judges of the QA evaluation (AMADEUS Table 6, RAGEval key points) and a check of their validity.

- :func:`judge_llm`: the judge, an LLM chosen apart from the role-play LLM (``RPA_JUDGE_MODEL`` and
  ``RPA_JUDGE_BASE_URL``, else the role-play LLM's settings), through the same cached LLM layer.
- :func:`judge_acc`, :func:`judge_acc_l`, :func:`judge_hs`, :func:`label_keypoint`: one verdict each, by
  constrained choice (``llm.choose``), never by parsing free text. A judge that gives no allowed option after
  the LLM layer's re-asks has an *unparseable* verdict: a :class:`Verdict` with status ``"unparsed"`` and a NaN
  value, counted by the tables, never replaced by a default. A fault (network, server, bug) is not a verdict:
  it is raised, and the caller's ``llm.map`` records it as a failed item.
- :func:`extract_keypoints` and :func:`keypoints_for`: RAGEval's key points of each gold answer, extracted once
  per answer and kept as data with their provenance (judge, model, prompt, date) in a JSONL file that later
  runs reuse (:func:`keypoints_path`: ``keypoints_<judge id>.jsonl``).
- :func:`judge_check_cases` and :func:`judge_check`: cases built from our own QA whose verdict is known (the
  gold answer contains the answer, another character's answer or a denial does not, an invented addition
  raises HS) and the judge's agreement with them.

The prompts are :mod:`rpa_lib.evaluation.judge_prompts`'. Running the judges over a run's answers and building
the tables is :mod:`rpa_lib.evaluation.qa`'s job; this module writes only the key-point file and draws nothing.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from rpa_lib.data import QA, Dataset
from rpa_lib.evaluation.judge_prompts import (
    ACC_OPTIONS,
    KEYPOINT_OPTIONS,
    KEYPOINT_SCHEMA,
    SCALE_OPTIONS,
    acc_l_messages,
    acc_messages,
    hs_messages,
    keypoint_label_messages,
    keypoint_lines_messages,
    keypoint_messages,
)
from rpa_lib.llm import LLMError, LLMFatalError, get_llm

OK, UNPARSED, FAILED = "ok", "unparsed", "failed"
# What the LLM layer says when a model answered every attempt but never with an allowed option / valid JSON
# (rpa_lib.llm.base): the judge's verdict is unparseable, which is a counted missing value, not a fault.
_NO_VALID_ANSWER = ("no allowed answer", "no valid JSON object", "empty reply")
MAX_KEYPOINTS = 5


# ---- the judge LLM ---------------------------------------------------------------------------------------------


def judge_llm(spec: str | None = None, *, default: str | None = None, **options):
    """The judge LLM: ``spec`` when given (``"openai:gpt-4.1"``, ``"local"``, ``"fake"``); else
    ``$RPA_JUDGE_MODEL`` (served at ``$RPA_JUDGE_BASE_URL`` when that is set, as an OpenAI-compatible model);
    else the role-play LLM's settings: ``get_llm(default)`` (``default`` None: ``RPA_LLM_MODEL`` and the rest of
    the role-play environment). ``options`` go to :func:`rpa_lib.llm.get_llm`. Its ``label`` belongs in every
    result; :func:`judge_id` names its files."""
    if spec:
        return get_llm(spec, **options)
    model, base_url = os.environ.get("RPA_JUDGE_MODEL"), os.environ.get("RPA_JUDGE_BASE_URL")
    if base_url and not model:
        raise ValueError("RPA_JUDGE_BASE_URL is set but not RPA_JUDGE_MODEL: set it to the served model's name")
    if model and base_url:
        return get_llm(model if model.startswith("openai:") else f"openai:{model}", base_url=base_url, **options)
    if model:
        return get_llm(model, **options)
    return get_llm(default, **options)


def judge_id(judge) -> str:
    """A file-name-safe id of a judge (its model id, which changes with the weights or the served model).
    ``judge_id(FakeLLM()) == "fake-fake"``"""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", str(getattr(judge, "model_id", None) or judge.label)).strip("-.")


# ---- one verdict ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """One judge verdict. ``answer``: the option's meaning (``"yes"``, ``"7"``, ``"covered"``), None when the
    judge's answer could not be parsed; ``value``: its number (1/0 for ACC, 1-10 for a scale; NaN when unparsed
    or, for key-point labels, always); ``problem``: why it is unparsed."""

    metric: str
    answer: str | None
    value: float
    status: str  # "ok" | "unparsed"
    problem: str | None = None


def unparseable(error: BaseException) -> bool:
    """Is this LLM error the judge's answer being unparseable (no allowed option or valid JSON after the
    re-asks), as opposed to a fault that no answer came back from?"""
    return (isinstance(error, LLMError) and not isinstance(error, LLMFatalError)
            and any(s in str(error) for s in _NO_VALID_ANSWER))


def choose_or_unparsed(judge, metric: str, messages: list[dict], options: dict[str, object]):
    """The judge's reply to a constrained choice among ``options``, or an ``"unparsed"`` :class:`Verdict` when
    no allowed option came back after the re-asks; a fault is raised."""
    try:
        return judge.choose(messages, list(options), name=metric)
    except LLMError as exc:
        if unparseable(exc):
            return Verdict(metric, None, math.nan, UNPARSED, str(exc))
        raise


def choose_verdict(judge, metric: str, messages: list[dict], options: dict[str, object]) -> Verdict:
    """The judge's constrained choice among ``options`` (option -> its meaning: a float value or a label), as a
    :class:`Verdict`; unparseable: status ``"unparsed"``; a fault is raised."""
    reply = choose_or_unparsed(judge, metric, messages, options)
    if isinstance(reply, Verdict):
        return reply
    meaning = options[reply.text]
    if isinstance(meaning, str):
        return Verdict(metric, meaning, math.nan, OK)
    return Verdict(metric, reply.text, float(meaning), OK)


def judge_acc(judge, name: str, question: str, gold: str, reply: str) -> Verdict:
    """ACC: 1.0 when the judge says the response contains the correct answer, 0.0 when not."""
    return choose_verdict(judge, "acc", acc_messages(name, question, gold, reply), ACC_OPTIONS)


def judge_acc_l(judge, name: str, question: str, gold: str, reply: str) -> Verdict:
    """ACC_L: 1-10, how well the response reflects the correct answer."""
    return choose_verdict(judge, "acc_l", acc_l_messages(name, question, gold, reply), SCALE_OPTIONS)


def judge_hs(judge, name: str, question: str, context: Sequence[dict], reply: str, gold: str | None = None) -> Verdict:
    """HS: 1-10, 1 when the response states only facts of the ``context`` it was given (and of ``gold``, for a
    QA question; None for an interview question). A response without context gets no HS: ValueError."""
    if not context:
        raise ValueError("HS needs the context the method used; a method without retrieved context gets no HS")
    return choose_verdict(judge, "hs", hs_messages(name, question, context, reply, gold), SCALE_OPTIONS)


def label_keypoint(judge, name: str, question: str, key_point: str, reply: str) -> Verdict:
    """One key point against one response: ``answer`` is ``"covered"``, ``"not_covered"`` or
    ``"contradicted"`` (RAGEval's labels, :data:`rpa_lib.evaluation.metrics.keypoints.LABELS`), None unparsed."""
    return choose_verdict(judge, "keypoint", keypoint_label_messages(name, question, key_point, reply),
                          KEYPOINT_OPTIONS)


# ---- key points ------------------------------------------------------------------------------------------------

KEYPOINT_FORMATS = ("json", "lines")
_BULLET = re.compile(r"^\s*(?:[-*•]+|\(?\d{1,2}[.):]|key points?:?)\s*", re.IGNORECASE)


def parse_keypoint_lines(text: str, limit: int = MAX_KEYPOINTS) -> list[str]:
    """Key points written one a line: bullets and numbering removed, blank lines and a "Key points:" heading
    dropped, at most ``limit``. ``parse_keypoint_lines("1. A.\\n2) B.") == ["A.", "B."]``"""
    points = [_BULLET.sub("", line).strip() for line in text.splitlines()]
    return [p for p in points if p][:limit]


@dataclass(frozen=True)
class KeyPoints:
    """The key points of one gold answer (``points`` empty when the judge's answer could not be parsed)."""

    points: list[str]
    status: str  # "ok" | "unparsed"
    format: str | None  # "json" | "lines": how they were obtained
    problem: str | None = None


def extract_keypoints(judge, name: str, question: str, answer: str, *, format: str = "json", retries: int = 2,
                      max_tokens: int = 200) -> KeyPoints:
    """RAGEval's key points (1-5) of a gold ``answer``. ``format="json"``: structured output
    (``{"key_points": [...]}``, ``retries`` re-asks), then, if the judge never writes valid JSON, one key point a
    line; ``"lines"``: one a line at once (for a small local judge). Lines are the judge's list, cut to 5; no
    line at all is unparseable. A fault is raised."""
    if format not in KEYPOINT_FORMATS:
        raise ValueError(f"format must be one of {KEYPOINT_FORMATS}, not {format!r}")
    problem = None
    if format == "json":
        try:
            reply = judge.structured(keypoint_messages(name, question, answer), KEYPOINT_SCHEMA,
                                     max_tokens=max_tokens, max_retries=retries, name="keypoints")
            points = [" ".join(str(p).split()) for p in reply.data["key_points"]]
            points = [p for p in points if p][:MAX_KEYPOINTS]
            if points:
                return KeyPoints(points, OK, "json")
            problem = "the JSON held no key point"
        except LLMError as exc:
            if not unparseable(exc):
                raise
            problem = str(exc)
    try:
        text = judge.chat(keypoint_lines_messages(name, question, answer), max_tokens=max_tokens,
                          name="keypoints (lines)").text
    except LLMError as exc:
        if not unparseable(exc):
            raise
        return KeyPoints([], UNPARSED, "lines", str(exc))
    points = parse_keypoint_lines(text)
    if points:
        return KeyPoints(points, OK, "lines", problem)
    return KeyPoints([], UNPARSED, "lines", f"no key point in {text[:80]!r}")


def keypoints_path(results_dir: Path, judge) -> Path:
    """``<results_dir>/keypoints_<judge id>.jsonl``."""
    return Path(results_dir) / f"keypoints_{judge_id(judge)}.jsonl"


def _digest(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, ensure_ascii=False, default=str).encode()).hexdigest()[:16]


def prompt_id(format: str) -> str:
    """A hash of the key-point prompt in ``format``; a changed prompt makes the stored key points stale."""
    messages = keypoint_messages("{name}", "{question}", "{answer}")
    if format == "lines":
        messages = [*messages, *keypoint_lines_messages("{name}", "{question}", "{answer}")]
    return _digest(messages, KEYPOINT_SCHEMA)


def read_keypoints(path: Path) -> list[dict]:
    """The records of a key-point file (none when it does not exist)."""
    path = Path(path)
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


KEYPOINT_COLUMNS = ["qa_id", "character", "question", "answer", "key_points", "status", "format", "problem", "judge",
                    "judge_model", "prompt", "date", "reused", "error"]


def keypoints_for(items: Sequence[tuple[str, QA]], judge, path: Path, names: dict[str, str] | None = None, *,
                  format: str = "json", retries: int = 2, max_tokens: int = 200, workers: int | None = None,
                  progress: bool = True) -> pd.DataFrame:
    """The key points of each ``(character, QA)``: reused from ``path`` when a record there has the same judge
    model, prompt and question-and-answer text, else extracted by :func:`extract_keypoints` and appended to
    ``path`` with their provenance (judge label and model, prompt hash, date). An unparseable extraction is kept
    too (status ``"unparsed"``, no key points) so the file shows it; a fault is not stored and comes back as a
    row with its ``error``. One row per item, columns :data:`KEYPOINT_COLUMNS`."""
    names = names or {}
    prompt = prompt_id(format)
    stored = {(r["qa_id"], r["answer_sha"]): r for r in read_keypoints(path)
              if r.get("judge_model") == judge.model_id and r.get("prompt") == prompt}
    rows: dict[int, dict] = {}
    todo = []
    for i, (character, qa) in enumerate(items):
        sha = _digest(qa.question, qa.answer)
        if (qa.id, sha) in stored:
            rows[i] = {**stored[qa.id, sha], "reused": True, "error": None}
        else:
            todo.append((i, character, qa, sha))

    def extract(job):
        _, character, qa, _ = job
        return extract_keypoints(judge, names.get(character, character), qa.question, qa.answer, format=format,
                                 retries=retries, max_tokens=max_tokens)

    outcomes = judge.map(extract, todo, desc="key points", workers=workers, progress=progress) if todo else []
    new = []
    today = _dt.date.today().isoformat()
    for o in outcomes:
        i, character, qa, sha = o.item
        base = {"qa_id": qa.id, "character": character, "question": qa.question, "answer": qa.answer,
                "answer_sha": sha, "judge": judge.label, "judge_model": judge.model_id, "prompt": prompt,
                "date": today}
        if o.ok:
            kp: KeyPoints = o.value
            record = {**base, "key_points": kp.points, "status": kp.status, "format": kp.format, "problem": kp.problem}
            new.append(record)
            rows[i] = {**record, "reused": False, "error": None}
        else:
            rows[i] = {**base, "key_points": [], "status": FAILED, "format": None, "problem": None, "reused": False,
                       "error": o.error}
    if new:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as f:
            for record in new:
                f.write(json.dumps(record, ensure_ascii=False) + "\n")
    return pd.DataFrame([rows[i] for i in range(len(items))], columns=KEYPOINT_COLUMNS)


# ---- the judge check set ---------------------------------------------------------------------------------------

# Invented additions: facts no persona of ours states, each said of the character by name.
INVENTIONS = (
    "{name} also won a national chess championship three years in a row.",
    "{name} has a twin sibling who runs a bakery in Lisbon.",
    "{name} once spent a whole winter living on a lighthouse ship in the Arctic.",
    "{name} keeps a pet tortoise called Admiral that is ninety years old.",
    "{name} secretly writes opera librettos under a false name.",
    "{name} was born on a train crossing the Andes.",
)
DENIAL = "That is not true. It is false that: {answer}"

# check -> (metric, expected, what it tests)
CHECKS = {
    "acc: gold answer": ("acc", "yes", "the gold answer itself contains the correct answer"),
    "acc: another character's answer": ("acc", "no", "another character's answer to a question of the same attribute"),
    "acc: denial of the gold answer": ("acc", "no", "a reply that denies the gold answer"),
    "acc_l: gold above another character's": ("acc_l", "higher", "ACC_L of the gold answer above that of another "
                                               "character's answer"),
    "hs: invented addition above plain": ("hs", "higher", "HS of the gold answer plus an invented fact above HS of "
                                           "the plain gold answer (context: the QA's evidence)"),
}


def _balanced(pairs: list[tuple[str, QA]], n: int) -> list[tuple[str, QA]]:
    """``n`` of ``(character, qa)`` spread over attributes and characters: each pick takes the least-used
    attribute, then its least-used character, then the first unused item (file order)."""
    attrs = list(dict.fromkeys(q.attribute for _, q in pairs))
    chars = list(dict.fromkeys(c for c, _ in pairs))
    used_a, used_c, chosen, taken = dict.fromkeys(attrs, 0), dict.fromkeys(chars, 0), [], set()
    for _ in range(min(n, len(pairs))):
        for a in sorted(attrs, key=lambda a: (used_a[a], attrs.index(a))):
            free = [(c, q) for c, q in pairs if q.attribute == a and (c, q.id) not in taken]
            if free:
                c, q = min(free, key=lambda p: (used_c[p[0]], chars.index(p[0])))
                chosen.append((c, q))
                taken.add((c, q.id))
                used_a[a] += 1
                used_c[c] += 1
                break
    return chosen


def judge_check_cases(dataset: Dataset, characters: list[str], n: int = 6) -> list[dict]:
    """The judge check set, built from our own QA: ``n`` gold answers spread over attributes and characters,
    each with the replies of :data:`CHECKS`: the gold answer itself (ACC yes), another character's answer to a
    question of the same attribute (ACC no; left out with a single character), a denial of the gold answer
    (ACC no) and the gold answer with an invented addition (HS higher than the plain gold answer's, both judged
    against the QA's evidence as context). One dict per (item, reply): ``case``, ``check``, ``metric``,
    ``reply``, and what the judge needs."""
    pairs = [(c, q) for c in characters for q in dataset.qa(c)]
    names = {c: dataset.profile(c)[0] for c in characters}
    cases = []
    for i, (c, q) in enumerate(_balanced(pairs, n)):
        name = names[c]
        base = {"item": i, "character": c, "qa_id": q.id, "attribute": q.attribute, "name": name,
                "question": q.question, "gold": q.answer,
                "context": [{"role": "evidence", "text": e, "label": ""} for e in q.evidence]}
        others = [(oc, oq) for oc, oq in pairs if oc != c and oq.attribute == q.attribute]
        other = others[i % len(others)] if others else None
        invented = f"{q.answer} {INVENTIONS[i % len(INVENTIONS)].format(name=name)}"
        cases += [{**base, "case": "gold", "metric": "acc", "reply": q.answer},
                  {**base, "case": "denial", "metric": "acc", "reply": DENIAL.format(answer=q.answer)},
                  {**base, "case": "gold", "metric": "acc_l", "reply": q.answer},
                  {**base, "case": "gold", "metric": "hs", "reply": q.answer},
                  {**base, "case": "invented", "metric": "hs", "reply": invented}]
        if other is not None:
            cases += [{**base, "case": "other", "metric": "acc", "reply": other[1].answer, "other_qa": other[1].id},
                      {**base, "case": "other", "metric": "acc_l", "reply": other[1].answer, "other_qa": other[1].id}]
    return cases


def _judge_case(judge, case: dict) -> Verdict:
    if case["metric"] == "acc":
        return judge_acc(judge, case["name"], case["question"], case["gold"], case["reply"])
    if case["metric"] == "acc_l":
        return judge_acc_l(judge, case["name"], case["question"], case["gold"], case["reply"])
    return judge_hs(judge, case["name"], case["question"], case["context"], case["reply"], case["gold"])


def judge_check(cases: list[dict], judge, *, workers: int | None = None,
                progress: bool = True) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Run the judge on the check cases. Returns ``(verdicts, agreement)``: one row per case with the judge's
    answer, value, status and error; and one row per check of :data:`CHECKS` with the cases it has, how many
    the judge got right (``agree``), how many it could not decide (a verdict unparseable or failed, never
    counted as agreement or disagreement) and ``agreement`` = agree / decided. A pair check (ACC_L, HS)
    agrees when the first value is strictly above the second."""
    outcomes = judge.map(lambda case: _judge_case(judge, case), cases, desc="judge check", workers=workers,
                         progress=progress)
    rows = []
    for o in outcomes:
        case = o.item
        v: Verdict | None = o.value if o.ok else None
        rows.append({"item": case["item"], "character": case["character"], "qa_id": case["qa_id"],
                     "attribute": case["attribute"], "case": case["case"], "metric": case["metric"],
                     "reply": case["reply"], "answer": v.answer if v else None, "value": v.value if v else np.nan,
                     "status": v.status if v else FAILED, "problem": v.problem if v else None, "error": o.error,
                     "judge": judge.label})
    verdicts = pd.DataFrame(rows)
    return verdicts, check_agreement(verdicts)


def check_agreement(verdicts: pd.DataFrame) -> pd.DataFrame:
    """The agreement table of :func:`judge_check` from its verdict rows (see there)."""
    def value(item, metric, case):
        hit = verdicts[(verdicts.item == item) & (verdicts.metric == metric) & (verdicts.case == case)]
        return (float(hit.value.iloc[0]) if hit.status.iloc[0] == OK else None) if len(hit) else "absent"

    pairs = {"acc: gold answer": ("acc", "gold", None), "acc: another character's answer": ("acc", "other", None),
             "acc: denial of the gold answer": ("acc", "denial", None),
             "acc_l: gold above another character's": ("acc_l", "gold", "other"),
             "hs: invented addition above plain": ("hs", "invented", "gold")}
    out = []
    items = list(dict.fromkeys(verdicts.item)) if len(verdicts) else []
    for check, (metric, first, second) in pairs.items():
        expected = CHECKS[check][1]
        cases = agree = undecided = 0
        for item in items:
            a = value(item, metric, first)
            b = value(item, metric, second) if second else None
            if a == "absent" or b == "absent":
                continue
            cases += 1
            if a is None or (second and b is None):
                undecided += 1
            elif second:
                agree += a > b
            else:
                agree += a == (1.0 if expected == "yes" else 0.0)
        decided = cases - undecided
        out.append({"check": check, "metric": metric, "expected": expected, "cases": cases, "agree": agree,
                    "undecided": undecided, "agreement": agree / decided if decided else np.nan,
                    "what": CHECKS[check][2]})
    return pd.DataFrame(out)


def check_summary(agreement: pd.DataFrame) -> str:
    """One line for captions: ``"judge check: acc: gold answer 5/6, ..."`` (agree / decided, undecided noted)."""
    parts = []
    for r in agreement.itertuples():
        decided = r.cases - r.undecided
        parts.append(f"{r.check} {r.agree}/{decided}" + (f" ({r.undecided} undecided)" if r.undecided else ""))
    return "judge check: " + "; ".join(parts)
