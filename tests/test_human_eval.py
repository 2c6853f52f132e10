"""AMADEUS Table 2's pipeline (rpa_lib.evaluation.human): the sample design, empty sheets for people, the LLM rater
panel writing the same sheets the same reader reads, and filled human sheets replacing the panel with no code
change. Offline: fixture data, fake LLMs, the hashing embedder. (Malformed sheets: tests/test_sheets.py.)"""

from __future__ import annotations

import re

import matplotlib.pyplot
import numpy as np
import pandas as pd
import pytest

from rpa_lib.data import Dataset
from rpa_lib.evaluation.calibration import calibrated_verdict
from rpa_lib.evaluation.human import (
    HUMAN_SOURCE,
    LLM_SOURCE,
    build_samples,
    export_empty_sheets,
    llm_panel,
    rate_with_panel,
    ratings_long,
    sample_jobs,
    sample_set_id,
    table2,
    table2_ratings,
)
from rpa_lib.evaluation.human_prompts import RATER_PERSONAS, rating_messages
from rpa_lib.evaluation.metrics import cronbach_alpha, krippendorff_alpha, likert_summary
from rpa_lib.evaluation.runner import FailedItems, check_failures, failed_items, run_jobs
from rpa_lib.evaluation.sheets import SheetError
from rpa_lib.llm import FakeLLM
from rpa_lib.methods import build_method
from rpa_lib.paper import table2_beside_paper

CHARS = ["ada-lindqvist", "bram-okafor"]


@pytest.fixture
def dataset(fixture_data):
    return Dataset(fixture_data)


@pytest.fixture
def samples(dataset):
    """8 samples (4 MBTI, 4 BFI) through AMADEUS's context step on the fake LLM."""
    amadeus = build_method("amadeus", FakeLLM(), dataset=dataset, embedder="hash-64", k=2, max_iterations=4)
    rows = run_jobs(amadeus, sample_jobs(dataset, CHARS, {"mbti": None, "bigfive": None}, 4), step="context",
                    progress=False)
    names = {s: dataset.profile(s)[0] for s in CHARS}
    built, failed = build_samples(rows, names)
    assert failed.empty
    return built


def persona_rule(ratings: dict[str, str]):
    """A fake rater whose rating depends on its persona and on the sample (the digits of its question)."""
    def rule(kind, messages, spec):
        persona = next(p for p, text in RATER_PERSONAS.items() if messages[0]["content"].startswith(text))
        shift = len(re.findall(r"\w+", messages[1]["content"])) % 2
        return str(min(5, int(ratings[persona]) + shift))
    return rule


# ---- the sample --------------------------------------------------------------------------------------------------


def test_sample_design_spreads_over_characters_without_repeats(dataset):
    jobs = sample_jobs(dataset, CHARS, {"mbti": None, "bigfive": None}, 4, seed=3)
    assert [j.meta["sample_id"] for j in jobs] == [*(f"mbti-0{i}" for i in range(1, 5)),
                                                   *(f"bfi-0{i}" for i in range(1, 5))]
    for task in ("MBTI", "BFI"):
        mine = [j for j in jobs if j.meta["task"] == task]
        assert len({j.id for j in mine}) == 4  # distinct questions within a task
        assert sorted(pd.Series([j.character for j in mine]).value_counts()) == [2, 2]
    assert jobs == sample_jobs(dataset, CHARS, {"mbti": None, "bigfive": None}, 4, seed=3)
    assert [j.id for j in jobs] != [j.id for j in sample_jobs(dataset, CHARS, {"mbti": None, "bigfive": None}, 4, seed=4)]
    # more samples than items: characters rotate so that no (character, item) pair repeats
    many = sample_jobs(dataset, CHARS, {"mbti": None}, 16)
    assert len({(j.character, j.id) for j in many}) == 16
    with pytest.raises(ValueError, match="need more than the 8 items x 2 characters"):
        sample_jobs(dataset, CHARS, {"mbti": None}, 17)


def test_samples_hold_gs_chunks_and_ae_attributes(samples):
    assert list(samples.columns[:6]) == ["sample_id", "task", "character", "question", "chunks", "attributes"]
    assert set(samples.character) == {"Ada Lindqvist", "Bram Okafor"}
    assert samples.chunks.str.startswith("[1] ").all()
    assert samples.attributes.str.contains("Belief and Value: ").all()
    assert samples.attributes.str.contains("Psychological Traits: ").all()
    assert samples.chunk_ids.str.len().gt(0).all()


