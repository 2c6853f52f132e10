"""The numbered notebooks: one well-formed ``parameters`` cell each, every profile parameter declared where it is
sent, and the runner executing all of them with the smoke profile (fixture data, fake LLM, hashing embedder).

The smoke run takes a few seconds a notebook (one kernel start each); it runs once for the session (conftest's
``smoke_run``). Every test that reads it is in this file (notebook 05's outputs too), so that under pytest-xdist,
which gives a worker one file at a time, the worker that makes the run is the one that reads it.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
from pathlib import Path

import nbformat
import pandas as pd
import papermill
import pytest

from rpa_lib import paths
from rpa_lib.evaluation.qa import QA_TASK
from rpa_lib.run import reproduce

NOTEBOOKS = sorted(paths.NOTEBOOKS_DIR.glob("[0-9][0-9]_*.ipynb"))
PROFILES = sorted(paths.PROFILES_DIR.glob("*.yaml"))
ASSIGNMENT = re.compile(r"^([A-Za-z_]\w*)\s*(?::[^=]+)?=(?!=)")


def parameter_cells(path: Path) -> list:
    nb = nbformat.read(path, as_version=4)
    return [c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", [])]


def test_there_are_numbered_notebooks():
    # 00_explore (the interactive explorer) comes first on purpose, so reproduce runs it too; then the paper's 01, 02 ...
    assert [p.name for p in NOTEBOOKS][:3] == ["00_explore.ipynb", "01_dataset.ipynb", "02_similarity_scores.ipynb"]
    assert [int(p.name[:2]) for p in NOTEBOOKS] == list(range(len(NOTEBOOKS))), "the numbers skip or repeat one"
    assert len({p.name[:2] for p in NOTEBOOKS}) == len(NOTEBOOKS), "two notebooks share a number"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_one_parameters_cell_that_papermill_reads(notebook):
    cells = parameter_cells(notebook)
    assert len(cells) == 1, f"{notebook.name}: {len(cells)} cells tagged 'parameters', expected exactly one"
    assert cells[0].cell_type == "code"
    assigned = {m.group(1): line for line in cells[0].source.split("\n") if (m := ASSIGNMENT.match(line))}
    assert assigned, f"{notebook.name}: the parameters cell assigns nothing"
    declared = papermill.inspect_notebook(str(notebook))
    # papermill skips, with only a log line, an assignment it cannot parse (e.g. one with '=' in its comment):
    # the runner would then drop that parameter silently.
    unread = {name: line for name, line in assigned.items() if name not in declared}
    assert not unread, f"{notebook.name}: papermill cannot read these parameter lines: {list(unread.values())}"
    for name, info in declared.items():
        assert info["help"], f"{notebook.name}: parameter {name!r} has no comment"
        ast.literal_eval(info["default"])  # a literal (derived values belong in the next cell)


@pytest.mark.parametrize("profile", PROFILES, ids=[p.stem for p in PROFILES])
def test_profile_parameters_are_declared_by_their_notebooks(profile):
    """A parameter sent to one named notebook must exist there (the runner drops undeclared ones silently)."""
    settings = reproduce.load_profile(profile.stem)
    by_stem = {p.stem: p for p in NOTEBOOKS}
    for stem, params in (settings.get("notebooks") or {}).items():
        assert stem in by_stem, f"{profile.name}: no notebook {stem}"
        declared = papermill.inspect_notebook(str(by_stem[stem]))
        missing = set(params or {}) - set(declared)
        assert not missing, f"{profile.name}: {stem} declares no parameter(s) {sorted(missing)}"


def test_parameters_for_the_smoke_profile(tmp_path):
    profile = reproduce.load_profile("smoke")
    params = reproduce.parameters_for(paths.NOTEBOOKS_DIR / "02_similarity_scores.ipynb", profile, tmp_path)
    assert params["data_dir"] == str(paths.ROOT / "tests" / "fixtures" / "data")  # made absolute
    assert params["figures_dir"] == str(tmp_path / "figures") and params["results_dir"] == str(tmp_path / "results")
    assert params["embedders"] == ["hash-64", "tfidf"] and params["k"] == 3
    assert "llm" not in params and "embedder" not in params  # not declared by this notebook


def test_every_folder_parameter_is_made_absolute_and_counts_by_content(tmp_path, monkeypatch):
    """A kernel starts in notebooks/, so a relative human_ratings_dir found nothing; a stamp counts an absolute
    folder by content, so a sheet added there re-runs the notebook."""
    from rpa_lib.run import stamps

    monkeypatch.setattr(paths, "ROOT", tmp_path)
    (tmp_path / "ratings" / "set-1").mkdir(parents=True)
    book = paths.NOTEBOOKS_DIR / "06_human_evaluation.ipynb"
    params = reproduce.parameters_for(book, {"notebooks": {book.stem: {"human_ratings_dir": "ratings"}}}, None)
    assert params["human_ratings_dir"] == str(tmp_path / "ratings")
    home = reproduce.parameters_for(book, {"notebooks": {book.stem: {"human_ratings_dir": "~/ratings"}}}, None)
    assert home["human_ratings_dir"] == str(Path.home() / "ratings")
    before = stamps.inputs_digest(book, params, [], library="the library")
    (tmp_path / "ratings" / "set-1" / "rater01.csv").write_text("sample_id,rating\ns1,4\n")
    assert stamps.inputs_digest(book, params, [], library="the library") != before
    # a model folder named relative to notebooks/ (where the kernels read it) or inside a list counts by content too
    model = tmp_path / "my-model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    relative = os.path.relpath(model, paths.NOTEBOOKS_DIR)
    for edit, setting in enumerate(({"embedder": relative}, {"embedders": ["minilm", str(model)]})):
        before = stamps.inputs_digest(book, {**params, **setting}, [], library="the library")
        (model / "config.json").write_text(f'{{"edit": {edit}}}')
        assert stamps.inputs_digest(book, {**params, **setting}, [], library="the library") != before, setting


def test_unknown_profile_and_notebook_selection():
    with pytest.raises(SystemExit, match=r"unknown profile 'nope' .*known: .*smoke"):
        reproduce.load_profile("nope")
    assert [p.stem for p in reproduce.notebooks(["02"])] == ["02_similarity_scores"]
    assert [p.stem for p in reproduce.notebooks(["01_dataset"])] == ["01_dataset"]
    with pytest.raises(SystemExit, match="no notebook matches --only 99"):
        reproduce.notebooks(["99"])
    with pytest.raises(SystemExit, match="no notebook matches --only 55; notebooks: 00_explore, "):
        reproduce.notebooks(["04", "55"])  # 04 alone would run
    for only in ("", "02,"):  # an empty entry selected every notebook, or matched none with a puzzling message
        with pytest.raises(SystemExit) as info:
            reproduce.main(["--only", only, "--plan"])
        assert info.value.code == 2


def test_an_output_folder_that_cannot_be_written_is_one_line_before_anything_runs(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "PROFILES_DIR", tmp_path)
    (tmp_path / "tiny.yaml").write_text("description: nothing\n")
    (tmp_path / "a-file").write_text("")
    with pytest.raises(SystemExit, match=r"output folder .*a-file/out: cannot write there \(.*a-file is not a folder\)"):
        reproduce.run("tiny", output_dir=tmp_path / "a-file" / "out")


def test_ctrl_c_ends_the_runner_with_one_line_and_status_130(monkeypatch, capsys):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(reproduce, "run", interrupted)
    assert reproduce.main(["--only", "01"]) == 130
    assert capsys.readouterr().err.strip().startswith("interrupted: the notebooks that finished are kept")


def test_an_empty_list_of_characters_is_named_as_such(fixture_data):
    from rpa_lib.data import DataError, Dataset

    with pytest.raises(DataError, match="characters is an empty list: name at least one"):
        Dataset(fixture_data).characters([])


# ---------------------------------------------------------------- the smoke run


@pytest.fixture
def smoke(smoke_run):
    """Every notebook run once with the smoke profile (conftest's session fixture): (output folder, summary)."""
    return smoke_run


def test_smoke_run_executes_every_notebook(smoke):
    out, summary = smoke
    assert [s["notebook"] for s in summary] == [p.stem for p in NOTEBOOKS]
    for nb in NOTEBOOKS:
        executed = nbformat.read(out / "notebooks" / nb.name, as_version=4)
        injected = [c for c in executed.cells if "injected-parameters" in c.metadata.get("tags", [])]
        assert len(injected) == 1, f"{nb.name}: parameters not injected"
        if "data_dir" in papermill.inspect_notebook(str(nb)):
            assert str(paths.ROOT / "tests" / "fixtures" / "data") in injected[0].source, f"{nb.name}: not on fixtures"
        errors = [o for c in executed.cells if c.cell_type == "code" for o in c.get("outputs", [])
                  if o.get("output_type") == "error"]
        assert not errors, f"{nb.name}: {errors[0]['ename']}: {errors[0]['evalue']}"
    for s in summary:
        assert all(Path(w).is_relative_to(out) for w in s["written"]), s["written"]
    assert (out / "cache" / "embeddings.sqlite").is_file(), "the notebooks did not use $RPA_CACHE_DIR"


def test_smoke_dataset_outputs(smoke):
    out, summary = smoke
    for name in ("fig3_dataset.pdf", "fig3_dataset.png", "fig3_dataset.csv"):
        assert (out / "figures" / name).is_file(), name
    per_char = pd.read_csv(out / "results" / "fig3_dataset_per_character.csv")
    assert per_char.character.tolist() == ["ada-lindqvist", "bram-okafor"]
    assert per_char.qa_pairs.tolist() == [6, 6]
    assert (out / "results" / "fig3_dataset_per_character.tex").is_file()
    written = next(s["written"] for s in summary if s["notebook"] == "01_dataset")
    assert str(out / "figures" / "fig3_dataset.png") in written


def test_smoke_similarity_outputs(smoke):
    out, _ = smoke
    table = pd.read_csv(out / "results" / "table1_similarity.csv")
    assert table.columns.tolist()[:5] == ["splitter", "embedder", "sum_mu", "sum_var", "sum_var_q"]
    assert {"sum_mu_low", "sum_mu_high", "n_characters", "interval_note"} <= set(table.columns)  # 95% intervals
    assert (table.sum_mu_low <= table.sum_mu).all() and (table.sum_mu <= table.sum_mu_high).all()
    assert len(table) == 3 * 2
    assert sorted(table.splitter.unique()) == ["ACTS", "ATS", "Vanilla"]
    assert sorted(table.embedder.unique()) == ["TF-IDF", "hash-64"]
    assert table.groupby("embedder").splitter.nunique().tolist() == [3, 3]
    # Two fixture characters, each a sum of two means of cosine similarities in [0, 1].
    assert table.sum_mu.between(0, 2).all() and (table.sum_var >= 0).all() and table.sum_mu.gt(0).all()
    assert (table.sum_var_q <= table.sum_var + 1e-12).all()  # question means vary less than single scores
    assert r"sum\_mu" in (out / "results" / "table1_similarity.tex").read_text()
    for name in ("table1_similarity.png", "table1_similarity.pdf", "table1_similarity.csv"):
        assert (out / "figures" / name).is_file(), name
    scores = pd.read_csv(out / "figures" / "table1_similarity.csv")
    assert set(scores["rank"]) == {1, 2, 3}  # k = 3 in the smoke profile
    record = json.loads((out / "results" / "table1_similarity.run.json").read_text())
    assert record["k"] == 3 and record["characters"] == ["ada-lindqvist", "bram-okafor"]
    recall = pd.read_csv(out / "results" / "evidence_recall.csv")
    assert recall.groupby(["embedder", "splitter"]).k.apply(list).map(lambda ks: ks == [1, 3, 5, 10]).all()
    assert recall.recall.between(0, 1).all() and (recall.all_found <= recall.recall + 1e-12).all()
    assert (out / "figures" / "evidence_recall.png").is_file()


def test_notebook_05_smoke_outputs(smoke):
    """Notebook 05 run with the smoke profile as ``reproduce.run("smoke", only=["05"])`` would, no judge set in the
    environment."""
    out, _ = smoke
    res, fig = out / "results", out / "figures"
    t6 = pd.read_csv(res / "table6_roleplay_counts.csv")
    assert t6[["task", "method"]].values.tolist() == [
        [QA_TASK, "no_rag"], [QA_TASK, "naive_rag"], [QA_TASK, "amadeus"], ["MBTI", "naive_rag"], ["MBTI", "amadeus"],
        ["BFI", "naive_rag"], ["BFI", "amadeus"]]
    assert (t6.answers == [12, 12, 12, 8, 8, 10, 10]).all() and (t6.judge == "fake").all()
    side = pd.read_csv(res / "table6_roleplay.csv")
    assert "ours (fake) ACC" in side.columns and "GPT-4.1 HS" in side.columns
    assert "judge: fake" in (res / "table6_roleplay.tex").read_text()
    kp = [json.loads(line) for line in (res / "keypoints_fake-fake.jsonl").read_text().splitlines()]
    assert len(kp) == 12 and all(r["judge"] == "fake" and r["date"] for r in kp)
    for name in ("qa_keypoints.csv", "qa_attributes_acc.csv", "qa_rank_agreement.csv", "qa_judge_check_agreement.csv",
                 "qa_verdicts.csv", "qa_answers.jsonl", "table6_roleplay.run.json"):
        assert (res / name).is_file(), name
    for name in ("table6_roleplay.png", "table6_roleplay.pdf", "table6_roleplay.csv"):
        assert (fig / name).is_file(), name
    record = json.loads((res / "table6_roleplay.run.json").read_text())
    assert record["judge"] == "fake" and record["failed"] == [] and record["judge_check"]
    tau = pd.read_csv(res / "qa_rank_agreement.csv")
    assert tau[tau.source == "AMADEUS paper"].tau.tolist() == pytest.approx([1.0, 1.0, 1.0])


def test_notebook_04_runs_every_budget_matched_control_it_is_given(smoke):
    """The smoke profile gives notebook 04 two controls (naive_rag_budget, crag_budget): each interviews on every
    questionnaire at AMADEUS's mean context there, and is paired with the method it controls."""
    out, _ = smoke
    sizes = pd.read_csv(out / "results" / "personality_context.csv").set_index(["method", "questionnaire"])
    for control in ("naive_rag_budget", "crag_budget"):
        for q in ("mbti", "bigfive"):
            assert sizes.context_chars[control, q] <= sizes.context_chars["amadeus", q] + 0.5, (control, q)  # rounded
    pairs = pd.read_csv(out / "results" / "table4_mbti_paired.csv")[["method", "reference"]].values.tolist()
    assert ["naive_rag", "naive_rag_budget"] in pairs and ["crag", "crag_budget"] in pairs


def test_smoke_csvs_carry_their_model_labels(smoke):
    """Every table the notebooks write names its models by the rules of tests/test_results_labels.py, so the
    regenerated results pass that test (it reads the committed ones)."""
    from test_results_labels import missing_labels  # tests/ is on sys.path (rootdir conftest, no package)

    out, _ = smoke
    csvs = sorted([*(out / "results").glob("*.csv"), *(out / "figures").glob("*.csv")])
    assert len(csvs) > 20, [c.name for c in csvs]
    missing = {f"{c.parent.name}/{c.name}": m for c in csvs if (m := missing_labels(c))}
    assert not missing, f"tables without their model columns: {missing}"


def test_the_plan_of_the_smoke_profile_counts_the_calls_its_run_made_then_finds_them_cached(smoke, capsys, monkeypatch,
                                                                                           tmp_path, request):
    """Planned with an empty cache (this test's own), two notebooks at once: every call to pay. The smoke run (fake
    LLM) made exactly the planned calls, notebook by notebook; planned again against its cache: every call cached,
    nothing to pay. (How repeats are counted: tests/test_plan_budget.py.)"""
    out, _ = smoke
    rows = reproduce.plan("profiles/smoke.yaml", ["01", "03", "05"], workers=2)
    printed = capsys.readouterr().out
    assert re.search(r"01_dataset +\(no LLM calls\)", printed) and "no model is called" in printed
    assert "model fake (fake:fake): runs in this process, no API cost: tokens only" in printed
    assert not (paths.cache_dir() / "llm.sqlite").exists(), "the plan created the reply cache"
    assert [(r["notebook"], r["model"]) for r in rows] == [("03_chunk_usage", "fake:fake"),
                                                           ("05_qa_evaluation", "fake:fake")]  # notebook order
    assert all(r["cost"] == 0 and r["cached"] == 0 and r["to_pay"] + r["repeats"] == r["calls"] for r in rows)
    assert rows[0]["calls"] > 50 and rows[1]["calls"] > 100
    paid = []
    for row, record in zip(rows, ["chunk_usage", "table6_roleplay"], strict=True):
        usage = list(json.loads((out / "results" / f"{record}.run.json").read_text())["usage_by_role"].values())
        distinct = [u for i, u in enumerate(usage) if u not in usage[:i]]  # a judge that is the role-play LLM: once
        assert sum(u["calls"] for u in distinct) == row["calls"] and {u["model"] for u in usage} == {"fake:fake"}
        paid.append(sum(u["calls"] - u["cache_hits"] for u in distinct))
    # 03 is the run's first notebook to call an LLM: it paid exactly what the plan says; 04 ran before 05 and may
    # have paid for some of its calls already
    assert paid[0] == rows[0]["to_pay"] and 0 < paid[1] <= rows[1]["to_pay"]

    run_cache = shutil.copytree(out / "cache", tmp_path / "run-cache")  # a copy: the smoke run's folder is only read
    monkeypatch.setenv("RPA_CACHE_DIR", str(run_cache))
    request.getfixturevalue("notebooks_in_this_process")  # the kernels' dry runs are above: these ask the cache
    again = reproduce.plan("smoke", ["03", "05"], workers=1)
    assert [(r["calls"], r["cached"], r["repeats"], r["to_pay"]) for r in again] == [(r["calls"], r["calls"], 0, 0)
                                                                                      for r in rows]
    assert sum(r["in_tokens"] for r in again) == 0


# ---------------------------------------------------------------- a failing notebook stops the run


def write_notebook(path: Path, *cells: str) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    params = nbformat.v4.new_code_cell('results_dir = None  # where to write\ndata_dir = None  # unused')
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, *(nbformat.v4.new_code_cell(c) for c in cells)]
    nbformat.write(nb, path)


