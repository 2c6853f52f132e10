"""CharacterCraft Table 6: the printed "Avg." column recomputes from the printed dimensions."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

import pandas as pd
import pytest

from rpa_lib.evaluation.metrics import table6_average
from rpa_lib.paths import PAPER_RESULTS_DIR


def _half_up(x: float) -> float:
    return float(Decimal(repr(x)).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP))


def test_table6_avg_recomputes_from_its_columns():
    table = pd.read_csv(PAPER_RESULTS_DIR / "charactercraft_table6_kendall.csv")
    recomputed = table6_average(table)
    # Every printed Avg is the mean of the 8 printed dimensions rounded half up to one decimal; a "without" row
    # takes its unprinted dimensions ("-", no change) from the judge's "with" row.
    assert [_half_up(x) for x in recomputed] == table.avg.tolist()
    assert recomputed.tolist() == pytest.approx([53.375, 40.575, 38.625, 29.9375, 61.25, 42.5625])


def test_table6_average_needs_the_with_row():
    table = pd.DataFrame([{"judge": "j", "reference": "without", "flu": None, "coh": None, "bg": None, "pers": 1.0,
                           "us": None, "emo": 2.0, "dec": 3.0, "hl": None}])
    with pytest.raises(ValueError, match="no 'with' row"):
        table6_average(table)
