"""The evaluator prompts of the personality interview (AMADEUS Tables 4-5), after InCharacter (Wang et al. 2024)
in our own words: option conversion and expert rating. Plain functions returning chat messages; no LLM call.
"""

from __future__ import annotations

from rpa_lib.data import Dimension, Item, Questionnaire
from rpa_lib.text import chat

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
    """The constrained answers ``["1", ..., str(points)]`` (digits: no option favoured for being short)."""
    return [str(i) for i in range(1, questionnaire.points + 1)]


def option_messages(name: str, item: Item, reply: str, questionnaire: Questionnaire) -> list[dict]:
    """Option conversion: where on the agreement scale does this one reply put the character? (Keying is the
    scorer's, never the evaluator's.)"""
    return chat(EVALUATOR_SYSTEM, (
        f'Statement: "{item.statement}"\n\n'
        f'The interviewer asked {name}: "{item.question}"\n'
        f'{name} answered: "{reply.strip()}"\n\n'
        f"How strongly does {name}'s answer agree with the statement, as if {name} had said it about "
        f"themselves? Use this scale: {scale_text(questionnaire)}. If the answer takes no side, choose "
        f"{middle_text(questionnaire)}. Answer with the number only."))


def expert_schema(questionnaire: Questionnaire) -> dict:
    """JSON Schema of an expert rating: a short analysis, then the score as one of the scale's integers (an enum)."""
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
    """Expert rating: a few question-and-answer pairs of one dimension, the dimension rated on the questionnaire's
    scale with the high pole (``poles``: high and low name) at the top."""
    high, low = poles
    transcript = "\n\n".join(f'Q{i}: "{item.question}"\nA{i} ({name}): "{reply.strip()}"'
                             for i, (item, reply) in enumerate(pairs, start=1))
    n = questionnaire.points
    return chat(EVALUATOR_SYSTEM, (
        f"Personality dimension: {dimension.name}, from {low} ({dimension.low}) to {high} ({dimension.high}).\n\n"
        f"Part of an interview with {name}:\n\n{transcript}\n\n"
        f"Based only on these answers, rate {name} on this dimension from 1 to {n}: 1 means clearly {low}, "
        f"{n} means clearly {high}, {middle_text(questionnaire)} means balanced or no evidence. "
        f"First write a short analysis (two or three sentences), then give the score as an integer."))