def test_failing_notebook_stops_the_run(tmp_path, monkeypatch, capsys):
    books = tmp_path / "notebooks"
    books.mkdir()
    mark = "from pathlib import Path\nPath(results_dir).mkdir(parents=True, exist_ok=True)\nPath(results_dir, '{}').write_text('ran')"
    write_notebook(books / "01_fine.ipynb", mark.format("01.txt"))
    write_notebook(books / "02_broken.ipynb", mark.format("02_items.jsonl"), "raise RuntimeError('the fixture is broken')")
    write_notebook(books / "03_after.ipynb", mark.format("03.txt"))
    (books / "scratch.ipynb").write_text("not a numbered notebook, never run")
    monkeypatch.setattr(paths, "NOTEBOOKS_DIR", books)
    monkeypatch.setattr(paths, "PROFILES_DIR", tmp_path)
    (tmp_path / "tiny.yaml").write_text("description: three fixture notebooks\ndefaults: {}\n")
    out = tmp_path / "out"

    with pytest.raises(SystemExit) as info:
        reproduce.run("tiny", output_dir=out)
    assert info.value.code == 1
    captured = capsys.readouterr()
    assert re.search(r"02_broken.ipynb: cell \d+ raised RuntimeError: the fixture is broken", captured.err)
    assert str(out / "notebooks" / "02_broken.ipynb") in captured.err  # where to read the traceback
    assert "(what it saved before it stopped: 02_items.jsonl)" in captured.err  # its item files, named
    assert "[2/3] 02_broken: FAILED" in captured.out
    assert (out / "results" / "01.txt").read_text() == "ran"
    assert not (out / "results" / "03.txt").exists(), "the run went on after a failure"
    assert not (out / "notebooks" / "03_after.ipynb").exists()


