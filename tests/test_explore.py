"""The explorer's library side (rpa_lib.explore, rpa_lib.display) on the fixture data, the fake LLM and the hash
embedder: each method's answer with GS's walk, the HTML views, and the widgets' Ask button. The browser itself is
tests/test_browser.py."""

from __future__ import annotations

import html
import logging

import pytest

from rpa_lib.data import Dataset
from rpa_lib.explore import ask, compare_html, persona_html
from rpa_lib.retrieval import retriever

QUESTION = "What do you value most?"


@pytest.fixture
def dataset(fixture_data):
    return Dataset(fixture_data)


@pytest.fixture
def answers(dataset):
    return ask("ada-lindqvist", QUESTION, ["no_rag", "naive_rag", "amadeus"], "fake", dataset, embedder="hash-64",
               k=2, max_iterations=5, slot_size=2)


def test_ask_gives_each_method_its_answer_and_gs_walk(answers):
    no_rag, naive, amadeus = answers
    assert [a.method for a in answers] == ["no_rag", "naive_rag", "amadeus"] and not any(a.error for a in answers)
    assert no_rag.retrieved == [] and no_rag.walk is None
    assert len(naive.retrieved) == 2 and naive.retrieved[0].score >= naive.retrieved[1].score
    d = amadeus.response.details
    assert len(amadeus.walk) == d["examined"] <= 5  # one verdict per chunk GS examined, in similarity order
    judged = [c.output == "yes" for c in amadeus.response.calls if c.purpose == "judge"]
    assert [ok for _, ok in amadeus.walk] == judged
    kept = [hit.chunk.id for hit, ok in amadeus.walk if ok]
    assert d["gs_failed"] or kept == [i.chunk_ids[0] for i in amadeus.response.items("selected")]
    scores = [hit.score for hit, _ in amadeus.walk]
    assert scores == sorted(scores, reverse=True)


def test_compare_html_shows_chunks_verdicts_and_replies(answers):
    page = compare_html(answers)
    assert page.count('class="rpa-col"') == 3 and page.count('class="rpa-reply"') == 3
    assert "Guided Selection" in page and ("kept" in page or "GS failed" in page)
    assert "Ada Lindqvist &gt;" in page  # heading paths, escaped
    assert "<details>" in page  # long chunk texts folded
    assert "cost unknown (no price for this model)" in page  # not told that the LLM runs in this process
    assert "no API cost (runs in this process)" in compare_html(answers, free=True)


def test_a_failing_method_shows_its_error_and_the_others_answer(dataset):
    answers = ask("ada-lindqvist", QUESTION, ["naive_rag", "amadeus"], "fake", dataset, embedder="no-such-embedder")
    assert all(a.error for a in answers) and "no-such-embedder" in answers[0].error
    assert 'class="rpa-error"' in compare_html(answers)


def test_a_variant_of_a_method_answers_by_its_name(dataset):
    """``ask`` builds what ``build_method`` builds: a registered method's variant too (the explorer's list offers
    the registered methods)."""
    (answer,) = ask("ada-lindqvist", QUESTION, ["naive_rag_vanilla"], "fake", dataset, embedder="hash-64", k=2)
    assert answer.method == "naive_rag_vanilla" and answer.error is None and answer.response.reply


def test_unknown_character_is_a_clear_error(dataset):
    with pytest.raises(Exception, match="nobody"):
        ask("nobody", QUESTION, ["no_rag"], "fake", dataset)


def test_records_render_as_html(dataset, answers):
    hits = retriever("ada-lindqvist", "acts", "hash-64", dataset).search(QUESTION, 2)
    assert "<table" in hits[0]._repr_html_() and html.escape(hits[0].chunk.context) in hits[0]._repr_html_()
    assert "<table" in hits[0].chunk._repr_html_()
    shown = answers[2].response._repr_html_()
    assert "Context that reached the LLM" in shown and "examined" in shown


