"""The prompts of CRAG-offline (:mod:`rpa_lib.methods.crag`), written for this repository.

Two prompts: the retrieval evaluator (one passage, relevant or not to the question) and the query rewrite
(the question as at most three search keywords). The answer uses the shared role-play prompt
(:func:`rpa_lib.methods.prompts.respond_messages`). CRAG's evaluator is a fine-tuned T5 model; here the LLM
plays it by constrained choice, so every backend returns a valid verdict and, where it can, a score per option.
"""

from __future__ import annotations

RELEVANT, IRRELEVANT = "relevant", "irrelevant"
EVALUATOR_OPTIONS = [RELEVANT, IRRELEVANT]


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
