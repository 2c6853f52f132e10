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
    # each row names the models behind its own evidence, and a claim this run has no evidence for names none
    assert (by.llm["T6-acc-naive"], by.judge["T6-acc-naive"], by.embedder["T6-acc-naive"]) == ("fake", "fake", "hash")
    assert by.loc["T4-crag", ["llm", "judge", "embedder"]].isna().all()
    # the figure: shapes say whose evidence, fills the verdict, each in a legend of its own; the shapes' legend draws
    # them grey, so neither shape is read as the white fill of "not testable"
    legends = {lg.get_title().get_text(): lg for lg in claims_figure(claims, "tiny run").legends}
    assert set(legends) == {"shape: evidence", "fill: verdict"}
    shapes = legends["shape: evidence"].legend_handles
    assert [h.get_label() for h in shapes] == ["paper's printed evidence", "this run"]
    assert {h.get_marker() for h in shapes} == {"s", "o"} and {h.get_markerfacecolor() for h in shapes} == {"#bbbbbb"}
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


def _verdicts(folder, per_character, methods=("naive_rag",), llm="fake"):
    """qa_verdicts.csv: per character (amadeus right, each other method right) of its questions, all with the same
    LLM unless ``llm`` is a dict {character: LLM}."""
    rows = []
    for char, n, (amadeus, other) in per_character:
        for q in range(n):
            for method, right in (("amadeus", q < amadeus), *((m, q < other) for m in methods)):
                rows.append({"task": "CharacterRAG", "method": method, "character": char, "question_id": f"{char}{q}",
                             "metric": "acc", "value": int(right), "status": "ok",
                             "llm": llm[char] if isinstance(llm, dict) else llm, "judge": "fake", "embedder": "hash"})
    (folder / "qa_verdicts.csv").unlink(missing_ok=True)
    pd.DataFrame(rows).to_csv(folder / "qa_verdicts.csv", index=False)
    return claims_table(folder)[0].set_index("claim_id")


def test_a_sign_test_whose_interval_includes_0_is_noise(tmp_path):
    # nine characters better by one question of ten, one worse by eight: the sign test gives p = 0.021 and the mean
    # is positive, but resampling characters gives an interval across 0
    by = _verdicts(tmp_path, [*[(f"c{i}", 10, (6, 5)) for i in range(9)], ("c9", 10, (1, 9))])
    assert by.ours_p_character["T6-acc-naive"] == pytest.approx(22 / 1024) and by.ours_difference["T6-acc-naive"] > 0
    assert by.ours_low["T6-acc-naive"] < 0 < by.ours_high["T6-acc-naive"]
    v = by.ours_verdict["T6-acc-naive"]
    assert v.startswith(NOISE) and "includes 0" in v, v
    # the same split with the worse character only one question worse: the interval excludes 0, supported
    by = _verdicts(tmp_path, [*[(f"c{i}", 10, (6, 5)) for i in range(9)], ("c9", 10, (4, 5))])
    assert by.ours_low["T6-acc-naive"] > 0 and by.ours_verdict["T6-acc-naive"].startswith(SUPPORTED)


def test_a_claim_between_two_methods_no_table_pairs_is_tested(tmp_path):
    # "LightRAG is the worst": CRAG against LightRAG, which the tables (each method against AMADEUS) never pair
    rows = [{"method": m, "questionnaire": "mbti", "character": f"c{i}", "predicted": p, "truth": "INTP", "llm": "fake"}
            for i in range(8) for m, p in (("amadeus", "INTP"), ("crag", "INTP"), ("lightrag", "ESFJ"))]
    pd.DataFrame(rows).to_csv(tmp_path / "personality_types.csv", index=False)
    claims, paired = claims_table(tmp_path)
    by = claims.set_index("claim_id")
    assert by.ours_verdict["T4-lightrag-worst"].startswith(SUPPORTED), by.ours_verdict["T4-lightrag-worst"]
    assert by.ours_difference["T4-lightrag-worst"] == 1.0 and by.ours_n_characters["T4-lightrag-worst"] == 8
    assert "crag - lightrag = +1 " in by.ours_evidence["T4-lightrag-worst"]
    # the tables' comparisons (and their Holm families) are as published: no CRAG-LightRAG row among them
    assert set(zip(paired.method, paired.reference)) == {("crag", "amadeus"), ("lightrag", "amadeus")}


def test_a_claim_of_several_comparisons_names_the_one_its_numbers_are(tmp_path):
    rows = [{"embedder": e, "splitter": s, "character": f"c{i}", "mu": mu + i / 100, "var": 0.1}
            for e in ("MiniLM", "TF-IDF") for i in range(3) for s, mu in (("acts", 0.5), ("vanilla", 0.4))]
    pd.DataFrame(rows).to_csv(tmp_path / "table1_similarity_per_character.csv", index=False)
    by = claims_table(tmp_path)[0].set_index("claim_id")
    assert by.ours_comparison["T1-mu"] == "MiniLM" and by.ours_evidence["T1-mu"].count("ACTS - Vanilla") == 2
    fig = claims_figure(claims_table(tmp_path)[0], "label")
    ticks = [t.get_text().replace("\n", " ") for t in fig.axes[0].get_yticklabels()]
    assert any(t.startswith("T1-mu") and t.endswith("(circle: MiniLM, first of 2)") for t in ticks), ticks
    assert not any("circle" in t for t in ticks if not t.startswith("T1-"))


