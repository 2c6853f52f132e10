"""The prompts of CRAG-offline (:mod:`rpa_lib.methods.crag`): the retrieval evaluator, graded 1-5 (default) or
relevant/irrelevant, and the query rewrite. The LLM plays CRAG's fine-tuned T5 evaluator by constrained choice.
"""

from __future__ import annotations

from rpa_lib.methods.prompts import about
from rpa_lib.text import chat

RELEVANT, IRRELEVANT = "relevant", "irrelevant"
EVALUATOR_OPTIONS = [RELEVANT, IRRELEVANT]
GRADES = ["1", "2", "3", "4", "5"]  # the graded evaluator's options, worst to best


def _grading(name: str, work: str, question: str, passage: str, source: str, strict: str, ask: str) -> list[dict]:
    where = f" (from {source})" if source else ""
    return chat(f"You grade passages retrieved for a question. Be strict: {strict}",
                f"{about(name, work, question)}Passage{where}:\n{passage}\n\n{ask}")


def evaluator_messages(name: str, work: str, question: str, passage: str, source: str = "") -> list[dict]:
    """The binary retrieval evaluator, for a retrieved chunk or a strip: does the passage help answer?"""
    return _grading(name, work, question, passage, source,
                    "a passage is relevant only if it contains information that helps answer the question.",
                    f"Does this passage contain information that helps {name} answer the question? "
                    f"Answer {RELEVANT} or {IRRELEVANT}.")


def grade_messages(name: str, work: str, question: str, passage: str, source: str = "") -> list[dict]:
    """The retrieval evaluator on a five-point scale (:data:`GRADES`): how far the passage helps answer."""
    return _grading(name, work, question, passage, source,
                    "grade what the passage contains that helps answer the question, not the words it shares with it.",
                    f"How much does this passage help {name} answer the question? Answer with one digit: "
                    f"1 = not at all, 2 = barely (same topic, no useful fact), 3 = partly, 4 = mostly, "
                    f"5 = fully (it holds what the answer needs).")


def keywords_messages(name: str, work: str, question: str, max_keywords: int = 3) -> list[dict]:
    """CRAG's query rewrite: the question as a few search keywords about the character."""
    return chat("You turn questions into short search-engine queries.", (
        f"{about(name, work, question)}Write a search query for this question, as at most {max_keywords} "
        f"keywords or short key phrases separated by commas (\"you\" means {name}). Reply with the keywords only."
    ))