def test_failed_context_rows_are_no_sample(dataset):
    amadeus = build_method("amadeus", FakeLLM(), dataset=dataset, embedder="hash-64", k=2, max_iterations=4)
    jobs = sample_jobs(dataset, CHARS, {"mbti": None}, 2)

    def broken(character, question):
        raise RuntimeError("server down")

    amadeus.context = broken
    rows = run_jobs(amadeus, jobs, step="context", progress=False)
    built, failed = build_samples(rows, {})
    assert built.empty and len(failed) == 2 and failed.error.str.contains("server down").all()
    with pytest.raises(FailedItems, match="2 item"):
        check_failures(failed_items(context=failed), "run")


def test_sample_set_id_follows_what_raters_see(samples):
    sid = sample_set_id(samples)
    assert re.fullmatch(r"table2-4m4b-[0-9a-f]{8}", sid)
    changed = samples.copy()
    changed.loc[0, "attributes"] += " More."
    assert sample_set_id(changed) != sid and sample_set_id(samples.copy()) == sid


# ---- sheets for people -------------------------------------------------------------------------------------------


def test_empty_sheets_never_overwrite_a_sheet(samples, tmp_path):
    folder = tmp_path / "sheets"
    written, kept = export_empty_sheets(samples, 2, folder, "set-a")
    assert sorted(p.name for p in written) == ["rater01.csv", "rater01.xlsx", "rater02.csv", "rater02.xlsx"]
    filled = folder / "rater01.csv"
    filled.write_text(filled.read_text(encoding="utf-8-sig") + "\n", encoding="utf-8-sig")
    before = filled.read_bytes()
    written, kept = export_empty_sheets(samples, 3, folder, "set-a")
    assert kept == ["rater01", "rater02"] and sorted(p.name for p in written) == ["rater03.csv", "rater03.xlsx"]
    assert filled.read_bytes() == before


# ---- the LLM rater panel -----------------------------------------------------------------------------------------


def test_panel_needs_distinct_known_personas():
    with pytest.raises(ValueError, match="at least 2"):
        llm_panel(["psychologist"], [FakeLLM()])
    with pytest.raises(ValueError, match="distinct names"):
        llm_panel(["psychologist", "psychologist"], [FakeLLM()])
    with pytest.raises(ValueError, match="distinct names"):
        llm_panel(["psychologist", "astrologer"], [FakeLLM()])
    with pytest.raises(ValueError, match=r"distinct names of .*; got \['psychologistt'\]"):  # the typo, not "at least 2"
        llm_panel(["psychologistt"], [FakeLLM()])
    mixed = llm_panel(["psychologist", "skeptic", "fact-checker"], [FakeLLM(label="a"), FakeLLM(label="b")])
    assert [r.name for r in mixed] == ["llm-psychologist-fake-a", "llm-skeptic-fake-b", "llm-fact-checker-fake-a"]


def test_rating_prompt_shows_the_sheet_and_its_scale(samples):
    s = samples.iloc[0]
    text = rating_messages("skeptic", s.character, s.question, s.chunks, s.attributes)[1]["content"]
    assert s.chunks in text and s.attributes in text and "5 = Fully reasonable" in text


def test_panel_ratings_go_through_the_sheets_and_the_reader(samples, tmp_path):
    rule = persona_rule({"psychologist": "3", "close-reader": "4", "fact-checker": "2"})
    panel = llm_panel(["psychologist", "close-reader", "fact-checker"], [FakeLLM(rule)])
    sid = sample_set_id(samples)
    with pytest.raises(FileNotFoundError, match=f"human_ratings_dir {tmp_path / 'nobody'}: no such folder"):
        table2_ratings(samples, sid, panel=panel, sheets_dir=tmp_path / "llm", human_dir=tmp_path / "nobody")
    (tmp_path / "nobody").mkdir()  # no sheets for this sample set: the panel rates
    table, source, verdicts = table2_ratings(samples, sid, panel=panel, sheets_dir=tmp_path / "llm",
                                             human_dir=tmp_path / "nobody", progress=False)
    assert source == LLM_SOURCE
    assert sorted(p.name for p in (tmp_path / "llm").iterdir()) == [
        "llm-close-reader.csv", "llm-fact-checker.csv", "llm-psychologist.csv"]
    assert list(table.index) == list(samples.sample_id)
    for rater in table.columns:
        got = verdicts[verdicts.rater == rater].set_index("sample_id").rating
        assert table[rater].tolist() == got.loc[table.index].tolist()
    assert table["llm-fact-checker"].between(2, 3).all() and table["llm-close-reader"].between(4, 5).all()


