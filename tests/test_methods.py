"""Guided Selection (Algorithm 1 and its look-ahead window), the three methods and chunk statistics, offline."""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from rpa_lib.evaluation.chunk_usage import duplication_frequencies, usage_stats, used_chunks
from rpa_lib.llm import FakeLLM
from rpa_lib.methods import Amadeus, NaiveRAG, NoRAG, build_method, guided_selection

FIXTURES = Path(__file__).parent / "fixtures" / "data"


def sequential_reference(ranked, judge, n, k):
    """Algorithm 1 transcribed line by line, as the oracle."""
    slot, t = [], 0
    for c in ranked:
        if t >= n or len(slot) >= k:
            break
        if judge(c):
            slot.append(c)
        t += 1
    if not slot:
        return list(ranked[:k + 1]), True, t
    return slot, False, t


def test_guided_selection_matches_algorithm_1_for_every_window():
    rng = random.Random(7)
    for _ in range(400):
        n_chunks = rng.randint(0, 40)
        p_yes = rng.choice([0.0, 0.05, 0.2, 0.6, 1.0])
        pattern = [rng.random() < p_yes for _ in range(n_chunks)]
        n, k = rng.randint(0, 35), rng.randint(1, 3)
        ranked = list(range(n_chunks))
        want = sequential_reference(ranked, pattern.__getitem__, n, k)
        for window in (1, 2, 5):
            asked = []
            lock = threading.Lock()

            def judge(c, asked=asked, lock=lock, pattern=pattern):
                time.sleep(rng.random() * 0.0005)  # shuffle completion order across threads
                with lock:
                    asked.append(c)
                return pattern[c]

            got = guided_selection(ranked, judge, n, k, window)
            assert (got.selected, got.failed, got.examined) == want, (pattern, n, k, window)
            assert got.verdicts == [pattern[i] for i in range(got.examined)]
            assert set(range(got.examined)) <= set(asked)
            # speculative answers exist only past the stop and are never counted as examined
            assert got.speculative <= window - 1
            if window == 1:
                assert sorted(asked) == list(range(got.examined)) and got.speculative == 0


def test_gs_failure_returns_top_k_plus_one():
    sel = guided_selection(list("abcdef"), judge=lambda c: False, max_iterations=4, slot_size=2)
    assert sel.failed and sel.selected == ["a", "b", "c"] and sel.examined == 4


def test_gs_stops_when_slot_is_full():
    asked = []
    sel = guided_selection(list("abcdef"), judge=lambda c: asked.append(c) or c in "bc", max_iterations=30, slot_size=2)
    assert sel.selected == ["b", "c"] and not sel.failed and asked == ["a", "b", "c"]


def test_judge_error_on_needed_chunk_propagates_but_speculative_error_is_ignored():
    def boom_on(bad):
        def judge(c):
            if c == bad:
                raise RuntimeError(f"judge failed on {c}")
            return c in "ab"
        return judge

    with pytest.raises(RuntimeError, match="judge failed on a"):
        guided_selection(list("abcdef"), boom_on("a"), window=3)
    # "e" lies past the stop (slot full after "b"): the sequential walk never asks it, so its error cannot matter
    sel = guided_selection(list("abcdef"), boom_on("d"), window=4)
    assert sel.selected == ["a", "b"] and sel.examined == 2


def test_invalid_settings_are_rejected():
    with pytest.raises(ValueError):
        guided_selection([1, 2], lambda c: True, slot_size=0)


def scripted(judge_yes=lambda prompt: "Winter Storm" in prompt, structured=None):
    """A FakeLLM whose judge says yes for chunks matching ``judge_yes`` and whose chat echoes the system prompt."""
    def rule(kind, messages, spec):
        last = messages[-1]["content"]
        if kind == "choose":
            return "yes" if judge_yes(last) else "no"
        if kind == "structured":
            return structured if structured is not None else {"belief_and_value": "duty first", "psychological_traits": "quiet"}
        return "SYSTEM:" + messages[0]["content"]
    return FakeLLM(rule, cache=False)


def test_no_rag_uses_no_chunks_and_names_the_character_and_work():
    r = NoRAG(scripted(), data_dir=FIXTURES).respond("ada-lindqvist", "Who are you?")
    assert r.method == "no_rag" and r.knowledge == [] and r.gs_failed is None
    assert "Ada Lindqvist from Test Fixtures" in r.reply and len(r.calls) == 1 and r.calls[0].purpose == "respond"


