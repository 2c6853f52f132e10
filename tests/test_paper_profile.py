"""``profiles/paper.yaml`` against the AMADEUS paper's own settings, written here from the paper's text
(AMADEUS 2026, "Experimental Setup" and the table captions), so a run of
``make reproduce PROFILE=paper`` is the paper's experiment and not a neighbour of it."""

from __future__ import annotations

import pytest
import yaml

from rpa_lib import paths
from rpa_lib.data import Dataset
from rpa_lib.embeddings import (
    KNOWN_MODELS,
    PAPER_EMBEDDERS,
    StandInEmbedder,
    get_embedder,
    require_models,
    stand_in_name,
)
from rpa_lib.llm import FakeLLM
from rpa_lib.methods import budget_controls, build_methods
from rpa_lib.methods.registry import BUDGETED
from rpa_lib.notebook_params import parameters
from rpa_lib.run import reproduce

# What the paper states, quoted in short. One row per setting: (what, the paper's value, where it says so).
PAPER = {
    "characters": (15, "CharacterRAG consists of 15 distinct fictional characters"),
    "qa_pairs": (450, "We use 450 QA pairs from the CharacterRAG dataset"),
    "qa_per_character": (30, "we provide each character with 30 questions, resulting in a total of 450 questions"),
    "mbti_items": (60, "60 MBTI questions and 120 BFI questions"),
    "bfi_items": (120, "60 MBTI questions and 120 BFI questions"),
    "gs_n": (30, "The maximum number of search iterations N is 30"),
    "gs_k": (2, "the slot size K is set to 2"),
    "naive_rag_splitter": ("acts", "We apply the ACTS to the conventional Naive RAG"),
    "embedders": ({"BAAI/bge-m3", "Qwen/Qwen3-Embedding-0.6B", "intfloat/multilingual-e5-large-instruct"},
                  "three different embedding models: ... BGE-M3, Qwen3-0.6B, and mE5 large-instruct"),
    "gs_llm": ("openai:gpt-4.1-2025-04-14",
               'We implement Guided Selection (GS) and Attribute Extractor (AE) using GPT-4.1 ("gpt-4.1-2025-04-14")'),
    # the paper names no judge for ACC_L and HS: ours is a choice, the same snapshot, stated in the profile
    "judge": ("gpt-4.1-2025-04-14", "not stated by the paper (our choice; Tables 4-5 say 'using the GPT-4.1 setting')"),
    "table4_5_methods": ({"crag", "lightrag", "amadeus"}, "Tables 4 and 5: CRAG, LightRAG, AMADEUS"),
    "table6_methods": ({"no_rag", "naive_rag", "crag", "lightrag", "amadeus"},
                       "Table 6: w/o RAG, Naive RAG, CRAG, LightRAG, AMADEUS"),
    "human_raters": (11, "we invite 11 human evaluators"),
    "human_samples": (30, "30 BFI questions and 30 MBTI questions"),
}


@pytest.fixture(scope="module")
def profile():
    return yaml.safe_load((paths.PROFILES_DIR / "paper.yaml").read_text())


def nb(profile, name):
    return {**profile["defaults"], **profile["notebooks"][name]}


def test_the_paper_profile_runs_the_papers_data_and_item_counts(profile):
    data = Dataset(profile["defaults"].get("data_dir"))
    chars = data.characters(None)
    assert len(chars) == PAPER["characters"][0]
    for name in ("03_chunk_usage", "05_qa_evaluation"):  # None: every character, every paper-design question
        assert nb(profile, name).get("characters") is None and nb(profile, name).get("qa_questions") is None
    assert all(len(data.qa(c)) == PAPER["qa_per_character"][0] for c in chars)
    assert sum(len(data.qa(c)) for c in chars) == PAPER["qa_pairs"][0]
    for name in ("04_personality", "05_qa_evaluation"):
        assert nb(profile, name).get("mbti_items") is None and nb(profile, name).get("bigfive_items") is None
    assert nb(profile, "03_chunk_usage").get("mbti_questions") is None
    assert len(data.questionnaire("mbti", None).items) == PAPER["mbti_items"][0]
    assert len(data.questionnaire("bigfive", None).items) == PAPER["bfi_items"][0]


