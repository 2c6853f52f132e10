"""The prompts of the LLM rater panel that stands in for people in AMADEUS Table 2: the sheet's question and 1-5
anchors (:data:`rpa_lib.evaluation.sheets.QUESTION`, :data:`~rpa_lib.evaluation.sheets.SCALE`) and a persona of
its own per rater (:data:`RATER_PERSONAS`), answered with one digit by constrained choice. Calls no LLM.
"""

from __future__ import annotations

from rpa_lib.evaluation.calibration import CONTENT_FREE
from rpa_lib.evaluation.sheets import QUESTION, SCALE
from rpa_lib.text import chat

RATING_OPTIONS = {str(k): float(k) for k in SCALE}

RATER_PERSONAS = {
    "psychologist": (
        "You are a personality psychologist. You accept a trait or a value only when the passages show behaviour or "
        "statements that point to it; a label the passages do not earn counts against the inference."),
    "close-reader": (
        "You are a careful reader of stories who knows how characters reveal themselves through what they do. "
        "Reading between the lines is fine when the passages clearly invite it; guessing is not."),
    "fact-checker": (
        "You are a fact-checker. You go through every claim of the attributes one by one and look for it in the "
        "passages; each claim you cannot find there lowers your rating."),
    "role-play-writer": (
        "You write role-play scripts and need attributes you can act on. You ask whether the attributes would let "
        "you answer the question the way this character would, given only what the passages show."),
    "skeptic": (
        "You are a skeptical reviewer. You start from the lowest rating and raise it only as far as the passages "
        "force you to."),
}


def rating_messages(persona: str, name: str, question: str, chunks: str, attributes: str) -> list[dict]:
    """One sample, exactly as the sheet shows it, for the rater of ``persona``."""
    if persona not in RATER_PERSONAS:
        raise ValueError(f"unknown rater persona {persona!r}; known: {', '.join(RATER_PERSONAS)}")
    scale = "\n".join(f"{k} = {v}" for k, v in SCALE.items())
    system = (f"{RATER_PERSONAS[persona]} You are one of several raters in a study. Judge only the texts you are "
              "shown, not anything you may know about the character from elsewhere.")
    return chat(system, f"Character: {name}\nQuestion put to {name}: {question}\n\n"
                        f"Chunks (passages of {name}'s persona document picked for this question):\n{chunks}\n\n"
                        f"Attributes (what was inferred about {name} from these chunks):\n{attributes}\n\n"
                        f"{QUESTION}\n{scale}\nAnswer with one digit from 1 to 5.")


def content_free_messages(persona: str) -> list[dict]:
    """The template with every slot :data:`~rpa_lib.evaluation.calibration.CONTENT_FREE`."""
    return rating_messages(persona, CONTENT_FREE, CONTENT_FREE, CONTENT_FREE, CONTENT_FREE)