def test_notebook_08_names_a_data_dir_that_is_no_dataset(tmp_path, notebooks_in_this_process):
    """Notebook 08 reads only the files earlier notebooks wrote, but re-tests the paper's tables on the dataset's
    characters: a folder without characters stops it at once, named, before it reads or writes anything."""
    empty = tmp_path / "no-dataset"
    (empty / "characters").mkdir(parents=True)
    params = {"data_dir": str(empty), "figures_dir": str(tmp_path / "figures"), "results_dir": str(tmp_path / "r")}
    failure = reproduce._papermill(paths.NOTEBOOKS_DIR / "08_claims.ipynb", tmp_path / "08.ipynb", params)
    assert failure == f"cell 3 raised DataError: {empty / 'characters'}: no character folders"
    assert not list(tmp_path.glob("r/*"))


def test_a_dead_kernel_is_reported_like_a_failing_notebook(tmp_path, monkeypatch, capsys):
    books = tmp_path / "notebooks"
    books.mkdir()
    write_notebook(books / "01_dies.ipynb", "import os\nos._exit(9)  # as the kernel dies when memory runs out")
    monkeypatch.setattr(paths, "NOTEBOOKS_DIR", books)
    monkeypatch.setattr(paths, "PROFILES_DIR", tmp_path)
    (tmp_path / "tiny.yaml").write_text("description: one fixture notebook\ndefaults: {}\n")
    with pytest.raises(SystemExit) as info:
        reproduce.run("tiny", output_dir=tmp_path / "out")
    assert info.value.code == 1
    captured = capsys.readouterr()
    assert "[1/1] 01_dies: FAILED" in captured.out and "01_dies.ipynb: the kernel died" in captured.err
    assert str(tmp_path / "out" / "notebooks" / "01_dies.ipynb") in captured.err


