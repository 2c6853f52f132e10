"""AMADEUS Table 2, the human evaluation: is what the Attribute Extractor infers from Guided Selection's chunks
reasonable? Raters score seeded samples 1-5; Table 2 gives mu, sigma, Mdn and Cronbach's alpha per task.

People's filled sheets in ``data/human_ratings/<sample set>/`` are used when present, else an LLM rater panel
(labelled :data:`LLM_SOURCE`) fills the same sheets, read back by the same reader. A failed rating is a blank, never
a number. Writes only sheets, draws nothing and computes no statistic itself (``metrics`` does).
"""

from __future__ import annotations

import hashlib
import json
import warnings
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from itertools import cycle
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rpa_lib import paths
from rpa_lib.data import Dataset
from rpa_lib.evaluation import sheets
from rpa_lib.evaluation.calibration import calibrated_verdict, template_baselines
from rpa_lib.evaluation.human_prompts import RATER_PERSONAS, RATING_OPTIONS, content_free_messages, rating_messages
from rpa_lib.evaluation.judges import judge_id
from rpa_lib.evaluation.metrics.agreement import cronbach_alpha, krippendorff_alpha, likert_summary, noted
from rpa_lib.evaluation.runner import QUESTIONNAIRE_TASKS, Job, chunk_ids, run_verdicts
from rpa_lib.evaluation.sheets import SAMPLE_COLUMNS, SCALE, TABLE2_SHEET, export_sheets, merge_sheets
from rpa_lib.evaluation.uncertainty import interval_columns
from rpa_lib.report import caption_line, plural

HUMAN_RATINGS_DIR = paths.DATA_DIR / "human_ratings"
LLM_SOURCE = "LLM raters, not human"
HUMAN_SOURCE = "human raters"


