"""The evaluator prompts of the personality interview (AMADEUS Tables 4-5), written for this repository.

Two ways of scoring an interview, after InCharacter (Wang et al. 2024), in our own words:

- :func:`option_messages`: *option conversion*, one reply at a time placed on the item's agreement scale;
- :func:`expert_messages`: *expert rating*, a few replies of one dimension read together and the dimension rated.

Both tell the evaluator to judge only what the replies say, never what it knows about the character from
elsewhere: the interview measures the role-playing agent, and an evaluator that fills gaps from its own memory
of a famous character would measure itself. Prompts are plain functions returning chat messages; this module
calls no LLM.
"""

from __future__ import annotations

from rpa_lib.data import Dimension, Item, Questionnaire

EVALUATOR_SYSTEM = (
    "You are a careful psychologist who scores personality interviews. You judge only what the interviewee's "
    "own words in the transcript show. Do not use anything you may know about the interviewee from elsewhere."
)


def scale_text(questionnaire: Questionnaire) -> str:
    """``"1 = strongly disagree, 2 = disagree, ..."``: the agreement scale spelled out."""
    return ", ".join(f"{i} = {label}" for i, label in enumerate(questionnaire.labels, start=1))


def middle_text(questionnaire: Questionnaire) -> str:
    """The neutral point to fall back on: ``"4"`` on a 7-point scale, ``"3 or 4"`` on a 6-point one."""
    mid = questionnaire.midpoint
    return str(int(mid)) if mid == int(mid) else f"{int(mid)} or {int(mid) + 1}"


def scale_options(questionnaire: Questionnaire) -> list[str]:
    """The constrained answers: ``["1", ..., str(points)]``. Single digits rather than the labels, so no option
    is favoured for being short when a local model scores options by their likelihood."""
    return [str(i) for i in range(1, questionnaire.points + 1)]


def option_messages(name: str, item: Item, reply: str, questionnaire: Questionnaire) -> list[dict]:
    """Option conversion: where on the agreement scale does this one reply put the character?

    The evaluator sees the item's first-person statement (what agreement means), the question as it was asked,
    and the reply, and picks a scale point (constrained choice among :func:`scale_options`). Keying is applied
    afterwards by the scorer, never asked of the evaluator, so a reverse-keyed item is judged exactly like any
    other. A reply that does not take a side maps to the middle of the scale, which leaves the dimension's
    score where the other items put it.
    """
    return [
        {"role": "system", "content": EVALUATOR_SYSTEM},
        {"role": "user", "content": (
            f'Statement: "{item.statement}"\n\n'
            f'The interviewer asked {name}: "{item.question}"\n'
            f'{name} answered: "{reply.strip()}"\n\n'
            f"How strongly does {name}'s answer agree with the statement, as if {name} had said it about "
            f"themselves? Use this scale: {scale_text(questionnaire)}. If the answer takes no side, choose "
            f"{middle_text(questionnaire)}. Answer with the number only."
        )},
    ]


def expert_schema(questionnaire: Questionnaire) -> dict:
    """JSON Schema of an expert rating: a short analysis first (the reasoning the rating rests on), then the
    rating as one of the scale's integers (an enum, which every structured-output backend supports)."""
    return {
        "type": "object",
        "properties": {
            "analysis": {"type": "string"},
            "score": {"type": "integer", "enum": list(range(1, questionnaire.points + 1))},
        },
        "required": ["analysis", "score"],
    }


def expert_messages(name: str, dimension: Dimension, poles: tuple[str, str], pairs: list[tuple[Item, str]],
                    questionnaire: Questionnaire) -> list[dict]:
    """Expert rating: read a few question-and-answer pairs of one dimension and rate the dimension.

    ``poles`` are the names of the high and the low end (e.g. ``("Extraversion", "Introversion")``). The
    rating uses the questionnaire's number of points with the *high* letter at the top, so it is read against
    the same midpoint as option conversion. Items keyed either way are shown as they were asked; the evaluator
    weighs what the answers reveal about the dimension, which is what an expert rater does with an interview.
    """
    high, low = poles
    transcript = "\n\n".join(f'Q{i}: "{item.question}"\nA{i} ({name}): "{reply.strip()}"'
                             for i, (item, reply) in enumerate(pairs, start=1))
    n = questionnaire.points
    return [
        {"role": "system", "content": EVALUATOR_SYSTEM},
        {"role": "user", "content": (
            f"Personality dimension: {dimension.name}, from {low} ({dimension.low}) to {high} ({dimension.high}).\n\n"
            f"Part of an interview with {name}:\n\n{transcript}\n\n"
            f"Based only on these answers, rate {name} on this dimension from 1 to {n}: 1 means clearly {low}, "
            f"{n} means clearly {high}, {middle_text(questionnaire)} means balanced or no evidence. "
            f"First write a short analysis (two or three sentences), then give the score as an integer."
        )},
    ]
