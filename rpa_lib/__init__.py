"""rpa_lib: retrieval-augmented role-playing agents (AMADEUS: ACTS, Guided Selection, Attribute Extractor),
their baselines and evaluations. Importing it loads no model, builds no client and writes nothing."""

from rpa_lib.data import DataError, Dataset, load_labels, load_qa, load_questionnaire, validate
from rpa_lib.embeddings import embed, get_embedder
from rpa_lib.evaluation.runner import Job, qa_jobs, questionnaire_jobs, run_jobs
from rpa_lib.index import VectorIndex, exact_search
from rpa_lib.llm import LLM, FakeLLM, LLMError, Outcome, Reply, Usage, get_llm, save_usage
from rpa_lib.methods import METHODS, Response, build_method, build_methods, guided_selection, register
from rpa_lib.persona import ATTRIBUTES, PersonaError, list_characters, load_persona, parse_persona
from rpa_lib.retrieval import Retriever, clear_retrievers, retriever
from rpa_lib.splitters import SPLITTERS, Chunk, split

__all__ = [
    "ATTRIBUTES", "LLM", "METHODS", "SPLITTERS", "Chunk", "DataError", "Dataset", "FakeLLM", "Job", "LLMError",
    "Outcome", "PersonaError", "Reply", "Response", "Retriever", "Usage", "VectorIndex", "build_method", "build_methods",
    "clear_retrievers", "embed", "exact_search", "get_embedder", "get_llm", "guided_selection", "list_characters",
    "load_labels", "load_persona", "load_qa", "load_questionnaire", "parse_persona", "qa_jobs", "questionnaire_jobs",
    "register", "retriever", "run_jobs", "save_usage", "split", "validate",
]