def test_verdicts_rest_on_p_adjusted_over_the_claims(tmp_path):
    split = [*[(f"c{i}", 4, (3, 2)) for i in range(9)], ("c9", 4, (1, 2))]  # 9 characters for, 1 against: p = 0.021
    alone = _verdicts(tmp_path, split)
    assert alone.ours_p_character_holm["T6-acc-naive"] == pytest.approx(22 / 1024)
    assert alone.ours_verdict["T6-acc-naive"].startswith(SUPPORTED)
    three = _verdicts(tmp_path, split, methods=("naive_rag", "crag", "lightrag"))  # three claims, one family
    for claim in ("T6-acc-naive", "T6-acc-crag", "T6-acc-lightrag"):
        assert three.ours_p_character[claim] == pytest.approx(22 / 1024)
        assert three.ours_p_character_holm[claim] == pytest.approx(3 * 22 / 1024)
        assert three.ours_verdict[claim].startswith(NOISE) and "Holm over the claims 0.0645" in three.ours_evidence[claim]


def test_comparisons_of_two_llms_are_told_apart(tmp_path):
    tmp = tmp_path / "two"
    tmp.mkdir()
    one = _verdicts(tmp_path, [(f"c{i}", 4, (4, 0)) for i in range(8)], llm="GPT")
    other = pd.read_csv(tmp_path / "qa_verdicts.csv").assign(llm="Qwen")
    other["value"] = 1 - other.value  # the other LLM: AMADEUS always wrong, Naive RAG always right
    pd.concat([pd.read_csv(tmp_path / "qa_verdicts.csv"), other]).to_csv(tmp / "qa_verdicts.csv", index=False)
    by = claims_table(tmp)[0].set_index("claim_id")
    assert one.ours_verdict["T6-acc-naive"].startswith(SUPPORTED)
    evidence, v = by.ours_evidence["T6-acc-naive"], by.ours_verdict["T6-acc-naive"]
    assert "hash, GPT: amadeus - naive_rag = +1" in evidence and "hash, Qwen: amadeus - naive_rag = -1" in evidence
    assert v.startswith("mixed: hash, GPT: supported; hash, Qwen: contradicted") and v.endswith("(GPT, Qwen, hash)")


def test_retrieval_claims_name_no_llm_and_chunk_usage_items_take_their_runs_labels(tmp_path):
    """Table 1's evidence comes from embedders alone: its claim rows name the embedders and no LLM, even when other
    tables of the run had one. Table 3's per-question file names no model: its per-character file's labels apply."""
    sims = [{"character": c, "embedder": e, "splitter": s, "mu": mu + (s == "acts") * 0.1 + i * 0.01, "var": 0.1}
            for i, c in enumerate("abc") for e in ("MiniLM", "TF-IDF") for s, mu in (("vanilla", 0.5), ("acts", 0.5))]
    pd.DataFrame(sims).to_csv(tmp_path / "table1_similarity_per_character.csv", index=False)
    items = [{"method": "amadeus", "character": c, "question_id": f"{c}1", "question_set": "MBTI", "chunks": ["x"],
              "gs_failed": False} for c in "abc"]
    pd.DataFrame(items).to_json(tmp_path / "chunk_usage_items.jsonl", orient="records", lines=True)
    per = [{"method": "amadeus", "character": c, "question_set": "MBTI", "usage_rate": 0.2, "llm": "Smol",
            "judge": "Smol", "embedder": "MiniLM"} for c in "abc"]
    pd.DataFrame(per).to_csv(tmp_path / "chunk_usage_per_character.csv", index=False)
    by = claims_table(tmp_path)[0].set_index("claim_id")
    assert pd.isna(by.llm["T1-mu"]) and pd.isna(by.judge["T1-mu"]) and by.embedder["T1-mu"] == "MiniLM; TF-IDF"
    assert by.loc["T3-failure", ["llm", "judge", "embedder"]].tolist() == ["Smol", "Smol", "MiniLM"]


def test_the_figure_draws_no_estimate_for_a_claim_this_run_cannot_test(tmp_path):
    # a difference from one character sat beside the paper's square as if it contradicted it
    claims = _verdicts(tmp_path, [(f"c{i}", 4, (3, 2)) for i in range(3)], methods=("naive_rag", "crag")).reset_index()
    untestable = claims.claim_id == "T6-acc-crag"
    claims.loc[untestable, ["ours_verdict", "ours_difference"]] = ["not testable with this run: 1 character (x)", -0.25]
    ax = claims_figure(claims, "label").axes[0]
    texts = [t.get_text() for t in ax.texts]
    assert " not testable: 1 character" in texts and "n=3 char." in texts
    circles = [line.get_xdata()[0] for line in ax.lines if line.get_marker() == "o"]
    assert -0.25 not in circles and 0.25 in circles  # T6-acc-naive: 3 of 4 against 2 of 4