def test_a_kernel_starts_in_notebooks_and_this_process_never_changes_directory(tmp_path, monkeypatch):
    """JupyterLab's working directory for the kernel; none for the runner, whose plan runs notebooks from threads.
    The finished kernel is given the runner's second to exit, not jupyter_client's five."""
    from jupyter_client.manager import AsyncKernelManager

    books = tmp_path / "notebooks"
    books.mkdir()
    write_notebook(books / "01_where.ipynb", "import os\nfrom pathlib import Path\n"
                   "Path(results_dir).mkdir(parents=True)\nPath(results_dir, 'cwd.txt').write_text(os.getcwd())")
    monkeypatch.setattr(paths, "NOTEBOOKS_DIR", books)
    monkeypatch.setattr(paths, "PROFILES_DIR", tmp_path)
    (tmp_path / "tiny.yaml").write_text("description: one fixture notebook\ndefaults: {}\n")
    real_chdir = os.chdir

    def chdir(path):  # papermill's file reads chdir to where the process is already: harmless
        assert Path(path).resolve() == Path.cwd().resolve(), f"the runner changed directory to {path}"
        real_chdir(path)

    monkeypatch.setattr(os, "chdir", chdir)
    waits, finish = [], AsyncKernelManager._async_finish_shutdown

    async def finish_shutdown(self, *args, **kwargs):
        waits.append(self.shutdown_wait_time)
        return await finish(self, *args, **kwargs)

    monkeypatch.setattr(AsyncKernelManager, "_async_finish_shutdown", finish_shutdown)
    reproduce.run("tiny", output_dir=tmp_path / "out")
    assert (tmp_path / "out" / "results" / "cwd.txt").read_text() == str(books)
    assert waits == [reproduce.KERNEL_SHUTDOWN_SECONDS] == [1.0]


