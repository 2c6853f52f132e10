"""Mistakes a researcher makes from a notebook's parameters cell or from Python: each is one clear error naming the
parameter (or item), the field and what is wrong, never a traceback from deep inside the library nor a typo that
silently changes what runs. Offline and fast: no kernel, the fake LLM and the hashing embedder."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rpa_lib.data import Dataset
from rpa_lib.evaluation.runner import Job, qa_jobs, questionnaire_jobs, run_jobs, spread
from rpa_lib.experiment import Experiment
from rpa_lib.index import build_or_load, exact_search
from rpa_lib.llm import FakeLLM
from rpa_lib.methods import build_method
from rpa_lib.notebook_params import Parameter, check_value
from rpa_lib.persona import load_persona
from rpa_lib.retrieval import Retriever, retriever
from rpa_lib.splitters import split

ADA = "ada-lindqvist"


@pytest.fixture
def experiment(fixture_data, tmp_path):
    """``experiment(notebook, **parameters)``: the notebook's Experiment on the fixture data, outputs in tmp_path."""
    def make(notebook: str = "05_qa_evaluation", **parameters) -> Experiment:
        return Experiment(notebook, {"data_dir": str(fixture_data), "llm": "fake", "characters": [ADA],
                                     "results_dir": str(tmp_path / "results"),
                                     "figures_dir": str(tmp_path / "figures"), **parameters})
    return make


# ---------------------------------------------------------------- a notebook's parameters

@pytest.mark.parametrize("notebook, parameters, message", [
    # a bare string where a list is expected: iterated, it ran methods 'a', 'm', ... or said settings were foreign
    ("05_qa_evaluation", {"methods": "amadeus"}, "05_qa_evaluation: methods: expected list, got str 'amadeus'"),
    # papermill's -p passes '["amadeuss"]' as text
    ("05_qa_evaluation", {"methods": '["amadeus"]'}, "-y passes YAML: -y 'methods: [\"amadeus\"]'"),
    # a misspelt method: was "settings given for 'amadeus', which is not among the methods run (amadeuss)"
    ("05_qa_evaluation", {"methods": ["amadeuss"]}, "methods: unknown method 'amadeuss'; registered: "),
    ("04_personality", {"methods": []}, "methods: an empty list"),  # was "no method of  has the setting(s) ..."
    # a control without AMADEUS: failed only after every method had answered, with "no answered rows of 'amadeus'"
    ("05_qa_evaluation", {"methods": ["crag", "crag_budget"]}, "methods: crag_budget is matched to AMADEUS's mean "
                                                               "context: add amadeus to methods, or give a budget"),
    ("05_qa_evaluation", {"method_settings": {"amadeus": 3}}, "method_settings: 'amadeus': expected a dict"),
    ("04_personality", {"method_settings": "amadeus"}, "method_settings: expected dict, got str"),  # AttributeError
    ("05_qa_evaluation", {"k": "3"}, "k: expected int, got str '3'"),
    ("05_qa_evaluation", {"qa_questions": 0}, "qa_questions: expected 1 or more (or None), got 0"),  # KeyError 'task'
    ("05_qa_evaluation", {"qa_questions": -1}, "qa_questions: expected 1 or more"),  # silently one question fewer
    ("05_qa_evaluation", {"multi_questions": -1}, "multi_questions: expected 0 or more"),  # max() of an empty list
    ("05_qa_evaluation", {"check_items": -1}, "check_items: expected 0 or more"),
    ("05_qa_evaluation", {"keypoint_tokens": 0}, "keypoint_tokens: expected 1 or more"),
    ("04_personality", {"extract_retries": -1}, "extract_retries: expected 0 or more"),
    ("07_judge_agreement", {"questions_per_character": 0}, "questions_per_character: expected 1 or more"),
    ("07_judge_agreement", {"rungs": []}, "rungs: an empty list"),  # silently every rung
    ("06_human_evaluation", {"seed": "x"}, "seed: expected int, got str"),
    ("03_chunk_usage", {"max_failed_share": 5}, "max_failed_share: expected a share from 0 to 1, got 5"),
    ("03_chunk_usage", {"budget_control": "yes"}, "budget_control: expected bool, got str"),
    ("05_qa_evaluation", {"gs_llm": ""}, "gs_llm: expected str | None, got an empty string"),  # the embedded model
    ("05_qa_evaluation", {"run_mode": "plan"}, "run_mode: expected dict, got str"),
    ("05_qa_evaluation", {"results_dir": 5}, "results_dir: expected str | None, got int 5"),
    # values from a fixed set: each typo failed only after the answers (or as a KeyError)
    ("05_qa_evaluation", {"keypoint_format": "jsn"}, "keypoint_format: 'jsn' is not one of json, lines"),
    ("04_personality", {"scoring": "experts"}, "scoring: 'experts' is not one of option, expert"),
    ("03_chunk_usage", {"comparison": "equall"}, "comparison: 'equall' is not one of equal, paper-like"),
    ("06_human_evaluation", {"extract_format": "txt"}, "extract_format: 'txt' is not one of json, text"),
    ("06_human_evaluation", {"raters": ["psychologistt", "fact-checker"]}, "raters: 'psychologistt' is not one of"),
])
def test_a_wrong_parameter_is_one_error_naming_it(experiment, notebook, parameters, message):
    with pytest.raises(ValueError) as info:
        experiment(notebook, **parameters)
    assert message in str(info.value), str(info.value)


