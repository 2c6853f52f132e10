"""Worked examples of RAGEval's retrieval metrics (rpa_lib.evaluation.metrics.retrieval)."""

from __future__ import annotations

import math

import pytest

from rpa_lib.evaluation.metrics import eir, evidence_recall, split_sentences

# One question's evidence: the first string holds two sentences, the second one.
GOLD = ["Frieren studied magic under Flamme. She keeps a grimoire collection.",
        "Himmel died of old age."]
CHUNKS = [
    "Long ago,  Frieren studied magic\nunder Flamme. Flamme was a great mage.",  # 12 words; sentence 1
    "The party returned to the capital. Himmel died of old age. Frieren cried.",  # 13 words; sentence 3
]


def test_split_sentences_uses_pysbd_and_normalizes():
    assert split_sentences(GOLD[0]) == ["Frieren studied magic under Flamme.", "She keeps a grimoire collection."]
    # abbreviations and numbers do not end a sentence; whitespace runs collapse
    assert split_sentences("Dr. Heiter drank 2.5 bottles.\n\nHe   slept.") == ["Dr. Heiter drank 2.5 bottles.",
                                                                             "He slept."]
    assert split_sentences("   ") == []


def test_recall_per_sentence():
    # 3 gold sentences; "She keeps a grimoire collection." is in no chunk -> 2/3
    assert evidence_recall(GOLD, CHUNKS) == pytest.approx(2 / 3)


def test_recall_per_reference_is_rageval_equation_1():
    # string 1 misses one of its sentences, string 2 is complete -> 1/2
    assert evidence_recall(GOLD, CHUNKS, unit="reference") == pytest.approx(1 / 2)
    # sentences of one reference may be found in different chunks
    assert evidence_recall(["A b. C d."], ["x A b.", "C d. y"], unit="reference") == 1.0


def test_recall_whitespace_normalized_and_case_sensitive():
    assert evidence_recall(["Frieren  studied\tmagic under Flamme."], CHUNKS) == 1.0
    assert evidence_recall(["frieren studied magic under flamme."], CHUNKS) == 0.0


def test_recall_needs_the_sentence_in_one_chunk():
    # the sentence straddles two chunks: not found in either
    assert evidence_recall(["Himmel died of old age."], ["Himmel died", "of old age."]) == 0.0


def test_recall_edge_cases():
    assert evidence_recall(GOLD, []) == 0.0
    assert evidence_recall("Himmel died of old age.", CHUNKS[1]) == 1.0  # single strings are accepted
    assert evidence_recall(["A b.", "A b."], ["A b."]) == 1.0  # a repeated sentence is one reference
    with pytest.warns(RuntimeWarning, match="without gold evidence"):
        assert math.isnan(evidence_recall([], CHUNKS))
    with pytest.raises(ValueError, match="unit must be one of"):
        evidence_recall(GOLD, CHUNKS, unit="chunk")
    with pytest.raises(TypeError, match="must be strings"):
        evidence_recall([1], CHUNKS)


def test_eir_worked_example():
    # found: "Frieren studied magic under Flamme." (5 words) and "Himmel died of old age." (5 words);
    # retrieved: 12 + 13 = 25 words
    assert sum(len(c.split()) for c in CHUNKS) == 25
    assert eir(GOLD, CHUNKS) == pytest.approx(10 / 25)


def test_eir_counts_each_chunk_and_each_found_sentence_once():
    # the same chunk retrieved twice doubles the denominator; a sentence repeated in the gold counts once
    assert eir(["A b c."], ["A b c. d", "A b c. d"]) == pytest.approx(3 / 8)
    assert eir(["A b c.", "A b c."], ["A b c. d"]) == pytest.approx(3 / 4)


def test_eir_edge_cases():
    assert eir(GOLD, []) == 0.0
    assert eir(GOLD, ["", "  "]) == 0.0
    assert eir([], CHUNKS) == 0.0
    assert eir(GOLD, ["nothing relevant here"]) == 0.0


