"""The papers' printed tables with this repository's results beside them: AMADEUS Tables 1 to 6, Figure 1 and
CharacterCraft's Kendall table, from the numbers transcribed in ``data/paper_results/`` (see its README for the
printed tables' inconsistencies). It computes no score of its own: it arranges those of ``rpa_lib.evaluation``.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from rpa_lib.data import Dataset, Questionnaire, as_dataset
from rpa_lib.evaluation.claims import PAPER_CHARACTERS, PAPER_ITEMS
from rpa_lib.evaluation.metrics.agreement import feldt_interval
from rpa_lib.evaluation.metrics.charactercraft import DIMENSIONS
from rpa_lib.evaluation.metrics.intervals import clopper_pearson
from rpa_lib.evaluation.personality import type_scores
from rpa_lib.evaluation.uncertainty import interval_columns, merge_intervals
from rpa_lib.methods.registry import method_label, paper_name

PAPER_LLM = "GPT-4.1"
# questionnaire -> (labels.csv column of its types, transcribed table, title)
PERSONALITY_TABLES = {"mbti": ("mbti", "table4_mbti", "Predicted MBTI types per character"),
                      "bigfive": ("sloan", "table5_sloan", "Predicted Big Five SLOAN types per character")}


def paper_table(name: str, dataset: Dataset | None = None) -> pd.DataFrame:
    """A transcribed table (``data/paper_results/<name>.csv``), e.g. ``paper_table("table1_similarity")``."""
    return as_dataset(dataset).paper_table(name)


def table1_beside_paper(ours: pd.DataFrame, characters: int, k: int) -> pd.DataFrame:
    """Our Table 1 (``splitter, embedder, sum_mu, sum_var, sum_var_q``) above the paper's, with Σμ per character
    (``mean_mu``): the numbers of characters differ."""
    cols = ["source", "embedder", "splitter", "sum_mu", "sum_var", "sum_var_q"]
    paper = paper_table("table1_similarity").assign(source=f"AMADEUS paper ({PAPER_CHARACTERS} characters)")
    mine = ours.assign(source=f"ours ({characters} characters, k={k})")
    side = pd.concat([mine[cols], paper.reindex(columns=cols)])
    side["mean_mu"] = side.sum_mu / np.where(side.source.str.startswith("ours"), characters, PAPER_CHARACTERS)
    return side


def table1_readings(side: pd.DataFrame, characters: int) -> pd.DataFrame:
    """Which reading of σ² the paper's numbers fit: per source, embedder and splitter, the squared coefficient of
    variation per character, (Σσ²/n) / (Σμ/n)², of the paper's σ² and of each of ours (docs/design/run.md)."""
    out = []
    for _, r in side.iterrows():
        ours = r.source.startswith("ours")
        n = characters if ours else PAPER_CHARACTERS
        for reading, value in (("all retrieved scores", r.sum_var), ("question means", r.sum_var_q)):
            if pd.notna(value):
                out.append({"source": r.source, "embedder": r.embedder, "splitter": r.splitter,
                            "reading": reading if ours else "as printed",
                            "cv2_per_character": (value / n) / (r.sum_mu / n) ** 2})
    return pd.DataFrame(out)


def splitter_ordering(side: pd.DataFrame) -> pd.DataFrame:
    """Per source and embedder: does ATS beat Vanilla and ACTS beat ATS, in Σμ (higher) and Σσ² (lower)?"""
    out = []
    for (src, emb), g in side.groupby(["source", "embedder"], sort=False):
        g = g.set_index("splitter")
        if {"Vanilla", "ATS", "ACTS"} <= set(g.index):
            out.append({"source": src, "embedder": emb,
                        "mu: ATS > Vanilla": g.sum_mu["ATS"] > g.sum_mu["Vanilla"],
                        "mu: ACTS > ATS": g.sum_mu["ACTS"] > g.sum_mu["ATS"],
                        "var: ATS < Vanilla": g.sum_var["ATS"] < g.sum_var["Vanilla"],
                        "var: ACTS < ATS": g.sum_var["ACTS"] < g.sum_var["ATS"]})
    return pd.DataFrame(out)


