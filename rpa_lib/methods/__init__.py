"""Role-playing methods behind one interface.

``build_method(name, llm=..., **settings).respond(character, question)`` -> :class:`Response`; the evaluation
runner (:mod:`rpa_lib.evaluation.runner`) maps a method over jobs. Registered methods: ``no_rag``, ``naive_rag``, ``amadeus``,
``crag`` (CRAG-offline: web search replaced by BM25 over persona paragraphs), ``rolerag`` and ``lightrag``; and
two named variants of Naive RAG (:data:`VARIANTS`): ``naive_rag_vanilla`` (Vanilla chunks instead of the ACTS pool
every other retrieving method shares) and ``naive_rag_budget`` (a character budget instead of k, the control that
shows as much context as AMADEUS).

Each method class registers itself (``@register`` above the class); the order of the imports of the method modules
below is the registry's order (that of Table 6 and of the benchmark), so they are kept out of import sorting.
"""

# isort: off
from rpa_lib.methods.baselines import NaiveRAG, NaiveRAGSettings, NoRAG
from rpa_lib.methods.amadeus import Amadeus, AmadeusSettings
from rpa_lib.methods.crag import Crag, CragSettings
from rpa_lib.methods.rolerag import RoleRAG, RoleRAGSettings
from rpa_lib.methods.lightrag import LightRAG, LightRAGSettings, close_lightrag
# isort: on

from rpa_lib.methods.base import (
    AnswerSettings,
    Call,
    Context,
    ContextItem,
    Method,
    Response,
    RetrievalSettings,
)
from rpa_lib.methods.gs import Selection, guided_selection
from rpa_lib.methods.registry import (
    METHODS,
    VARIANTS,
    build_method,
    build_methods,
    method_class,
    method_label,
    paper_name,
    register,
    setting_names,
)

__all__ = ["METHODS", "VARIANTS", "NaiveRAGSettings", "method_label", "Amadeus", "AmadeusSettings", "AnswerSettings", "Call", "Context", "ContextItem", "Crag",
           "CragSettings", "Method", "RoleRAG", "RoleRAGSettings",
           "LightRAG", "LightRAGSettings", "close_lightrag",
           "NaiveRAG", "NoRAG", "Response", "RetrievalSettings", "Selection", "build_method", "build_methods",
           "guided_selection", "method_class", "paper_name", "register",
           "setting_names"]