def test_naive_rag_gives_top_k_chunks_as_knowledge():
    m = NaiveRAG(scripted(), data_dir=FIXTURES, embedder="hash-64", k=2)
    r = m.respond("ada-lindqvist", "What did you do when the storm broke the lamp's lens?")
    assert len(r.knowledge) == 2 and all(c.splitter == "vanilla" for c in r.knowledge)
    assert r.knowledge[0].body in r.reply  # the chunks reached the prompt


def test_amadeus_runs_gs_then_ae_then_responds_with_both():
    m = Amadeus(scripted(), data_dir=FIXTURES, embedder="hash-64", k=2, max_iterations=30, slot_size=2)
    r = m.respond("ada-lindqvist", "What did you do when the storm broke the lamp's lens?")
    assert not r.gs_failed and r.selected and all("Winter Storm" in c.context for c in r.selected)
    assert r.attributes == {"Belief and Value": "duty first", "Psychological Traits": "quiet"}
    assert "duty first" in r.reply and r.selected[0].text in r.reply
    purposes = [c.purpose for c in r.calls]
    assert purposes.count("judge") == r.examined and purposes[-2:] == ["extract", "respond"]


def test_amadeus_gs_failure_falls_back_and_ae_failure_is_recorded_not_fatal():
    llm = scripted(judge_yes=lambda p: False, structured={"wrong": 1})
    m = Amadeus(llm, data_dir=FIXTURES, embedder="hash-64", max_iterations=5)
    r = m.respond("bram-okafor", "Do you like loud parties?")
    assert r.gs_failed and len(r.selected) == 3 and r.examined == 5
    assert any(c.purpose == "extract" and c.output.startswith("failed") for c in r.calls)
    # the free-text fallback fills both attributes, one chat call each, and they reach the response
    assert [c.purpose for c in r.calls].count("extract-text") == 2
    assert set(r.attributes) == {"Belief and Value", "Psychological Traits"} and all(r.attributes.values())
    assert r.reply.startswith("SYSTEM:") and r.attributes["Belief and Value"][:40] in r.reply


def test_build_method_filters_settings_and_rejects_unknown_names():
    m = build_method("no_rag", llm=FakeLLM(), splitter="acts", max_iterations=3, data_dir=FIXTURES)
    assert isinstance(m, NoRAG)
    a = build_method("amadeus", llm=FakeLLM(), max_iterations=3, slot_size=1, window=2, data_dir=FIXTURES)
    assert (a.max_iterations, a.slot_size, a.window) == (3, 1, 2)
    with pytest.raises(ValueError, match="unknown method"):
        build_method("crag", llm=FakeLLM())


def test_chunk_usage_statistics():
    used = pd.DataFrame([
        {"method": "m", "character": "c", "question_id": "q1", "chunks": ["a", "b"], "gs_failed": False, "error": None},
        {"method": "m", "character": "c", "question_id": "q2", "chunks": ["b", "c", "d"], "gs_failed": True, "error": None},
        {"method": "m", "character": "c", "question_id": "q3", "chunks": [], "gs_failed": None, "error": "LLMError: x"},
    ])
    stats = usage_stats(used, {"c": 8}).iloc[0]
    assert stats.chunks_used == 4 and stats.usage_rate == 0.5 and stats.gs_failure_rate == 0.5 and stats.failed_items == 1
    freqs = duplication_frequencies(used, {"c": 8}).set_index("chunk").uses.to_dict()
    assert freqs == {"a": 1, "b": 2, "c": 1, "d": 1}


def test_used_chunks_records_failed_items():
    def rule(kind, messages, spec):
        if "Bram" in messages[-1]["content"]:
            raise ValueError("judge exploded")
        return "no"
    m = Amadeus(FakeLLM(rule, cache=False), data_dir=FIXTURES, embedder="hash-64", max_iterations=3)
    used = used_chunks(m, [("ada-lindqvist", "q1", "Hello?"), ("bram-okafor", "q1", "Hello?")])
    assert len(used) == 2
    ok, bad = used.iloc[0], used.iloc[1]
    assert pd.isna(ok.error) and ok.gs_failed and len(ok.chunks) == 3
    assert "judge exploded" in bad.error and bad.chunks == []
