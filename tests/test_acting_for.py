"""Every LLM call an evaluation job makes is made for the job's character (``rpa_lib.llm.plan.acting_for``), which
is what several servers of one model route by and what a fast plan tells shared calls apart with: the calls a
method makes in its own threads (Guided Selection's look-ahead), the judge's verdicts and the key points included.
LightRAG's event loop is tested in ``test_lightrag.py``."""

from __future__ import annotations

import itertools
import threading
from pathlib import Path

from rpa_lib.data import Dataset
from rpa_lib.evaluation.keypoints import keypoints_for
from rpa_lib.evaluation.runner import qa_jobs, run_jobs, run_verdicts
from rpa_lib.llm import FakeLLM
from rpa_lib.llm.fake import default_rule
from rpa_lib.llm.plan import acting_for
from rpa_lib.methods import build_method

FIXTURES = Path(__file__).parent / "fixtures" / "data"
CHARACTERS = ["ada-lindqvist", "bram-okafor"]


class Recording:
    """A FakeLLM rule that notes, for each call, the character it was made for and the kind of call."""

    def __init__(self):
        self.calls: list[tuple[str | None, str, str]] = []  # (acting_for, kind, last message)
        self.lock = threading.Lock()

    def __call__(self, kind, messages, spec):
        with self.lock:
            self.calls.append((acting_for.get(), kind, messages[-1]["content"]))
        if kind == "choose":
            return spec[0]  # every chunk is "yes": the walk goes on to its slot, look-ahead calls past it
        return default_rule(kind, messages, spec)


def test_guided_selections_look_ahead_calls_are_made_for_the_jobs_character():
    rule = Recording()
    method = build_method("amadeus", FakeLLM(rule, cache=False), dataset=FIXTURES, embedder="hash-64", window=8,
                          slot_size=2)
    jobs = qa_jobs(Dataset(FIXTURES), CHARACTERS, per_character=2)
    rows = run_jobs(method, jobs, workers=1, progress=False)  # one job at a time: the calls come in job order
    assert rows.error.isna().all(), rows.error.tolist()
    assert all(d["speculative"] > 0 for d in rows.details)  # look-ahead calls ran in GS's own threads
    assert [c for c, _ in itertools.groupby(who for who, _, _ in rule.calls)] == CHARACTERS
    assert {kind for _, kind, _ in rule.calls} >= {"choose", "chat"}


def test_a_judges_verdicts_and_key_points_are_made_for_the_character_they_are_about(tmp_path):
    rule = Recording()
    judge = FakeLLM(rule, cache=False, max_workers=4)
    jobs = [(c, i) for c in CHARACTERS for i in range(6)]
    verdicts = run_verdicts(judge, jobs, lambda job: judge.chat([{"role": "user", "content": f"{job[0]} {job[1]}"}]),
                            lambda job: {"character": job[0], "n": job[1]}, workers=4, progress=False)
    assert verdicts.error.isna().all() and len(rule.calls) == len(jobs)
    assert all(who is not None and text.startswith(f"{who} ") for who, _, text in rule.calls)

    rule.calls.clear()
    data = Dataset(FIXTURES)
    items = [(c, qa) for c in CHARACTERS for qa in data.qa(c)[:3]]
    points = keypoints_for(items, judge, tmp_path / "keypoints.jsonl", workers=4, progress=False)
    assert points.error.isna().all() and rule.calls
    answers = {c: {qa.answer for qa in data.qa(c)} for c in CHARACTERS}
    assert all(who in CHARACTERS and any(a in text for a in answers[who]) for who, _, text in rule.calls)
