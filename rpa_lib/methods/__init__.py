"""Role-playing methods behind one interface: ``build_method(name, llm=..., **settings).respond(character,
question)`` -> :class:`Response`. How each method follows or departs from its paper: ``docs/design/methods.md``.

The imports of the method modules below set the registry's order (that of Table 6), so isort leaves them alone.
"""

# isort: off
from rpa_lib.methods.baselines import NaiveRAG, NaiveRAGSettings, NoRAG
from rpa_lib.methods.amadeus import Amadeus, AmadeusSettings
from rpa_lib.methods.crag import Crag, CragSettings
from rpa_lib.methods.rolerag import RoleRAG, RoleRAGSettings
from rpa_lib.methods.lightrag import LightRAG, LightRAGSettings, close_lightrag
# isort: on

from rpa_lib.methods.base import AnswerSettings, Call, Context, ContextItem, Method, Response, RetrievalSettings
from rpa_lib.methods.gs import Selection, guided_selection
from rpa_lib.methods.registry import (
    METHODS,
    VARIANTS,
    budget_controls,
    budget_note,
    build_control,
    build_method,
    build_methods,
    method_class,
    method_label,
    paper_name,
    register,
    setting_names,
)

__all__ = ["METHODS", "VARIANTS", "Amadeus", "AmadeusSettings", "AnswerSettings", "Call", "Context", "ContextItem",
           "Crag", "CragSettings", "LightRAG", "LightRAGSettings", "Method", "NaiveRAG", "NaiveRAGSettings", "NoRAG",
           "Response", "RetrievalSettings", "RoleRAG", "RoleRAGSettings", "Selection", "budget_controls", "budget_note",
           "build_control", "build_method", "build_methods",
           "close_lightrag", "guided_selection", "method_class", "method_label", "paper_name", "register",
           "setting_names"]