def table3_beside_paper(stats: pd.DataFrame, sizes: pd.DataFrame | None = None, method: str = "amadeus",
                        baseline: str = "naive_rag", control: str = "naive_rag_budget") -> pd.DataFrame:
    """AMADEUS Table 3: ``method``'s average chunk usage and GS failure rates per question set (from per-character
    ``usage_stats``), with their ceilings, 95% intervals over characters and, given ``sizes``, context sizes; the
    ``baseline``'s and ``control``'s usage rates beside them; then the paper's rows (Naive RAG from Figure 1)."""
    keys = ["question_set", "method"]
    stats = stats if "ceiling_rate" in stats else stats.assign(ceiling_rate=np.nan)
    avg = stats.groupby(keys, sort=False).agg(chunk_usage_rate=("usage_rate", "mean"),
                                              gs_failure_rate=("gs_failure_rate", "mean"),
                                              ceiling_rate=("ceiling_rate", "mean")).reset_index()
    per_char = stats.rename(columns={"usage_rate": "chunk_usage_rate"})
    avg = merge_intervals(avg, interval_columns(per_char, keys, ["chunk_usage_rate", "gs_failure_rate"]), keys)
    ours = avg[avg.method == method].drop(columns="method").assign(source="ours")
    by_set = {m: g.set_index("question_set") for m, g in avg.groupby("method", sort=False)}
    sized = {m: g.set_index("question_set").round({"context_chars": 0, "context_tokens": 0})
             for m, g in sizes.groupby("method", sort=False)} if sizes is not None else {}

    def beside(m: str, prefix: str, shown: dict[str, pd.DataFrame], columns: dict[str, str]) -> list[str]:
        """Add ``prefix + name`` columns of method ``m``'s ``columns`` per question set (none if ``m`` did not run)."""
        if m not in shown:
            return []
        for name, source in columns.items():
            ours[prefix + name] = ours.question_set.map(shown[m][source])
        return [prefix + name for name in columns]

    both = {"context_chars": "context_chars", "context_tokens": "context_tokens"}
    columns = ["source", "question_set", "chunk_usage_rate", "ceiling_rate", "gs_failure_rate",
               *beside(method, "", sized, both)]
    for m in (baseline, control):
        columns += beside(m, f"{m}_", by_set, {"usage_rate": "chunk_usage_rate", "ceiling_rate": "ceiling_rate"})
        columns += beside(m, f"{m}_", sized, both)
    paper = paper_table("table3_chunk_usage").assign(source=f"AMADEUS paper ({PAPER_LLM})")
    figure1 = paper_table("figure1_chunk_usage").set_index("method").avg_chunk_usage_rate
    paper["naive_rag_usage_rate"] = paper.question_set.map({"MBTI": figure1["Naive RAG"]})
    columns += ["chunk_usage_rate_low", "chunk_usage_rate_high", "gs_failure_rate_low", "gs_failure_rate_high",
                "n_characters", "interval_note", *(["n_runs"] if "n_runs" in avg else [])]  # runs pooled, when several
    return pd.concat([ours, paper], ignore_index=True).reindex(columns=list(dict.fromkeys(columns)))


def figure1_rates(stats: pd.DataFrame, question_set: str = "MBTI") -> pd.DataFrame:
    """AMADEUS Figure 1: our mean per-character chunk usage rate per method on ``question_set``, with its 95%
    interval over characters and mean ceiling (``ceiling_rate``, NaN if ``stats`` has none), beside the paper's printed
    rate (``paper_rate``; NaN where it draws none)."""
    rows = stats[stats.question_set == question_set]
    rows = rows if "ceiling_rate" in rows else rows.assign(ceiling_rate=np.nan)
    ours = rows.groupby("method", sort=False, as_index=False)[["usage_rate", "ceiling_rate"]].mean()
    ours = merge_intervals(ours, interval_columns(rows, ["method"], ["usage_rate"]), ["method"])
    printed = paper_table("figure1_chunk_usage").set_index("method").avg_chunk_usage_rate
    return ours.assign(paper_rate=ours.method.map(lambda m: printed.get(paper_name(m), np.nan)))


def _norm_name(name: str) -> str:
    return re.sub(r"[^a-z]", "", name.lower())


def paper_types(table: pd.DataFrame, names: dict[str, str]) -> pd.DataFrame:
    """A transcribed AMADEUS Table 4/5 indexed by our slugs (``names``: slug -> name, matched without spaces or
    case: "Mao Mao" is "Maomao"); characters we do not have are dropped."""
    by_name = {_norm_name(n): s for s, n in names.items()}
    table = table.assign(slug=table.character.map(lambda n: by_name.get(_norm_name(n))))
    return table.dropna(subset=["slug"]).set_index("slug")


