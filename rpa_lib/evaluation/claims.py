"""The AMADEUS paper's empirical claims (:data:`CLAIMS`), each re-tested (a) on the paper's printed numbers, as far
as they allow, and (b) on this repository's committed per-item results (:func:`rpa_lib.evaluation.outcomes.compare`),
with a verdict in words from the test at the independent unit (characters). Makes no LLM call; reads files only in
:func:`claims_table`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from rpa_lib.data import Dataset, as_dataset
from rpa_lib.data.readers import QUESTIONNAIRE_ITEMS
from rpa_lib.evaluation.metrics.agreement import feldt_interval
from rpa_lib.evaluation.metrics.intervals import ALPHA, clopper_pearson, holm, smallest_exact_p, two_proportion_test
from rpa_lib.evaluation.outcomes import LABELS, compare, load_outcomes, paper_personality_outcomes, summarize
from rpa_lib.methods.registry import paper_name
from rpa_lib.report import plural

PAPER_QUESTIONS = 450  # Table 6: 15 characters x 30 CharacterRAG questions
PAPER_CHARACTERS = 15
PAPER_ITEMS = {name: items for name, (items, _) in QUESTIONNAIRE_ITEMS.items()}  # questionnaire -> items per character
NO_LLM = {"table1_similarity", "evidence_recall"}  # tables whose numbers no LLM produced
SUPPORTED, CONTRADICTED, NOISE = "supported", "contradicted", "not distinguishable from noise at this n"
CHARACTERS_UNTESTABLE = (f"not testable by character: Table 6 prints totals over {PAPER_QUESTIONS} questions, no "
                         "per-character scores")


@dataclass(frozen=True)
class Claim:
    """One claim: where the paper makes it, its words, and the paired comparison that tests it (``method``
    better than ``reference``)."""

    id: str
    source: str
    claim: str
    table: str
    outcome: str
    task: str | None
    method: str
    reference: str
    higher_is_better: bool = True


CLAIMS = [
    Claim("T1-mu", "Table 1", "ACTS gives a higher mean similarity than Vanilla (every embedder)",
          "table1_similarity", "mu", None, "ACTS", "Vanilla"),
    Claim("T1-var", "Table 1", "ACTS gives a lower variance of similarity than Vanilla (every embedder)",
          "table1_similarity", "var", None, "ACTS", "Vanilla", higher_is_better=False),
    Claim("T2", "Table 2", "Human raters find GS/AE's inferences reasonable (mean near 4) and agree (Cronbach's alpha > 0.8)",
          "table2_human_eval", "rating", None, "", ""),
    Claim("T3-usage", "Table 3 / Figure 1", "GS uses more of the persona's chunks than Naive RAG on MBTI questions "
          "(43.84% vs 34.93%)", "table3_chunk_usage", "usage_rate", "MBTI", "amadeus", "naive_rag"),
    Claim("T3-failure", "Table 3", "GS still fails on 25.11% of CharacterRAG and 15.33% of MBTI questions (the "
          "paper: room for improvement)", "table3_chunk_usage", "gs_failed", None, "amadeus", ""),
    Claim("T4-crag", "Table 4", "AMADEUS predicts MBTI types better than CRAG", "table4_mbti", "dimension_correct",
          "MBTI", "amadeus", "crag"),
    Claim("T4-lightrag", "Table 4", "AMADEUS predicts MBTI types better than LightRAG", "table4_mbti",
          "dimension_correct", "MBTI", "amadeus", "lightrag"),
    Claim("T5-crag", "Table 5", "AMADEUS predicts SLOAN types better than CRAG", "table5_sloan", "dimension_correct",
          "SLOAN", "amadeus", "crag"),
    Claim("T5-lightrag", "Table 5", "AMADEUS predicts SLOAN types better than LightRAG", "table5_sloan",
          "dimension_correct", "SLOAN", "amadeus", "lightrag"),
    Claim("T4-lightrag-worst", "Table 4", "LightRAG is the worst on personality: MBTI below CRAG", "table4_mbti",
          "dimension_correct", "MBTI", "crag", "lightrag"),
    Claim("T5-lightrag-worst", "Table 5", "LightRAG is the worst on personality: SLOAN below CRAG", "table5_sloan",
          "dimension_correct", "SLOAN", "crag", "lightrag"),
    Claim("T6-acc-naive", "Table 6", "AMADEUS is more accurate (ACC) than Naive RAG on CharacterRAG, for every LLM",
          "table6_roleplay", "acc", "CharacterRAG", "amadeus", "naive_rag"),
    Claim("T6-acc-crag", "Table 6", "AMADEUS is more accurate (ACC) than CRAG on CharacterRAG, for every LLM",
          "table6_roleplay", "acc", "CharacterRAG", "amadeus", "crag"),
    Claim("T6-acc-lightrag", "Table 6", "LightRAG is ill-suited: far less accurate (ACC) than AMADEUS",
          "table6_roleplay", "acc", "CharacterRAG", "amadeus", "lightrag"),
    Claim("T6-hs", "Table 6", "AMADEUS has the lowest hallucination score (HS) on CharacterRAG (vs Naive RAG)",
          "table6_roleplay", "hs", "CharacterRAG", "amadeus", "naive_rag", higher_is_better=False),
]


def verdict(p: float, favours: bool, n_characters: int) -> str:
    """Supported, contradicted, noise or not testable, from the p of the test at the character level."""
    if pd.isna(p) or n_characters < 1:
        return "not testable: no paired outcome"
    if n_characters == 1:
        return "not testable with this run: 1 character"
    if p < ALPHA:
        return SUPPORTED if favours else CONTRADICTED
    if n_characters < 6:
        return NOISE + f" ({n_characters} characters: a sign test cannot reach p < 0.05 below 6)"
    return NOISE


def character_verdict(p: float, n_characters: int, toward: int, against: int, mean_toward: bool,
                      interval: tuple[float, float] = (float("nan"), float("nan"))) -> str:
    """:func:`verdict` in the direction the sign test tests (``toward`` characters for the claim, ``against`` it),
    "mixed" where that verdict is not noise and the mean difference over items points the other way (nine characters
    slightly worse, one much better), and noise where the 95% interval of the difference in the claim's favour
    (``interval``: low, high; NaN when there is none, e.g. every character with the same mean) includes 0.
    ``character_verdict(0.02, 10, 9, 1, False)`` starts with "mixed"."""
    v = verdict(p, toward > against, n_characters)
    if v in (SUPPORTED, CONTRADICTED) and mean_toward != (toward > against):
        return f"mixed: {v} by characters ({toward} for, {against} against), the mean difference over items the other way"
    low, high = interval
    if v in (SUPPORTED, CONTRADICTED) and low <= 0 <= high:
        return (f"{NOISE} (the sign test gives p = {_p(p)} with {toward} characters for, {against} against, but the "
                f"95% interval of the difference [{_p(low)}, {_p(high)}] includes 0)")
    return v


def _p(value: float) -> str:
    if pd.isna(value):
        return "-"
    value = value + 0.0  # no "-0"
    return f"{value:.2g}" if abs(value) < 0.001 and value != 0 else f"{value:.3g}" if abs(value) < 1 else f"{value:.3f}"


def paper_personality_tests(dataset: Dataset | None = None) -> pd.DataFrame:
    """Tables 4-5 as printed, every claim's pair compared on the 15 characters' types (McNemar, sign test, Holm)."""
    parts = []
    for questionnaire, name in (("mbti", "table4_mbti"), ("bigfive", "table5_sloan")):
        out = paper_personality_outcomes(as_dataset(dataset).paper_table(name), questionnaire)
        pairs = [(paper_name(c.method), paper_name(c.reference)) for c in CLAIMS if c.table == name]
        parts.append(compare(out, {f"{name} (paper)": pairs}).assign(table=name))
    tests = pd.concat(parts, ignore_index=True)
    tests["p_item_holm"], tests["p_character_holm"] = holm(tests.p_item), holm(tests.p_character)
    return tests


def table6_printed(method: str, reference: str, outcome: str = "acc", dataset: Dataset | None = None) -> pd.DataFrame:
    """Per LLM, what Table 6's printed proportions of 450 questions allow: the fewest discordant questions, the
    smallest paired p they can give, and the unpaired two-proportion test."""
    t6 = as_dataset(dataset).paper_table("table6_roleplay")
    t6 = t6[t6.task == "CharacterRAG"]
    rows = []
    for llm, g in t6.groupby("llm", sort=False):
        g = g.set_index("method")
        if method not in g.index or reference not in g.index or pd.isna(g.loc[method, outcome]):
            continue
        a, b = g.loc[method, outcome], g.loc[reference, outcome]
        if outcome != "acc":
            rows.append({"llm": llm, "method": a, "reference": b, "difference": a - b})
            continue
        ka, kb = round(a * PAPER_QUESTIONS), round(b * PAPER_QUESTIONS)
        rows.append({"llm": llm, "method": a, "reference": b, "k_method": ka, "k_reference": kb,
                     "difference": (ka - kb) / PAPER_QUESTIONS, "min_discordant": abs(ka - kb),
                     "smallest_paired_p": smallest_exact_p(abs(ka - kb)),
                     "unpaired_p": two_proportion_test(ka, PAPER_QUESTIONS, kb, PAPER_QUESTIONS)})
    return pd.DataFrame(rows)


def _paper_evidence(claim: Claim, personality: pd.DataFrame, dataset: Dataset | None) -> dict:
    paper = as_dataset(dataset).paper_table
    if claim.table in ("table4_mbti", "table5_sloan"):
        r = personality[(personality.table == claim.table) & (personality.method == paper_name(claim.method))
                        & (personality.reference == paper_name(claim.reference))].iloc[0]
        text = (f"{r.only_method} vs {r.only_reference} discordant dimensions of {r.n_pairs} (exact McNemar p = "
                f"{_p(r.p_item)}, Holm {_p(r.p_item_holm)}); by character {r.characters_better} better, "
                f"{r.characters_worse} worse (sign test p = {_p(r.p_character)}, Holm over the paper's Tables 4-5 "
                f"claims {_p(r.p_character_holm)})")
        return {"paper_evidence": text, "paper_difference": r.difference, "paper_low": r.diff_low,
                "paper_high": r.diff_high, "paper_p_item": r.p_item, "paper_p_character": r.p_character,
                "paper_p_character_holm": r.p_character_holm,
                "paper_verdict": character_verdict(r.p_character_holm, PAPER_CHARACTERS, r.characters_better,
                                                   r.characters_worse, r.difference > 0, (r.diff_low, r.diff_high))
                + (f" (dimension-level p = {_p(r.p_item)} treats the {r.n_pairs} dimensions as independent)"
                   if r.p_item < ALPHA <= r.p_character_holm else "")}
    if claim.table == "table6_roleplay":
        t = table6_printed(paper_name(claim.method), paper_name(claim.reference), claim.outcome, dataset)
        if claim.outcome != "acc":
            diffs = "; ".join(f"{r.llm} {r.method:.2f} vs {r.reference:.2f}" for r in t.itertuples())
            return {"paper_evidence": f"printed means only ({diffs}); no spread, no per-question scores",
                    "paper_verdict": "not testable: the paper prints means without spread or per-question scores"}
        text = "; ".join(f"{r.llm}: {r.k_method} vs {r.k_reference} of {PAPER_QUESTIONS}, >= {r.min_discordant} "
                         f"discordant, smallest paired p {_p(r.smallest_paired_p)}, unpaired p {_p(r.unpaired_p)}"
                         for r in t.itertuples())
        worst = t.unpaired_p.max()
        favours = bool((t.difference > 0).all())
        if worst < ALPHA:  # as Tables 4-5's dimension-level p: no verdict from a test that treats items as independent
            v = (f"{CHARACTERS_UNTESTABLE} (question-level unpaired p <= {_p(worst)} for every LLM, differences "
                 f"{'all in' if favours else 'not all in'} the claim's direction, treats the {PAPER_QUESTIONS} "
                 f"questions of {PAPER_CHARACTERS} characters as independent)")
        elif (v := verdict(worst, favours, PAPER_CHARACTERS)) == NOISE:
            v += " (no per-question outcomes: no paired test; unpaired p >= 0.05 for some LLM"
            v += (", and " + ", ".join(t.llm[t.smallest_paired_p >= ALPHA]) + " can never reach p < 0.05 paired)"
                  if (t.smallest_paired_p >= ALPHA).any() else ")")
        return {"paper_evidence": text, "paper_difference": t.difference.min(), "paper_p_item": worst,
                "paper_verdict": v}
    if claim.table == "table1_similarity":
        wide = paper("table1_similarity").pivot(index="embedder", columns="splitter",
                                                values="sum_mu" if claim.outcome == "mu" else "sum_var")
        sign = 1 if claim.higher_is_better else -1  # lower is better: compare the negated values
        better = sign * wide[claim.method] > sign * wide[claim.reference]
        ats = sign * wide["ATS"] > sign * wide["Vanilla"]
        text = (f"printed sums over {PAPER_CHARACTERS} characters only: {claim.method} "
                f"{'>' if claim.higher_is_better else '<'} {claim.reference} for {int(better.sum())} of {len(better)} "
                f"embedders; ATS beats Vanilla for {int(ats.sum())} of {len(ats)} (against: "
                f"{', '.join(wide.index[~ats]) or 'none'})")
        return {"paper_evidence": text, "paper_verdict": "not testable: the paper prints sums over characters, "
                "no per-character or per-question scores (and 3 embedders can give a sign test p >= 0.25 at best)"}
    if claim.table == "table2_human_eval":
        t2 = paper("table2_human_eval")
        lows = [feldt_interval(a, 30, 11)[0] for a in t2.cronbach_alpha]
        text = "; ".join(f"{r.task}: mu {r.mu:.2f}, alpha {r.cronbach_alpha:.3f} (Feldt 95% low {lo:.3f})"
                         for r, lo in zip(t2.itertuples(), lows, strict=True))
        ok = all(lo > 0.7 for lo in lows)
        return {"paper_evidence": text + "; no per-sample ratings, so no interval of mu",
                "paper_verdict": ("supported for alpha > 0.7 (Feldt lower bounds); alpha > 0.8 not distinguishable from "
                                  "noise at 30 samples; mu near 4 not testable (no spread per sample)") if ok else NOISE}
    if claim.id == "T3-failure":
        t3 = paper("table3_chunk_usage").set_index("question_set")
        n = {"CharacterRAG": PAPER_QUESTIONS, "MBTI": PAPER_ITEMS["mbti"] * PAPER_CHARACTERS}
        cis = {q: clopper_pearson(round(t3.gs_failure_rate[q] * n[q]), n[q]) for q in n}
        text = "; ".join(f"{q}: {ci.estimate:.2%} of {n[q]} [{ci.low:.2%}, {ci.high:.2%}] (questions as independent)"
                         for q, ci in cis.items())
        return {"paper_evidence": text, "paper_verdict": "not testable: a level, not a comparison; one question in "
                "four to seven fails (exact intervals, questions treated as independent)"}
    return {"paper_evidence": "printed averages only (Figure 1: 34.93% vs 43.84%); no per-character rates",
            "paper_verdict": "not testable: no per-character rates printed"}


def _hits(claim: Claim, paired: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``paired`` that compare the claim's two methods on its table, outcome and task."""
    names = {claim.method.lower(), claim.reference.lower()}
    return paired[(paired.table == claim.table) & (paired.outcome == claim.outcome)
                  & ((paired.task == claim.task) if claim.task else True)
                  & paired.method.str.lower().isin(names) & paired.reference.str.lower().isin(names)]


