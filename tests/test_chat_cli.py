"""Mistakes a user makes at ``python -m rpa_lib chat`` and in the explorer's ``ask``: each ends in one line naming
what is wrong, before any question is sent, with exit status 2 for bad input and 1 for a call that failed; Ctrl-C and
a closed pipe end the chat without a traceback, the usage so far printed."""

from __future__ import annotations

import pytest

from rpa_lib.__main__ import main as rpa_main
from rpa_lib.data import Dataset
from rpa_lib.explore import ask, explorer, persona_browser
from rpa_lib.llm import FakeLLM
from rpa_lib.methods import build_method

QUESTION = "Who are you?"


def chat(fixture_data, *extra: str) -> list[str]:
    return ["chat", "--character", "ada-lindqvist", "--data-dir", str(fixture_data), "--method", "naive_rag",
            "--embedder", "hash-64", "--llm", "fake", *extra]


@pytest.fixture
def calls(monkeypatch) -> list[str]:
    """The questions the fake LLM was sent (its chat calls)."""
    sent: list[str] = []
    original = FakeLLM.chat

    def counted(self, messages, **kwargs):
        sent.append(messages[-1]["content"])
        return original(self, messages, **kwargs)

    monkeypatch.setattr(FakeLLM, "chat", counted)
    return sent


@pytest.mark.parametrize("extra, message", [
    (["--question", "  "], "--question is empty: ask something, or leave --question out to chat"),
    (["--embedder", "minlm", "--question", QUESTION], "unknown embedder 'minlm' (did you mean 'minilm'?)"),
    (["--embedder", "hash-0", "--question", QUESTION], "embedder 'hash-0': the hashing embedder takes a positive"),
    (["--embedder", "hash-x", "--question", QUESTION], "embedder 'hash-x': the hashing embedder takes a positive"),
    (["--embedder", "hashy", "--question", QUESTION], "unknown embedder 'hashy'"),
    (["--data-dir", "/nonexistent/data", "--question", QUESTION], "/nonexistent/data: --data-dir: no such folder"),
    (["--k", "0", "--question", QUESTION], "k must be at least 1"),
])
def test_bad_input_is_one_line_and_exit_2_before_any_call(fixture_data, capsys, calls, extra, message):
    assert rpa_main(chat(fixture_data, *extra)) == 2
    out, err = capsys.readouterr()
    assert err.startswith("error: ") and message in err and "Traceback" not in err
    assert calls == [] and "you>" not in out


