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
