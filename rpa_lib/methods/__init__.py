"""Role-playing methods behind one interface: ``build_method(name, llm=...).respond(character, question)``."""

from rpa_lib.methods.amadeus import Amadeus
from rpa_lib.methods.base import Call, Method, Response, RoleplayMethod
from rpa_lib.methods.baselines import NaiveRAG, NoRAG
from rpa_lib.methods.gs import Selection, guided_selection

METHODS = {m.name: m for m in (NoRAG, NaiveRAG, Amadeus)}


def build_method(name: str, llm=None, **settings) -> Method:
    """A method by name (``no_rag``, ``naive_rag``, ``amadeus``) with its settings (splitter, embedder, k,
    max_iterations, slot_size, window, extract_retries, data_dir, max_tokens). ``llm`` defaults to ``get_llm()``.
    Settings a method does not take are ignored, so one settings dict serves every method."""
    if name not in METHODS:
        raise ValueError(f"unknown method {name!r}; choose one of {', '.join(METHODS)}")
    if llm is None:
        from rpa_lib.llm import get_llm

        llm = get_llm()
    cls = METHODS[name]
    common = {"embedder", "k", "data_dir", "max_tokens"} | ({"splitter"} if name != "no_rag" else set())
    own = {"max_iterations", "slot_size", "window", "extract", "extract_retries"} if cls is Amadeus else set()
    return cls(llm, **{k: v for k, v in settings.items() if k in common | own and v is not None})


__all__ = ["METHODS", "Amadeus", "Call", "Method", "NaiveRAG", "NoRAG", "Response", "RoleplayMethod", "Selection",
           "build_method", "guided_selection"]
