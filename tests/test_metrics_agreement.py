"""Golden and hand-made tests of rpa_lib.evaluation.metrics.agreement.

Reference values:
- Cronbach's alpha: pingouin's documented examples of ``pingouin.cronbach_alpha`` (docstring of
  pingouin/reliability.py, pingouin 0.7.0; https://pingouin-stats.org/generated/pingouin.cronbach_alpha.html) on
  its data sets ``cronbach_wide_missing`` (binary, 12 x 11, 4 missing) and ``cronbach_alpha`` (Likert, 15 x 10,
  long format there, pivoted here). pingouin says its results were checked against R's psych::alpha.
- Krippendorff's alpha: Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", the worked example
  C (4 observers x 12 units, 1-5, missing values): nominal .743, ordinal .815, interval .849, ratio .797; the
  ``krippendorff`` package documents the same data and values.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

from rpa_lib.evaluation.metrics import (
    cronbach_alpha,
    feldt_interval,
    kendall_tau,
    krippendorff_alpha,
    likert_summary,
)
from rpa_lib.paths import PAPER_RESULTS_DIR

nan = np.nan

# pingouin's cronbach_wide_missing (rows: subjects, columns Q1..Q11)
WIDE_MISSING = pd.DataFrame(
    [[1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1],
     [1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 0],
     [nan, 0, 1, 1, nan, 1, 1, 1, 1, 0, 0],
     [1, 1, 1, 0, 1, 1, 0, 1, 1, 0, 0],
     [1, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0],
     [0, 1, nan, 0, 1, 1, 1, 1, 0, 0, 0],
     [1, 1, 1, 1, 0, 0, 1, 0, 0, 0, 0],
     [1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0],
     [0, 1, 0, 1, 1, 0, 0, 0, 0, 1, 0],
     [1, 0, 0, 1, 0, 1, 0, 0, nan, 0, 0],
     [1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0],
     [1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0]],
    columns=[f"Q{i}" for i in range(1, 12)])

# pingouin's cronbach_alpha (Likert 1-7), pivoted to wide: rows Subj 0..14, columns Q1..Q10
LIKERT = pd.DataFrame(
    [[3, 2, 4, 1, 4, 5, 1, 4, 3, 2],
     [5, 4, 6, 3, 5, 1, 2, 5, 5, 5],
     [7, 3, 5, 5, 6, 4, 3, 3, 6, 5],
     [2, 4, 3, 3, 2, 2, 2, 6, 6, 3],
     [6, 5, 6, 5, 4, 4, 4, 6, 7, 5],
     [1, 2, 3, 4, 2, 5, 2, 3, 5, 2],
     [4, 3, 5, 3, 5, 2, 1, 2, 4, 3],
     [2, 4, 4, 3, 7, 2, 2, 4, 6, 5],
     [6, 5, 5, 5, 1, 6, 5, 2, 3, 2],
     [5, 4, 6, 4, 3, 5, 3, 1, 7, 2],
     [4, 3, 5, 2, 5, 3, 2, 3, 4, 1],
     [4, 2, 3, 2, 5, 3, 4, 2, 3, 4],
     [5, 5, 6, 2, 3, 3, 2, 4, 4, 5],
     [6, 5, 5, 4, 2, 2, 1, 4, 6, 5],
     [4, 3, 5, 5, 3, 1, 3, 2, 3, 4]],
    columns=[f"Q{i}" for i in range(1, 11)])


# ---- Cronbach's alpha: pingouin's published values ----------------------------------------------------------------


def test_cronbach_pairwise_matches_pingouin():
    # pingouin: pg.cronbach_alpha(data=data) -> (0.732660835214447, array([0.435, 0.909]))
    alpha, (low, high) = cronbach_alpha(WIDE_MISSING)
    assert alpha == pytest.approx(0.732660835214447, abs=1e-12)
    assert (round(low, 3), round(high, 3)) == (0.435, 0.909)


def test_cronbach_listwise_matches_pingouin_alpha_with_our_n():
    # pingouin: nan_policy="listwise" -> (0.8016949152542373, array([0.581, 0.933])). Its interval keeps n = 12,
    # the rows before deletion; ours uses the 9 complete rows that entered alpha.
    alpha, (low, high) = cronbach_alpha(WIDE_MISSING, nan_policy="listwise")
    assert alpha == pytest.approx(0.8016949152542373, abs=1e-12)
    assert (low, high) == pytest.approx(feldt_interval(alpha, 9, 11))
    assert (round(low, 3), round(high, 3)) == (0.533, 0.947)
    printed = feldt_interval(alpha, 12, 11)
    assert (round(printed[0], 3), round(printed[1], 3)) == (0.581, 0.933)


def test_cronbach_median_imputed_matches_pingouin():
    # pingouin: pg.cronbach_alpha(data=data.fillna(data.median())) -> (0.7380191693290734, array([0.447, 0.911]))
    alpha, (low, high) = cronbach_alpha(WIDE_MISSING.fillna(WIDE_MISSING.median()))
    assert alpha == pytest.approx(0.7380191693290734, abs=1e-12)
    assert (round(low, 3), round(high, 3)) == (0.447, 0.911)


def test_cronbach_likert_matches_pingouin():
    # pingouin: long-format cronbach_alpha data set -> (0.5917188485995826, array([0.195, 0.84]))
    alpha, (low, high) = cronbach_alpha(LIKERT)
    assert alpha == pytest.approx(0.5917188485995826, abs=1e-12)
    assert (round(low, 3), round(high, 3)) == (0.195, 0.840)


def test_cronbach_complete_table_is_the_textbook_formula():
    # k/(k-1) * (1 - sum of rater variances / variance of the per-sample total)
    x = LIKERT.to_numpy(dtype=float)
    k = x.shape[1]
    textbook = k / (k - 1) * (1 - x.var(axis=0, ddof=1).sum() / x.sum(axis=1).var(ddof=1))
    assert cronbach_alpha(x)[0] == pytest.approx(textbook)
    assert cronbach_alpha(x, nan_policy="listwise")[0] == pytest.approx(textbook)


def test_cronbach_takes_arrays_and_lists_like_frames():
    alpha, interval = cronbach_alpha(LIKERT.to_numpy().tolist())
    assert alpha == pytest.approx(cronbach_alpha(LIKERT)[0])
    assert interval == pytest.approx(cronbach_alpha(LIKERT)[1])


def test_cronbach_ci_level():
    alpha, (low90, high90) = cronbach_alpha(LIKERT, ci=0.90)
    _, (low95, high95) = cronbach_alpha(LIKERT)
    assert low95 < low90 < alpha < high90 < high95


@pytest.mark.parametrize("table, message", [
    ([[1], [2], [3]], "at least 2 raters"),
    ([[1, 2, 3]], "at least 2 rated samples"),
    ([[1, 2], [nan, 3], [4, nan]], "at least 2 rated samples"),  # listwise: one complete row left
])
def test_cronbach_too_small(table, message):
    with pytest.raises(ValueError, match=message):
        cronbach_alpha(table, nan_policy="listwise")


def test_cronbach_bad_arguments():
    with pytest.raises(ValueError, match="nan_policy must be one of"):
        cronbach_alpha(LIKERT, nan_policy="drop")
    with pytest.raises(ValueError, match="without a single rating: b"):
        cronbach_alpha(pd.DataFrame({"a": [1, 2, 3], "b": [nan, nan, nan], "c": [2, 3, 4]}))
    with pytest.raises(ValueError, match="numbers or NaN"):
        cronbach_alpha([["1", "x"], ["2", "3"]])
    with pytest.raises(ValueError, match="confidence level"):
        cronbach_alpha(LIKERT, ci=95)


def test_cronbach_zero_total_variance_is_nan_with_warning():
    with pytest.warns(RuntimeWarning, match="variance of the per-sample totals"):
        alpha, (low, high) = cronbach_alpha([[4, 4, 4], [4, 4, 4], [4, 4, 4]])
    assert math.isnan(alpha) and math.isnan(low) and math.isnan(high)


def test_cronbach_raters_without_common_samples_is_nan_with_warning():
    table = pd.DataFrame({"a": [1, 2, nan, nan], "b": [nan, nan, 3, 4], "c": [1, 2, 3, 5]})
    with pytest.warns(RuntimeWarning, match="share fewer than 2"):
        alpha, _ = cronbach_alpha(table)
    assert math.isnan(alpha)


# ---- Krippendorff's alpha -----------------------------------------------------------------------------------------

# Krippendorff (2011), example C: 4 observers (rows there) x 12 units; here samples x raters, so transposed.
KRIPPENDORFF_C = np.array([
    [1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
    [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan],
]).T


@pytest.mark.parametrize("level, published", [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849),
                                              ("ratio", 0.797)])
def test_krippendorff_published_example(level, published):
    assert round(krippendorff_alpha(KRIPPENDORFF_C, level), 3) == published


def test_krippendorff_value_domain_and_levels():
    assert krippendorff_alpha(KRIPPENDORFF_C, value_domain=[1, 2, 3, 4, 5]) == pytest.approx(
        krippendorff_alpha(KRIPPENDORFF_C))
    with pytest.raises(ValueError, match="level must be one of"):
        krippendorff_alpha(KRIPPENDORFF_C, "likert")


# ---- Kendall's tau: hand-made, with ties ----------------------------------------------------------------------------
# x = [1, 2, 2, 3], y = [1, 3, 2, 2]; the 6 pairs: (1,2) C, (1,3) C, (1,4) C, (2,3) tied in x, (2,4) D, (3,4) tied
# in y. C = 3, D = 1, n0 = 6, ties n1 = n2 = 1, m = min(3 distinct, 3 distinct) = 3.
X, Y = [1, 2, 2, 3], [1, 3, 2, 2]


def test_kendall_tau_a_by_hand():
    result = kendall_tau(X, Y, variant="a")
    assert result.tau == pytest.approx((3 - 1) / 6)
    assert result.pvalue is None and result.n == 4 and result.variant == "a"


def test_kendall_tau_b_by_hand():
    result = kendall_tau(X, Y)  # (C - D) / sqrt((n0 - n1)(n0 - n2)) = 2 / 5
    assert result.tau == pytest.approx(0.4)
    assert 0 < result.pvalue < 1


def test_kendall_tau_c_by_hand():
    result = kendall_tau(X, Y, variant="c")  # 2(C - D) / (n^2 (m - 1) / m) = 4 / (16 * 2 / 3)
    assert result.tau == pytest.approx(0.375)


def test_kendall_tau_a_without_ties_equals_b():
    x, y = [1, 2, 3, 4, 5], [2, 1, 4, 3, 5]  # 8 concordant, 2 discordant
    assert kendall_tau(x, y, "a").tau == pytest.approx(0.6) == kendall_tau(x, y, "b").tau


def test_kendall_drops_missing_pairs():
    result = kendall_tau([1, 2, None, 2, 3, 7], [1, 3, 5, 2, 2, nan], "a")
    assert result.n == 4
    assert result.tau == pytest.approx(1 / 3)


@pytest.mark.parametrize("variant", ["a", "b", "c"])
def test_kendall_constant_input_is_nan_with_warning(variant):
    with pytest.warns(RuntimeWarning, match="y is constant"):
        result = kendall_tau([1, 2, 3], [2, 2, 2], variant)
    assert math.isnan(result.tau) and result.n == 3


def test_kendall_too_few_pairs_and_bad_input():
    with pytest.warns(RuntimeWarning, match="1 complete pair"):
        assert math.isnan(kendall_tau([1, nan], [1, 2]).tau)
    with pytest.raises(ValueError, match="paired"):
        kendall_tau([1, 2, 3], [1, 2])
    with pytest.raises(ValueError, match="variant must be one of"):
        kendall_tau(X, Y, "d")


# ---- AMADEUS Table 2 summaries ------------------------------------------------------------------------------------


def test_likert_summary_by_hand():
    # sample 1: [5, 4, 3] mean 4, sd 1 (ddof 1), median 4; sample 2: [2, 2, 5] mean 3, sd sqrt(3), median 2;
    # sample 3: [4, nan, 4] mean 4, sd 0, median 4
    table = pd.DataFrame({"r1": [5, 2, 4], "r2": [4, 2, nan], "r3": [3, 5, 4]})
    s = likert_summary(table)
    assert s.mu == pytest.approx((4 + 3 + 4) / 3)
    assert s.sigma == pytest.approx((1 + math.sqrt(3) + 0) / 3)
    assert s.median == pytest.approx((4 + 2 + 4) / 3)
    assert (s.samples, s.raters, s.ratings, s.ddof) == (3, 3, 8, 1)
    pop = likert_summary(table, ddof=0)  # population sd: sqrt(2/3), sqrt(2), 0
    assert pop.sigma == pytest.approx((math.sqrt(2 / 3) + math.sqrt(2) + 0) / 3)


def test_likert_summary_mean_of_means_differs_from_grand_mean_with_missing():
    table = pd.DataFrame({"r1": [1, 5], "r2": [1, nan], "r3": [1, nan]})
    assert likert_summary(table).mu == pytest.approx(3.0)  # E(E(S)) = (1 + 5) / 2, not 8 / 4


def test_table2_mu_is_a_mean_of_300_ratings_not_330():
    # Documented in likert_summary: 11 raters x 30 samples would make mu a multiple of 1/330.
    printed = pd.read_csv(PAPER_RESULTS_DIR / "table2_human_eval.csv", index_col="task")
    bfi, mbti = printed.loc["BFI", "mu"], printed.loc["MBTI", "mu"]
    assert not any(round(t / 330, 3) == bfi for t in range(330, 1651))
    assert round(1167 / 300, 3) == bfi and round(1161 / 300, 3) == mbti
    assert round(1277 / 330, 3) == mbti  # MBTI alone would fit 330 ratings
    assert round(123 / 30, 3) == printed.loc["BFI", "median"] and round(118 / 30, 3) == printed.loc["MBTI", "median"]


def test_no_warning_on_ordinary_tables():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cronbach_alpha(LIKERT)
        likert_summary(LIKERT)
        kendall_tau(X, Y)