def paper_methods(table: pd.DataFrame) -> list[str]:
    """The method columns of a transcribed Table 4/5: those with a ``<method>_misses`` partner."""
    return [c for c in table.columns if f"{c}_misses" in table.columns]


def _cell(predicted: str, misses) -> str:
    return f"{predicted} ({-int(misses)})"


def letter_interval(characters: list[str], predicted: list[str], truth: list[str],
                    position: int | None = None) -> dict:
    """The 95% interval of Tables 4-5's letter accuracy (``position``: one letter's): a cluster bootstrap over
    characters (each with all its runs) of the 0/1 letter outcomes, a tie "-" a miss."""
    rows = pd.DataFrame([{"character": c, "accuracy": float(i < len(p) and p[i] == t[i])}
                         for c, p, t in zip(characters, predicted, truth, strict=True)
                         for i in (range(len(t)) if position is None else [position])])
    if rows.empty:
        return {"accuracy_low": np.nan, "accuracy_high": np.nan, "n_characters": 0, "interval_note": "no characters"}
    return interval_columns(rows, [], ["accuracy"]).iloc[0].to_dict()


def _paper_types_of(table: str, names: dict[str, str], characters: list[str]) -> pd.DataFrame:
    paper = paper_types(paper_table(table), names)
    return paper.loc[[s for s in characters if s in paper.index]]