def test_a_parameter_papermill_injects_but_the_notebook_does_not_declare_is_named(experiment):
    """papermill only logs "Passed unknown parameter" and the notebook runs its default; in a kernel the injected
    cell is in IPython's input history."""
    history = ["", "data_dir = None\n", "# Parameters\nqa_question = 1\nllm = \"fake\"\n"]
    with pytest.raises(ValueError, match=r"05_qa_evaluation: no parameter\(s\) 'qa_question' \(did you mean "
                                         r"'qa_questions'\?\); parameters: data_dir, "):
        experiment(In=history)
    assert experiment(In=history[:2]).characters == [ADA]  # no injected cell, nothing to check


def test_values_the_checks_accept(experiment, fixture_data):
    ex = experiment(data_dir=Path(fixture_data), qa_questions=None, multi_questions=0, max_iterations=4,
                    method_settings={}, methods=["no_rag", "naive_rag_budget", "amadeus"])
    assert ex.characters == [ADA]
    experiment(methods=["crag", "crag_budget"], method_settings={"crag_budget": {"budget_chars": 900}})  # given
    assert experiment("03_chunk_usage", max_failed_share=0.25, window="adaptive").max_failed_share == 0.25
    check_value("reference_dimensions", [], Parameter("reference_dimensions", ["pers"], "list"))  # none: allowed
    check_value("seed", -3, Parameter("seed", 0, "int"))


def test_the_embedder_of_an_experiment_given_no_characters(fixture_data, tmp_path):
    """From Python a parameter left out is not defaulted: no characters was an IndexError."""
    ex = Experiment("05_qa_evaluation", {"data_dir": str(fixture_data), "llm": "fake", "embedder": "hash-64",
                                         "results_dir": str(tmp_path)})
    assert ex.characters == [] and ex.embedder == "hash-64"


# ---------------------------------------------------------------- splitters, retrieval, index

@pytest.fixture
def ada(fixture_characters_dir):
    return load_persona(ADA, fixture_characters_dir)


@pytest.mark.parametrize("args, kwargs, error, message", [
    ((ADA, "acts"), {}, TypeError, "persona must be a Persona (load_persona(slug)), not str"),  # AttributeError
    ((None, "vanilla"), {"length": "500"}, TypeError, "length must be an int, not str '500'"),
    ((None, "vanilla"), {"overlap": 10.5}, TypeError, "overlap must be an int, not float"),
    ((None, "vanilla"), {"length": 0}, ValueError, "length must be at least 1, not 0"),  # silently 500
])
def test_split_names_a_wrong_argument(ada, args, kwargs, error, message):
    persona, splitter = args
    with pytest.raises(error) as info:
        split(ada if persona is None else persona, splitter, **kwargs)
    assert message in str(info.value)


@pytest.fixture
def hashed(fixture_data):
    return retriever(ADA, "acts", "hash-64", Dataset(fixture_data))


@pytest.mark.parametrize("call, error, message", [
    (lambda r: r.search("storm", k=-1), ValueError, "k must be 0 or more, not -1"),  # silently k + 7 hits
    (lambda r: r.search("storm", k="3"), TypeError, "k must be an int, not str '3'"),
    (lambda r: r.search("storm", k=3.0), TypeError, "k must be an int, not float 3.0"),  # hnswlib's TypeError
    (lambda r: r.search(["storm"]), TypeError, "query must be a str (search_many takes a list)"),
    (lambda r: r.search_many("storm"), TypeError, "queries must be a list of str"),  # one search per letter
    (lambda r: r.search_vectors(np.ones(64, np.float32)), ValueError, "expected a 2-d array, one row per query"),
    (lambda r: r.index.search(np.ones((1, 64)), -2), ValueError, "k must be 0 or more, not -2"),
])
def test_a_search_names_a_wrong_argument(hashed, call, error, message):
    with pytest.raises(error) as info:
        call(hashed)
    assert message in str(info.value)


def test_searches_the_checks_accept(hashed):
    assert hashed.search_many([], k=2) == []  # was "the index was built by another embedder"
    assert hashed.search("storm", k=0) == [] and len(hashed.search("storm", k=np.int64(2))) == 2


def test_a_retriever_names_a_missing_embedder(fixture_characters_dir):
    with pytest.raises(TypeError, match="embedder must be a name .* not NoneType None"):
        Retriever.for_character(ADA, "acts", None, characters_dir=fixture_characters_dir)


