"""``python -m rpa_lib.reproduce`` given what a researcher mistypes: each mistake is one line naming the file or
notebook, the key and what is wrong, before any notebook runs; Ctrl-C says how to resume; a closed pipe is no
traceback. No kernel starts in these tests (the runner's next step is replaced by one that fails the test)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from rpa_lib import paths
from rpa_lib.run import reproduce


@pytest.fixture
def profile(tmp_path, monkeypatch):
    """Write ``profiles/<name>.yaml`` (in ``tmp_path``) and return its name."""
    monkeypatch.setattr(paths, "PROFILES_DIR", tmp_path)

    def write(text: str | bytes, name: str = "probe") -> str:
        path = tmp_path / f"{name}.yaml"
        path.write_bytes(text) if isinstance(text, bytes) else path.write_text(text)
        return name

    return write


def test_a_profile_that_is_not_text_is_one_line(profile):
    name = profile(b"\xff\xfe\x00binary")
    with pytest.raises(SystemExit, match=r"probe\.yaml: not UTF-8 text \(byte 0\)"):
        reproduce.load_profile(name)


@pytest.mark.parametrize("text, message", [
    ("defaults:\n  embeder: hash-64\n", "defaults.embeder: not a parameter of any notebook; .* \\(did you mean 'embedder'\\?\\)$"),
    ("descripton: x\n", "unknown top-level key\\(s\\) descripton; keys: .* \\(did you mean 'description'\\?\\)$"),
    ("notebooks:\n  02_similarity: {k: 3}\n", "notebooks.02_similarity: no such notebook; .* \\(did you mean '02_similarity_scores'\\?\\)$"),
    ("1: x\n", "unknown top-level key\\(s\\) 1; keys: description"),  # was a TypeError sorting the keys
    ("env:\n  1: x\n", "env: 1 is no variable name"),  # was a TypeError when the run set the environment
    # a value outside a parameter's choices stopped the run at its notebook, after the notebooks before it ran
    ("defaults:\n  scoring: likret\n", "defaults.scoring: 'likret' is not one of "),
    ("notebooks:\n  05_qa_evaluation: {methods: [amadeus, amadeuz]}\n",
     "notebooks.05_qa_evaluation.methods: unknown method 'amadeuz'"),
    ("notebooks:\n  04_personality: {method_settings: {naive_rag: 3}}\n",
     "notebooks.04_personality.method_settings: 'naive_rag': expected a dict of settings"),
    ("notebooks:\n  04_personality: {method_settings: {crag: {strip_sentence: 4}}}\n",
     "notebooks.04_personality.method_settings.crag: method 'crag' has no setting 'strip_sentence'; its settings: "),
    ("defaults:\n  method_settings: {naive_rag: {k: 0}}\n", "defaults.method_settings.naive_rag: k must be at least 1"),
    ("defaults:\n  embedder: minlm\n", "defaults.embedder: unknown embedder 'minlm' \\(did you mean 'minilm'\\?\\)"),
])
def test_a_misspelt_or_odd_key_names_the_one_meant(profile, text, message):
    with pytest.raises(SystemExit, match=message):
        reproduce.load_profile(profile(text))


@pytest.mark.parametrize("setting, value, message", [
    ("RPA_CACHE_DIR", "a-file/sub", r"cache folder \(RPA_CACHE_DIR\) .*a-file/sub: cannot write there \(.*a-file is not a folder\)"),
    ("RPA_CACHE_DIR", "a-file", r"a-file \(RPA_CACHE_DIR=.*\) is a file"),
    ("RPA_INDEX_DIR", "a-file/sub", r"index folder \(RPA_INDEX_DIR\) .*: cannot write there"),
])
@pytest.mark.parametrize("command", ["run", "plan"])
def test_a_cache_folder_that_cannot_be_written_is_one_line_before_anything_runs(
        tmp_path, profile, monkeypatch, setting, value, message, command):
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv(setting, str(tmp_path / value))
    monkeypatch.setattr(reproduce, "notebooks", lambda *a: pytest.fail("went past the checks"))
    name = profile("description: x\n")
    with pytest.raises(SystemExit, match=message):
        if command == "run":
            reproduce.run(name, output_dir=tmp_path / "out")
        else:
            reproduce.plan(name)


@pytest.mark.parametrize("command", ["run", "plan"])
def test_a_misspelt_budget_setting_stops_before_the_budget_is_read(tmp_path, profile, monkeypatch, command):
    monkeypatch.setenv("RPA_BUDGET_US", "5")  # read by nothing: the run would have had no limit
    monkeypatch.setattr(reproduce, "notebooks", lambda *a: pytest.fail("went past the checks"))
    with pytest.raises(SystemExit, match=r"^RPA_BUDGET_US \(environment or \.env\) is not a setting \(did you mean "
                                         r"RPA_BUDGET_USD\?\)"):
        if command == "run":
            reproduce.run(profile("description: x\n"), output_dir=tmp_path / "out")
        else:
            reproduce.plan(profile("description: x\n"))


@pytest.mark.parametrize("command", ["run", "plan"])
def test_one_price_without_the_other_stops_before_any_notebook(tmp_path, profile, monkeypatch, command):
    monkeypatch.setenv("RPA_PRICE_IN", "2")  # each notebook would fail on it in turn
    monkeypatch.setattr(reproduce, "notebooks", lambda *a: pytest.fail("went past the checks"))
    with pytest.raises(SystemExit, match=r"^set both RPA_PRICE_IN and RPA_PRICE_OUT"):
        if command == "run":
            reproduce.run(profile("description: x\n"), output_dir=tmp_path / "out")
        else:
            reproduce.plan(profile("description: x\n"))


def test_a_misspelt_setting_in_a_profiles_env_names_the_profile_not_the_environment(tmp_path, profile):
    name = profile("env: {RPA_LLM_TIMEOUTT: 5}\n")
    with pytest.raises(SystemExit, match=rf"^{tmp_path}/{name}.yaml: env.RPA_LLM_TIMEOUTT is not a setting \(did you "
                                         r"mean RPA_LLM_TIMEOUT\?\)"):
        reproduce.plan(name)


@pytest.mark.parametrize("text, message", [
    ("notebooks:\n  04_personality: {characters: [ada-lindqvst]}\n",
     r"^04_personality: characters: .*unknown character\(s\) 'ada-lindqvst'; known: ada-lindqvist, bram-okafor$"),
    ("defaults:\n  data_dir: /nonexistent/probe-data\n", r"^01_dataset: data_dir: /nonexistent/probe-data: no such folder$"),
])
@pytest.mark.parametrize("command", ["run", "plan"])
def test_a_mistyped_character_or_data_folder_stops_before_the_first_notebook(
        tmp_path, profile, monkeypatch, fixture_data, text, message, command):
    for name in ("_run", "_attempt", "_papermill"):
        monkeypatch.setattr(reproduce, name, lambda *a, **k: pytest.fail("went past the checks"))
    base = "" if "data_dir" in text else f"defaults:\n  data_dir: {fixture_data}\n  llm: fake\n  embedder: hash-64\n"
    name, only = profile(base + text), ["04"] if "04_" in message else ["01"]
    with pytest.raises(SystemExit, match=message):
        if command == "run":
            reproduce.run(name, only, tmp_path / "out", force=True)
        else:
            reproduce.plan(name, only)


def test_the_profiles_the_repository_ships_pass_the_data_check():
    from rpa_lib.run.profiles import load_profile, notebooks

    for name in ("quick", "paper", "smoke"):
        reproduce.check_data(reproduce.each_notebook(notebooks(), load_profile(name), None))


@pytest.mark.parametrize("argv, says", [
    (["--only", "01"], "the same command resumes"),
    (["--only", "01", "--force"], "the same command without --force resumes"),  # --force would run every one again
    (["--only", "01", "--plan"], "interrupted: no plan printed"),  # a dry run keeps no notebook
])
def test_ctrl_c_says_how_to_resume(monkeypatch, capsys, argv, says):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(reproduce, "run", interrupted)
    monkeypatch.setattr(reproduce, "plan", interrupted)
    assert reproduce.main(argv) == 130
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err


def test_output_piped_to_head_ends_quietly():
    """``... --plan | head -1``: the reader goes away; no BrokenPipeError traceback, status 141 (SIGPIPE's)."""
    code = ("import sys\nfrom rpa_lib.run import reproduce\n"
            "reproduce.plan = lambda *a, **k: [print('row', i, flush=True) for i in range(100000)]\n"
            "sys.exit(reproduce.main(['--plan']))\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout.readline() == b"row 0\n"
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=30) == 141 and "Traceback" not in err and "BrokenPipe" not in err, err


def test_only_takes_a_notebooks_number_or_name_with_or_without_the_other():
    from rpa_lib.run.profiles import notebooks

    for given in (["2"], ["02"], ["similarity_scores"], ["02_similarity_scores"], ["02_similarity"]):
        assert [p.stem for p in notebooks(given)] == ["02_similarity_scores"], given
    assert [p.stem for p in notebooks(["0", "8"])] == ["00_explore", "08_claims"]
    with pytest.raises(SystemExit, match="no notebook matches --only similarity; notebooks: 00_explore"):
        notebooks(["similarity"])


@pytest.mark.parametrize("embedder", ["acme/tiny-embed", "../.venv/models/my-embedder", "hash-16", "bge-m3"])
def test_a_profile_may_name_an_embedder_by_id_or_folder(profile, embedder):
    # a model id or a folder is looked up when the run starts (relative to notebooks/, with the profile's env):
    # only a near miss of a short name is refused at load
    loaded = reproduce.load_profile(profile(f"defaults:\n  embedder: {embedder}\n"))
    assert loaded["defaults"]["embedder"] == embedder
