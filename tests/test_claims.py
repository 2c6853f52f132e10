"""The claims table: the issue's re-test of the paper's printed Tables 4-5 and 6, and verdicts in words on
committed-style results (a tiny folder written here)."""

from __future__ import annotations

import pandas as pd
import pytest

from rpa_lib.evaluation.claims import CLAIMS, NOISE, SUPPORTED, claims_table, table6_printed, verdict
from rpa_lib.plots import claims_figure


def test_verdict_words():
    assert verdict(0.01, True, 15) == SUPPORTED and verdict(0.01, False, 15) == "contradicted"
    assert verdict(0.34, True, 15) == NOISE
    assert verdict(0.01, True, 1) == "not testable with this run: 1 character"


def test_table6_printed_allows_what_the_issue_says():
    t = table6_printed("AMADEUS", "Naive RAG").set_index("llm")
    assert list(t.min_discordant) == [6, 7, 2]  # GPT-4.1, Gemma3-27B, Qwen3-32B
    assert t.smallest_paired_p["Qwen3-32B"] == 0.5 and t.smallest_paired_p["GPT-4.1"] == pytest.approx(2 / 64)
    assert (t.unpaired_p > 0.4).all()


def test_claims_table_on_a_tiny_run(tmp_path):
    rows = []
    for char in ["a", "b", "c"]:
        for q in range(4):
            for method, right in (("amadeus", 1), ("naive_rag", int(q < 2))):
                rows.append({"task": "CharacterRAG", "method": method, "character": char, "question_id": f"{char}{q}",
                             "metric": "acc", "value": right, "status": "ok", "llm": "fake", "judge": "fake",
                             "embedder": "hash"})
    pd.DataFrame(rows).to_csv(tmp_path / "qa_verdicts.csv", index=False)
    claims, paired = claims_table(tmp_path)
    assert list(claims.claim_id) == [c.id for c in CLAIMS]
    by = claims.set_index("claim_id")
    assert by.paper_verdict["T4-crag"].startswith(NOISE) and "16 vs 5" in by.paper_evidence["T4-crag"]
    assert "10 vs 6" in by.paper_evidence["T5-crag"] and by.paper_verdict["T5-lightrag"] == SUPPORTED
    # Table 6: p < 0.05 only from an unpaired test over 450 questions as if independent, nothing by character
    for claim in ("T6-acc-crag", "T6-acc-lightrag"):
        v = by.paper_verdict[claim]
        assert v.startswith("not testable by character") and "independent" in v
    assert by.paper_verdict["T6-acc-naive"].startswith(NOISE)
    # ours: AMADEUS right on 6 more of 12 questions, 3 characters all better: sign test p = 0.25, not significant
    assert by.ours_difference["T6-acc-naive"] == 0.5 and by.ours_verdict["T6-acc-naive"].startswith(NOISE)
    assert by.ours_verdict["T4-crag"].startswith("not testable with this run")
    assert len(paired) == 1
    # the figure: shapes say whose evidence, fills the verdict, each in a legend of its own, so the white fill of
    # "not testable" is never read as the hollow circle of "this run"
    legends = {lg.get_title().get_text(): lg for lg in claims_figure(claims, "tiny run").legends}
    assert set(legends) == {"shape: evidence", "fill: verdict"}
    shapes = legends["shape: evidence"].legend_handles
    assert [h.get_label() for h in shapes] == ["paper's printed evidence", "this run"]
    assert {h.get_marker() for h in shapes} == {"s", "o"} and {h.get_markerfacecolor() for h in shapes} == {"none"}
    fills = {h.get_label(): h for h in legends["fill: verdict"].legend_handles}
    assert "not testable" in fills and fills["not testable"].get_facecolor()[:3] == (1.0, 1.0, 1.0)


def test_verdict_direction_is_the_sign_tests(tmp_path):
    # nine characters slightly worse (9 vs 10 of 10), one much better (100 vs 0 of 100): the mean over items favours
    # AMADEUS, the sign test (p = 0.021) says most characters do not; the verdict was "supported"
    rows = []
    for char, n, (amadeus, naive) in [*[(f"c{i}", 10, (9, 10)) for i in range(9)], ("c9", 100, (100, 0))]:
        for q in range(n):
            for method, right in (("amadeus", int(q < amadeus)), ("naive_rag", int(q < naive))):
                rows.append({"task": "CharacterRAG", "method": method, "character": char, "question_id": f"{char}{q}",
                             "metric": "acc", "value": right, "status": "ok", "llm": "fake", "judge": "fake",
                             "embedder": "hash"})
    pd.DataFrame(rows).to_csv(tmp_path / "qa_verdicts.csv", index=False)
    by = claims_table(tmp_path)[0].set_index("claim_id")
    assert by.ours_difference["T6-acc-naive"] > 0 and by.ours_p_character["T6-acc-naive"] == pytest.approx(22 / 1024)
    assert by.ours_verdict["T6-acc-naive"].startswith("mixed: contradicted by characters (1 for, 9 against)")