def test_a_mistyped_backend_or_a_missing_key_fails_before_the_first_question(fixture_data, capsys, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("RPA_LLM_BASE_URL", raising=False)
    monkeypatch.setattr("builtins.input", lambda prompt: pytest.fail("asked for a question"))
    assert rpa_main([*chat(fixture_data)[:-1], "fak"]) == 2  # bad input: the backend meant is named
    assert capsys.readouterr().err.startswith("error: spec 'fak': did you mean 'fake'?")
    assert rpa_main([*chat(fixture_data)[:-1], "gpt-4.1"]) == 1  # a call that cannot be made, named before any
    assert capsys.readouterr().err.splitlines() == [
        "error: no OpenAI API key for model 'gpt-4.1' at https://api.openai.com/v1: set OPENAI_API_KEY (environment "
        "or .env) or pass api_key="]


def test_ctrl_c_at_the_prompt_ends_the_chat_and_during_an_answer_exits_130(fixture_data, capsys, monkeypatch):
    def interrupt(prompt):
        raise KeyboardInterrupt

    monkeypatch.setattr("builtins.input", interrupt)
    assert rpa_main(chat(fixture_data)) == 0
    assert "fake: 0 calls" in capsys.readouterr().out

    answers = iter(["Who are you?"])
    monkeypatch.setattr("builtins.input", lambda prompt: next(answers))
    monkeypatch.setattr("rpa_lib.methods.base.Method.respond", lambda *a, **k: interrupt(None))
    assert rpa_main(chat(fixture_data)) == 130
    out, err = capsys.readouterr()
    assert "fake: 0 calls" in out and err == "\ninterrupted\n"


def test_a_closed_pipe_ends_the_chat_quietly(fixture_data, capsys, monkeypatch):
    def closed(*args, **kwargs):
        raise BrokenPipeError

    monkeypatch.setattr("rpa_lib.__main__.show", closed)
    assert rpa_main(chat(fixture_data, "--question", QUESTION)) == 141  # as a shell reports a closed pipe
    assert capsys.readouterr().err == ""


def test_ask_names_a_bad_argument(fixture_data):
    dataset = Dataset(fixture_data)
    one = ask("ada-lindqvist", QUESTION, "naive_rag", "fake", dataset, embedder="hash-64")  # one name, not letters
    assert [a.method for a in one] == ["naive_rag"] and one[0].error is None
    bad = {"question must be a non-empty string, not None": dict(question=None),
           "question must be a non-empty string, not ' '": dict(question=" "),
           "unknown method(s) 'naiv_rag'; known: no_rag, naive_rag": dict(methods=["naiv_rag"]),
           "no method has the setting(s) 'kk'": dict(kk=3),
           "/nonexistent: no such dataset folder": dict(dataset="/nonexistent")}
    for message, change in bad.items():
        args = dict(character="ada-lindqvist", question=QUESTION, methods=["naive_rag"], llm="fake", dataset=dataset,
                    embedder="hash-64") | change
        with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
            ask(**args)


def test_a_setting_of_the_wrong_type_is_named_when_the_method_is_built(fixture_data):
    for setting, value, message in (("k", "3", "setting k must be int, not str '3'"),
                                    ("k", True, "setting k must be int, not bool True"),
                                    ("extract", "yes", "setting extract must be bool, not str 'yes'"),
                                    ("max_iterations", 2.5, "setting max_iterations must be int, not float 2.5")):
        with pytest.raises(ValueError, match=message):
            build_method("amadeus", FakeLLM(), dataset=fixture_data, **{setting: value})
    import numpy as np

    assert build_method("crag", FakeLLM(), dataset=fixture_data, k=np.int64(2), upper=1).settings.k == 2


def test_the_explorer_offers_the_llm_it_is_given_names_a_character_it_lacks_and_refuses_an_unknown_method(
        fixture_data):
    dataset = Dataset(fixture_data)
    app = explorer(dataset, "ada-lindqvist", ["naive_rag"], "openai:my-served-model", embedder="hash-64")
    model = app.children[1].children[0].children[1]
    assert model.value == "openai:my-served-model" and "given: openai:my-served-model" in model.options[-1][0]
    other = explorer(dataset, "frieren", ["naive_rag"], "fake")  # notebook 00's default, on another dataset
    assert other.children[1].children[0].children[0].value == "ada-lindqvist"
    assert "&#x27;frieren&#x27; is not in this dataset: showing ada-lindqvist first" in other.children[0].value
    browser = persona_browser(dataset, "frieren")
    assert "is not in this dataset: showing ada-lindqvist first" in browser.children[1].value
    with pytest.raises(ValueError, match="unknown method"):
        explorer(dataset, "ada-lindqvist", ["amadeuss"], "fake")


def test_a_cache_setting_naming_a_file_is_named(fixture_data, capsys, monkeypatch, tmp_path):
    (tmp_path / "cache").write_text("")
    monkeypatch.setenv("RPA_CACHE_DIR", str(tmp_path / "cache"))
    assert rpa_main(chat(fixture_data, "--question", QUESTION)) == 2
    assert f"error: {tmp_path / 'cache'} (RPA_CACHE_DIR={tmp_path / 'cache'}) is a file, where a folder belongs" in \
        capsys.readouterr().err


def test_ask_without_an_llm_uses_the_configured_one_as_the_explorer_does(fixture_data, monkeypatch):
    import rpa_lib.explore as explore

    built = []
    monkeypatch.setattr(explore, "get_llm", lambda spec: built.append(spec) or FakeLLM(label=spec))
    monkeypatch.setenv("RPA_LLM_MODEL", "fake:configured")
    ask("ada-lindqvist", QUESTION, "no_rag", None, Dataset(fixture_data))
    app = explorer(Dataset(fixture_data), "ada-lindqvist", ["no_rag"])
    assert built == ["fake:configured"] and app.children[1].children[0].children[1].value == "fake:configured"
