"""Personality evaluation (AMADEUS Tables 4-5, after InCharacter): interview a role-playing agent with a
questionnaire, score the replies (option conversion or expert rating), turn the scores into type letters and
compare them with ground truth. The prompts live in :mod:`rpa_lib.evaluation.personality_prompts`. This module
builds no method or LLM (the caller passes them), writes no file and draws nothing.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

from rpa_lib.data import Dimension, Questionnaire
from rpa_lib.evaluation.calibration import CONTENT_FREE, baseline_scores, best_option, option_scores
from rpa_lib.evaluation.context import CONTEXT_COLUMNS, context_columns
from rpa_lib.evaluation.metrics.types import NO_SCORE, TIE, type_scores
from rpa_lib.evaluation.personality_prompts import expert_messages, expert_schema, option_messages, scale_options
from rpa_lib.evaluation.runner import answer_tasks, chunk_ids, questionnaire_jobs, run_jobs, run_verdicts

KEYS = ["method", "questionnaire", "character"]
SCORINGS = ("option", "expert")  # one scale point per reply, or a dimension rated from batches of replies
RATING_COLUMNS = [*KEYS, "dimension", "unit", "item_ids", "answer", "rating", "analysis", "error"]
_RATED_COLUMNS = [*RATING_COLUMNS[:-4], "value", "error"]  # what run_verdicts gives, before the rating is made
CANNED_REPLIES = {"yes": "Yes, absolutely. That is exactly how I am, every single time.",
                  "no": "No, not at all. That is never how I am."}


def pole_names(questionnaire: Questionnaire) -> dict[str, tuple[str, str]]:
    """``{dimension id: (high pole name, low pole name)}``, by default ``("high <name>", "low <name>")``."""
    return {d.id: (d.high_name or f"high {d.name}", d.low_name or f"low {d.name}") for d in questionnaire.dimensions}


def interview(method, characters: list[str], questionnaire: Questionnaire, *, llm, progress: bool = True
              ) -> pd.DataFrame:
    """Every item's question put to ``method`` for every character, a fresh context per item: one row per
    (character, item) with the reply or the error and what the method did (:func:`interview_rows`)."""
    return interview_rows(run_jobs(method, questionnaire_jobs(questionnaire, characters), llm=llm, progress=progress,
                                   desc=f"{method.name} · {questionnaire.name}"))


def interview_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """The runner's rows of questionnaire jobs as interview rows, in method order: GS failure, chunks examined,
    knowledge and selected chunk ids, AE attributes, CRAG's route, context size, LLM calls, cache hits, seconds and
    choices coerced from logprobs."""
    out = []
    for r in rows.to_dict("records"):
        ok = _ok(r)
        d = r["details"] if ok else {}
        out.append({"method": r["method"], "questionnaire": r["questionnaire"], "character": r["character"],
                    "item": r["question_id"], "dimension": r["dimension"], "keyed": r["keyed"],
                    "question": r["question"], "reply": r["reply"] if ok else None, "error": None if ok else r["error"],
                    "gs_failed": d.get("gs_failed"), "examined": d.get("examined", 0) if ok else None,
                    "knowledge": ";".join(chunk_ids(r["context"], "knowledge")) if ok else None,
                    "selected": ";".join(chunk_ids(r["context"], "selected")) if ok else None,
                    "attributes": json.dumps(d["attributes"], ensure_ascii=False) if d.get("attributes") else None,
                    "route": d.get("route"),  # CRAG's action
                    **(context_columns(r["context"]) if ok else dict.fromkeys(CONTEXT_COLUMNS)),
                    **{k: r[k] for k in ("llm_calls", "cached_calls", "seconds", "coerced_calls", "prompt_tokens",
                                         "completion_tokens")}})
    out = pd.DataFrame(out)
    return _in_order(out, out, ["method"]) if len(out) else out


def _in_order(frame: pd.DataFrame, reference: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """``frame`` stably sorted by where each key's value first appears in ``reference``."""
    rank = {k: {v: i for i, v in enumerate(dict.fromkeys(reference[k]))} for k in keys}
    return frame.sort_values(keys, key=lambda s: s.map(rank[s.name]), kind="stable").reset_index(drop=True)


