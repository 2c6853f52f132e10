"""The QA evaluation (AMADEUS Table 6, with RAGEval's key-point metrics): methods answer the QA and interview
questions, a judge LLM scores each response, and the tables are built from the verdicts. The judges and their
prompts are :mod:`rpa_lib.evaluation.judges`'s. This module builds no method or LLM (the caller passes them),
writes only :func:`answer_all`'s ``save_to`` file and draws nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from rpa_lib.data import QA, Dataset
from rpa_lib.evaluation.judges import FAILED, OK, UNPARSED, judge_metric, label_keypoint
from rpa_lib.evaluation.metrics.agreement import kendall_tau, noted
from rpa_lib.evaluation.metrics.keypoints import KeypointScores, average_keypoint_scores, keypoint_scores
from rpa_lib.evaluation.metrics.retrieval import normalize
from rpa_lib.evaluation.runner import QUESTIONNAIRE_TASKS, Job, answer_tasks, qa_jobs, questionnaire_jobs, run_verdicts
from rpa_lib.evaluation.runner import qa_items as qa_items  # the pairs qa_jobs asks, for this module's users
from rpa_lib.evaluation.uncertainty import interval_columns, merge_intervals
from rpa_lib.methods.base import Method
from rpa_lib.methods.registry import method_class, paper_name
from rpa_lib.persona import heading_path
from rpa_lib.report import caption_line, plural

QA_TASK = "CharacterRAG"
MULTI_TASK = "CharacterRAG (multi)"  # the multi-paragraph pairs: written to favour a splitter that keeps a subsection
QA_TASKS = (QA_TASK, MULTI_TASK)     # together, so reported as a task of their own, never pooled with the paper set
METRICS = ("acc", "acc_l", "hs")
KEYPOINT_METRICS = ("completeness", "hallucination", "irrelevance")
VERDICT_COLUMNS = ["task", "method", "character", "question_id", "attribute", "metric", "answer", "value", "status",
                   "problem", "error", "judge", "coerced"]
LABEL_COLUMNS = ["task", "method", "character", "question_id", "attribute", "kp", "key_point", "label", "status",
                 "problem", "error", "judge", "coerced"]


def has_context(method: Method | type[Method]) -> bool:
    """Does the method (or class) put anything besides the question in front of its LLM (No RAG keeps the base
    ``context``)?"""
    cls = method if isinstance(method, type) else type(method)
    return cls.context is not Method.context


def gold_answers(dataset: Dataset, characters: list[str]) -> dict[tuple[str, str], QA]:
    """``{(character, question id): QA}`` of the characters' QA pairs, both sets."""
    return {(c, q.id): q for c in characters for q in dataset.qa(c, "all")}


def task_jobs(dataset: Dataset, characters: list[str], qa_questions: int | None = None,
              questionnaires: dict[str, int | None] | None = None,
              multi_questions: int | None = 0) -> dict[str, list[Job]]:
    """The jobs of each task: ``CharacterRAG``, ``CharacterRAG (multi)`` (``multi_questions`` 0: none; None: all),
    then one task per questionnaire (name -> items, ``{"mbti": 8, "bigfive": 10}``) named as in Table 6."""
    tasks = {QA_TASK: qa_jobs(dataset, characters, qa_questions)}
    if multi_questions != 0:
        tasks[MULTI_TASK] = qa_jobs(dataset, characters, multi_questions, set="multi")
    for name, items in (questionnaires or {}).items():
        tasks[QUESTIONNAIRE_TASKS.get(name, name)] = questionnaire_jobs(dataset.questionnaire(name, items), characters)
    return tasks


