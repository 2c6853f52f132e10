"""How much data a claim needs: minimum detectable differences (MDE) at a run's sizes, and the sizes needed to
detect the AMADEUS paper's printed differences (80% power, two-sided alpha 0.05, paired 0/1 outcomes, Connor's
approximation). Pairs are treated as independent, so the sizes are lower bounds under clustering by character. It
reads no results: sizes come from a profile's parameters.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from rpa_lib.data import Dataset, as_dataset
from rpa_lib.evaluation.metrics.intervals import ALPHA, POWER, mde_paired_binary, n_paired_binary

# The paper's printed comparisons (GPT-4.1): Table 6 ACC of AMADEUS vs Naive RAG (417 vs 411 of 450); Tables 4-5
# AMADEUS vs CRAG, discordant dimensions from the printed types (MBTI 16 vs 5 of 60, SLOAN 10 vs 6 of 75).
PRINTED = [  # (comparison, outcome, unit, units per character, delta, observed discordant share or None, levels p1, p2)
    ("ACC, AMADEUS vs Naive RAG (GPT-4.1, Table 6)", "ACC (Table 6)", "questions", 30, 6 / 450, None, 0.9267, 0.9133),
    ("MBTI dimensions, AMADEUS vs CRAG (Table 4)", "MBTI dimension accuracy (Table 4)", "dimensions", 4, 11 / 60,
     21 / 60, 0.85, 0.6667),
    ("SLOAN dimensions, AMADEUS vs CRAG (Table 5)", "SLOAN dimension accuracy (Table 5)", "dimensions", 5, 4 / 75,
     16 / 75, 0.8133, 0.76),
]


@dataclass(frozen=True)
class Sizes:
    """A run's sizes: Table 6's characters and questions per character, Tables 4-5's characters and dimensions."""

    qa_characters: int = 15
    questions_per_character: int = 30
    personality_characters: int = 15
    mbti_dimensions: int = 4
    sloan_dimensions: int = 5


def _independent(p1: float, p2: float) -> float:
    return p1 * (1 - p2) + p2 * (1 - p1)


def mde_table(sizes: Sizes) -> pd.DataFrame:
    """The MDE (in the share right) of each outcome of :data:`PRINTED` at ``sizes``, with independent errors at the
    paper's level and with the paper's observed discordance."""
    pairs = [sizes.qa_characters * sizes.questions_per_character, sizes.personality_characters * sizes.mbti_dimensions,
             sizes.personality_characters * sizes.sloan_dimensions]
    return pd.DataFrame([{"outcome": outcome, "pairs": n, "level": p,
                          "mde_independent_errors": mde_paired_binary(n, _independent(p, p)),
                          "mde_observed_discordance": mde_paired_binary(n, observed) if observed else math.nan}
                         for (_, outcome, _, _, _, observed, p, _), n in zip(PRINTED, pairs, strict=True)])


def needed_table() -> pd.DataFrame:
    """Pairs and characters needed to detect each difference of :data:`PRINTED`: one-way, observed discordance and
    independent errors."""
    rows = []
    for name, _, unit, per_character, delta, observed, p1, p2 in PRINTED:
        n_one = n_paired_binary(delta, abs(delta))
        n_obs = n_paired_binary(delta, observed) if observed else math.nan
        n_ind = n_paired_binary(delta, _independent(p1, p2))
        rows.append({"comparison": name, "difference": delta, "unit": unit,
                     "n_one_way": n_one, "n_observed": n_obs, "n_independent": n_ind,
                     "characters_one_way": math.ceil(n_one / per_character),
                     "characters_observed": math.ceil(n_obs / per_character) if observed else math.nan,
                     "characters_independent": math.ceil(n_ind / per_character)})
    return pd.DataFrame(rows)


def profile_sizes(profile: dict, dataset: Dataset | None = None) -> Sizes:
    """The sizes a reproduce profile runs (its 05_qa_evaluation and 04_personality parameters; missing: all of the
    dataset's, ``dataset`` else the profile's ``defaults.data_dir``)."""
    ds = as_dataset(dataset if dataset is not None else (profile.get("defaults") or {}).get("data_dir"))
    nbs = profile.get("notebooks") or {}
    qa, pers = nbs.get("05_qa_evaluation") or {}, nbs.get("04_personality") or {}
    every = ds.characters(None)
    qa_chars = ds.characters(qa.get("characters")) if qa.get("characters") else every
    per_char = min(len(ds.qa(s)) for s in qa_chars) if qa_chars else 0
    questions = min(per_char, qa["qa_questions"]) if qa.get("qa_questions") else per_char
    pers_chars = pers.get("characters") or every
    return Sizes(len(qa_chars), questions, len(pers_chars))


def power_text(sizes: Sizes) -> str:
    """The plan's power section: MDEs at these sizes and the sizes the paper's printed differences need."""
    lines = [f"power (paired, two-sided alpha {ALPHA}, {POWER:.0%} power; items as independent units, a lower bound "
             f"under clustering by character): {sizes.qa_characters} characters x {sizes.questions_per_character} "
             f"questions for Table 6, {sizes.personality_characters} character(s) for Tables 4-5"]
    for r in mde_table(sizes).itertuples():
        if math.isnan(r.mde_independent_errors):
            lines.append(f"  MDE {r.outcome}: none with {r.pairs} pairs (no difference is detectable at these sizes)")
            continue
        obs = ("" if math.isnan(r.mde_observed_discordance)
               else f", {r.mde_observed_discordance:.3f} at the paper's discordance")
        lines.append(f"  MDE {r.outcome}: {r.mde_independent_errors:.3f} with {r.pairs} pairs (independent errors at "
                     f"{r.level:.2f}{obs})")
    lines.append("  needed for the paper's printed differences (pairs; characters):")
    for r in needed_table().itertuples():
        obs = (f", {r.n_observed:,.0f} at its discordance ({r.characters_observed:,.0f})"
               if not math.isnan(r.n_observed) else "")
        lines.append(f"    {r.comparison}, difference {r.difference:.3f}: {r.n_one_way:,.0f} {r.unit} if every "
                     f"discordant pair favours one side ({r.characters_one_way:,.0f} characters){obs}, "
                     f"{r.n_independent:,.0f} with independent errors ({r.characters_independent:,.0f})")
    return "\n".join(lines)