def test_the_paper_profile_uses_the_papers_gs_settings_and_methods(profile):
    for name in ("03_chunk_usage", "04_personality", "05_qa_evaluation", "06_human_evaluation"):
        p = nb(profile, name)
        assert (p["max_iterations"], p["slot_size"]) == (PAPER["gs_n"][0], PAPER["gs_k"][0]), name
    assert PAPER["table4_5_methods"][0] <= set(nb(profile, "04_personality")["methods"])
    assert PAPER["table6_methods"][0] <= set(nb(profile, "05_qa_evaluation")["methods"])
    for name in ("04_personality", "05_qa_evaluation"):  # each retrieving baseline's budget-matched control beside it
        p = nb(profile, name)
        first = [m for m in p["methods"] if m not in budget_controls(p["methods"])]
        assert [f"{m}_budget" for m in first if m in BUDGETED] == budget_controls(p["methods"]), name
        methods = build_methods(first, FakeLLM(), embedder="hash-64", per_method=p.get("method_settings") or None)
        for m in methods:
            if hasattr(m.settings, "splitter") and m.name in ("naive_rag", "crag", "amadeus"):
                assert m.settings.splitter == PAPER["naive_rag_splitter"][0], m.name
    assert nb(profile, "06_human_evaluation")["human_raters"] == PAPER["human_raters"][0]
    assert nb(profile, "06_human_evaluation")["samples_per_task"] == PAPER["human_samples"][0]


def test_the_paper_profile_names_the_papers_embedders_and_one_fixed_judge(profile):
    table1 = nb(profile, "02_similarity_scores")["embedders"]
    assert set(table1) == set(PAPER_EMBEDDERS)
    assert {KNOWN_MODELS[e][0] for e in table1} == PAPER["embedders"][0]
    assert profile["defaults"]["embedder"] in PAPER_EMBEDDERS  # retrieval too, not MiniLM
    assert profile["env"]["RPA_JUDGE_MODEL"] == PAPER["judge"][0]  # one judge for every role-play LLM
    assert profile["defaults"]["gs_llm"] == PAPER["gs_llm"][0]  # GS and AE on their own role, as the paper runs them
    assert profile["env"]["RPA_JUDGE_BASE_URL"].startswith("https://api.openai.com")
    for name in ("04_personality", "05_qa_evaluation", "06_human_evaluation", "07_judge_agreement"):
        assert nb(profile, name).get("evaluator_llm") is None, f"{name}: an evaluator_llm here would pin the judge"


def test_missing_paper_weights_are_one_error_naming_model_key_and_command(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-hub"))  # no model is cached here
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(tmp_path / "empty-hub"))  # read at import
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from rpa_lib import embeddings

    embeddings.clear_caches()
    with pytest.raises(RuntimeError) as err:
        require_models(["bge-m3", "minilm", "me5-large-instruct"], "profiles/paper.yaml: defaults.embedder")
    message = str(err.value)
    assert "BAAI/bge-m3" in message and "intfloat/multilingual-e5-large-instruct" in message
    assert "profiles/paper.yaml: defaults.embedder" in message and "hf download BAAI/bge-m3" in message
    assert "minilm" not in message.lower().replace("all-minilm", "")
    with pytest.raises(RuntimeError, match="'BAAI/bge-m3' \\(asked for by profiles/paper.yaml: defaults.embedder, "
                       "notebooks.02_similarity_scores.embedders\\) is neither a folder nor in the Hugging Face cache"):
        _ = get_embedder("bge-m3").model_id  # a notebook run meets the same error, naming the profile key
    embeddings.clear_caches()
    # a dry run names the stand-in, which says so in the label every caption shows
    assert stand_in_name("bge-m3") == "stand-in:bge-m3" and stand_in_name("minilm") == "minilm"
    e = get_embedder(stand_in_name("bge-m3"))
    assert isinstance(e, StandInEmbedder) and e.label == "stand-in for BAAI/bge-m3 (plan only)"
    assert e.model_id.startswith("stand-in:") and e.encode(["a question"]).shape == (1, 384)
    # reproduce --plan passes the stand-in's name in the notebook's parameters, and the plan file as its run mode
    params = reproduce.dry_run_parameters({"embedders": ["minilm", "qwen3-0.6b"], "run_mode": {}},
                                          parameters(paths.NOTEBOOKS_DIR / "02_similarity_scores.ipynb") | {"run_mode": None},
                                          tmp_path / "plan.jsonl")
    assert params == {"embedders": ["minilm", "stand-in:qwen3-0.6b"], "run_mode": {"plan_file": str(tmp_path / "plan.jsonl")}}
    embeddings.clear_caches()