def _with_failed(rated: pd.DataFrame, rows: pd.DataFrame) -> pd.DataFrame:
    """The rated units and one failed unit per failed interview (it cannot be rated, and it must stay visible), in
    the interviews' method and character order, then dimension and unit order."""
    failed = [{**_unit(r), "answer": np.nan, "rating": np.nan, "analysis": None,
               "error": f"interview failed: {r['error']}"} for r in rows.to_dict("records") if not _ok(r)]
    frames = [f for f in (pd.DataFrame(failed, columns=RATING_COLUMNS), rated[RATING_COLUMNS]) if len(f)]
    if not frames:
        return pd.DataFrame(columns=RATING_COLUMNS)
    return _in_order(pd.concat(frames, ignore_index=True), rows, ["method", "character"])


def _ok(row: dict) -> bool:
    return pd.isna(row.get("error"))


def _unit(r: dict) -> dict:
    """An interview row's rating keys: each item rated on its own is a unit."""
    return {**{k: r[k] for k in KEYS}, "dimension": r["dimension"], "unit": r["item"], "item_ids": r["item"]}


def place_on_scale(evaluator, name: str, item, reply: str, questionnaire: Questionnaire,
                   calibrate: bool = False) -> int:
    """The scale point the evaluator chooses for one reply, by constrained choice; ``calibrate``: each option's
    score minus its score for a content-free reply (:mod:`rpa_lib.evaluation.calibration`; needs option scores)."""
    options = scale_options(questionnaire)
    messages = option_messages(name, item, reply, questionnaire)
    if not calibrate:
        return int(evaluator.choose(messages, options).text)
    # the baseline first: an evaluator without option scores is refused before the verdict is paid for
    baseline = baseline_scores(evaluator, option_messages(name, item, CONTENT_FREE, questionnaire), options)
    verdict = evaluator.choose(messages, options)
    return int(best_option(option_scores(evaluator, verdict, f"item {item.id}"), baseline, options))


def score_options(interviews: pd.DataFrame, questionnaire: Questionnaire, evaluator,
                  names: dict[str, str] | None = None, *, calibrate: bool = False, progress: bool = True
                  ) -> pd.DataFrame:
    """Option conversion: per interview row the ``answer`` (:func:`place_on_scale`) and the ``rating`` keyed toward
    the high letter; failures are rows with an ``error`` and no rating."""
    rows = interviews[interviews.questionnaire == questionnaire.name]
    items = {i.id: i for i in questionnaire.items}
    names = names or {}
    todo = [r for r in rows.to_dict("records") if _ok(r)]

    def rate(r: dict) -> int:
        return place_on_scale(evaluator, names.get(r["character"], r["character"]), items[r["item"]], r["reply"] or "",
                              questionnaire, calibrate)

    rated = run_verdicts(evaluator, todo, rate, _unit, columns=_RATED_COLUMNS,
                         desc=f"option scoring · {questionnaire.name}", progress=progress)
    keyed = rated.unit.map(lambda i: items[i].keyed)
    rated = rated.assign(answer=rated.value, analysis=None, rating=[
        keyed_rating(a, k, questionnaire.points) if pd.isna(e) else np.nan
        for a, k, e in zip(rated.value, keyed, rated.error)])
    return _with_failed(rated, rows)


