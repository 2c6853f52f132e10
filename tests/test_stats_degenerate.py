"""The statistics and tables on the small, degenerate data a researcher's own runs produce: one character, a method
with every item failed, a character run for one method only, constant ratings, empty tables, booleans or text for
0/1 outcomes. Each says why a value is NaN or what it left out, and none raises from inside scipy or pandas."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

from rpa_lib.evaluation.claims import verdict
from rpa_lib.evaluation.metrics import krippendorff_alpha, paired_permutation_test, two_proportion_test
from rpa_lib.evaluation.metrics.agreement import noted
from rpa_lib.evaluation.outcomes import COLUMNS, _frame, compare, summarize
from rpa_lib.evaluation.uncertainty import interval_caption, interval_columns, merge_intervals, save_paired


def _acc(values: dict) -> pd.DataFrame:
    """Table 6 ACC outcomes from ``{(method, character, item): value}``."""
    rows = [{"method": m, "character": c, "item": i, "outcome": "acc", "value": v} for (m, c, i), v in values.items()]
    return _frame(pd.DataFrame(rows), table="table6_roleplay", task="CharacterRAG")


def test_an_unpaired_character_is_named_in_the_note():
    values = {(m, c, f"q{i}"): float(c in "ab") for m in ("amadeus", "naive_rag") for c in "abcd" for i in range(3)}
    del values["naive_rag", "a", "q0"], values["naive_rag", "a", "q1"], values["naive_rag", "a", "q2"]
    got = compare(_acc(values)).iloc[0]
    assert got.n_pairs == 9 and got.n_characters == 3
    assert "left out, without a pair: 0 item(s) of the method, 3 of the reference" in got.note
    assert "no pair at all for character(s) a" in got.note


def test_a_method_with_every_item_failed_has_no_paired_item():
    values = {(m, c, "q"): (math.nan if m == "naive_rag" else 1.0) for m in ("amadeus", "naive_rag") for c in "ab"}
    got = compare(_acc(values)).iloc[0]
    assert got.n_pairs == 0 and math.isnan(got.p_item) and math.isnan(got.p_character)
    assert got.note.startswith("no paired item; left out, without a pair: 0 item(s) of the method, 2 of the")
    assert verdict(got.p_character, True, got.n_characters) == "not testable: no paired outcome"


def test_complete_pairs_keep_the_interval_note_alone():
    values = {(m, c, "q"): float(m == "amadeus") for m in ("amadeus", "naive_rag") for c in "ab"}
    assert compare(_acc(values)).note.tolist() == ["every character has the same mean: no spread between characters "
                                                  "to resample"]


@pytest.mark.parametrize("ones, zeros", [(True, False), ("True", "false"), ("1", "0"), (1, 0)])
def test_booleans_and_text_are_0_1_outcomes(ones, zeros):
    rows = pd.DataFrame([{"table": "table6_roleplay", "task": "CharacterRAG", "method": m, "character": c,
                          "item": f"q{i}", "repeat": 0, "outcome": "acc", "llm": "x", "judge": None, "embedder": None,
                          "value": ones if (i + (m == "amadeus")) % 2 else zeros}
                         for m in ("amadeus", "naive_rag") for c in "abcd" for i in range(3)])
    for outcomes in (rows, _frame(rows)):
        got = compare(outcomes).iloc[0]
        assert got.n_pairs == 12 and got.test_item == "exact McNemar (items)"
        assert got.p_item == pytest.approx(0.387695, abs=1e-6)
        assert summarize(outcomes).score.tolist() == pytest.approx([2 / 3, 1 / 3])  # amadeus, naive_rag


def test_other_text_in_an_outcome_is_an_error_not_a_failed_item():
    with pytest.raises(ValueError, match="numbers, booleans or empty; got 1 other: 'n/a'"):
        _acc({("amadeus", "a", "q"): "n/a", ("amadeus", "b", "q"): ""})


def test_compare_without_label_columns():
    rows = _acc({(m, c, "q"): float(m == "amadeus") for m in ("amadeus", "naive_rag") for c in "ab"})
    assert compare(rows.drop(columns=["llm", "judge", "embedder"])).difference.tolist() == [-1.0]


@pytest.mark.parametrize("table, domain, why", [
    ([[3, 3], [3, 3], [3, 3]], None, "every rating of the 3 samples rated twice or more is 3"),
    ([[3, 3], [3, 3], [3, np.nan]], [1, 2, 3, 4, 5], "every rating of the 2 samples rated twice or more is 3"),
    ([[3, np.nan], [np.nan, 2], [1, np.nan]], None, "no sample has ratings from 2 raters"),
])
def test_krippendorff_alpha_undefined_is_nan_with_our_note(table, domain, why):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # none from numpy or the krippendorff package
        with pytest.raises(RuntimeWarning, match=why):
            krippendorff_alpha(table, value_domain=domain)
    value, note = noted(krippendorff_alpha, table, value_domain=domain)
    assert math.isnan(value) and note == f"Krippendorff's alpha is undefined: {why}; returning NaN"


def test_krippendorff_alpha_defined_is_unchanged():
    assert krippendorff_alpha([[1, 1], [2, 2], [3, 3]]) == 1.0


def test_two_proportion_test_of_an_empty_group_is_nan():
    assert math.isnan(two_proportion_test(0, 0, 1, 2))


def test_paired_permutation_test_of_one_pair():
    assert paired_permutation_test([1.0], [0.0]) == 1.0
    assert paired_permutation_test([1.0, 2.0], [0.0, 0.0]) == 0.5


@pytest.mark.parametrize("n", [0, [], [np.nan]])
def test_interval_caption_without_a_character(n):
    assert interval_caption(n).endswith("; no character: no interval")
    assert interval_caption(1).endswith("; 1 character: no cluster interval (NaN)")


def test_save_paired_without_a_pair_says_so(tmp_path):
    rows = _acc({("amadeus", c, "q"): 1.0 for c in "ab"})
    written = save_paired(rows, tmp_path)["table6_roleplay"]
    tex = written["tex"].read_text()
    assert r"\caption{No paired comparison: no method ran beside its reference (methods run: amadeus).}" in tex
    assert pd.read_csv(written["csv"]).empty


def test_merge_intervals_of_an_empty_table():
    empty = pd.DataFrame(columns=["task", "method", "character", "x"])
    got = merge_intervals(pd.DataFrame(columns=["task", "method", "x"]), interval_columns(empty, ["task", "method"],
                                                                                        ["x"]), ["task", "method"])
    assert got.empty and {"x_low", "x_high", "n_characters", "interval_note"} <= set(got.columns)


def test_empty_outcomes():
    empty = pd.DataFrame(columns=COLUMNS)
    assert compare(empty).empty and summarize(empty).empty