def test_the_users_dotenv_wins_over_the_profiles_env(tmp_path, monkeypatch):
    """As the environment does: PROFILE=paper must not make a judge set in .env gpt-4.1 at OpenAI."""
    from rpa_lib.settings import setting

    (tmp_path / ".env").write_text("RPA_JUDGE_MODEL=my-judge\n")
    with reproduce.profile_environment({"env": {"RPA_JUDGE_MODEL": "gpt-4.1", "RPA_PRICE_IN": 2}}):
        assert setting("RPA_JUDGE_MODEL") == "my-judge" and os.environ["RPA_PRICE_IN"] == "2"
    assert "RPA_PRICE_IN" not in os.environ
    # only our settings are read from .env: another library's (huggingface_hub's) there would block the profile's
    monkeypatch.delenv("HF_HUB_OFFLINE")
    (tmp_path / ".env").write_text("HF_HUB_OFFLINE=0\n")
    with reproduce.profile_environment({}):
        assert os.environ["HF_HUB_OFFLINE"] == "1"


def test_relative_folders_mean_the_same_to_the_runner_and_its_kernels(tmp_path, monkeypatch,
                                                                      notebooks_in_this_process):
    """A relative folder setting (in the environment or in .env) names a folder under the repository, wherever the
    run started and wherever the kernel starts (notebooks/, or JupyterLab's); a relative --output-dir names one
    where the run started. The runner itself uses the same folders."""
    from rpa_lib import settings

    books, here, repository = tmp_path / "notebooks", tmp_path / "elsewhere", tmp_path / "repository"
    books.mkdir()
    here.mkdir()
    write_notebook(books / "01_where.ipynb", "from pathlib import Path\nfrom rpa_lib import paths\n"
                   "Path(results_dir).mkdir(parents=True)\nPath(results_dir, 'where.txt').write_text(' '.join(str(f()) "
                   "for f in (paths.cache_dir, paths.index_dir, paths.user_data_dir, paths.output_root)))")
    monkeypatch.setattr(paths, "NOTEBOOKS_DIR", books)
    monkeypatch.setattr(paths, "PROFILES_DIR", tmp_path)
    monkeypatch.setattr(paths, "ROOT", repository)
    (tmp_path / "tiny.yaml").write_text("description: one fixture notebook\ndefaults: {}\n")
    monkeypatch.chdir(here)
    monkeypatch.setenv("RPA_CACHE_DIR", "cold-cache")
    monkeypatch.delenv("RPA_INDEX_DIR")
    settings.DOTENV.write_text("RPA_INDEX_DIR=../indexes\n")
    assert paths.index_dir() == repository / "../indexes"
    reproduce.run("tiny", output_dir=Path("out"))
    seen = (here / "out" / "results" / "where.txt").read_text().split()
    assert seen == [str(repository / "cold-cache"), str(repository / "../indexes"), os.environ["RPA_USER_DATA_DIR"],
                    str(here / "out")]
    assert list((repository / "cold-cache" / "reproduce").glob("01_where-*.json")) and (here / "out" / "notebooks").is_dir()
    assert os.environ["RPA_CACHE_DIR"] == "cold-cache"  # put back as it was


# ---------------------------------------------------------------- up to date: skipped without a kernel

COUNT = ("from pathlib import Path\nout = Path(results_dir); out.mkdir(parents=True, exist_ok=True)\n"
         "runs = out / '{0}.runs'; runs.write_text(runs.read_text() + 'x' if runs.exists() else 'x')\n"
         "(out / '{0}.txt').write_text(Path(data_dir, 'input.txt').read_text() + str(len(runs.read_text())))")


@pytest.fixture
def counting(tmp_path, monkeypatch, notebooks_in_this_process):
    """Two fixture notebooks that count their runs (``NN.runs``) and copy data/input.txt, run in this process (the
    runner's decisions do not depend on the kernel); returns (run, out)."""
    books, data = tmp_path / "notebooks", tmp_path / "data"
    books.mkdir()
    data.mkdir()
    (data / "input.txt").write_text("first")
    write_notebook(books / "01_one.ipynb", COUNT.format("01"))
    write_notebook(books / "02_two.ipynb", COUNT.format("02"))
    monkeypatch.setattr(paths, "NOTEBOOKS_DIR", books)
    monkeypatch.setattr(paths, "PROFILES_DIR", tmp_path)
    monkeypatch.setattr(paths, "DATA_DIR", data)
    (tmp_path / "tiny.yaml").write_text(f"description: two fixture notebooks\ndefaults: {{data_dir: {data}}}\n")
    out = tmp_path / "out"

    def run(**options) -> dict[str, int]:
        """Run both; how many times each has run so far."""
        reproduce.run("tiny", output_dir=out, **options)
        return {n: len((out / "results" / f"{n}.runs").read_text()) for n in ("01", "02")}

    return run, out


