"""CharacterCraft's judge on the quality ladder (rpa_lib.evaluation.charactercraft): the ladder's construction and
claims, the two judge modes, Kendall's tau-b per dimension, and filled human dimension sheets replacing the ladder
as the rating source with no code change. Offline: fixture data and fake LLMs. (The printed Avg of CharacterCraft
Table 6 recomputing from its columns: tests/test_metrics_charactercraft.py.)"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from rpa_lib.data import Dataset
from rpa_lib.evaluation.charactercraft import (
    DIMENSION_SHEET,
    agreement,
    character_profile,
    export_dimension_sheets,
    judge_jobs,
    judge_ladder,
    kendall_table,
    rating_source,
    rung_means,
)
from rpa_lib.evaluation.charactercraft_prompts import dimension_messages, options
from rpa_lib.evaluation.human import HUMAN_SOURCE
from rpa_lib.evaluation.known_quality import (
    DEFAULT_RUNGS,
    EXPECTED,
    INVENTIONS_FIRST_PERSON,
    LADDER_SOURCE,
    build_ladder,
    ladder_levels,
    ladder_set_id,
)
from rpa_lib.evaluation.metrics.charactercraft import DIMENSIONS
from rpa_lib.evaluation.sheets import SheetError, read_sheet
from rpa_lib.llm import FakeLLM
from rpa_lib.paper import kendall_beside_paper

CHARS = ["ada-lindqvist", "bram-okafor"]
REF = ("bg", "pers", "emo", "dec")


@pytest.fixture
def dataset(fixture_data):
    return Dataset(fixture_data)


@pytest.fixture
def ladder(dataset):
    return build_ladder(dataset, CHARS, per_character=2)


def context(dataset):
    return ({s: character_profile(dataset, s) for s in CHARS}, {s: dataset.profile(s) for s in CHARS})


def asked(messages) -> tuple[str, str]:
    """(question, reply) of a judge prompt (the same reply text can be another question's off-topic rung)."""
    text = messages[-1]["content"]
    return re.search(r"asked .*?: (.*)\n", text).group(1), re.search(r"'s reply: (.*)\n", text).group(1)


def oracle(ladder: pd.DataFrame, levels=None):
    """A fake judge that knows each reply's rung and gives its expected level (1 where the ladder has no claim)."""
    rung = dict(zip(zip(ladder.question, ladder.reply), ladder.rung))

    def rule(kind, messages, spec):
        d = next(d for d, name in (("flu", "Fluency"), ("coh", "Coherence"), ("bg", "Background"),
                                   ("pers", "Personality"), ("us", "Utterance style"), ("emo", "Emotion"),
                                   ("dec", "Decision"), ("hl", "Human-likeness"))
                 if f"Dimension: {name}:" in messages[-1]["content"])
        level = EXPECTED[rung[asked(messages)]][d]
        return str(1 if level is None else level)
    return rule


# ---- the ladder --------------------------------------------------------------------------------------------------


def test_ladder_rungs_are_built_as_documented(dataset, ladder):
    assert len(ladder) == 2 * 2 * len(DEFAULT_RUNGS) and ladder.reply_id.is_unique
    assert list(ladder.rung[:len(DEFAULT_RUNGS)]) == list(DEFAULT_RUNGS)
    for qa_id, group in ladder.groupby("qa_id"):
        character = group.character.iloc[0]
        qa = next(q for q in dataset.qa(character) if q.id == qa_id)
        r = group.set_index("rung").reply
        assert r["in_character"] == " ".join(qa.evidence)
        assert qa.answer in r["out_of_character"] and "AI language model" in r["out_of_character"]
        assert any(inv in r["partly_wrong"] for inv in INVENTIONS_FIRST_PERSON)
        assert r["partly_wrong"].startswith(qa.evidence[0])
        if len(qa.evidence) > 1:
            assert qa.evidence[-1] not in r["partly_wrong"]
        assert qa.answer[1:] in r["contradicts_persona"] and r["contradicts_persona"].startswith("No.")
        other, other_id = group.set_index("rung").source["off_topic"].split(":")
        assert other != character
        other_qa = next(q for q in dataset.qa(other) if q.id == other_id)
        assert other_qa.attribute == qa.attribute and r["off_topic"] == " ".join(other_qa.evidence)
        assert r["garbled"] != r["in_character"]
        assert sorted(r["garbled"].split()) == sorted(r["in_character"].split())
        assert (group.reference == qa.answer).all()


def test_one_character_takes_its_own_other_attribute_for_off_topic(dataset):
    ladder = build_ladder(dataset, ["ada-lindqvist"], 1, ["in_character", "off_topic"])
    off = ladder.set_index("rung").loc["off_topic"]
    assert off.source.startswith("ada-lindqvist:") and off.source.split(":")[1] != off.qa_id


def test_ladder_rejects_unknown_rungs(dataset):
    with pytest.raises(ValueError, match="rungs"):
        build_ladder(dataset, CHARS, 1, ["in_character", "sarcastic"])
    with pytest.raises(ValueError, match="rungs"):
        build_ladder(dataset, CHARS, 1, ["in_character"])


def test_every_dimension_is_moved_and_in_character_is_top():
    for d in DIMENSIONS:
        claimed = [EXPECTED[r][d] for r in DEFAULT_RUNGS if EXPECTED[r][d] is not None]
        assert len(set(claimed)) > 1, f"the ladder does not move {d}"
        assert EXPECTED["in_character"][d] == max(claimed)
    # the five rungs alone leave fluency unmoved: the garbled rung is what moves it
    five = [r for r in DEFAULT_RUNGS if r != "garbled"]
    assert {EXPECTED[r]["flu"] for r in five} == {2}


def test_ladder_levels_are_the_claims(ladder):
    levels = ladder_levels(ladder)
    claims = sum(v is not None for r in ladder.rung for v in EXPECTED[r].values())
    assert len(levels) == claims and levels.level.between(0, 2).all()


# ---- the judge ---------------------------------------------------------------------------------------------------


def test_prompts_show_the_reference_only_when_asked():
    with_ref = dimension_messages("pers", "Ada", "Varholm", "profile", "Q?", "A reply.", "She keeps the light.")
    without = dimension_messages("pers", "Ada", "Varholm", "profile", "Q?", "A reply.")
    assert "Reference answer" in with_ref[-1]["content"] and "She keeps the light." in with_ref[-1]["content"]
    assert "Reference answer" not in without[-1]["content"]
    assert "one digit: 0, 1 or 2." in without[-1]["content"]
    assert "0, 1, 2 or 3." in dimension_messages("hl", "A", "W", "p", "q", "r")[-1]["content"]
    assert list(options("hl")) == ["0", "1", "2", "3"] and list(options("flu")) == ["0", "1", "2"]


def test_judge_jobs_two_modes(ladder):
    jobs = judge_jobs(ladder, REF)
    assert len(jobs) == len(ladder) * (len(DIMENSIONS) + len(REF))
    shown = {(mode, d): s for _, mode, d, s in jobs}
    assert all(shown["with", d] == (d in REF) for d in DIMENSIONS)
    assert all(not shown["without", d] for d in REF) and ("without", "flu") not in shown
    with pytest.raises(ValueError, match="unknown dimension"):
        judge_jobs(ladder, ["personality"])


def test_an_oracle_judge_has_tau_one_everywhere(dataset, ladder):
    profiles, about = context(dataset)
    seen = []

    def rule(kind, messages, spec):
        seen.append("Reference answer" in messages[-1]["content"])
        return oracle(ladder)(kind, messages, spec)

    verdicts = judge_ladder(ladder, FakeLLM(rule), profiles, about, reference_dimensions=REF, progress=False)
    assert (verdicts.status == "ok").all() and sum(seen) == len(ladder) * len(REF)
    agree = agreement(verdicts, ladder_levels(ladder), LADDER_SOURCE)
    assert len(agree) == len(DIMENSIONS) + len(REF)
    assert agree.tau.tolist() == pytest.approx([1.0] * len(agree))
    table = kendall_table(agree, "oracle")
    assert table.reference.tolist() == ["with", "without"]
    assert table.loc[1, "flu"] != table.loc[1, "flu"]  # NaN: "-", not judged without the reference
    assert table.avg.tolist() == pytest.approx([100.0, 100.0]) and table.defined.tolist() == [8, 8]
    means = rung_means(verdicts)
    top = means[(means["mode"] == "with") & (means.rung == "in_character")]
    assert (top["mean"] == 2).all()


def test_a_constant_judge_has_undefined_tau_with_a_note(dataset, ladder):
    profiles, about = context(dataset)
    verdicts = judge_ladder(ladder, FakeLLM(lambda k, m, s: "1"), profiles, about, reference_dimensions=REF,
                            progress=False)
    agree = agreement(verdicts, ladder_levels(ladder), LADDER_SOURCE)
    assert agree.tau.isna().all() and agree.note.str.contains("constant").all()
    side = kendall_beside_paper(kendall_table(agree, "fake"), LADDER_SOURCE)
    assert side.table.tolist()[:2] == ["ours", "ours"] and (side.table == "CharacterCraft paper").sum() == 6
    assert side.compared_with.iloc[0] == LADDER_SOURCE
    # the paper's avg is over all its dimensions; ours over those with a tau: how many is beside it
    assert side.defined.tolist()[:2] == [0, 0] and (side.defined[side.table == "CharacterCraft paper"] == 8).all()


def test_failed_judge_calls_are_rows_with_their_error(dataset, ladder):
    profiles, about = context(dataset)

    def rule(kind, messages, spec):
        if "Dimension: Emotion" in messages[-1]["content"]:
            raise RuntimeError("judge down")
        return oracle(ladder)(kind, messages, spec)

    verdicts = judge_ladder(ladder, FakeLLM(rule), profiles, about, reference_dimensions=REF, progress=False)
    failed = verdicts[verdicts.status == "failed"]
    assert set(failed.dimension) == {"emo"} and len(failed) == 2 * len(ladder)
    assert failed.error.str.contains("judge down").all() and failed.value.isna().all()
    # a dimension whose every verdict failed has its row, tau undefined, in each mode: the without row's average
    # leaves it out instead of borrowing the with row's tau (as it does for a dimension never judged there)
    agree = agreement(verdicts, ladder_levels(ladder), LADDER_SOURCE).set_index(["mode", "dimension"])
    for mode in ("with", "without"):
        assert pd.isna(agree.tau[mode, "emo"]) and agree.n[mode, "emo"] == 0
        assert agree.note[mode, "emo"] == f"no parsed verdict ({len(ladder)} unparsed or failed)"
    table = kendall_table(agree.reset_index(), "fake").set_index("reference")
    assert table.defined.tolist() == [7, 7] and pd.isna(table.emo["without"]) and table.avg.tolist() == [100, 100]


def test_kendall_table_fills_the_without_row_from_the_with_row():
    agree = pd.DataFrame([{"mode": "with", "dimension": d, "tau": 0.5} for d in DIMENSIONS]
                         + [{"mode": "without", "dimension": "pers", "tau": -0.3}])
    table = kendall_table(agree, "j")
    assert table.avg.tolist() == pytest.approx([50.0, (7 * 50 - 30) / 8])


def test_kendall_table_leaves_an_undefined_tau_undefined():
    """A dimension judged without the reference whose tau is undefined (NaN) is not filled from the with row:
    the without row shows no number there and its average leaves it out (issue 19 item 7)."""
    agree = pd.DataFrame([{"mode": "with", "dimension": d, "tau": 0.5} for d in DIMENSIONS]
                         + [{"mode": "without", "dimension": "pers", "tau": -0.3},
                            {"mode": "without", "dimension": "emo", "tau": np.nan}])
    agree.loc[agree.dimension.eq("emo") & agree["mode"].eq("with"), "tau"] = -1.0
    table = kendall_table(agree, "j").set_index("reference")
    assert np.isnan(table.loc["without", "emo"]) and table.loc["with", "emo"] == -100.0
    assert table.loc["without", "defined"] == 7
    assert table.loc["without", "avg"] == pytest.approx((6 * 50 - 30) / 7)


# ---- people's dimension sheets replace the ladder ----------------------------------------------------------------


def fill(folder, rater, values: dict[str, dict[str, int]], edit=None):
    path = folder / f"{rater}.csv"
    sheet = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8-sig")
    for d in DIMENSIONS:
        sheet[d] = [str(values[rid][d]) for rid in sheet.reply_id]
    if edit:
        edit(sheet)
    sheet.to_csv(path, index=False, encoding="utf-8-sig")
    return path


def synthetic_people(ladder, offset: int) -> dict[str, dict[str, int]]:
    """People who see the ladder's order, but rate 'no claim' cells anyway and disagree a little."""
    rng = np.random.default_rng(offset)
    out = {}
    for r in ladder.itertuples():
        out[r.reply_id] = {d: int(np.clip((1 if EXPECTED[r.rung][d] is None else EXPECTED[r.rung][d])
                                          + rng.integers(-1, 2) * (rng.random() < 0.2), 0, 2)) for d in DIMENSIONS}
    return out


def test_human_dimension_sheets_replace_the_ladder_with_no_code_change(dataset, ladder, tmp_path):
    sid = ladder_set_id(ladder)
    with pytest.raises(FileNotFoundError, match="human_ratings_dir .*human: no such folder"):
        rating_source(ladder, sid, tmp_path / "human")  # a mistyped folder is no silent fallback to the ladder
    (tmp_path / "human").mkdir()
    assert rating_source(ladder, sid, tmp_path / "human")[1] == LADDER_SOURCE
    folder = tmp_path / "human" / sid
    written, kept = export_dimension_sheets(ladder, 3, folder, sid)
    assert sorted(p.name for p in written) == ["INSTRUCTIONS.txt", "rater01.csv", "rater02.csv", "rater03.csv"]
    first = pd.read_csv(folder / "rater01.csv", encoding="utf-8-sig")
    assert "rung" not in first.columns and set(first.reply_id) == set(ladder.reply_id)
    assert first.reply_id.tolist() != ladder.reply_id.tolist()  # shuffled: the ladder's order does not show
    assert rating_source(ladder, sid, tmp_path / "human")[1] == LADDER_SOURCE  # empty sheets: not yet rated
    people = {"rater01": synthetic_people(ladder, 1), "rater02": synthetic_people(ladder, 2)}
    for rater, values in people.items():
        fill(folder, rater, values)

    levels, source = rating_source(ladder, sid, tmp_path / "human")
    assert source == HUMAN_SOURCE and len(levels) == len(ladder) * len(DIMENSIONS) and (levels.raters == 2).all()
    rid = ladder.reply_id.iloc[0]
    got = levels.set_index(["reply_id", "dimension"]).level
    assert got[rid, "bg"] == np.mean([people[r][rid]["bg"] for r in people])

    profiles, about = context(dataset)
    verdicts = judge_ladder(ladder, FakeLLM(oracle(ladder)), profiles, about, reference_dimensions=REF,
                            progress=False)
    agree = agreement(verdicts, levels, source)
    assert (agree.source == HUMAN_SOURCE).all() and (agree.n == len(ladder)).all()
    assert agree.tau.gt(0.5).all()


@pytest.mark.parametrize("edit, message", [
    (lambda s: s.__setitem__("flu", ["3"] + list(s.flu[1:])), r"row 2: flu is outside 0-2 \(value '3'\)"),
    (lambda s: s.__setitem__("hl", ["x"] + list(s.hl[1:])), r"row 2: hl is not a number \(value 'x'\)"),
    (lambda s: s.__setitem__("reply_id", ["nope"] + list(s.reply_id[1:])), r"reply_id is not one of the expected"),
    (lambda s: s.__setitem__("reply_id", [s.reply_id[1]] + list(s.reply_id[1:])), r"reply_id duplicated"),
    (lambda s: s.__setitem__("sample_set", ["other"] * len(s)), r"for sample set 'other'"),
])
def test_malformed_dimension_sheets_name_the_row_and_value(ladder, tmp_path, edit, message):
    sid = ladder_set_id(ladder)
    export_dimension_sheets(ladder, 1, tmp_path, sid)
    path = fill(tmp_path, "rater01", synthetic_people(ladder, 0), edit)
    with pytest.raises(SheetError, match=message):
        read_sheet(path, expected_ids=list(ladder.reply_id), sample_set=sid, allow_missing=True,
                   spec=DIMENSION_SHEET)


def test_dimension_sheets_are_never_rewritten(ladder, tmp_path):
    sid = ladder_set_id(ladder)
    export_dimension_sheets(ladder, 1, tmp_path, sid)
    path = fill(tmp_path, "rater01", synthetic_people(ladder, 0))
    before = path.read_bytes()
    written, kept = export_dimension_sheets(ladder, 2, tmp_path, sid)
    assert kept == ["rater01"] and [p.name for p in written] == ["rater02.csv"] and path.read_bytes() == before
