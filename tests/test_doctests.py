"""The examples in the docstrings of the pure modules run, so they cannot drift from the code. Modules whose
examples load a model or write files show them as plain (non-doctest) examples instead."""

from __future__ import annotations

import doctest
import importlib

import pytest

PURE_MODULES = ["rpa_lib.persona", "rpa_lib.splitters", "rpa_lib.notebook_params", "rpa_lib.data.dataset",
                "rpa_lib.methods.registry", "rpa_lib.methods.gs", "rpa_lib.methods.bm25",
                "rpa_lib.report", "rpa_lib.methods.graph_cache", "rpa_lib.display", "rpa_lib.methods.baselines",
                "rpa_lib.data.grounding", "rpa_lib.model_files", "rpa_lib.authoring.document",
                "rpa_lib.authoring.importer", "rpa_lib.authoring.scaffold", "rpa_lib.authoring.sources",
                "rpa_lib.authoring.wikitext"]


@pytest.mark.parametrize("name", PURE_MODULES)
def test_docstring_examples_run(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"{name} has no docstring example to run"
    assert result.failed == 0
