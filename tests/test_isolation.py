"""The autouse fixture of ``conftest.py`` leaves no RPA_* or OPENAI_* variable of the developer's shell in a test
(run ``RPA_JUDGE_MODEL=x OPENAI_BASE_URL=y pytest tests/test_isolation.py`` to see it hold)."""

from __future__ import annotations

import os


def test_no_rpa_or_openai_variable_leaks_in():
    set_by_conftest = {"RPA_CACHE_DIR", "RPA_INDEX_DIR", "RPA_USER_DATA_DIR"}
    assert {n for n in os.environ if n.startswith(("RPA_", "OPENAI_"))} == set_by_conftest