def personality_beside_paper(types: pd.DataFrame, questionnaire: Questionnaire, dataset: Dataset, characters: list[str],
                             methods: list[str], run: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    """AMADEUS Table 4 (``mbti``) or 5 (``bigfive``) and its summary: per character each method's type with its
    missed letters (``ENFP (-1) / ENTP (-2)`` over runs), the paper's, the truth, Accuracy and Avg F1; the summary
    has ours, the paper's on these characters and as printed, with :func:`letter_interval`. ``run``: the labels."""
    qname = questionnaire.name
    column, paper_name, _ = PERSONALITY_TABLES[qname]
    labels = {r["slug"]: r for r in dataset.labels()}
    names = {s: labels[s]["name"] for s in characters}
    ours = types[types.questionnaire == qname]
    paper = _paper_types_of(paper_name, names, characters)
    paper_cols = paper_methods(paper) if len(paper) else []
    rows, summary = [], []
    for s in characters:
        row = {"character": names[s]}
        for m in methods:
            hit = ours[(ours.method == m) & (ours.character == s)]  # one row per run
            row[m] = " / ".join(map(_cell, hit.predicted, hit.misses)) if len(hit) else "-"
        for p in paper_cols:
            row[f"paper {p}"] = _cell(paper.loc[s, p], paper.loc[s, f"{p}_misses"]) if s in paper.index else "-"
        row["GT"] = labels[s][column]
        rows.append(row)
    acc, f1 = {"character": "Accuracy"}, {"character": "Avg F1-Score"}

    def scored(column: str, who, predicted, truth) -> dict:
        """The scores and letter interval of one column, its Accuracy and Avg F1 cells filled in."""
        got = type_scores(list(predicted), list(truth))
        acc[column], f1[column] = f"{got['accuracy']:.2%}", f"{got['avg_f1']:.4f}"
        return {**{k: got[k] for k in ("accuracy", "avg_f1", "full_type_accuracy")},
                **letter_interval(list(who), list(predicted), list(truth))}

    for m in methods:
        o = ours[ours.method == m].set_index("character").loc[characters]
        summary.append({"source": "ours", "llm": run["llm"], "embedder": run["embedder"], "scoring": run["scoring"],
                        "items": len(questionnaire.items), "method": m, "characters": len(characters),
                        **scored(m, o.index, o.predicted, o.truth), "failed_units": int(o.n_failed.sum()),
                        **({"n_runs": o.repeat.nunique()} if "repeat" in o else {})})
    printed = paper_table(f"{paper_name}_summary").set_index("method")
    for p in paper_cols:
        summary.append({"source": "paper, recomputed on these characters", "llm": PAPER_LLM, "embedder": "not stated",
                        "items": PAPER_ITEMS[qname], "method": p, "characters": len(paper),
                        **scored(f"paper {p}", paper.index, paper[p], paper.GT)})
    full = paper_table(paper_name)
    for p in paper_cols:
        ci = letter_interval(list(full.character), list(full[p]), list(full.GT))
        summary.append({"source": "paper, as printed", "llm": PAPER_LLM, "embedder": "not stated",
                        "items": PAPER_ITEMS[qname], "method": p, "characters": PAPER_CHARACTERS,
                        "accuracy": printed.accuracy[p], "avg_f1": printed.avg_f1[p], **ci,
                        "interval_note": "interval ours, from the printed per-character types (all characters)"})
    table = pd.DataFrame(rows + [{**acc, "GT": "-"}, {**f1, "GT": "-"}])
    return table, pd.DataFrame(summary)


def with_context_rows(table: pd.DataFrame, sizes: pd.DataFrame) -> pd.DataFrame:
    """``table`` (Table 4/5) with rows of each method's mean context characters and tokens per question (``sizes``
    by method); "-" for the paper's columns and the truth."""
    by_method = sizes.set_index("method")
    rows = [{"character": f"Context {unit} per question",
             **{c: (f"{by_method.loc[c, col]:.0f}" if c in by_method.index else "-") for c in table.columns[1:]}}
            for unit, col in (("characters", "context_chars"), ("tokens", "context_tokens"))]
    return pd.concat([table, pd.DataFrame(rows)], ignore_index=True)


def _letter_ci(frame: pd.DataFrame, share: float, n: int, position: int) -> dict:
    """Clopper-Pearson of ``share`` of ``n`` characters (one run each), else :func:`letter_interval` (runs pooled)."""
    if n == len(frame):
        ci = clopper_pearson(round(share * n), n)
        return {"accuracy_low": ci.low, "accuracy_high": ci.high}
    ci = letter_interval(list(frame.index), list(frame.predicted), list(frame.truth), position)
    return {k: ci[k] for k in ("accuracy_low", "accuracy_high")}


def per_dimension_accuracy(types: pd.DataFrame, questionnaires: list[Questionnaire], dataset: Dataset,
                           characters: list[str], methods: list[str]) -> pd.DataFrame:
    """Per questionnaire, dimension and method (ours and the paper's AMADEUS): the right-letter share with its 95%
    interval (Clopper-Pearson; with several runs, :func:`letter_interval`), the dimension's F1 and the letters given
    (one per character and run, in order)."""
    names = dataset.names()
    out = []
    for q in questionnaires:
        dims = [f"{d.high}/{d.low}" for d in q.dimensions]
        mine = types[types.questionnaire == q.name]
        sources = [(m, mine[mine.method == m].set_index("character").loc[characters]) for m in methods]
        paper = _paper_types_of(PERSONALITY_TABLES[q.name][1], names, characters)
        if len(paper):
            sources.append((f"paper AMADEUS ({PAPER_LLM})",
                            paper.rename(columns={"AMADEUS": "predicted", "GT": "truth"})))
        for label, frame in sources:
            got = type_scores(list(frame.predicted), list(frame.truth))
            n = frame.index.nunique()
            scores = zip(dims, got["accuracy_per_position"], got["f1_per_position"], strict=True)
            out += [{"questionnaire": q.name, "dimension": d, "method": label, "accuracy": a, "f1": f, "characters": n,
                     **_letter_ci(frame, a, n, i),
                     "letters": "".join(p[i] if i < len(p) else "-" for p in frame.predicted)}
                    for i, (d, a, f) in enumerate(scores)]
    return pd.DataFrame(out)


TABLE6_TASKS = ("CharacterRAG", "MBTI", "BFI")


def _pct(value) -> str:
    return "-" if pd.isna(value) else f"{value:.2%}"


def _num(value) -> str:
    return "-" if pd.isna(value) else f"{value:.2f}"


def _ci(row, metric: str, shown=_pct) -> str:
    """``[low, high]`` of ``metric``'s interval in ``row``, printed by ``shown``."""
    low, high = row.get(f"{metric}_low"), row.get(f"{metric}_high")
    if pd.isna(row.get(metric)):
        return "-"
    if pd.isna(low) or pd.isna(high):
        return "1 character: none" if row.get("n_characters") == 1 else "-"
    return f"[{shown(low)}, {shown(high)}]"


SCORES = [("acc", "ACC", _pct), ("acc_l", "ACC_L", _num), ("hs", "HS", _num)]  # Table 6's scores, as printed


def table6_beside_paper(ours: pd.DataFrame, dataset: Dataset | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """AMADEUS Table 6 with our columns (:func:`rpa_lib.evaluation.qa.table6`) beside the paper's three LLMs:
    ``(table, long)``, ``table`` as printed (one row per method and task in the paper's order, ACC, ACC_L, HS and
    our 95% intervals per source), ``long`` one row per source, LLM, method and task, ACC a fraction. A row is named
    as the paper names the method; ``ours_method`` names ours where it differs (our CRAG is CRAG-offline)."""
    paper = paper_table("table6_roleplay", dataset).assign(source="AMADEUS paper")
    mine = ours.assign(source="ours", method=ours.paper_method, ours_method=ours.method.map(method_label))
    cols = ["source", "llm", "method", "ours_method", "task", "acc", "acc_l", "hs"]
    ci_cols = [c for c in mine.columns if c.endswith(("_low", "_high")) or c in ("n_characters", "interval_note")]
    long = pd.concat([mine[[*cols, "n_acc", "n_hs", *ci_cols]], paper.reindex(columns=cols)], ignore_index=True)
    methods = list(dict.fromkeys([*paper.method, *mine.method]))
    tasks = [t for t in TABLE6_TASKS if t in set(long.task)] + sorted(set(long.task) - set(TABLE6_TASKS))
    keys = [(m, t) for t in tasks for m in methods if ((long.method == m) & (long.task == t)).any()]
    groups = list(dict.fromkeys(zip(long.source, long.llm)))
    rows = []
    for method, task in keys:
        ours_rows = mine[(mine.method == method) & (mine.task == task)]
        row = {"method": method, "ours_method": ours_rows.ours_method.iloc[0] if len(ours_rows) else "-", "task": task}
        for source, llm in groups:
            hit = long[(long.source == source) & (long.llm == llm) & (long.method == method) & (long.task == task)]
            head = f"ours ({llm})" if source == "ours" else llm
            got = hit.iloc[0] if len(hit) else pd.Series(dtype=object)  # no row: every cell "-"
            row.update({f"{head} {name}": shown(got.get(metric)) for metric, name, shown in SCORES})
            for metric, name, shown in SCORES:  # our 95% interval of each score (characters resampled)
                if source == "ours" and f"{metric}_low" in long:
                    row[f"{head} {name} 95% CI"] = _ci(got, metric, shown)
        for col in ("context_chars", "context_tokens"):  # what our method put before its LLM, per question
            row[f"ours {col}"] = ours_rows[col].iloc[0] if col in mine and len(ours_rows) else np.nan
        rows.append(row)
    return pd.DataFrame(rows), long


PAPER_TABLE2_RATERS, PAPER_TABLE2_SAMPLES = 11, 30


def table2_beside_paper(ours: pd.DataFrame, dataset: Dataset | None = None) -> pd.DataFrame:
    """AMADEUS Table 2: our rows (:func:`rpa_lib.evaluation.human.table2`) above the paper's, which get Feldt's 95%
    interval of their printed alpha (n = 30 samples, k = 11 raters)."""
    cols = ["task", "source", "samples", "raters", "mu", "mu_low", "mu_high", "sigma", "median", "cronbach_alpha",
            "alpha_low", "alpha_high", "krippendorff_alpha", "n_characters", "interval_note"]
    paper = paper_table("table2_human_eval", dataset).assign(
        source=f"AMADEUS paper ({PAPER_TABLE2_RATERS} human raters; interval ours, from the printed alpha)",
        samples=PAPER_TABLE2_SAMPLES, raters=PAPER_TABLE2_RATERS)
    bounds = [feldt_interval(a, PAPER_TABLE2_SAMPLES, PAPER_TABLE2_RATERS) for a in paper.cronbach_alpha]
    paper["alpha_low"], paper["alpha_high"] = [b[0] for b in bounds], [b[1] for b in bounds]
    return pd.concat([ours.reindex(columns=cols), paper.reindex(columns=cols)], ignore_index=True)


def kendall_beside_paper(ours: pd.DataFrame, source: str, dataset: Dataset | None = None) -> pd.DataFrame:
    """CharacterCraft Table 6 (Kendall's tau x 100, judge vs people) under our rows
    (:func:`rpa_lib.evaluation.charactercraft.kendall_table`), compared with ``source``."""
    # CharacterCraft averages all its dimensions (a "-" cell read as the with-reference row's tau); ours averages
    # the dimensions with a tau (``defined``), so an avg over fewer is not the paper's
    paper = paper_table("charactercraft_table6_kendall", dataset).assign(
        compared_with="human raters", table="CharacterCraft paper", defined=len(DIMENSIONS))
    mine = ours.assign(compared_with=source, table="ours")
    cols = ["table", "judge", "reference", "compared_with", "avg", "defined", *DIMENSIONS]
    return pd.concat([mine.reindex(columns=cols), paper.reindex(columns=cols)], ignore_index=True)