def test_a_run_naming_missing_weights_stops_before_any_notebook(monkeypatch, tmp_path):
    """The runner checks every embedder its notebooks would load before it starts the first: one error naming the
    models, the notebooks' parameters that ask for them and the command; no kernel started, nothing written."""
    empty = str(tmp_path / "empty-hub")  # no model is cached here, whatever this machine's cache holds
    monkeypatch.setenv("HF_HUB_CACHE", empty)
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", empty)  # read at import: set for this process too
    with pytest.raises(SystemExit) as err:
        reproduce.run("paper", ["01", "02", "03"], output_dir=tmp_path / "out")
    message = str(err.value)
    assert message.startswith("embedding model(s) BAAI/bge-m3, Qwen/Qwen3-Embedding-0.6B, "
                              "intfloat/multilingual-e5-large-instruct (asked for by 02_similarity_scores: embedders, "
                              "03_chunk_usage: embedder) are not in the local Hugging Face cache"), message
    assert "`hf download BAAI/bge-m3`" in message and "--plan" in message
    assert not (tmp_path / "out").exists()


def test_the_model_check_reads_folders_from_the_kernels_folder_and_refuses_stand_ins(monkeypatch):
    books = [paths.NOTEBOOKS_DIR / "02_similarity_scores.ipynb", paths.NOTEBOOKS_DIR / "03_chunk_usage.ipynb"]

    def check(**settings) -> None:
        reproduce.check_models(reproduce.each_notebook(books, {"notebooks": {"02_similarity_scores": settings}}, None))

    check(embedders=["minilm", None, "hash-64", "tfidf"])  # local models; an empty entry is no model
    check(embedders=["../rpa_lib"])  # a folder, relative to notebooks/ where the kernels start
    with pytest.raises(SystemExit, match=r"folder\(s\) \./no-such-model \(asked for by 02_similarity_scores: "
                                         r"embedders\) not found; a relative folder is read from .*notebooks"):
        check(embedders=["./no-such-model"])
    with pytest.raises(SystemExit, match="stand-in:bge-m3 .*: a stand-in embedder is for --plan only"):
        check(embedders=["stand-in:bge-m3"])
    looked = []

    def absent(name: str):  # a model not on this machine
        looked.append(name)
        raise RuntimeError("not cached")

    monkeypatch.setattr("rpa_lib.model_files.model_folder", absent)
    with pytest.raises(SystemExit, match=r"BAAI/bge-m3 \(asked for by 02_similarity_scores: embedders\) are not"):
        check(embedders=["bge-m3", "minilm"])
    assert looked == ["BAAI/bge-m3"], "a missing model is looked up once"


def test_every_profile_gives_the_charactercraft_judge_references_on_pers_emo_dec_only():
    """CharacterCraft's Table 6 judges Pers, Emo and Dec with and without a reference; every profile asks the same."""
    for path in sorted(paths.PROFILES_DIR.glob("*.yaml")):
        profile = yaml.safe_load(path.read_text())
        given = ((profile.get("notebooks") or {}).get("07_judge_agreement") or {}).get("reference_dimensions")
        assert given in (None, ["pers", "emo", "dec"]), f"{path.name}: reference_dimensions {given}"


def test_the_paper_profile_runs_gs_and_ae_on_their_own_llm_role(profile, monkeypatch):
    """GS and AE on the paper's GPT-4.1 snapshot whatever the role-play LLM: the profile's gs_llm is built for the
    "gs" role (OpenAI's API, not the role-play LLM's server), and AMADEUS sends its judge and extractor calls to it
    and only the answer to the role-play LLM."""
    from rpa_lib.evaluation.runner import Job, run_jobs
    from rpa_lib.llm import get_llm

    monkeypatch.setenv("RPA_LLM_BASE_URL", "http://127.0.0.1:9/v1")  # a local server for the role-play LLM
    gs = get_llm(profile["defaults"]["gs_llm"], role="gs", cache=False)
    assert gs.model_id == "gpt-4.1-2025-04-14" and gs.base_url != "http://127.0.0.1:9/v1"

    agent, selector = FakeLLM(label="role-play"), FakeLLM(label="gs-and-ae")
    amadeus = build_methods(["naive_rag", "amadeus"], agent, gs_llm=selector, dataset=Dataset(paths.ROOT / "tests" / "fixtures" / "data"),
                            embedder="hash-64", max_iterations=4, extract_format="text")[1]
    rows = run_jobs(amadeus, [Job("ada-lindqvist", "q1", "What keeps you awake at night?")], progress=False)
    assert rows.error.isna().all() and agent.usage.calls == 1  # the answer
    assert selector.usage.calls >= 3  # the GS judge calls and the two AE attributes


def test_outputs_under_a_parent_folder_named_cache_are_recorded(tmp_path):
    """Only the output folder's own cache and notebooks folders are left out, not a folder above it of that name."""
    results = tmp_path / "cache" / "clone" / "results"
    (results / "cache").mkdir(parents=True)
    (results / "table.csv").write_text("x\n")
    (results / "cache" / "llm.sqlite").write_text("")
    assert list(reproduce._snapshot([results])) == [results / "table.csv"]