def answer_all(methods: Sequence[Method], tasks: dict[str, list[Job]], *, llm=None, save_to: Path | None = None,
               workers: int | None = None, progress: bool = True) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every method answers every task's jobs (a method without context skips the interviews, scored by HS alone):
    the rows and one timing row per (task, method); ``save_to`` (JSONL) is rewritten after each block."""
    def skip(task: str, method: Method) -> str | None:
        return "not interviewed: no context, so no HS" if task not in QA_TASKS and not has_context(method) else None

    return answer_tasks(methods, tasks, llm=llm, skip=skip, workers=workers, progress=progress,
                        on_block=None if save_to is None else
                        lambda rows: rows.to_json(save_to, orient="records", lines=True, force_ascii=False))


def answer_summary(answers: pd.DataFrame) -> pd.DataFrame:
    """Per task and method: answers, failures, mean reply length, context items, chunk ids, LLM and cached calls and
    their tokens."""
    out = []
    for (task, method), g in answers.groupby(["task", "method"], sort=False):
        ok = g[g.error.isna()]
        out.append({"task": task, "method": method, "answers": len(g), "failed": len(g) - len(ok),
                    "mean_reply_chars": ok.reply.str.len().mean() if len(ok) else np.nan,
                    "context_items": ok.context.map(len).mean() if len(ok) else np.nan,
                    "chunks": ok.chunk_ids.map(len).mean() if len(ok) else np.nan,
                    "llm_calls": int(g.llm_calls.sum()), "cached_calls": int(g.cached_calls.sum()),  # failed rows too
                    "prompt_tokens": int(g.prompt_tokens.sum()), "completion_tokens": int(g.completion_tokens.sum())})
    return pd.DataFrame(out)


def _answered(answers: pd.DataFrame) -> list[dict]:
    return [r for r in answers.to_dict("records") if pd.isna(r.get("error"))]


def _response(r: dict) -> dict:
    """The columns that name an answers row's response."""
    return {"task": r.get("task"), "method": r["method"], "character": r["character"], "question_id": r["question_id"],
            "attribute": None if pd.isna(r.get("attribute")) else r.get("attribute")}


def verdict_jobs(answers: pd.DataFrame, gold: dict[tuple[str, str], QA], metrics: Sequence[str] = METRICS, *,
                 shared_reference: bool = False) -> list[tuple]:
    """``(row, metric)`` for each answered row: ACC and ACC_L with a gold answer; HS when the row has context, or
    with a ``shared_reference`` (:data:`HS_REFERENCE`) for every row of a method that retrieves, an empty context
    included: a question it found nothing for is judged too, not left out of its HS."""
    unknown = set(metrics) - set(METRICS)
    if unknown:
        raise ValueError(f"unknown metric(s) {sorted(unknown)}; known: {', '.join(METRICS)}")

    def hs(r: dict) -> bool:
        if shared_reference:
            try:
                return has_context(method_class(r["method"]))
            except ValueError:  # not a registered method: as without a shared reference
                pass
        return bool(r.get("context"))

    return [(r, m) for r in _answered(answers) for m in metrics
            if (m in ("acc", "acc_l") and (r["character"], r["question_id"]) in gold and r.get("task") in QA_TASKS)
            or (m == "hs" and hs(r))]


INTERVIEW_REFERENCE = ("Psychological Traits", "Belief and Value")  # the attributes a personality item probes
HS_REFERENCE = ("HS judged for every method against one reference: for a QA question the persona paragraphs that "
                "hold its evidence, for an interview question the persona's Psychological Traits and Belief and Value "
                "sections whole (no retriever's pick, which would be one method's own context; these are the two "
                "attributes AMADEUS's Attribute Extractor infers, which may favour AMADEUS on interview HS); never "
                "against a method's own context or text an LLM wrote")