# ---------------------------------------------------------------- equal budgets


def test_within_budget_counts_the_last_chunk_in_part():
    """Whole chunks while they fit, then the first that does not fit cut to the budget left, then nothing."""
    from rpa_lib.evaluation.metrics import within_budget

    assert within_budget(["abcd", "efgh", "ij"], 6) == ["abcd", "ef"]
    assert within_budget(["abcd", "efgh", "ij"], 8) == ["abcd", "efgh"]  # exactly spent: nothing cut
    assert within_budget(["abcd", "efgh", "ij"], 100) == ["abcd", "efgh", "ij"]
    assert within_budget(["abcdefg"], 3) == ["abc"]  # a first chunk longer than the budget is cut, not dropped
    assert within_budget(["abcd"], 0) == []
    with pytest.raises(ValueError, match="budget must be >= 0"):
        within_budget(["abcd"], -1)


def test_within_budget_with_a_word_measure():
    """Any unit: here words, cut after the n-th word."""
    from rpa_lib.evaluation.metrics import within_budget

    def words(text):
        return len(text.split())

    def first_words(text, n):
        return " ".join(text.split()[:n])

    assert within_budget(["a b c", "d e f g", "h"], 5, words, first_words) == ["a b c", "d e"]


def test_recall_at_an_equal_budget_hand_computed():
    """Two evidence sentences; a 60-character budget keeps the first chunk whole and cuts the second after 20
    characters, so the second sentence (which needs 27) is not found: recall 1/2. At 80 both are found."""
    from rpa_lib.evaluation.metrics import within_budget

    gold = ["Ada keeps the light. She rows to Skelde."]
    ranked = ["Ada keeps the light. Storms come in winter here.",  # 48 characters
              "On market days She rows to Skelde. Then home."]  # "She rows to Skelde." ends at character 34
    given = within_budget(ranked, 60)
    assert given == [ranked[0], ranked[1][:12]]
    assert evidence_recall(gold, given) == 0.5
    assert evidence_recall(gold, within_budget(ranked, 48 + 34)) == 1.0
    assert eir(gold, within_budget(ranked, 48 + 34)) == pytest.approx(8 / (9 + 7))  # 8 gold words of 16 given


def test_token_counter_is_minilm_wordpiece_offline():
    """Token budgets count all-MiniLM-L6-v2's word pieces (no special tokens, no padding, no truncation)."""
    from rpa_lib.evaluation.evidence import token_counter

    tokens = token_counter()
    assert tokens.label == "all-MiniLM-L6-v2 WordPiece"
    assert tokens.length("Frieren the Slayer.") == 6  # fr ##ier ##en the slayer .
    assert tokens.prefix("Frieren the Slayer.", 4) == "Frieren the"
    assert tokens.length("word " * 600) == 600


def test_budget_scores_on_fixtures(fixture_data):
    """Every budget row is given at most its budget, and recall never falls as the budget grows."""
    from rpa_lib.data import Dataset
    from rpa_lib.evaluation.evidence import budget_scores, budget_table, token_counter

    ds = Dataset(fixture_data)
    tokens = token_counter()
    scores = budget_scores(ds, ds.slugs(), ["vanilla", "acts"], ["hash-64"], (300, 1000), (60, 200), tokens)
    chars = scores[scores.unit == "characters"]
    assert (chars.context_chars <= chars.budget).all() and set(scores.set) == {"paper"}
    wide = scores.pivot_table(index=["splitter", "character", "question", "unit"], columns="budget", values="recall")
    assert (wide[1000].dropna() >= wide[300].dropna()).all() and (wide[200].dropna() >= wide[60].dropna()).all()
    table = budget_table(scores)
    assert set(table.splitter) == {"Vanilla", "ACTS"} and (table.questions == 12).all()