def sample_jobs(dataset: Dataset, characters: list[str], pools: dict[str, int | None], per_task: int,
                seed: int = 0) -> list[Job]:
    """``per_task`` seeded (character, interview question) jobs per questionnaire of ``pools`` (name -> item
    subset, None: all), spread evenly over the characters, never repeating a pair; ``meta``: task, sample_id, item."""
    if per_task < 1:
        raise ValueError(f"per_task must be at least 1, not {per_task}")
    jobs = []
    for name, pool in pools.items():
        task = QUESTIONNAIRE_TASKS.get(name, name)
        items = list(dataset.questionnaire(name, pool).items)
        if per_task > len(items) * len(characters):
            raise ValueError(f"{per_task} samples need more than the {len(items)} items x {len(characters)} "
                             f"characters of {name}")
        rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
        items = [items[i] for i in rng.permutation(len(items))]
        chars = [characters[i] for i in rng.permutation(len(characters))]
        seen = set()
        for i in range(per_task):
            item = items[i % len(items)]
            character = chars[(i + i // len(items)) % len(chars)]
            if (character, item.id) in seen:
                raise ValueError(f"{name}: the draw repeats ({character}, {item.id}); use fewer samples per task")
            seen.add((character, item.id))
            jobs.append(Job(character, item.id, item.question,
                            {"task": task, "sample_id": f"{task.lower()}-{i + 1:02d}", "item": item.id}))
    return jobs


def _chunks_text(items: list[dict]) -> str:
    shown = [(item.get("text", ""), item.get("label", "")) for item in items]
    return "\n\n".join(f"[{i}] {text}" if not label or text.startswith(label) else f"[{i}] {label}\n{text}"
                       for i, (text, label) in enumerate(shown, start=1))


def build_samples(rows: pd.DataFrame, names: dict[str, str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(samples, failed)`` from the rows of ``run_jobs(amadeus, sample_jobs(...), step="context")``: the
    sheet's columns plus slug, item, gs_failed, chunk_ids and extract_fallback; the failed rows with ``error``."""
    samples = []
    for r in rows[rows.error.isna()].to_dict("records"):
        context, details = r["context"], r["details"]
        attributes = details.get("attributes") or {c["label"]: c["text"] for c in context if c["role"] == "attribute"}
        samples.append({"sample_id": r["sample_id"], "task": r["task"],
                        "character": names.get(r["character"], r["character"]), "question": r["question"],
                        "chunks": _chunks_text([c for c in context if c["role"] == "selected"]),
                        "attributes": "\n".join(f"{k}: {v}" for k, v in attributes.items()) or "(none)",
                        "slug": r["character"], "item": r["item"], "gs_failed": bool(details.get("gs_failed")),
                        "chunk_ids": ";".join(chunk_ids(context, "selected")),
                        "extract_fallback": bool(details.get("extract_fallback"))})
    failed = rows[rows.error.notna()][["task", "sample_id", "character", "question_id", "error"]]
    return pd.DataFrame(samples), failed.reset_index(drop=True)


def sample_set_id(samples: pd.DataFrame) -> str:
    """``table2-<MBTI count>m<BFI count>b-<digest of every text a rater sees>``, e.g. ``table2-4m4b-1a2b3c4d``."""
    digest = hashlib.sha256(json.dumps(samples.loc[:, list(SAMPLE_COLUMNS)].astype(str).values.tolist(),
                                       ensure_ascii=False).encode()).hexdigest()[:8]
    counts = samples.task.value_counts()
    return f"table2-{counts.get('MBTI', 0)}m{counts.get('BFI', 0)}b-{digest}"


def rater_names(n: int) -> list[str]:
    """``rater01`` ... ``raterNN``. ``rater_names(2) == ["rater01", "rater02"]``"""
    return [f"rater{i:02d}" for i in range(1, n + 1)]


def export_empty_sheets(samples: pd.DataFrame, raters: int, folder: Path, sample_set: str) -> tuple[list[Path], list[str]]:
    """:func:`rpa_lib.evaluation.sheets.export_empty_sheets` for ``raters`` people: ``(written, kept)``."""
    return sheets.export_empty_sheets(samples, rater_names(raters), folder, sample_set=sample_set)


@dataclass(frozen=True)
class LLMRater:
    """One rater of the panel: its sheet name, persona (:data:`RATER_PERSONAS`) and LLM."""

    name: str
    persona: str
    llm: Any


def llm_panel(personas: Sequence[str], llms: Sequence[Any]) -> list[LLMRater]:
    """A rater per persona, the LLMs taken in turn; named ``llm-<persona>`` (plus the model id if models mix)."""
    if isinstance(personas, str) or any(p not in RATER_PERSONAS for p in personas) or \
            len(set(personas)) != len(personas):
        raise ValueError(f"personas must be a list of distinct names of {', '.join(RATER_PERSONAS)}; got "
                         f"{personas!r}")
    if len(personas) < 2:
        raise ValueError("the panel needs a list of at least 2 rater personas (alpha compares raters)")
    if not llms:
        raise ValueError("the panel needs at least one LLM")
    mixed = len({judge_id(m) for m in llms}) > 1
    return [LLMRater(f"llm-{persona}" + (f"-{judge_id(llm)}" if mixed else ""), persona, llm)
            for persona, llm in zip(personas, cycle(llms))]


VERDICT_COLUMNS = ["sample_id", "task", "rater", "persona", "model", "answer", "rating", "status", "problem", "error"]


def rate_with_panel(samples: pd.DataFrame, panel: Sequence[LLMRater], *, calibrate: bool = False,
                    progress: bool = True) -> pd.DataFrame:
    """Every rater of ``panel`` rates every sample 1-5 by constrained choice (``calibrate``: against its
    content-free baseline). One row per (sample, rater), columns :data:`VERDICT_COLUMNS`."""
    records = samples.to_dict("records")
    blocks = []
    for rater in panel:
        baselines, broken = (template_baselines(rater.llm, [rater.persona], content_free_messages,
                                                lambda _: RATING_OPTIONS) if calibrate else ({}, {}))
        baseline, problem = baselines.get(rater.persona), broken.get(rater.persona)

        def rate(s: dict, rater=rater, baseline=baseline, problem=problem):
            if problem:
                raise RuntimeError(problem)
            messages = rating_messages(rater.persona, s["character"], s["question"], s["chunks"], s["attributes"])
            return calibrated_verdict(rater.llm, "rating", messages, RATING_OPTIONS, baseline)

        def describe(s: dict, rater=rater) -> dict:
            return {"sample_id": s["sample_id"], "task": s["task"], "rater": rater.name, "persona": rater.persona,
                    "model": rater.llm.label}

        blocks.append(run_verdicts(rater.llm, records, rate, describe, desc=f"rater {rater.name}", progress=progress,
                                   columns=[*VERDICT_COLUMNS[:6], "value", *VERDICT_COLUMNS[7:]]))
    rows = pd.concat(blocks, ignore_index=True) if blocks else pd.DataFrame(columns=VERDICT_COLUMNS)
    return rows.rename(columns={"value": "rating"})[VERDICT_COLUMNS]


def write_panel_sheets(samples: pd.DataFrame, verdicts: pd.DataFrame, folder: Path, sample_set: str) -> list[Path]:
    """The panel's ratings as filled ``<rater>.csv`` sheets in ``folder`` (its old sheets removed first), a missing
    rating a blank with a comment, as a person would fill theirs."""
    for old in Path(folder).glob("*"):  # none where the folder is not there yet
        if old.suffix.lower() in (".csv", ".xlsx"):
            old.unlink()
    raters = list(dict.fromkeys(verdicts.rater))
    csv_only = replace(TABLE2_SHEET, formats=("csv",))  # one copy per rater: the CSV holds the ratings
    written = export_sheets(samples, raters, folder, sample_set=sample_set, spec=csv_only)
    for rater, path in zip(raters, written, strict=True):
        sheet = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8-sig")
        mine = verdicts[verdicts.rater == rater].set_index("sample_id")
        got = [mine.loc[sid] if sid in mine.index else None for sid in sheet.sample_id]
        sheet["rating"] = ["" if g is None or pd.isna(g.rating) else str(int(g.rating)) for g in got]
        sheet["comment"] = ["" if g is None or g.status == "ok" else (g.error or g.problem or g.status) for g in got]
        sheet.to_csv(path, index=False, encoding="utf-8-sig")
    return written


def ratings_folder(human_dir: Path | str | None, sample_set: str) -> Path:
    """``<human_dir>/<sample_set>`` (None: ``data/human_ratings``); FileNotFoundError for a ``human_dir`` that is no
    folder, whose sheets would otherwise be left out without a word. ``ratings_folder(None, "s1").name == "s1"``"""
    if human_dir and not Path(human_dir).is_dir():
        raise FileNotFoundError(f"human_ratings_dir {human_dir}: no such folder (a relative one is read from "
                                f"{Path.cwd()})")
    return Path(human_dir or HUMAN_RATINGS_DIR) / sample_set


def table2_ratings(samples: pd.DataFrame, sample_set: str, *, panel: Sequence[LLMRater], sheets_dir: Path,
                   human_dir: Path | None = None, calibrate: bool = False,
                   progress: bool = True) -> tuple[pd.DataFrame, str, pd.DataFrame]:
    """``(table, source, verdicts)``: people's rated sheets in ``<human_dir>/<sample_set>/`` when there are any (the
    panel not asked; SheetError for one that cannot be read or does not match ``samples``), else the panel's ratings
    written to ``sheets_dir`` and read back by the same reader. ``table``: samples x raters. FileNotFoundError for
    a ``human_dir`` that is no folder."""
    folder = ratings_folder(human_dir, sample_set)
    if folder.is_dir():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "not yet rated" sheets: listed in attrs
            people = merge_sheets(folder, expected_ids=samples.sample_id, sample_set=sample_set)
        if people.shape[1]:
            return people, HUMAN_SOURCE, pd.DataFrame(columns=VERDICT_COLUMNS)
    verdicts = rate_with_panel(samples, panel, calibrate=calibrate, progress=progress)
    write_panel_sheets(samples, verdicts, sheets_dir, sample_set)
    table = merge_sheets(sheets_dir, expected_ids=samples.sample_id, sample_set=sample_set, allow_missing=True)
    return table, LLM_SOURCE, verdicts


def _quiet(fn, *args, **kwargs):
    """``(value, note)`` of :func:`~rpa_lib.evaluation.metrics.agreement.noted`; ``(None, error)`` on ValueError."""
    try:
        return noted(fn, *args, **kwargs)
    except ValueError as exc:
        return None, str(exc)


def table2(ratings: pd.DataFrame, samples: pd.DataFrame, source: str) -> pd.DataFrame:
    """Table 2 per task: mu, sigma, median (the caption's E(E(S)), E(sigma(S)), E(Mdn(S))), Cronbach's alpha with
    Feldt's 95% interval, Krippendorff's ordinal alpha, the 95% interval of mu and ``note`` (why a value is NaN)."""
    out = []
    for task in sorted(set(samples.task), key=lambda t: (t not in ("BFI", "MBTI"), t)):  # BFI, MBTI, the rest
        ids = samples.sample_id[samples.task == task]
        table = ratings.loc[[i for i in ids if i in ratings.index]]
        table = table.loc[:, table.notna().any()]
        summary, n1 = _quiet(likert_summary, table)
        alpha, n2 = _quiet(cronbach_alpha, table)
        kripp, n3 = _quiet(krippendorff_alpha, table, "ordinal", value_domain=list(SCALE))
        a, (low, high) = alpha if alpha else (np.nan, (np.nan, np.nan))
        out.append({"task": task, "source": source, "samples": len(table), "raters": table.shape[1],
                    "ratings": int(table.notna().sum().sum()),
                    **{k: getattr(summary, k, np.nan) for k in ("mu", "sigma", "median")},
                    "cronbach_alpha": a, "alpha_low": low, "alpha_high": high,
                    "krippendorff_alpha": np.nan if kripp is None else kripp,
                    "note": "; ".join(n for n in (n1, n2, n3) if n) or None,
                    **_mean_interval(table, samples)})
    return pd.DataFrame(out)


def _mean_interval(table: pd.DataFrame, samples: pd.DataFrame) -> dict:
    """``mu_low``, ``mu_high``: a 95% cluster bootstrap over characters of the per-sample mean ratings."""
    per = pd.DataFrame({"mu": table.mean(axis=1), "character": samples.set_index("sample_id").reindex(table.index)
                        .get("slug", pd.Series(index=table.index, dtype=object)).to_numpy()})
    if per.empty:
        return {"mu_low": np.nan, "mu_high": np.nan, "n_characters": 0, "interval_note": "no samples"}
    return interval_columns(per.dropna(subset=["mu"]).fillna({"character": "?"}), [], ["mu"]).iloc[0].to_dict()


def ratings_long(ratings: pd.DataFrame, samples: pd.DataFrame, source: str) -> pd.DataFrame:
    """One row per (sample, rater) with a rating, for figures."""
    long = ratings.rename_axis(index="sample_id", columns="rater").stack().rename("rating").reset_index()
    long["task"] = long.sample_id.map(samples.set_index("sample_id").task)
    long["source"] = source
    return long[["sample_id", "task", "rater", "rating", "source"]]


def run_caption(samples: pd.DataFrame, characters: int, raters: int, source: str, llm: str, rater_models: str,
                embedder: str, max_iterations: int, slot_size: int) -> str:
    """The line every Table 2 caption and figure title carries, the source first:
    ``"LLM raters, not human | 2 characters, 4 MBTI + 4 BFI samples, 3 raters | GS N=8, K=2 | ..."``"""
    counts = samples.task.value_counts()
    return caption_line(source, f"{plural(characters, 'character')}, {counts.get('MBTI', 0)} MBTI + "
                                f"{counts.get('BFI', 0)} BFI samples, {raters} raters",
                        f"GS N={max_iterations}, K={slot_size}", ("LLM (GS, AE)", llm),
                        ("raters", rater_models if source == LLM_SOURCE else "people"), ("embedder", embedder))
