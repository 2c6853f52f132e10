"""RAGEval's key points of each gold answer: extracted once per answer by the judge and kept, with their provenance
(judge, model, prompt, date), in a JSONL file that later runs reuse while the judge model, the prompt and the
question and answer are unchanged. Labelling a response against them is
:func:`~rpa_lib.evaluation.judges.label_keypoint`; their arithmetic, :mod:`rpa_lib.evaluation.metrics.keypoints`.
Writes only the key-point file.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from rpa_lib.data import QA
from rpa_lib.evaluation.judge_prompts import KEYPOINT_SCHEMA, keypoint_lines_messages, keypoint_messages, one_line
from rpa_lib.evaluation.judges import judge_id
from rpa_lib.evaluation.runner import FAILED, OK, UNPARSED
from rpa_lib.llm import LLMNoValidAnswer
from rpa_lib.llm.plan import acting
from rpa_lib.text import read_jsonl

MAX_KEYPOINTS = 5
KEYPOINT_FORMATS = ("json", "lines")
_BULLET = re.compile(r"^\s*(?:[-*•]+|\(?\d{1,2}[.):]|key points?:?)\s*", re.IGNORECASE)


def parse_keypoint_lines(text: str, limit: int = MAX_KEYPOINTS) -> list[str]:
    """Key points one a line, without bullets, numbering or heading, at most ``limit``.
    ``parse_keypoint_lines("1. A.\\n2) B.") == ["A.", "B."]``"""
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
    """RAGEval's key points (1-5) of a gold ``answer``: ``format="json"`` asks for structured output and falls back
    to one a line; ``"lines"`` asks for lines at once (for a small local judge). No point at all is unparsed."""
    if format not in KEYPOINT_FORMATS:
        raise ValueError(f"format must be one of {KEYPOINT_FORMATS}, not {format!r}")
    problem = None
    if format == "json":
        try:
            reply = judge.structured(keypoint_messages(name, question, answer), KEYPOINT_SCHEMA,
                                     max_tokens=max_tokens, max_retries=retries, name="keypoints")
            points = [p for p in map(one_line, reply.data["key_points"]) if p][:MAX_KEYPOINTS]
            if points:
                return KeyPoints(points, OK, "json")
            problem = "the JSON held no key point"
        except LLMNoValidAnswer as exc:
            problem = str(exc)
    try:
        text = judge.chat(keypoint_lines_messages(name, question, answer), max_tokens=max_tokens,
                          name="keypoints (lines)").text
    except LLMNoValidAnswer as exc:
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
    """A hash of the key-point prompt in ``format``: a changed prompt makes the stored key points stale."""
    messages = keypoint_messages("{name}", "{question}", "{answer}")
    if format == "lines":
        messages = [*messages, *keypoint_lines_messages("{name}", "{question}", "{answer}")]
    return _digest(messages, KEYPOINT_SCHEMA)


KEYPOINT_COLUMNS = ["qa_id", "character", "question", "answer", "key_points", "status", "format", "problem", "judge",
                    "judge_model", "prompt", "date", "reused", "error"]


def keypoints_for(items: Sequence[tuple[str, QA]], judge, path: Path, names: dict[str, str] | None = None, *,
                  format: str = "json", retries: int = 2, max_tokens: int = 200, workers: int | None = None,
                  progress: bool = True) -> pd.DataFrame:
    """The key points of each ``(character, QA)``, reused from ``path`` or extracted and appended there (an
    unparsed extraction too; a fault only as a row with its ``error``). One row per item, :data:`KEYPOINT_COLUMNS`."""
    names = names or {}
    prompt = prompt_id(format)
    stored = {(r["qa_id"], r["answer_sha"]): r for r in read_jsonl(path)
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
        with acting(character):
            return extract_keypoints(judge, names.get(character, character), qa.question, qa.answer, format=format,
                                     retries=retries, max_tokens=max_tokens)

    outcomes = judge.map(extract, todo, desc="key points", workers=workers, progress=progress) if todo else []
    new = []
    today = _dt.date.today().isoformat()
    for o in outcomes:
        i, character, qa, sha = o.item
        kp: KeyPoints = o.value if o.ok else KeyPoints([], FAILED, None)
        record = {"qa_id": qa.id, "character": character, "question": qa.question, "answer": qa.answer,
                  "answer_sha": sha, "judge": judge.label, "judge_model": judge.model_id, "prompt": prompt,
                  "date": today, "key_points": kp.points, "status": kp.status, "format": kp.format, "problem": kp.problem}
        if o.ok:
            new.append(record)  # a fault is not kept: the next run tries again
        rows[i] = {**record, "reused": False, "error": None if o.ok else o.error}
    if new:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as f:
            f.writelines(json.dumps(record, ensure_ascii=False) + "\n" for record in new)
    return pd.DataFrame([rows[i] for i in range(len(items))], columns=KEYPOINT_COLUMNS)
