"""The examples in the docstrings of the pure modules run, so they cannot drift from the code. Modules whose
examples load a model or write files show them as plain (non-doctest) examples instead."""

from __future__ import annotations

import doctest
import importlib

import pytest

PURE_MODULES = ["rpa_lib.persona", "rpa_lib.splitters", "rpa_lib.notebook_params", "rpa_lib.data.dataset",
                "rpa_lib.methods.registry", "rpa_lib.methods.gs", "rpa_lib.methods.bm25",
                "rpa_lib.report", "rpa_lib.methods.graph_cache", "rpa_lib.display", "rpa_lib.methods.base",
                "rpa_lib.data.grounding", "rpa_lib.model_files", "rpa_lib.authoring.document",
                "rpa_lib.authoring.importer", "rpa_lib.authoring.scaffold", "rpa_lib.authoring.sources",
                "rpa_lib.authoring.wikitext"]


@pytest.mark.parametrize("name", PURE_MODULES)
def test_docstring_examples_run(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"{name} has no docstring example to run"
    assert result.failed == 0


def test_the_python_example_of_your_own_character_runs(fixture_data, capsys):
    """docs/your_own_character.md's Python block, on the fake LLM, the hashing embedder and a fixture character: it
    cannot drift from the API it shows."""
    from pathlib import Path

    doc = (Path(__file__).parents[1] / "docs" / "your_own_character.md").read_text(encoding="utf-8")
    [block] = [b.split("```")[0] for b in doc.split("```python\n")[1:]]
    code = (block.replace('get_llm("local")', 'get_llm("fake")').replace('"user_data"', repr(str(fixture_data)))
            .replace('"aldric-venn"', '"ada-lindqvist"').replace("dataset=mine)", "dataset=mine, embedder='hash-64')"))
    assert code != block
    exec(compile(code, "your_own_character.md", "exec"), {})
    out = capsys.readouterr().out
    assert "naive_rag -> fake reply" in out and "amadeus -> fake reply" in out
    assert "respond chat" in out and "judge choose" in out and "knowledge " in out
