"""``python -m benchmarks methods`` on the fixture dataset: per-question and indexing costs, the fake's rule,
the table, and the command line."""

from __future__ import annotations

import os

from benchmarks.__main__ import main as bench_main
from benchmarks.methods import FIXTURE_DATA, bench_rule, command, run, summary
from rpa_lib.data import Dataset
from rpa_lib.llm.answers import schema_error
from rpa_lib.methods.rolerag_prompts import ANALYSIS_SCHEMA, EXTRACT_SCHEMA, MERGE_SCHEMA, extract_messages


def test_costs_per_method_on_the_fixtures():
    rows = {r["row"]: r for r in run(Dataset(FIXTURE_DATA), None, 1, "hash-64",
                                     ["no_rag", "naive_rag", "amadeus", "crag", "rolerag"])}
    assert list(rows) == ["no_rag", "naive_rag", "amadeus (window 1)", "amadeus (default window)", "crag", "rolerag"]
    assert rows["no_rag"]["calls_per_question"] == rows["naive_rag"]["calls_per_question"] == 1.0
    assert rows["naive_rag"]["tokens_per_question"] > rows["no_rag"]["tokens_per_question"]
    assert rows["amadeus (window 1)"]["calls_per_question"] >= 3  # at least one judge call, AE, the reply
    assert rows["amadeus (window 1)"]["window"] == 1 and rows["amadeus (default window)"]["window"] == 4
    assert rows["crag"]["label"].startswith("CRAG-offline (web search replaced by BM25")
    assert rows["crag"]["calls_per_question"] >= 5  # evaluate 3 chunks, refine strips, reply
    assert rows["rolerag"]["calls_per_question"] == 3.0 and rows["rolerag"]["index_calls"] >= 1
    assert rows["rolerag"]["index_tokens"] > 0
    assert all(rows[r]["index_calls"] is None for r in rows if r != "rolerag")
    shown = {r["method"]: r for r in summary(list(rows.values()), 210)}
    assert list(shown)[3:5] == ["amadeus (default window = 4)",
                                "crag: CRAG-offline (web search replaced by BM25 over all characters' personas)"]
    graph = shown["rolerag"]
    assert graph["llm_index"] and graph["index_calls"] == rows["rolerag"]["index_calls"]
    assert graph["amortized_tokens"] == rows["rolerag"]["tokens_per_question"] + rows["rolerag"]["index_tokens"] / 210
    assert shown["no_rag"]["index_tokens"] == 0 and shown["no_rag"]["amortized_tokens"] == shown["no_rag"]["tokens_per_question"]


def test_the_fake_answers_each_prompt_kind_in_its_format():
    messages = extract_messages("Ada Lindqvist", "Test", "My uncle Per lives in Skelde with Mira.")
    data = bench_rule("structured", messages, EXTRACT_SCHEMA)
    assert schema_error(data, EXTRACT_SCHEMA) is None
    assert [e["name"] for e in data["entities"]] == ["Per", "Skelde", "Mira"]
    user = [{"role": "system", "content": "s"}, {"role": "user", "content": "Question someone asks Ada: Is Per here?\n"}]
    assert schema_error(bench_rule("structured", user, ANALYSIS_SCHEMA), ANALYSIS_SCHEMA) is None
    assert schema_error(bench_rule("structured", user, MERGE_SCHEMA), MERGE_SCHEMA) is None
    assert bench_rule("choose", user, ["yes", "no"], positive=1.0) == "yes"
    assert bench_rule("choose", user, ["yes", "no"], positive=0.0) == "no"


def test_command_line_measures_and_leaves_the_cache_setting_alone(capsys):
    before = os.environ.get("RPA_CACHE_DIR")
    argv = ["--methods", "no_rag,rolerag", "--questions", "1", "--characters", "ada-lindqvist"]
    rows, text = command(argv)
    assert [(r["method"], r["calls_per_question"], r["llm_index"]) for r in rows] == [
        ("no_rag", 1.0, False), ("rolerag", 3.0, True)]
    assert rows[1]["index_calls"] >= 1 and "1 character(s)" in text
    assert os.environ.get("RPA_CACHE_DIR") == before
    assert bench_main(["methods", *argv]) == 0 and capsys.readouterr().out == text + "\n"  # main prints that text