def claim_hits(paired: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Per comparison claim, its rows of ``paired`` with ``p_claims_holm``: the character-level p adjusted by Holm
    over every comparison that tests a claim (the claims are one family: their verdicts rest on these p)."""
    if paired.empty:
        return {}
    family = pd.concat({c.id: _hits(c, paired) for c in CLAIMS if c.reference})
    family["p_claims_holm"] = holm(family.p_character)
    return {claim_id: g.droplevel(0) for claim_id, g in family.groupby(level=0, sort=False)}


def _labels(rows: pd.DataFrame) -> dict:
    """The models behind a claim's evidence: per label column, the labels of its rows (none: no such model, as an
    LLM for the retrieval tables)."""
    return {c: "; ".join(dict.fromkeys(rows[c].dropna().astype(str))) for c in LABELS
            if c in rows and rows[c].notna().any()}


def _ours(claim: Claim, hits: dict[str, pd.DataFrame], summary: pd.DataFrame, run: dict) -> dict:
    if not claim.reference:  # a level, not a comparison
        s = summary[(summary.table == claim.table) & (summary.outcome == claim.outcome)
                    & ((summary.method == claim.method) if claim.method else True)]
        if s.empty:
            return {"ours_evidence": "-", "ours_verdict": "not testable with this run: no per-item outcomes"}
        text = "; ".join(f"{r.task}: {r.score:.3g} [{_p(r.ci_low)}, {_p(r.ci_high)}] ({r.n_items} items, "
                         f"{plural(int(r.n_characters), 'character')})" for r in s.itertuples())
        return {"ours_evidence": text, "ours_n_characters": int(s.n_characters.max()), **_labels(s),
                "ours_verdict": "not testable: a level, not a comparison; see the interval"
                + (f" ({run['llm']})" if run.get("llm") else "")}
    hit = hits.get(claim.id, pd.DataFrame())
    if hit.empty:
        return {"ours_evidence": "-", "ours_verdict": f"not testable with this run: no paired comparison of "
                f"{claim.method} and {claim.reference} in it (one of them not run, or the two not paired)"}
    rows, verdicts, first = [], [], {}
    # each comparison named by what tells it apart: the task (Table 1's embedders), else the embedder, and any label
    # (LLM, judge) that differs between the comparisons of this claim
    varying = [c for c in ("llm", "judge") if c in hit and hit[c].nunique() > 1]
    for r in hit.itertuples():
        sign = 1 if r.method.lower() == claim.method.lower() else -1  # the claim's method minus its reference
        diff, low, high = sign * r.difference, *sorted((sign * r.diff_low, sign * r.diff_high))
        favour = 1 if claim.higher_is_better else -1
        toward, against = (r.characters_better, r.characters_worse)[::sign * favour]
        parts = [r.task if claim.task is None else getattr(r, "embedder", None), *(getattr(r, c) for c in varying)]
        label = ", ".join(x for x in parts if isinstance(x, str))
        rows.append(f"{label + ': ' if label else ''}{claim.method} - {claim.reference} = {diff + 0.0:+.3g} "
                    f"[{_p(low)}, {_p(high)}], {r.n_pairs} pairs, {plural(int(r.n_characters), 'character')}, item p "
                    f"{_p(r.p_item)} ({r.test_item.split(' (')[0]}), character p {_p(r.p_character)} (Holm over "
                    f"the claims {_p(r.p_claims_holm)})")
        verdicts.append((label, character_verdict(r.p_claims_holm, r.n_characters, toward, against, favour * diff > 0,
                                                  tuple(sorted((favour * low, favour * high))))))
        first = first or {"ours_comparison": label, "ours_difference": diff, "ours_low": low, "ours_high": high,
                          "ours_p_item": r.p_item, "ours_p_character": r.p_character,
                          "ours_p_character_holm": r.p_claims_holm, "ours_n_characters": r.n_characters}
    plain = {v for _, v in verdicts}
    v = plain.pop() if len(plain) == 1 else "mixed: " + "; ".join(f"{k}: {v}" if k else v for k, v in verdicts)
    if claim.table in NO_LLM:
        caveat = f" (embedders {', '.join(hit.task)}; not the paper's; no LLM)"
    else:
        used = [v for c in ("llm", "embedder") if c in hit for v in dict.fromkeys(hit[c].dropna().astype(str))]
        caveat = f" ({', '.join(used)})" if used else ""
    return {"ours_evidence": "; ".join(rows), **first, "ours_comparisons": len(rows), "ours_verdict": v + caveat,
            **_labels(hit)}


def run_labels(outcomes: pd.DataFrame) -> dict:
    """The first role-play LLM, judge and embedder label of the committed results ("" if none)."""
    return {c: str(outcomes[c].dropna().iloc[0]) if c in outcomes and outcomes[c].notna().any() else ""
            for c in LABELS}


def claims_table(results_dir: Path, dataset: Dataset | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(claims, paired)``: per claim, the paper's and this run's evidence and verdicts; ``paired``, every
    comparison of the committed per-item files in ``results_dir``."""
    ds = as_dataset(dataset)
    labels = pd.read_csv(ds.labels_path) if ds.labels_path.is_file() else None
    outcomes = load_outcomes(results_dir, labels)
    paired = compare(outcomes) if len(outcomes) else pd.DataFrame()
    summary = summarize(outcomes) if len(outcomes) else pd.DataFrame()
    personality = paper_personality_tests(ds)
    run = run_labels(outcomes)
    # a claim between two methods that no table pairs (CRAG against LightRAG) gets its own comparison, tested within
    # the claims' Holm family only: the tables' families stay as published
    extra = [compare(outcomes[(outcomes.table == c.table) & (outcomes.outcome == c.outcome)],
                     {c.table: [(c.method, c.reference)]})
             for c in CLAIMS if len(outcomes) and c.reference and (paired.empty or _hits(c, paired).empty)]
    hits = claim_hits(pd.concat([paired, *extra], ignore_index=True))
    no_run = {"ours_evidence": "-", "ours_verdict": "not testable with this run: no committed per-item files"}
    rows = [{"claim_id": c.id, "source": c.source, "claim": c.claim, "direction": 1 if c.higher_is_better else -1,
             **_paper_evidence(c, personality, ds), **(_ours(c, hits, summary, run) if len(outcomes) else no_run)}
            for c in CLAIMS]
    cols = ["claim_id", "source", "claim", "paper_evidence", "paper_verdict", "ours_evidence", "ours_verdict",
            "paper_difference", "paper_low", "paper_high", "paper_p_item", "paper_p_character", "paper_p_character_holm",
            "ours_comparisons", "ours_comparison", "ours_difference", "ours_low", "ours_high", "ours_p_item",
            "ours_p_character", "ours_p_character_holm", "ours_n_characters", "direction", *LABELS]
    return pd.DataFrame(rows).reindex(columns=cols), paired


def verdict_counts(claims: pd.DataFrame) -> pd.DataFrame:
    """How many claims get each verdict (its first words), paper and ours side by side."""
    def short(v):
        return str(v).split(" (")[0].split(":")[0]
    return pd.DataFrame({"paper": claims.paper_verdict.map(short).value_counts(),
                         "ours": claims.ours_verdict.map(short).value_counts()}).fillna(0).astype(int)