def test_a_second_run_skips_what_is_up_to_date_and_force_runs_it(counting, capsys):
    run, out = counting
    assert run() == {"01": 1, "02": 1}
    capsys.readouterr()
    assert run() == {"01": 1, "02": 1}  # no kernel started
    printed = capsys.readouterr().out
    assert "[1/2] 01_one: up to date" in printed and "2 notebook(s) up to date, not run" in printed
    assert run(force=True) == {"01": 2, "02": 2}


def test_a_run_reads_each_notebooks_parameters_and_takes_its_inputs_digest_once(counting, monkeypatch):
    """And checks an up-to-date notebook's outputs once; a notebook about to run hashes nothing."""
    from rpa_lib.run import stamps

    run, out = counting
    calls, read, digest, current = [], reproduce.parameters, stamps.inputs_digest, stamps.up_to_date
    monkeypatch.setattr(reproduce, "parameters", lambda nb: calls.append(("read", nb.stem)) or read(nb))
    monkeypatch.setattr(stamps, "inputs_digest", lambda nb, *a: calls.append(("digest", nb.stem)) or digest(nb, *a))
    monkeypatch.setattr(stamps, "up_to_date", lambda ex, *a: calls.append(("check", ex.stem)) or current(ex, *a))
    run()
    run()  # all up to date
    assert sorted(calls) == sorted([(what, nb) for what in ("read", "digest", "check") for nb in ("01_one", "02_two")]
                                   * 2)
    hashed, file_digest = [], stamps.file_digest
    monkeypatch.setattr(stamps, "file_digest", lambda p: hashed.append(p) or file_digest(p))
    recorded = stamps.read(out / "notebooks" / "01_one.ipynb")["outputs"]
    stamps.write(out / "notebooks" / "01_one.ipynb", None, [], 0.0)  # as before a run
    assert hashed == [] and stamps.read(out / "notebooks" / "01_one.ipynb")["outputs"] == recorded


def test_the_model_check_covers_the_notebooks_that_will_run(counting, monkeypatch):
    """Up-to-date notebooks are skipped, so the weights they once loaded are not required again; --force needs all."""
    run, out = counting
    checked, check = [], reproduce.check_models

    def recording(books, *args):
        checked.append([b.stem for b in books])
        return check(books, *args)

    monkeypatch.setattr(reproduce, "check_models", recording)
    run()
    run()
    (out / "results" / "02.txt").write_text("edited by hand")
    run()
    run(force=True)
    assert checked == [["01_one", "02_two"], [], ["02_two"], ["01_one", "02_two"]]


def test_batch_rounds_run_only_the_notebooks_that_will_run(counting, monkeypatch):
    """A round of an up-to-date notebook would pay for look-ahead answers that no run reads."""
    run, out = counting
    for name in ("01_one", "02_two"):  # both use an LLM
        write_notebook(paths.NOTEBOOKS_DIR / f"{name}.ipynb", COUNT.format(name[:2]),
                       "from rpa_lib.llm import get_llm\nget_llm('fake')")
    rounds = []
    monkeypatch.setattr(reproduce, "run_rounds", lambda stems, *args, **kwargs: rounds.append(stems))
    run(batch="local")
    run(batch="local")
    (out / "results" / "02.txt").write_text("edited by hand")
    run(batch="local")
    run(batch="local", force=True)
    assert rounds == [["01_one", "02_two"], [], ["02_two"], ["01_one", "02_two"]]


def test_the_same_batch_command_resumes_its_unfinished_rounds(counting, monkeypatch):
    """A run stopped mid-rounds and started again logs on in its folder, so its records count what was paid before
    the stop; once a run has written its records, the next one starts a folder of its own."""
    from rpa_lib.llm import LLMFatalError
    from rpa_lib.llm.rounds import log_round

    run, _ = counting
    write_notebook(paths.NOTEBOOKS_DIR / "01_one.ipynb", COUNT.format("01"), "from rpa_lib.llm import get_llm")
    folders = []

    def rounds(*args, run_dir, key, **kwargs):
        folders.append(run_dir)
        log_round(run_dir / "rounds.json", "local", {"round": len(folders)}, key=key)
        if len(folders) == 1:
            raise LLMFatalError("the server went away")  # a run stopped in its round 1

    monkeypatch.setattr(reproduce, "run_rounds", rounds)
    with pytest.raises(SystemExit):
        run(batch="local")
    run(batch="local")  # the same command: on in the same folder, then the records
    run(batch="local", force=True)  # that one wrote its records: a new folder
    assert folders[0] == folders[1] != folders[2]
    assert json.loads((folders[0] / "rounds.json").read_text())["finished"]


