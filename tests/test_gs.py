"""Guided Selection's speculation policies: fixed windows and the adaptive look-ahead select exactly what the
sequential algorithm selects (random judge patterns, verdicts completing out of order), send calls that depend
on the verdicts alone, and the adaptive policy keeps its extra calls within budget."""

from __future__ import annotations

import random
import threading
import time

import pytest

from rpa_lib.llm import FakeLLM
from rpa_lib.methods import build_method
from rpa_lib.methods.gs import AdaptiveWindow, guided_selection, parse_window


def sequential_reference(ranked, judge, n, k):
    """Algorithm 1, written as plainly as possible: (selected, failed, examined); N = 0 is GS off, not a failure."""
    if n == 0:
        return [], False, 0
    slot, t = [], 0
    for c in ranked[:n]:
        if len(slot) >= k:
            break
        if judge(c):
            slot.append(c)
        t += 1
    if not slot:
        return list(ranked[:k + 1]), True, t
    return slot, False, t


class Judge:
    """Answers from a fixed pattern after a random short delay (so verdicts complete out of order); records what
    it was asked and can wait for calls still running in the background."""

    def __init__(self, pattern, rng, max_delay=0.0005):
        self.pattern, self.rng, self.max_delay = pattern, rng, max_delay
        self.asked: list[int] = []
        self.lock = threading.Lock()

    def __call__(self, c):
        with self.lock:
            delay = self.rng.random() * self.max_delay
        time.sleep(delay)
        with self.lock:
            self.asked.append(c)
        return self.pattern[c]

    def wait_for(self, n, timeout=5.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if len(self.asked) >= n:
                    return sorted(self.asked)
            time.sleep(0.001)
        raise AssertionError(f"only {len(self.asked)} of {n} judge calls arrived")


def test_every_policy_selects_what_the_sequential_algorithm_selects():
    rng = random.Random(11)
    shared = AdaptiveWindow()
    for _ in range(300):
        n_chunks = rng.randint(0, 45)
        p_yes = rng.choice([0.0, 0.05, 0.12, 0.3, 0.7, 1.0])
        pattern = [rng.random() < p_yes for _ in range(n_chunks)]
        n, k = rng.randint(0, 35), rng.randint(1, 3)
        ranked = list(range(n_chunks))
        want = sequential_reference(ranked, pattern.__getitem__, n, k)
        for window in (1, 2, 8, "adaptive", shared):
            judge = Judge(pattern, rng)
            got = guided_selection(ranked, judge, n, k, window)
            assert (got.selected, got.failed, got.examined) == want, (pattern, n, k, window)
            assert got.verdicts == [pattern[i] for i in range(got.examined)]
            asked = judge.wait_for(got.examined + got.speculative)
            # every call sent is one chunk, once; the examined ones first, the speculative ones right after them
            assert asked == list(range(got.examined + got.speculative))
            assert got.examined + got.speculative <= min(n, n_chunks)
            if window == 1:
                assert got.speculative == 0 and got.round_trips == got.examined
            elif isinstance(window, int):
                assert got.speculative <= window - 1


def test_the_calls_sent_depend_on_the_verdicts_alone():
    """Same verdicts, other completion orders: the same calls, so a re-run on a warm cache sends none."""
    rng = random.Random(3)
    for _ in range(40):
        pattern = [rng.random() < 0.15 for _ in range(30)]
        runs = set()
        for seed in range(3):
            judge = Judge(pattern, random.Random(seed), max_delay=0.002)
            got = guided_selection(list(range(30)), judge, 30, 2, "adaptive")
            runs.add((tuple(judge.wait_for(got.examined + got.speculative)), got.round_trips, got.speculative))
        assert len(runs) == 1


def test_judge_errors_on_needed_chunks_propagate_speculative_ones_do_not():
    def judge(c):
        if c in ("a", "e"):
            raise RuntimeError(f"judge failed on {c}")
        return c in "bcd"

    with pytest.raises(RuntimeError, match="judge failed on a"):
        guided_selection(list("abcdefgh"), judge, window="adaptive")
    sel = guided_selection(list("xbcdefgh"), judge, slot_size=2, window=AdaptiveWindow(prior_yes_rate=0.1))
    assert sel.selected == ["b", "c"] and sel.examined == 3 and sel.speculative > 0  # "e" was asked, past the stop


def test_adaptive_window_estimates_and_learns():
    policy = AdaptiveWindow(margin=1.0)
    assert policy.ahead(2) == 8 and policy.ahead(1) == 4  # the prior: 0.25
    assert AdaptiveWindow().ahead(2) == 7 and AdaptiveWindow(margin=0.5).ahead(2) == 4  # a share of the need
    assert policy.yes_rate(yes=0, judged=8) == pytest.approx(2 / 16)  # this walk's verdicts move it
    policy.observe([False] * 96 + [True] * 4)
    assert policy.judge_yes_rate() == pytest.approx(5 / 104)
    assert policy.ahead(2) == 42  # a strict judge: look far ahead
    easy = AdaptiveWindow()
    for _ in range(20):
        guided_selection(list(range(30)), lambda c: True, 30, 2, easy)
    sel = guided_selection(list(range(30)), lambda c: True, 30, 2, easy)
    assert sel.examined + sel.speculative == 2 and sel.round_trips == 1  # a judge saying yes costs K calls
    strict = AdaptiveWindow()
    for _ in range(5):
        guided_selection(list(range(30)), lambda c: c == 29, 30, 2, strict)
    assert guided_selection(list(range(30)), lambda c: c == 29, 30, 2, strict).round_trips == 1  # one round


def test_window_settings_parse_to_policies_and_bad_ones_name_the_forms():
    assert parse_window(1) == 1 and parse_window("4") == 4
    assert isinstance(parse_window("adaptive"), AdaptiveWindow) and parse_window("adaptive:1.5").margin == 1.5
    shared = AdaptiveWindow()
    assert parse_window(shared) is shared
    for bad in (0, True, "adaptive:0", "adaptive:x", "wide", "4:2", 2.5):
        with pytest.raises(ValueError, match="'adaptive:M'"):
            parse_window(bad)
    method = build_method("amadeus", FakeLLM(), window="adaptive:1.2")
    assert isinstance(method.window, AdaptiveWindow) and method.window.margin == 1.2
    with pytest.raises(ValueError, match="window must be"):
        build_method("amadeus", FakeLLM(), window="wide")


def test_adaptive_reaches_the_stop_in_few_rounds_within_half_again_the_calls():
    """A judge saying yes to ~12% of chunks (the GS benchmark's): at most 1.5x the sequential calls, and far
    fewer rounds than fixed windows of 8."""
    rng = random.Random(2024)
    patterns = [[rng.random() < 0.12 for _ in range(40)] for _ in range(200)]
    policy = AdaptiveWindow()
    totals = {"examined": 0, "adaptive": 0, "adaptive_rounds": 0, "window8_rounds": 0}
    for pattern in patterns:
        got = guided_selection(list(range(40)), pattern.__getitem__, 30, 2, policy)
        totals["examined"] += got.examined
        totals["adaptive"] += got.examined + got.speculative
        totals["adaptive_rounds"] += got.round_trips
        totals["window8_rounds"] += guided_selection(list(range(40)), pattern.__getitem__, 30, 2, 8).round_trips
    assert totals["adaptive"] <= 1.5 * totals["examined"]
    assert totals["examined"] / totals["adaptive_rounds"] >= 8  # the latency-bound speed-up over sequential
    assert totals["adaptive_rounds"] < 0.8 * totals["window8_rounds"]


def test_invalid_windows_are_rejected():
    for window in (0, -1, "fast", True, 2.5):
        with pytest.raises(ValueError, match="window must be"):
            guided_selection([1, 2], lambda c: True, window=window)
    with pytest.raises(ValueError, match="prior_yes_rate"):
        AdaptiveWindow(prior_yes_rate=0)


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