def hs_references(dataset: Dataset, answers: pd.DataFrame, gold: dict[tuple[str, str], QA]
                  ) -> dict[tuple[str, str], list[dict]]:
    """``{(character, question id): [reference items]}`` for HS (:data:`HS_REFERENCE`): the persona paragraphs that
    hold a QA question's evidence, or every paragraph of the :data:`INTERVIEW_REFERENCE` sections for an interview
    question."""
    refs: dict[tuple[str, str], list[dict]] = {}
    flat: dict[str, list] = {}  # character -> its paragraphs with their whitespace-normalized text, made once
    for r in _answered(answers):
        key = (r["character"], r["question_id"])
        if key in refs:
            continue
        if r["character"] not in flat:
            flat[r["character"]] = [(p, normalize(p.text)) for p in dataset.persona(r["character"]).paragraphs]
        qa = gold.get(key) if r.get("task") in QA_TASKS else None
        held = [p for p, text in flat[r["character"]]
                if (any(normalize(e) in text for e in qa.evidence) if qa is not None
                    else p.attribute in INTERVIEW_REFERENCE)]
        refs[key] = [{"role": "reference", "label": heading_path(p.headings[1:]), "text": p.text} for p in held]
    return refs


def judge_answers(answers: pd.DataFrame, judge, names: dict[str, str], gold: dict[tuple[str, str], QA], *,
                  references: dict[tuple[str, str], list[dict]] | None = None, metrics: Sequence[str] = METRICS,
                  workers: int | None = None, progress: bool = True) -> pd.DataFrame:
    """One verdict row per (response, metric) of :func:`verdict_jobs`; HS against ``references``
    (:func:`hs_references`) or, when None, each method's own context as the paper's prompt reads."""
    def run(job):
        r, metric = job
        key = (r["character"], r["question_id"])
        qa = gold.get(key) if r.get("task") in QA_TASKS else None
        context = references[key] if references is not None and metric == "hs" else r["context"]
        return judge_metric(judge, metric, names.get(r["character"], r["character"]), r["question"],
                            qa.answer if qa else None, r["reply"] or "", context, reference=references is not None)

    jobs = verdict_jobs(answers, gold, metrics, shared_reference=references is not None)
    return run_verdicts(judge, jobs, run, lambda job: {**_response(job[0]), "metric": job[1], "judge": judge.label},
                        columns=VERDICT_COLUMNS, desc="judge", workers=workers, progress=progress)


def label_answers(answers: pd.DataFrame, keypoints: pd.DataFrame, judge, names: dict[str, str], *,
                  workers: int | None = None, progress: bool = True) -> pd.DataFrame:
    """One row per (answered QA response, key point of its gold answer) with the judge's label (None when unparsed
    or failed); ``keypoints``: :func:`~rpa_lib.evaluation.keypoints.keypoints_for`'s rows."""
    points = {(k["character"], k["qa_id"]): list(k["key_points"]) for k in keypoints.to_dict("records")}
    jobs = [(r, i, kp) for r in _answered(answers) if r.get("task") == QA_TASK
            for i, kp in enumerate(points.get((r["character"], r["question_id"]), []), start=1)]

    def run(job):
        r, _, kp = job
        return label_keypoint(judge, names.get(r["character"], r["character"]), r["question"], kp, r["reply"] or "")

    labels = run_verdicts(judge, jobs, run,
                          lambda job: {**_response(job[0]), "kp": job[1], "key_point": job[2], "judge": judge.label},
                          columns=[*LABEL_COLUMNS, "answer", "value"], desc="key-point labels", workers=workers,
                          progress=progress)
    return labels.assign(label=labels.answer)[LABEL_COLUMNS]


def _coerced(verdicts: pd.DataFrame) -> int:
    """Verdict rows coerced from logprobs (rows saved before the column: none)."""
    return int(verdicts.coerced.fillna(False).astype(bool).sum()) if "coerced" in verdicts else 0


