"""The paper profile pins every parameter of every notebook, so an edited default in JupyterLab (autosaved into
the tracked notebook) can never change ``make reproduce PROFILE=paper``. Only the parameters that say where things
are, not what is run, are left to the notebook: data_dir, figures_dir, results_dir, llm, evaluator_llm,
human_ratings_dir."""

from __future__ import annotations

import pytest
import yaml

from rpa_lib import paths
from rpa_lib.notebook_params import parameters
from rpa_lib.run.reproduce import notebooks

LOCATION = {"data_dir", "figures_dir", "results_dir", "llm", "evaluator_llm", "human_ratings_dir",
            "run_mode"}  # where things are, which model, and how reproduce runs it (a dry run, a budget)


@pytest.mark.parametrize("notebook", notebooks(), ids=lambda p: p.stem)
def test_paper_profile_sets_every_parameter(notebook):
    profile = yaml.safe_load((paths.PROFILES_DIR / "paper.yaml").read_text())
    set_here = set(profile.get("defaults") or {}) | set((profile.get("notebooks") or {}).get(notebook.stem) or {})
    missing = sorted(set(parameters(notebook)) - LOCATION - set_here)
    assert not missing, f"profiles/paper.yaml: notebooks.{notebook.stem} does not set {', '.join(missing)}"


def test_paper_profile_keeps_the_papers_sizes_where_notebooks_default_to_small_ones():
    nbs = yaml.safe_load((paths.PROFILES_DIR / "paper.yaml").read_text())["notebooks"]
    assert nbs["03_chunk_usage"]["characters"] is None and nbs["03_chunk_usage"]["qa_questions"] is None
    assert nbs["03_chunk_usage"]["max_iterations"] == 30 and nbs["03_chunk_usage"]["slot_size"] == 2
    assert nbs["04_personality"]["mbti_items"] is None and nbs["06_human_evaluation"]["samples_per_task"] == 30
    assert nbs["07_judge_agreement"]["questions_per_character"] is None


@pytest.mark.parametrize("name", ["paper", "quick", "smoke"])
def test_every_profile_loads_against_the_notebooks_parameters(name):
    from rpa_lib.run.reproduce import load_profile

    assert load_profile(name)["notebooks"]  # a None-able parameter given null, every key declared, every type right