def test_a_command_whose_final_pass_stopped_resumes_its_folder_and_only_that_command(counting, monkeypatch, tmp_path):
    """The folder goes by the command (its notebooks, parameters and model settings), not by which notebooks are
    left to run: 01 finished in a final pass that 02 then stopped, and the same command still resumes the folder; a
    command on another model does not."""
    from rpa_lib.llm.rounds import log_round

    run, _ = counting
    llm = "from rpa_lib.llm import get_llm\nget_llm('fake')"
    stop = tmp_path / "stop"
    write_notebook(paths.NOTEBOOKS_DIR / "01_one.ipynb", COUNT.format("01"), llm)
    write_notebook(paths.NOTEBOOKS_DIR / "02_two.ipynb", COUNT.format("02"), llm,
                   f"if Path('{stop}').exists():\n    raise RuntimeError('stopped in the final pass')")
    folders = []

    def rounds(notebooks, *args, run_dir, key, **kwargs):
        folders.append((run_dir, tuple(notebooks)))
        log_round(run_dir / "rounds.json", "local", {"round": len(folders)}, key=key)

    monkeypatch.setattr(reproduce, "run_rounds", rounds)
    stop.write_text("")
    with pytest.raises(SystemExit):
        run(batch="local")
    stop.unlink()
    run(batch="local")  # 01 is up to date now: 02 alone has rounds, in the same folder
    assert folders[0][0] == folders[1][0] and [f[1] for f in folders] == [("01_one", "02_two"), ("02_two",)]
    monkeypatch.setenv("RPA_LLM_MODEL", "fake:other")
    stop.write_text("")
    with pytest.raises(SystemExit):
        run(batch="local", force=True)  # another model: a folder of its own
    assert folders[2][0] != folders[0][0]


def test_batch_rounds_under_a_budget_book_in_the_budget_the_notebooks_llms_share(counting, monkeypatch):
    """One Budget per ledger in a process: two would each write their holds under this process's key in the ledger,
    each overwriting the other's, and together pass the limit."""
    from rpa_lib.llm.budget import shared_budget

    run, _ = counting
    write_notebook(paths.NOTEBOOKS_DIR / "01_one.ipynb", COUNT.format("01"), "from rpa_lib.llm import get_llm")
    monkeypatch.setenv("RPA_BUDGET_USD", "1")
    given = []
    monkeypatch.setattr(reproduce, "run_rounds", lambda *args, budget, **kwargs: given.append(budget))
    run(batch="local")
    (budget,) = given
    assert budget is shared_budget(1.0, budget.ledger)


def test_changed_data_parameters_or_environment_run_again(counting, monkeypatch, tmp_path):
    run, out = counting
    run()
    (paths.DATA_DIR / "README.md").write_text("What the data is.")  # documentation, read by no notebook
    assert run() == {"01": 1, "02": 1}
    (paths.DATA_DIR / "input.txt").write_text("second")
    assert run() == {"01": 2, "02": 2}
    assert (out / "results" / "02.txt").read_text() == "second2"
    monkeypatch.setenv("RPA_LLM_MODEL", "another-model")
    assert run() == {"01": 3, "02": 3}
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-an-input")  # having a key picks gpt-4.1 for llm: null
    assert run() == {"01": 4, "02": 4}
    monkeypatch.setenv("OPENAI_API_KEY", "sk-another-key")  # which key it is changes no result
    assert run() == {"01": 4, "02": 4}
    assert "-key" not in "".join(p.read_text() for p in (paths.cache_dir() / "reproduce").glob("*.json"))
    copy = tmp_path / "copy"
    shutil.copytree(paths.DATA_DIR, copy)
    (tmp_path / "tiny.yaml").write_text((tmp_path / "tiny.yaml").read_text() + f"notebooks:\n  02_two: {{data_dir: {copy}}}\n")
    assert run() == {"01": 4, "02": 5}  # its parameters changed (the same data in another folder), not the first's


def test_settings_count_as_the_llm_layer_reads_them_and_a_key_only_as_set(tmp_path, monkeypatch):
    """``.env`` counts as the environment does (which wins over it): the LLM layer reads both. A key counts by being
    set, which picks the default LLM (gpt-4.1 for ``llm: null``), never by its value."""
    from rpa_lib.run import stamps

    nothing = stamps.environment_settings()
    (tmp_path / ".env").write_text("RPA_LLM_MODEL=openai:qwen3\nRPA_LLM_BASE_URL=http://127.0.0.1:8000/v1\n")
    assert stamps.environment_settings() == {**nothing, "RPA_LLM_BASE_URL": "http://127.0.0.1:8000/v1",
                                             "RPA_LLM_MODEL": "openai:qwen3"}
    monkeypatch.setenv("RPA_LLM_MODEL", "openai:other")
    assert stamps.environment_settings()["RPA_LLM_MODEL"] == "openai:other"
    (tmp_path / ".env").write_text("OPENAI_API_KEY=sk-sentinel-one\n")
    monkeypatch.delenv("RPA_LLM_MODEL")
    in_dotenv = stamps.environment_settings()
    assert in_dotenv == {**nothing, "OPENAI_API_KEY": "set"}
    (tmp_path / ".env").unlink()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-sentinel-two")
    assert stamps.environment_settings() == in_dotenv


def test_an_edited_or_deleted_output_and_an_upstream_rerun_run_again(counting):
    run, out = counting
    run()
    (out / "results" / "02.txt").write_text("edited by hand")
    assert run() == {"01": 1, "02": 2}
    (out / "results" / "01.txt").unlink()
    assert run() == {"01": 2, "02": 3}  # the first re-ran, so the second (which may read it) runs too
    assert (out / "results" / "01.txt").is_file()


def test_a_model_file_a_setting_names_counts_by_content_and_url_credentials_do_not(tmp_path, monkeypatch):
    from rpa_lib.run import stamps

    book, model = tmp_path / "01_x.ipynb", tmp_path / "model.gguf"
    write_notebook(book, "x = 1")
    model.write_bytes(b"weights one")

    def digest() -> str:
        return stamps.inputs_digest(book, {"llm": f"local:{model}"}, [])

    first = digest()
    model.write_bytes(b"weights two")
    assert digest() != first  # same name, other weights
    monkeypatch.setenv("RPA_LLM_BASE_URL", "http://user:sentinel-one@host:8000/v1")
    with_url = digest()
    monkeypatch.setenv("RPA_LLM_BASE_URL", "http://user:sentinel-two@host:8000/v1")
    assert digest() == with_url  # another password, the same server
    monkeypatch.setenv("RPA_LLM_BASE_URL", "http://user:sentinel-two@other:8000/v1")
    assert digest() != with_url
    assert "sentinel" not in json.dumps(stamps.environment_settings())