def table6(answers: pd.DataFrame, verdicts: pd.DataFrame, llm: str, judge: str) -> pd.DataFrame:
    """AMADEUS Table 6 for this run: per (task, method) ``acc`` (a fraction), ``acc_l`` and ``hs`` over the parsed
    verdicts, the counts they rest on and each metric's 95% interval; several runs (``repeat``) are pooled."""
    out = []
    for (task, method), group in answers.groupby(["task", "method"], sort=False):
        v = verdicts[(verdicts.task == task) & (verdicts.method == method)]
        row = {"task": task, "method": method, "paper_method": paper_name(method), "llm": llm, "judge": judge,
               "answers": len(group), "failed_answers": int(group.error.notna().sum())}
        for m in METRICS:
            vm = v[v.metric == m]
            ok = vm[vm.status == OK].value
            row.update({m: float(ok.mean()), f"n_{m}": len(ok), f"unparsed_{m}": int((vm.status == UNPARSED).sum()),
                        f"failed_{m}": int((vm.status == FAILED).sum()), f"coerced_{m}": _coerced(vm)})
        out.append(row)
    cols = ["task", "method", "paper_method", "llm", "judge", "answers", "failed_answers", *METRICS,
            *[f"{p}_{m}" for m in METRICS for p in ("n", "unparsed", "failed")], *[f"coerced_{m}" for m in METRICS]]
    table = pd.DataFrame(out, columns=cols)
    ok = verdicts[verdicts.status == OK]
    if ok.empty:
        return table
    runs = ["repeat"] if "repeat" in ok else []  # several runs: a response per run, each resampled with its character
    wide = ok.pivot_table(index=["task", "method", "character", "question_id", *runs], columns="metric",
                          values="value", aggfunc="first").reset_index()
    wide = wide.reindex(columns=["task", "method", "character", *runs, *METRICS])
    return merge_intervals(table, interval_columns(wide, ["task", "method"], list(METRICS)), ["task", "method"])


def keypoint_scores_per_response(answers: pd.DataFrame, labels: pd.DataFrame, keypoints: pd.DataFrame) -> pd.DataFrame:
    """RAGEval's scores of each QA response from its key-point labels, with the counts of key points, unparsed and
    failed labels (neither in the denominator) and ``job_failed``."""
    kp_count = {(k["character"], k["qa_id"]): len(k["key_points"]) for k in keypoints.to_dict("records")}
    by_response = dict(list(labels.groupby(["method", "character", "question_id"], sort=False)))
    out = []
    for r in answers[answers.task == QA_TASK].to_dict("records"):
        mine = by_response.get((r["method"], r["character"], r["question_id"]), labels.iloc[:0])
        done = mine[mine.status != FAILED]
        s = keypoint_scores([lab if st == OK else None for lab, st in zip(done.label, done.status)])
        out.append({**_response(r), "keypoints": kp_count.get((r["character"], r["question_id"]), 0),
                    "judged": s.judged, "unparsed": s.unparsed, "failed": int((mine.status == FAILED).sum()),
                    "job_failed": not pd.isna(r.get("error")), "completeness": s.completeness,
                    "hallucination": s.hallucination, "irrelevance": s.irrelevance, "coerced": _coerced(done)})
    return pd.DataFrame(out, columns=["method", "character", "question_id", "attribute", "keypoints", "judged",
                                      "unparsed", "failed", "job_failed", *KEYPOINT_METRICS, "coerced"])


def keypoint_table(per_response: pd.DataFrame, llm: str, judge: str) -> pd.DataFrame:
    """RAGEval's Completeness, Hallucination and Irrelevance per method (the mean over responses with a judged key
    point), the counts behind them and each metric's 95% interval."""
    out = []
    for method, group in per_response.groupby("method", sort=False):
        answered = group[~group.job_failed]
        avg = average_keypoint_scores([KeypointScores(r.completeness, r.hallucination, r.irrelevance,
                                                      r.judged + r.unparsed, r.unparsed)
                                       for r in answered.itertuples()])
        out.append({"method": method, "paper_method": paper_name(method), "llm": llm, "judge": judge,
                    "completeness": avg.completeness, "hallucination": avg.hallucination,
                    "irrelevance": avg.irrelevance, "responses": len(group), "scored": avg.scored,
                    "without_keypoints": int((answered.keypoints == 0).sum()), "unparsed_labels": avg.unparsed,
                    "failed_labels": int(group.failed.sum()), "failed_answers": int(group.job_failed.sum()),
                    "coerced_labels": int(group.coerced.sum()) if "coerced" in group else 0})
    table = pd.DataFrame(out)
    scored = per_response[~per_response.job_failed & (per_response.judged > 0)]
    if table.empty or scored.empty:
        return table
    return merge_intervals(table, interval_columns(scored, ["method"], list(KEYPOINT_METRICS)), ["method"])


