"""MDEs and needed sizes for the paper profile (rpa_lib.evaluation.power), checked against Connor's formula by
hand, and the sizes read from the profiles."""

from __future__ import annotations

import math

import pytest
import yaml

from rpa_lib import paths
from rpa_lib.evaluation.power import Sizes, mde_table, needed_table, power_text, profile_sizes

Z_975, Z_80 = 1.959963984540054, 0.8416212335729143


def connor(delta: float, psi: float) -> float:
    return (Z_975 * math.sqrt(psi) + Z_80 * math.sqrt(psi - delta ** 2)) ** 2 / delta ** 2


def test_needed_sizes_for_the_printed_differences():
    mbti = needed_table().iloc[1]
    assert mbti.n_observed == math.ceil(connor(11 / 60, 21 / 60)) == 80 and mbti.characters_observed == 20
    acc = needed_table().iloc[0]
    assert acc.n_one_way == math.ceil(connor(6 / 450, 6 / 450))
    assert acc.n_independent == math.ceil(connor(6 / 450, 0.9267 * 0.0867 + 0.9133 * 0.0733))
    assert list(needed_table().unit) == ["questions", "dimensions", "dimensions"]


def test_mde_at_the_paper_sizes_inverts_connor():
    acc = mde_table(Sizes()).iloc[0]
    psi = 2 * 0.9267 * 0.0733
    assert acc.pairs == 450 and connor(acc.mde_independent_errors, psi) == pytest.approx(450)
    assert mde_table(Sizes(1, 2, 1)).mde_independent_errors.isna().all()  # nothing detectable with 2 pairs


def test_profile_sizes_and_the_plan_section():
    paper = yaml.safe_load((paths.PROFILES_DIR / "paper.yaml").read_text())
    assert profile_sizes(paper) == Sizes(15, 30, 15)
    quick = yaml.safe_load((paths.PROFILES_DIR / "quick.yaml").read_text())
    assert profile_sizes(quick) == Sizes(2, 2, 1)
    text = power_text(Sizes())
    assert "MDE ACC (Table 6): 0.049 with 450 pairs" in text and "80 at its discordance (20)" in text