def test_persona_browser_shows_lmax_overlap_and_paths(dataset):
    shown = persona_html("ada-lindqvist", "acts", dataset)
    assert "l_max = " in shown and "overlap = " in shown and "heading path" in shown
    assert "chunk length = 500" in persona_html("ada-lindqvist", "vanilla", dataset)


def test_widgets_answer_on_ask(dataset):
    pytest.importorskip("ipywidgets")
    from rpa_lib.explore import explorer, persona_browser

    app = explorer(dataset, "ada-lindqvist", ["naive_rag", "amadeus"], "fake", embedder="hash-64")
    caption, controls, text, out = app.children
    assert "Dataset: the dataset in" in caption.value and "fixtures/data" in caption.value
    _, model, buttons = controls.children[0].children
    button, status = buttons.children
    methods = controls.children[1]
    assert ("Naive RAG", "naive_rag") in methods.options  # display names, registry names as values
    assert model.style.description_width == "initial"
    assert [label for label, _ in model.options][0] == "embedded SmolLM2 (in-process)"  # whole, not cut
    text.value = QUESTION
    button.click()
    assert "rpa-compare" in out.value and out.value.count('class="rpa-reply"') == 2
    assert "<b>Naive RAG</b>" in out.value and "<b>AMADEUS</b>" in out.value
    assert status.value.startswith("done: 2 method(s)") and "LLM call(s)" in status.value
    methods.value = ()
    button.click()  # nothing selected: a message, and the answers stay
    assert "Select at least one method" in status.value and out.value.count('class="rpa-reply"') == 2
    browser = persona_browser(dataset, "ada-lindqvist")
    assert "l_max" in browser.children[1].value
    browser.children[0].children[1].value = "vanilla"
    assert "chunk length" in browser.children[1].value


def test_an_interrupt_ends_a_cell_with_one_line(capsys):
    interactiveshell = pytest.importorskip("IPython.core.interactiveshell")
    from rpa_lib.ipython import MESSAGE, load_ipython_extension, unload_ipython_extension

    shell = interactiveshell.InteractiveShell.instance()
    load_ipython_extension(shell)
    try:
        result = shell.run_cell("def deep():\n    raise KeyboardInterrupt\ndeep()")
    finally:
        unload_ipython_extension(shell)
    assert not result.success  # Run All still stops at the interrupted cell
    assert capsys.readouterr().err.strip() == MESSAGE


def test_the_kernel_log_drops_the_interrupt_that_precedes_a_shutdown_and_keeps_other_errors(caplog):
    from types import SimpleNamespace

    from rpa_lib.ipython import load_ipython_extension, unload_ipython_extension

    log = logging.getLogger("test-kernel")
    shell = SimpleNamespace(kernel=SimpleNamespace(log=log), set_custom_exc=lambda *args: None)
    load_ipython_extension(shell)
    with caplog.at_level("ERROR", logger="test-kernel"):
        log.error("KeyboardInterrupt caught in kernel.")  # as ipykernel 7 writes it
        log.error("Exception in message handler:")
        unload_ipython_extension(shell)
        log.error("KeyboardInterrupt caught in kernel.")
    assert [r.getMessage() for r in caplog.records] == ["Exception in message handler:",
                                                        "KeyboardInterrupt caught in kernel."]


def test_a_configured_server_is_offered_and_answers(dataset, monkeypatch):
    from benchmarks.mock_server import MockServer
    from rpa_lib.explore import llm_choices

    with MockServer() as server:
        monkeypatch.setenv("RPA_LLM_MODEL", "openai:mock-model")
        monkeypatch.setenv("RPA_LLM_BASE_URL", server.base_url)
        assert "openai:mock-model" in llm_choices()
        answers = ask("ada-lindqvist", QUESTION, ["naive_rag", "amadeus"], "openai:mock-model", dataset,
                      embedder="hash-64", max_iterations=4)
        assert not any(a.error for a in answers), [a.error for a in answers]
        assert all(a.response.reply for a in answers) and server.requests >= 2
        assert len(answers[1].walk) == answers[1].response.details["examined"]