def test_unparsed_and_failed_ratings_stay_blank_and_are_reported(samples, tmp_path):
    def rule(kind, messages, spec):
        if "Bram" in messages[1]["content"]:
            raise RuntimeError("rater crashed")
        return "maybe"  # never an allowed option: unparseable

    panel = llm_panel(["psychologist", "skeptic"], [FakeLLM(rule)])
    verdicts = rate_with_panel(samples, panel, progress=False)
    bram = samples.character == "Bram Okafor"
    assert set(verdicts.status) == {"failed", "unparsed"}
    assert verdicts.rating.isna().all()
    failed = failed_items(ratings=verdicts)
    assert len(failed) == 2 * int(bram.sum()) and failed.error.str.contains("rater crashed").all()
    with pytest.raises(FailedItems):
        check_failures(failed, "run")


def test_calibration_needs_option_scores(samples):
    panel = llm_panel(["psychologist", "skeptic"], [FakeLLM()])
    verdicts = rate_with_panel(samples, panel, calibrate=True, progress=False)
    assert (verdicts.status == "failed").all() and verdicts.error.str.contains("option scores").all()


class ScoringJudge:
    """A stand-in backend that returns option scores: it prefers "1" always, "3" a little more for real input."""

    label = "scoring"

    def choose(self, messages, options, name=None):
        from types import SimpleNamespace

        real = "N/A" not in messages[-1]["content"]
        scores = {o: (-1.0 if o == "1" else -3.0) + (1.5 if real and o == "3" else 0.0) for o in options}
        return SimpleNamespace(text=max(scores, key=scores.get), scores=scores, coerced=False)


def test_calibrated_verdict_removes_a_standing_preference():
    options = {str(i): float(i) for i in range(1, 6)}
    real = [{"role": "user", "content": "a real sample"}]
    judge = ScoringJudge()
    assert judge.choose(real, list(options)).text == "1"
    baseline = judge.choose([{"role": "user", "content": "N/A"}], list(options)).scores
    v = calibrated_verdict(judge, "rating", real, options, baseline)
    assert v.status == "ok" and v.answer == "3" and v.value == 3.0


def test_best_option_floors_an_option_outside_the_top_logprobs():
    import math

    from rpa_lib.evaluation.calibration import best_option

    inf = math.inf
    # a baseline of -inf gave +inf and won; now "2" is floored at -2 and "1" (+1 vs -7) wins
    assert best_option({"1": -1, "2": -9}, {"1": -2, "2": -inf}, ["1", "2"]) == "1"
    # both -inf gave NaN, which max() kept when it came first; floored, "2" scores -5 - (-4) = -1 against 0 for "1"
    assert best_option({"1": -3, "3": -5, "2": -inf}, {"1": -3, "3": -4, "2": -inf}, iter(["2", "1", "3"])) == "1"
    assert best_option({"1": -inf, "2": -1, "3": -2}, dict.fromkeys("123", 0.0), "123") == "2"
    with pytest.raises(ValueError, match="every score"):
        best_option({"1": -inf, "2": -inf}, {"1": 0, "2": 0}, ["1", "2"])


# ---- people's sheets replace the panel -------------------------------------------------------------------------


def fill_human_sheets(samples, folder, sample_set, ratings: dict[str, list[int]]):
    export_empty_sheets(samples, len(ratings), folder, sample_set)
    for rater, values in zip(sorted(ratings), ratings.values()):
        path = folder / f"{rater}.csv"
        sheet = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8-sig")
        sheet["rating"] = [str(v) for v in values]
        sheet.to_csv(path, index=False, encoding="utf-8-sig")
        (folder / f"{rater}.xlsx").unlink()


def test_filled_human_sheets_replace_the_panel_with_no_code_change(samples, tmp_path):
    sid = sample_set_id(samples)
    rng = np.random.default_rng(0)
    truth = rng.integers(2, 6, len(samples))
    synthetic = {f"rater0{i}": list(np.clip(truth + rng.integers(-1, 2, len(samples)), 1, 5)) for i in (1, 2, 3)}
    fill_human_sheets(samples, tmp_path / "human" / sid, sid, synthetic)

    def never(kind, messages, spec):
        raise AssertionError("the LLM panel must not be asked when people's sheets are there")

    panel = llm_panel(["psychologist", "skeptic"], [FakeLLM(never)])
    table, source, verdicts = table2_ratings(samples, sid, panel=panel, sheets_dir=tmp_path / "llm",
                                             human_dir=tmp_path / "human", progress=False)
    assert source == HUMAN_SOURCE and verdicts.empty and not (tmp_path / "llm").exists()
    assert list(table.columns) == ["rater01", "rater02", "rater03"]
    expected = pd.DataFrame(synthetic, index=samples.sample_id.to_numpy(), dtype=float)
    assert np.array_equal(table.to_numpy(), expected.to_numpy())

    t2 = table2(table, samples, source)
    assert t2.task.tolist() == ["BFI", "MBTI"] and (t2.source == HUMAN_SOURCE).all()
    for row in t2.itertuples():
        part = expected.loc[samples.sample_id[samples.task == row.task]]
        s = likert_summary(part)
        alpha, (low, high) = cronbach_alpha(part)
        assert (row.mu, row.sigma, row.median) == pytest.approx((s.mu, s.sigma, s.median))
        assert (row.cronbach_alpha, row.alpha_low, row.alpha_high) == pytest.approx((alpha, low, high))
        assert row.krippendorff_alpha == pytest.approx(krippendorff_alpha(part, value_domain=[1, 2, 3, 4, 5]))
        assert row.samples == 4 and row.raters == 3 and row.ratings == 12
    long = ratings_long(table, samples, source)
    assert len(long) == 3 * len(samples) and set(long.task) == {"MBTI", "BFI"}


