"""The prompts of CRAG-offline (:mod:`rpa_lib.methods.crag`), written for this repository.

Three prompts: the retrieval evaluator in two forms (:func:`grade_messages`: how far one passage helps answer the
question, on a five-point scale, the default; :func:`evaluator_messages`: relevant or not) and the query rewrite
(the question as at most three search keywords). The answer uses the shared role-play prompt
(:func:`rpa_lib.methods.prompts.respond_messages`). CRAG's evaluator is a fine-tuned T5 model that outputs a graded
score; here the LLM plays it by constrained choice, so every backend returns a valid verdict and, where it can, a
score per option. The scale gives a graded verdict even where a server gives no scores.
"""

from __future__ import annotations

RELEVANT, IRRELEVANT = "relevant", "irrelevant"
EVALUATOR_OPTIONS = [RELEVANT, IRRELEVANT]
GRADES = ["1", "2", "3", "4", "5"]  # the graded evaluator's options, worst to best


def _about(name: str, work: str, question: str) -> str:
    return f"Character: {name} ({work})\nQuestion someone asks {name}: {question}\n\n"


def evaluator_messages(name: str, work: str, question: str, passage: str, source: str = "") -> list[dict]:
    """The retrieval evaluator, for a whole retrieved chunk and for each knowledge strip alike.

    Asks whether the passage holds information that helps answer the question as this character, which is
    CRAG's notion of relevance (the document supports the answer), not whether it merely shares words.
    """
    where = f" (from {source})" if source else ""
    return [
        {"role": "system", "content": "You grade passages retrieved for a question. Be strict: a passage is relevant "
                                      "only if it contains information that helps answer the question."},
        {"role": "user", "content": (
            f"{_about(name, work, question)}Passage{where}:\n{passage}\n\n"
            f"Does this passage contain information that helps {name} answer the question? "
            f"Answer {RELEVANT} or {IRRELEVANT}."
        )},
    ]


def grade_messages(name: str, work: str, question: str, passage: str, source: str = "") -> list[dict]:
    """The retrieval evaluator on a five-point scale (:data:`GRADES`): how much of what the answer needs the
    passage holds, from 1 (nothing: unrelated, or only sharing words) to 5 (what the answer needs). The same
    notion of relevance as :func:`evaluator_messages`, graded, so CRAG's three actions can fire on any backend."""
    where = f" (from {source})" if source else ""
    return [
        {"role": "system", "content": "You grade passages retrieved for a question. Be strict: grade what the passage "
                                      "contains that helps answer the question, not the words it shares with it."},
        {"role": "user", "content": (
            f"{_about(name, work, question)}Passage{where}:\n{passage}\n\n"
            f"How much does this passage help {name} answer the question? Answer with one digit: "
            f"1 = not at all, 2 = barely (same topic, no useful fact), 3 = partly, 4 = mostly, "
            f"5 = fully (it holds what the answer needs)."
        )},
    ]


def keywords_messages(name: str, work: str, question: str, max_keywords: int = 3) -> list[dict]:
    """CRAG's query rewrite: the question as a few search keywords. The character's name and work are given, so
    a question in the second person ("What did you do...") becomes a query about the character."""
    return [
        {"role": "system", "content": "You turn questions into short search-engine queries."},
        {"role": "user", "content": (
            f"{_about(name, work, question)}Write a search query for this question, as at most {max_keywords} "
            f"keywords or short key phrases separated by commas (\"you\" means {name}). Reply with the keywords only."
        )},
    ]