def test_an_index_names_what_does_not_fit(tmp_path):
    vectors = np.eye(3, dtype=np.float32)
    with pytest.raises(ValueError, match="3 ids but 2 texts"):
        build_or_load(tmp_path / "a", lambda: vectors, ["a", "b", "c"], ["x", "y"], "m")
    with pytest.raises(ValueError, match=r"ids must be distinct; repeated: \['a'\]"):
        build_or_load(tmp_path / "b", lambda: vectors, ["a", "a", "c"], ["x", "y", "z"], "m")
    index, _ = build_or_load(tmp_path / "c", lambda: vectors.tolist(), ["a", "b", "c"], ["x", "y", "z"], "m")
    assert index.search(vectors[:1], 1)[0] == [["a"]]  # a list of rows is an array
    with pytest.raises(ValueError, match="k must be 0 or more, not -1"):
        exact_search(vectors, vectors[:1], -1)  # silently the wrong rows


# ---------------------------------------------------------------- the runner

@pytest.fixture
def naive(fixture_data):
    return build_method("naive_rag", FakeLLM(), dataset=Dataset(fixture_data), embedder="hash-64", k=2)


@pytest.mark.parametrize("jobs, error, message", [
    ([(ADA, "q1", "Who are you?")], TypeError, "jobs[0]: expected a Job(character, id, question), not tuple"),
    (Job(ADA, "q1", "Who are you?"), TypeError, "jobs must be a list of Job, not one Job: pass [job]"),
    ([Job(ADA, "q1", None)], TypeError, "jobs[0]: character and question must be str"),
    ([Job(ADA, "q1", "Who?", None)], TypeError, "jobs[0]: meta must be a dict, not NoneType"),
    # the row's method column said "other" and the answer was filed under it
    ([Job(ADA, "q1", "Who?", {"method": "other"})], ValueError, "jobs[0]: meta key(s) 'method' would replace"),
])
def test_run_jobs_names_a_wrong_job(naive, jobs, error, message):
    with pytest.raises(error) as info:
        run_jobs(naive, jobs, progress=False)
    assert message in str(info.value)


def test_run_jobs_names_a_method_given_by_name():
    with pytest.raises(TypeError, match=r"method must be a method object \(build_method\(name\)\), not str"):
        run_jobs("naive_rag", [Job(ADA, "q1", "Who?")], progress=False)


def test_jobs_name_a_wrong_character_list_or_count(fixture_data):
    ds = Dataset(fixture_data)
    with pytest.raises(TypeError, match=r"characters must be a list of slugs, e\.g\. \['ada-lindqvist'\]"):
        qa_jobs(ds, ADA)  # was "characters/a/qa.jsonl: file not found"
    with pytest.raises(TypeError, match="characters must be a list of slugs"):
        questionnaire_jobs(ds.questionnaire("mbti", 4), ADA)  # was one job per letter, each failing
    for bad in (-1, "2", 2.5):  # -1 silently dropped the last question; the others were deep TypeErrors
        with pytest.raises(ValueError, match="per_character must be None"):
            qa_jobs(ds, [ADA], bad)
    with pytest.raises(ValueError, match="n must be None"):
        spread([1, 2, 3], lambda i: i, -1)
    assert len(qa_jobs(ds, [ADA], 0)) == 0 and len(qa_jobs(ds, [ADA], 1000)) == len(ds.qa(ADA))


def test_a_character_of_ones_own_without_questions_is_told_how_to_write_them(fixture_data, tmp_path):
    # an imported character has a persona and no qa.jsonl until its questions are scaffolded and promoted
    import shutil

    shutil.copytree(fixture_data, tmp_path / "d")
    (tmp_path / "d" / "characters" / ADA / "qa.jsonl").unlink()
    with pytest.raises(Exception) as info:
        qa_jobs(Dataset(tmp_path / "d"), [ADA])
    where = f"{ADA} --data-dir {tmp_path / 'd'}"
    assert (f"qa.jsonl: file not found: write {ADA}'s questions with `python -m rpa_lib.authoring qa-scaffold "
            f"{where}`, review them, then `qa-promote {where}`") in str(info.value)
    with pytest.raises(Exception, match="nobody") as info:  # no persona either: a wrong slug, no such advice
        Dataset(tmp_path / "d").qa("nobody")
    assert "qa-scaffold" not in str(info.value)


def test_a_character_of_ones_own_asked_of_the_papers_dataset_is_pointed_to_its_own(fixture_data, tmp_path,
                                                                                    monkeypatch):
    import shutil

    shutil.copytree(fixture_data, tmp_path / "mine")
    monkeypatch.setenv("RPA_USER_DATA_DIR", str(tmp_path / "mine"))
    with pytest.raises(Exception) as info:
        build_method("naive_rag", llm=FakeLLM()).respond(ADA, "Who are you?")  # no dataset=: the paper's data/
    assert f"unknown character '{ADA}'" in str(info.value)
    assert f"'{ADA}' is in {tmp_path / 'mine'}: name that dataset (dataset= or data_dir)" in str(info.value)
    with pytest.raises(Exception) as info:
        load_persona("nobody")
    assert "name that dataset" not in str(info.value)


def test_a_dataset_folder_that_does_not_exist_is_named_as_such(tmp_path):
    with pytest.raises(Exception, match=r"nope/characters: no such folder"):
        build_method("naive_rag", llm=FakeLLM(), dataset=tmp_path / "nope").respond(ADA, "Who are you?")
