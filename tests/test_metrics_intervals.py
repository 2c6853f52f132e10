"""Golden tests of rpa_lib.evaluation.metrics.intervals: each value computed by hand here or printed by the
issue from the AMADEUS tables (McNemar 16 vs 5, sign test 7 vs 3, SLOAN 10 vs 6)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from rpa_lib.evaluation.metrics.intervals import (
    clopper_pearson,
    cluster_bootstrap,
    holm,
    mcnemar_exact,
    mde_paired_binary,
    mde_paired_continuous,
    n_paired_binary,
    n_paired_continuous,
    paired_permutation_test,
    sign_test,
    smallest_exact_p,
    two_proportion_test,
    wilcoxon_signed_rank,
)

Z_975, Z_80 = 1.959963984540054, 0.8416212335729143


def binom_two_sided(k: int, n: int) -> float:
    """2 P(X <= min(k, n - k) | n, 1/2), by hand."""
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(min(k, n - k) + 1)) / 2 ** n)


def test_mcnemar_exact_reproduces_the_issues_numbers():
    assert mcnemar_exact(16, 5) == pytest.approx(binom_two_sided(5, 21)) == pytest.approx(0.0266, abs=5e-5)
    assert mcnemar_exact(10, 6) == pytest.approx(binom_two_sided(6, 16)) == pytest.approx(0.4545, abs=5e-5)
    assert mcnemar_exact(0, 0) == 1.0


def test_sign_test_drops_ties():
    assert sign_test([1] * 7 + [-1] * 3 + [0] * 5) == (7, 3, 0.34375)  # 2 * 176 / 1024
    assert sign_test([np.nan, 0.0]) == (0, 0, 1.0)


def test_clopper_pearson_against_the_closed_form_at_the_ends():
    assert clopper_pearson(0, 10).high == pytest.approx(1 - 0.025 ** (1 / 10))
    assert clopper_pearson(10, 10).low == pytest.approx(0.025 ** (1 / 10))
    assert clopper_pearson(0, 10).low == 0.0
    assert math.isnan(clopper_pearson(0, 0).estimate)


def test_cluster_bootstrap_two_clusters_spans_their_means():
    # resamples AA, AB, BA, BB with weights by items: 1, 0.75, 0.75, 0 -> the 2.5% and 97.5% percentiles are 0 and 1
    got = cluster_bootstrap([1, 1, 1, 0], ["a", "a", "a", "b"])
    assert got.estimate == 0.75 and (got.low, got.high) == (0.0, 1.0)
    assert (got.n_items, got.n_clusters) == (4, 2)


def test_cluster_bootstrap_one_cluster_is_nan_with_a_reason():
    got = cluster_bootstrap([1, 0, 1], ["frieren"] * 3)
    assert got.estimate == pytest.approx(2 / 3) and math.isnan(got.low) and math.isnan(got.high)
    assert got.reason == "1 character: no cluster interval"
    assert math.isnan(cluster_bootstrap([], []).estimate)


def test_cluster_bootstrap_of_equal_character_means_is_nan_not_a_zero_width_interval():
    # two characters at 0.5 each, the items within them split: every resample gives 0.5, which is no 95% interval
    got = cluster_bootstrap([0, 1, 0, 1, 1, 0, 0, 1], list("aaaabbbb"))
    assert got.estimate == 0.5 and math.isnan(got.low) and math.isnan(got.high)
    assert got.reason.startswith("every character has the same mean")


def test_cluster_bootstrap_is_deterministic_and_covers_the_mean():
    rng = np.random.default_rng(1)
    values, clusters = rng.integers(0, 2, 300), np.repeat(np.arange(15), 20)
    a, b = cluster_bootstrap(values, clusters), cluster_bootstrap(values, clusters)
    assert a == b and a.low < a.estimate < a.high and a.reason == ""


def test_wilcoxon_exact_small_samples():
    assert wilcoxon_signed_rank([1, 2, 3, 4, 5], [0] * 5) == pytest.approx(2 / 32)  # W- = 0
    assert wilcoxon_signed_rank([1, 2, -3, 4, 5], [0] * 5) == pytest.approx(10 / 32)  # W- = 3: 5 subsets of 32
    assert wilcoxon_signed_rank([1, 1], [1, 1]) == 1.0


@pytest.mark.parametrize("seed, n", [(0, 6), (1, 8), (2, 10), (4, 14)])
def test_wilcoxon_with_zeros_and_ties_is_scipys_p_to_the_last_bit(seed, n):
    """Ratings 1-5 of two methods on the same items (many ties and zero differences): scipy's p exactly, whether
    every sign flip is enumerated (n <= 13, W+ for all flips at once) or the normal approximation is used (n = 14)."""
    rng = np.random.default_rng(seed)
    a, b = rng.integers(1, 6, n), rng.integers(1, 6, n)
    d = (a - b).astype(float)
    assert (d == 0).any() or len(np.unique(np.abs(d))) < n  # zeros or ties: scipy's permutation path
    assert wilcoxon_signed_rank(a, b) == float(stats.wilcoxon(d, zero_method="wilcox").pvalue)


def test_paired_permutation_exact_sign_flips():
    # 32 sign flips of 1..5: only all-plus and all-minus reach |mean| >= 3
    assert paired_permutation_test([1, 2, 3, 4, 5], [0] * 5) == pytest.approx(2 / 32)
    assert paired_permutation_test([2, 2], [2, 2]) == 1.0


def test_holm_by_hand():
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    got = holm([0.5, np.nan, 0.01])
    assert got[0] == pytest.approx(0.5) and math.isnan(got[1]) and got[2] == pytest.approx(0.02)
    assert holm([0.9, 0.8]) == pytest.approx([1.0, 1.0])  # 0.8 * 2 capped at 1; running maximum


def test_two_proportion_test_by_hand():
    k1, k2, n = 417, 411, 450  # AMADEUS vs Naive RAG, GPT-4.1, Table 6: 92.67% and 91.33% of 450
    pooled = (k1 + k2) / (2 * n)
    z = (k1 - k2) / n / math.sqrt(pooled * (1 - pooled) * 2 / n)
    assert two_proportion_test(k1, n, k2, n) == pytest.approx(math.erfc(z / math.sqrt(2)))
    assert two_proportion_test(417, 450, 411, 450) == pytest.approx(0.46, abs=0.01)


def test_smallest_exact_p():
    assert smallest_exact_p(2) == 0.5 and smallest_exact_p(6) == 0.03125 and smallest_exact_p(0) == 1.0


def test_sample_sizes_by_hand():
    n = (Z_975 * math.sqrt(0.2) + Z_80 * math.sqrt(0.2 - 0.01)) ** 2 / 0.01  # Connor 1987: 154.6
    assert n_paired_binary(0.1, 0.2) == math.ceil(n) == 155
    assert mde_paired_binary(n, 0.2) == pytest.approx(0.1)
    assert n_paired_continuous(0.5, 1.0) == math.ceil(((Z_975 + Z_80) / 0.5) ** 2) == 32
    assert mde_paired_continuous(32, 1.0) == pytest.approx((Z_975 + Z_80) / math.sqrt(32))
    assert math.isnan(n_paired_binary(0.3, 0.2)) and math.isnan(mde_paired_binary(0, 0.2))
