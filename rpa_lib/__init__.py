"""rpa_lib: retrieval-augmented role-playing agents (AMADEUS: ACTS, Guided Selection, Attribute Extractor),
their baselines and evaluations. Importing it loads no model, builds no client and writes nothing.

The public names below are imported on first use (``rpa_lib.Dataset``, ``from rpa_lib import get_llm``), so that a
process that needs one submodule (a notebook kernel's ``rpa_lib.ipython``, a command line) does not load pandas,
scipy and every layer first.
"""

from importlib import import_module

_PUBLIC = {
    "rpa_lib.data": ("DataError", "Dataset", "load_labels", "load_qa", "load_questionnaire", "validate"),
    "rpa_lib.embeddings": ("embed", "get_embedder"),
    "rpa_lib.evaluation.runner": ("Job", "qa_jobs", "questionnaire_jobs", "run_jobs"),
    "rpa_lib.index": ("VectorIndex", "exact_search"),
    "rpa_lib.llm": ("LLM", "FakeLLM", "LLMError", "Outcome", "Reply", "Usage", "get_llm", "save_usage"),
    "rpa_lib.methods": ("METHODS", "Response", "build_method", "build_methods", "guided_selection", "register"),
    "rpa_lib.persona": ("ATTRIBUTES", "PersonaError", "list_characters", "load_persona", "parse_persona"),
    "rpa_lib.retrieval": ("Retriever", "clear_retrievers", "retriever"),
    "rpa_lib.splitters": ("SPLITTERS", "Chunk", "split"),
}
_HOME = {name: module for module, names in _PUBLIC.items() for name in names}
__all__ = sorted(_HOME)


def __getattr__(name: str):
    if name not in _HOME:
        raise AttributeError(f"module 'rpa_lib' has no attribute {name!r}")
    value = globals()[name] = getattr(import_module(_HOME[name]), name)
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