def test_a_bad_human_sheet_is_an_error_not_a_fallback(samples, tmp_path):
    sid = sample_set_id(samples)
    folder = tmp_path / "human" / sid
    fill_human_sheets(samples, folder, sid, {"rater01": [4] * len(samples), "rater02": [3] * len(samples)})
    sheet = pd.read_csv(folder / "rater02.csv", dtype=str, keep_default_na=False, encoding="utf-8-sig")
    sheet.loc[2, "rating"] = "7"
    sheet.to_csv(folder / "rater02.csv", index=False, encoding="utf-8-sig")
    with pytest.raises(SheetError, match=r"rater02.csv: row 4: rating is outside 1-5 \(value '7'\)"):
        table2_ratings(samples, sid, panel=llm_panel(["psychologist", "skeptic"], [FakeLLM()]),
                       sheets_dir=tmp_path / "llm", human_dir=tmp_path / "human", progress=False)


def test_empty_human_sheets_fall_back_to_the_panel(samples, tmp_path):
    sid = sample_set_id(samples)
    export_empty_sheets(samples, 2, tmp_path / "human" / sid, sid)
    _, source, _ = table2_ratings(samples, sid, panel=llm_panel(["psychologist", "skeptic"], [FakeLLM()]),
                                  sheets_dir=tmp_path / "llm", human_dir=tmp_path / "human", progress=False)
    assert source == LLM_SOURCE


def test_constant_ratings_give_nan_alpha_with_a_note(samples):
    table = pd.DataFrame({"a": 3.0, "b": 3.0}, index=samples.sample_id)
    t2 = table2(table, samples, LLM_SOURCE)
    assert t2.cronbach_alpha.isna().all() and t2.note.str.contains("undefined").all()
    assert (t2.mu == 3.0).all() and (t2.sigma == 0.0).all()


def test_table2_beside_the_paper(samples):
    table = pd.DataFrame({"a": [1, 2, 3, 4, 5, 4, 3, 2], "b": [2, 2, 3, 5, 5, 4, 2, 2]}, index=samples.sample_id,
                         dtype=float)
    side = table2_beside_paper(table2(table, samples, LLM_SOURCE))
    assert side.source.tolist()[:2] == [LLM_SOURCE] * 2 and side.source.str.startswith("AMADEUS paper").sum() == 2
    paper = side[side.source.str.startswith("AMADEUS paper")].set_index("task")
    assert paper.loc["BFI", "cronbach_alpha"] == 0.845 and paper.loc["MBTI", "mu"] == 3.870
    assert paper.loc["BFI", "alpha_low"] < 0.845 < paper.loc["BFI", "alpha_high"]
    # the figure's panel titles put the paper's mean beside ours
    from rpa_lib.plots import table2_figure

    long = pd.DataFrame({"task": ["BFI", "BFI", "MBTI"], "rater": ["a", "b", "a"], "rating": [4.0, 5.0, 3.0]})
    fig = table2_figure(long, "tiny", paper=paper.mu.to_dict())
    assert [ax.get_title() for ax in fig.axes] == ["BFI: mean rating 4.50 (paper: 3.89, human raters)",
                                                   "MBTI: mean rating 3.00 (paper: 3.87, human raters)"]


def test_table2_figure_says_why_there_is_no_interval_and_puts_our_alpha_beside_the_papers():
    from rpa_lib.plots import table2_figure

    long = pd.DataFrame({"task": "BFI", "sample_id": ["s1", "s1", "s2", "s2"], "rater": ["a", "b", "a", "b"],
                         "rating": [4.0, 5.0, 3.0, 4.0]})
    fig = table2_figure(long, "tiny", intervals={"BFI": (np.nan, np.nan)}, paper={"BFI": 3.89}, characters=1,
                        alphas={"BFI": (0.9863, 0.845)})
    assert fig.axes[0].get_title() == ("BFI: mean rating 4.00 (paper: 3.89, human raters)\n"
                                       "(no interval: 1 character, 2 samples); Cronbach's α 0.99 (paper: 0.845)")
    matplotlib.pyplot.close(fig)