def score_expert(interviews: pd.DataFrame, questionnaire: Questionnaire, evaluator, names: dict[str, str] | None = None,
                 *, batch_size: int = 4, max_tokens: int = 256, progress: bool = True) -> pd.DataFrame:
    """Expert rating: one rating of the dimension per batch of ``batch_size`` replies of a (method, character,
    dimension) (``unit`` ``"b1"``, ``"b2"``, ...), plus one failed row per failed interview."""
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    rows = interviews[interviews.questionnaire == questionnaire.name]
    items = {i.id: i for i in questionnaire.items}
    names, poles = names or {}, pole_names(questionnaire)
    schema = expert_schema(questionnaire)
    batches, ok = [], rows[rows.error.isna()]
    for (method, character, dim_id), group in ok.groupby(["method", "character", "dimension"], sort=False):
        recs = group.to_dict("records")
        dim = questionnaire.dimension(dim_id)
        batches += [(method, character, dim, f"b{b}", recs[start:start + batch_size])
                    for b, start in enumerate(range(0, len(recs), batch_size), start=1)]

    def rate(batch) -> dict:
        _, character, dim, _, recs = batch
        pairs = [(items[r["item"]], r["reply"] or "") for r in recs]
        messages = expert_messages(names.get(character, character), dim, poles[dim.id], pairs, questionnaire)
        return evaluator.structured(messages, schema, max_tokens=max_tokens).data

    def describe(batch) -> dict:
        method, character, dim, unit, recs = batch
        return {"method": method, "questionnaire": questionnaire.name, "character": character, "dimension": dim.id,
                "unit": unit, "item_ids": ";".join(r["item"] for r in recs)}

    rated = run_verdicts(evaluator, batches, rate, describe, columns=_RATED_COLUMNS,
                         desc=f"expert rating · {questionnaire.name}", progress=progress)
    rated = rated.assign(answer=np.nan, rating=[float(v["score"]) if pd.isna(e) else np.nan
                                                for v, e in zip(rated.value, rated.error)],
                         analysis=[v.get("analysis") if pd.isna(e) else None for v, e in zip(rated.value, rated.error)])
    return _with_failed(rated, rows)


def evaluator_check(questionnaire: Questionnaire, evaluator, *, calibrate: bool = False,
                    progress: bool = True) -> pd.DataFrame:
    """Can the evaluator tell a clear yes from a clear no (:data:`CANNED_REPLIES`) put in "the interviewee"'s mouth?
    ``separates``: the yes lands higher on the scale, for one item of each dimension."""
    items = questionnaire.subset(len(questionnaire.dimensions)).items
    jobs = [(item, kind) for item in items for kind in CANNED_REPLIES]
    placed = run_verdicts(evaluator, jobs, lambda job: place_on_scale(evaluator, "the interviewee", job[0],
                                                                     CANNED_REPLIES[job[1]], questionnaire, calibrate),
                          lambda job: {"item": job[0].id, "kind": job[1]}, columns=["item", "kind", "value", "error"],
                          desc=f"evaluator check · {questionnaire.name}", progress=progress)
    got = {(r.item, r.kind): r.value if pd.isna(r.error) else np.nan for r in placed.itertuples()}
    return pd.DataFrame([{"questionnaire": questionnaire.name, "item": i.id, "dimension": i.dimension,
                          "answer_yes": got[i.id, "yes"], "answer_no": got[i.id, "no"],
                          "separates": bool(got[i.id, "yes"] > got[i.id, "no"])} for i in items])


def dimension_scores(ratings: pd.DataFrame, questionnaire: Questionnaire) -> pd.DataFrame:
    """Per (method, questionnaire, character, dimension): the mean rating of the units that did not fail, the counts
    rated and failed, and the letter."""
    out = []
    for key, group in ratings.groupby([*KEYS, "dimension"], sort=False):
        ok = group.rating.notna()
        score = float(group.rating[ok].mean()) if ok.any() else np.nan
        dim = questionnaire.dimension(key[-1])
        out.append({**dict(zip([*KEYS, "dimension"], key)), "score": score, "n_rated": int(ok.sum()),
                    "n_failed": int((~ok).sum()), "letter": letter(score, dim, questionnaire.midpoint)})
    return pd.DataFrame(out, columns=[*KEYS, "dimension", "score", "n_rated", "n_failed", "letter"])


