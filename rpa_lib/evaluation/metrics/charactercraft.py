"""CharacterCraft Table 6: the "Avg." column of the Kendall correlations between LLM judges and humans,
recomputed from the printed numbers (the correlations themselves are :func:`~rpa_lib.evaluation.metrics.kendall_tau`).
"""

from __future__ import annotations

import pandas as pd

DIMENSIONS = ("flu", "coh", "bg", "pers", "us", "emo", "dec", "hl")


def table6_average(table: pd.DataFrame) -> pd.Series:
    """The mean over :data:`DIMENSIONS` of each row of Table 6, a ``"without"`` row's unprinted dimensions taken
    from the same judge's ``"with"`` row."""
    missing = [c for c in ("judge", "reference", *DIMENSIONS) if c not in table.columns]
    if missing:
        raise ValueError(f"Table 6 needs columns {missing}")
    full = table.loc[:, list(DIMENSIONS)].astype(float)
    with_rows = table[table.reference == "with"].set_index("judge").loc[:, list(DIMENSIONS)].astype(float)
    for i, row in table[table.reference == "without"].iterrows():
        if row.judge not in with_rows.index:
            raise ValueError(f"judge {row.judge!r} has a 'without' row but no 'with' row to fill it from")
        full.loc[i] = full.loc[i].fillna(with_rows.loc[row.judge])
    if full.isna().any().any():
        raise ValueError("Table 6 has a dimension missing in a row that cannot be filled")
    return full.mean(axis=1)