def test_a_relative_user_data_folder_counts_by_its_content(tmp_path, monkeypatch):
    """It names a folder under the repository, and editing a character there changes the stamp's inputs."""
    from rpa_lib.run import stamps

    monkeypatch.setattr(paths, "ROOT", tmp_path)
    (tmp_path / "mine" / "characters").mkdir(parents=True)
    persona = tmp_path / "mine" / "characters" / "persona.md"
    persona.write_text("one")
    monkeypatch.setenv("RPA_USER_DATA_DIR", "mine")
    first = stamps.environment_settings()["RPA_USER_DATA_DIR"]
    persona.write_text("two")
    assert stamps.environment_settings()["RPA_USER_DATA_DIR"] != first


def test_a_failed_notebook_does_not_look_done_and_keeps_its_kept_files_recorded(counting):
    """A file a notebook keeps without rewriting (a rating sheet) stays recorded through a failed run: deleted after
    the next success, it runs the notebook again."""
    run, out = counting
    books, kept = paths.NOTEBOOKS_DIR, out / "results" / "02.kept"
    keep = f"if not Path('{kept}').exists():\n    Path('{kept}').write_text('rated by hand')"
    write_notebook(books / "02_two.ipynb", COUNT.format("02"), keep)
    run()
    write_notebook(books / "02_two.ipynb", COUNT.format("02"), keep, "raise RuntimeError('broken after writing')")
    with pytest.raises(SystemExit):
        run()
    write_notebook(books / "02_two.ipynb", COUNT.format("02"), keep)  # back as it was: the failed run still counts
    assert run() == {"01": 1, "02": 3}
    kept.unlink()
    assert run() == {"01": 1, "02": 4} and kept.is_file()


# ---------------------------------------------------------------- a profile that names what does not exist


@pytest.mark.parametrize("text, message", [
    ("notebooks:\n  01_datset: {}\n", "notebooks.01_datset: no such notebook; notebooks: 00_explore, 01_dataset, 02_similarity_scores, "),
    ("notebooks:\n  01_dataset:\n    charcters: [frieren]\n",
     "notebooks.01_dataset.charcters: not a parameter of 01_dataset; parameters: characters, data_dir"),
    ("defaults:\n  charcters: [frieren]\n", "defaults.charcters: not a parameter of any notebook"),
    ("defaults:\n  characters: frieren\n", "defaults.characters: expected list[str] | None, got str 'frieren'"),
    ("notebooks:\n  02_similarity_scores:\n    k: five\n", "notebooks.02_similarity_scores.k: expected int, got str"),
    ("defaults: [1, 2\n", "not valid YAML (line 2: "),
    ("surprise: 1\n", "unknown top-level key(s) surprise"),
    ("notebooks:\n  - 01_dataset\n", "notebooks: expected a mapping of name: value, got ['01_dataset']"),
    ("notebooks:\n  01_dataset: [frieren]\n", "notebooks.01_dataset: expected a mapping of name: value, got ['frieren']"),
    ("env:\n  - RPA_JUDGE_MODEL=gpt-4.1\n", "env: expected a mapping of name: value, got ['RPA_JUDGE_MODEL=gpt-4.1']"),
    ("env:\n  RPA_JUDGE_MODEL:\n", "env.RPA_JUDGE_MODEL: expected a string or a number, got None"),
    # the runner's own parameter: set by a profile, a real run would be a dry run with the stand-in's numbers
    ("notebooks:\n  03_chunk_usage:\n    run_mode: {plan_file: p.jsonl}\n",
     "notebooks.03_chunk_usage.run_mode: set by the runner, not by a profile"),
    ("notebooks:\n  06_human_evaluation:\n    rater_models: fake\n",
     "notebooks.06_human_evaluation.rater_models: expected list[str] | None, got str 'fake'"),
    ("notebooks:\n  06_human_evaluation:\n    human_ratings_dir: 5\n",
     "notebooks.06_human_evaluation.human_ratings_dir: expected str | None, got int 5"),
    ("notebooks:\n  07_judge_agreement:\n    rungs: garbled\n",
     "notebooks.07_judge_agreement.rungs: expected list[str] | None, got str 'garbled'"),
    ("notebooks:\n  03_chunk_usage: {k: 3}\n  03_chunk_usage: {k: 5}\n",
     "not valid YAML (line 3: '03_chunk_usage' is given twice)"),
    ("notebooks:\n  04_personality:\n    methods: [no_rag, lightrag_budget]\n",
     "notebooks.04_personality.methods: lightrag_budget is matched to AMADEUS's mean context: add amadeus"),
    ("defaults:\n  methods: [crag, crag_budget]\nnotebooks:\n  05_qa_evaluation: {}\n",  # the defaults' methods
     "notebooks.05_qa_evaluation.methods: crag_budget is matched to AMADEUS's mean context"),
    ("budget_usd: .nan\n", "budget_usd: expected a non-negative number of dollars, got nan"),
    ("budget_usd: .inf\n", "budget_usd: expected a non-negative number of dollars, got inf"),
])
def test_profile_errors_name_the_file_and_the_key(tmp_path, monkeypatch, text, message):
    monkeypatch.setattr(paths, "PROFILES_DIR", tmp_path)
    (tmp_path / "bad.yaml").write_text(text)
    with pytest.raises(SystemExit) as info:
        reproduce.load_profile("bad")
    assert str(info.value).startswith(f"{tmp_path / 'bad.yaml'}: ") and message in str(info.value), str(info.value)