def letter(score: float, dimension: Dimension, midpoint: float) -> str:
    """The high letter above the midpoint, the low one below, :data:`TIE` on it, :data:`NO_SCORE` without a score.
    ``letter(5.2, Dimension("EI", "...", "E", "I"), 4.0) == "E"``"""
    if pd.isna(score):
        return NO_SCORE
    if np.isclose(score, midpoint):
        return TIE
    return dimension.high if score > midpoint else dimension.low


def keyed_rating(answer: int, keyed: str, points: int) -> int:
    """An agreement answer turned toward the high letter. ``keyed_rating(2, "low", 7) == 6``"""
    return answer if keyed == "high" else points + 1 - answer


def predicted_types(dim_scores: pd.DataFrame, questionnaire: Questionnaire) -> pd.DataFrame:
    """Per (method, questionnaire, character): the ``predicted`` type (:data:`NO_SCORE` for a dimension never
    scored), each dimension's score and the units rated and failed."""
    out = []
    for key, group in dim_scores.groupby(KEYS, sort=False):
        by_dim = group.set_index("dimension")
        out.append({**dict(zip(KEYS, key)),
                    "predicted": "".join(by_dim.letter.get(d.id, NO_SCORE) for d in questionnaire.dimensions),
                    **{f"score_{d.id}": by_dim.score.get(d.id, np.nan) for d in questionnaire.dimensions},
                    "n_rated": int(group.n_rated.sum()), "n_failed": int(group.n_failed.sum())})
    return pd.DataFrame(out)


def interview_all(methods: list, characters: list[str], questionnaires: list[Questionnaire], *, llm,
                  save_to: Path | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`interview` for every method and questionnaire, and one timing row per block; ``save_to`` (a CSV) is
    rewritten after each block."""
    save = (lambda rows: interview_rows(rows).to_csv(save_to, index=False)) if save_to is not None else None
    rows, timing = answer_tasks(methods, {q.name: questionnaire_jobs(q, characters) for q in questionnaires}, llm=llm,
                                on_block=save)
    return interview_rows(rows), timing


def with_truth(types: pd.DataFrame, truth: dict[str, str]) -> pd.DataFrame:
    """``types`` with the true type (``{slug: type}``) and the missed letters per character."""
    out = types.assign(truth=types.character.map(truth))
    out["misses"] = type_scores(list(out.predicted), list(out.truth))["misses"] if len(out) else []
    return out


def score_all(replies: pd.DataFrame, questionnaires: dict[str, tuple[Questionnaire, dict[str, str]]], evaluator,
              names: dict[str, str], *, scoring: str = "option", calibrate: bool = False,
              batch_size: int = 4) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Score every questionnaire's replies (name -> (questionnaire, {slug: true type})): the ratings, dimension
    scores, predicted types with truth and misses, and one timing row per questionnaire."""
    if scoring not in SCORINGS:
        raise ValueError(f"scoring must be 'option' or 'expert', not {scoring!r}")
    ratings, scores, types, timing = [], [], [], []
    for qname, (q, truth) in questionnaires.items():
        start = time.perf_counter()
        r = (score_options(replies, q, evaluator, names, calibrate=calibrate) if scoring == "option"
             else score_expert(replies, q, evaluator, names, batch_size=batch_size))
        timing.append({"step": f"{scoring} scoring", "task": qname, "method": "all", "items": len(r),
                       "failed": int(r.error.notna().sum()), "seconds": round(time.perf_counter() - start, 1)})
        d = dimension_scores(r, q)
        ratings.append(r)
        scores.append(d)
        types.append(with_truth(predicted_types(d, q), truth))
    return (pd.concat(ratings, ignore_index=True), pd.concat(scores, ignore_index=True),
            pd.concat(types, ignore_index=True), pd.DataFrame(timing))