def test_a_model_set_in_dotenv_is_offered_as_the_notebooks_would_use_it(tmp_path):
    from rpa_lib import settings
    from rpa_lib.explore import llm_choices

    assert settings.DOTENV == tmp_path / ".env"  # conftest points .env at this test's folder
    settings.DOTENV.write_text("RPA_LLM_MODEL=openai:from-dotenv\n")
    assert llm_choices()["openai:from-dotenv"] == "configured: openai:from-dotenv (RPA_LLM_MODEL)"


def test_progress_per_method_side_by_side_on_a_server_and_readable_details(dataset):
    from rpa_lib.display import details_lines
    from rpa_lib.llm import FakeLLM

    events = []
    llm = FakeLLM(delay=0.2, max_workers=4)
    answers = ask("ada-lindqvist", QUESTION, ["no_rag", "naive_rag"], llm, dataset, embedder="hash-64",
                  progress=lambda m, state: events.append((m, state)))
    assert sorted(events) == [("naive_rag", "done"), ("naive_rag", "running"), ("no_rag", "done"),
                              ("no_rag", "running")]
    assert events[:2] == [("no_rag", "running"), ("naive_rag", "running")]  # side by side: both start first
    assert [a.label for a in answers] == ["No RAG", "Naive RAG"]
    assert details_lines({"route": "correct", "chunk_scores": [0.71234, 0.2], "strips": [{"a": 1}] * 3}) == [
        "route: correct", "chunk scores: 0.712, 0.2", "strips: 3 items"]
    with pytest.raises(ValueError, match="no method selected"):
        ask("ada-lindqvist", QUESTION, [], "fake", dataset)


def test_the_embedded_engine_gets_free_text_ae_and_one_method_at_a_time():
    from rpa_lib.explore import is_local, method_settings

    assert method_settings("amadeus", "local") == {"extract_format": "text"}
    assert method_settings("amadeus", "fake") == {} and not is_local("openai:gpt-4.1")


def test_warning_notes_name_a_warnings_kind_unless_it_is_a_plain_user_warning():
    import warnings

    from rpa_lib.explore import warning_notes

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.warn("16 of 49 texts are longer than the 256 tokens MiniLM reads\nmore", stacklevel=1)
        warnings.warn("old", DeprecationWarning, stacklevel=1)
        warnings.warn("16 of 49 texts are longer than the 256 tokens MiniLM reads", stacklevel=1)
    assert warning_notes(caught) == ["note: 16 of 49 texts are longer than the 256 tokens MiniLM reads",
                                     "note: deprecation: old"]


def test_a_headless_explore_run_whose_question_failed_fails_naming_the_method(fixture_data, tmp_path, monkeypatch,
                                                                               notebooks_in_this_process):
    """Notebook 00 given a ``question`` shows the answers, then fails when a method's calls failed: a server that
    refuses every request (401) is a failed run, not a page of error boxes that exits 0."""
    from benchmarks.mock_server import MockServer
    from rpa_lib import paths
    from rpa_lib.run.reproduce import _papermill

    with MockServer(fault_rate=1.0, faults=("401",)) as server:
        monkeypatch.setenv("RPA_LLM_BASE_URL", server.base_url)
        failure = _papermill(paths.NOTEBOOKS_DIR / "00_explore.ipynb", tmp_path / "00_explore.ipynb", {
            "data_dir": str(fixture_data), "llm": "openai:mock-model", "character": "ada-lindqvist",
            "methods": ["no_rag"], "embedder": "hash-64", "question": QUESTION})
    assert failure is not None and failure.startswith("cell 5 raised RuntimeError: 00_explore: no_rag failed:"), failure
    assert "401" in failure and server.served["401"] >= 1