def attribute_breakdown(verdicts: pd.DataFrame, per_response: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per method and QA attribute: ACC, ACC_L, Completeness (with ``per_response``) and the ACC counts."""
    v = verdicts[verdicts.task == QA_TASK]
    out = []
    for (method, attribute), group in v.groupby(["method", "attribute"], sort=False):
        ok = group[group.status == OK]
        row = {"method": method, "attribute": attribute, "acc": float(ok[ok.metric == "acc"].value.mean()),
               "acc_l": float(ok[ok.metric == "acc_l"].value.mean()), "n": int((ok.metric == "acc").sum()),
               "unparsed": int(((group.metric == "acc") & (group.status == UNPARSED)).sum())}
        if per_response is not None:
            kp = per_response[(per_response.method == method) & (per_response.attribute == attribute)]
            row["completeness"] = float(kp.completeness.mean())
        row["coerced"] = _coerced(ok[ok.metric == "acc"])
        out.append(row)
    return pd.DataFrame(out)


def attribute_table(breakdown: pd.DataFrame, metric: str = "acc") -> pd.DataFrame:
    """One metric of :func:`attribute_breakdown` as attributes x methods (in the order met)."""
    wide = breakdown.pivot(index="attribute", columns="method", values=metric)
    wide = wide.loc[list(dict.fromkeys(breakdown.attribute)), list(dict.fromkeys(breakdown.method))]
    return wide.reset_index().rename_axis(columns=None)


def rank_agreement(table: pd.DataFrame, source: str, task: str = QA_TASK) -> pd.DataFrame:
    """Kendall's tau (b) between the methods' rankings by ACC and by ACC_L within each LLM of ``table`` (ours or
    the paper's; the paper reports tau = 1); NaN with the reason in ``note`` when undefined."""
    name = "paper_method" if "paper_method" in table.columns else "method"
    out = []
    for llm, group in table[table.task == task].groupby("llm", sort=False):
        group = group.dropna(subset=["acc", "acc_l"])
        tau, note = noted(kendall_tau, group.acc, group.acc_l, variant="b")
        order = {m: " > ".join(group.sort_values(m, ascending=False, kind="stable")[name]) for m in ("acc", "acc_l")}
        out.append({"source": source, "llm": llm, "methods": len(group), "tau": tau.tau, "pvalue": tau.pvalue,
                    "acc_order": order["acc"], "acc_l_order": order["acc_l"], "note": note})
    return pd.DataFrame(out, columns=["source", "llm", "methods", "tau", "pvalue", "acc_order", "acc_l_order", "note"])


def run_caption(characters: int, questions: dict[str, int], methods: int, llm: str, judge: str, embedder: str,
                max_iterations: int | None = None, slot_size: int | None = None) -> str:
    """The QA evaluation's caption line, ``questions`` per task (each method's jobs): ``"2 characters, questions per
    method: CharacterRAG 4, CharacterRAG (multi) 2, 5 methods | GS N=8, K=2 | LLM: ..."``."""
    gs = f"GS N={max_iterations}, K={slot_size}" if max_iterations is not None else None
    asked = ", ".join(f"{task} {n}" for task, n in questions.items())
    return caption_line(f"{plural(characters, 'character')}, questions per method: {asked}, "
                        f"{plural(methods, 'method')}", gs, ("LLM", llm), ("judge", judge), ("embedder", embedder))
