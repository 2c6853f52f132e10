"""The prompts of our CharacterCraft-style judge: one reply of a role-playing agent rated on one of the eight
single-reply dimensions (CharacterCraft section 4.1), against the character's profile alone (:data:`ANCHORS`) or
with a reference answer too (:data:`REFERENCE_ANCHORS`). Verdicts are constrained choices among the scale's digits
(:func:`options`). The criteria are our own wording. Calls no LLM.
"""

from __future__ import annotations

from rpa_lib.evaluation.calibration import CONTENT_FREE
from rpa_lib.evaluation.judge_prompts import one_line
from rpa_lib.evaluation.metrics.charactercraft import DIMENSIONS
from rpa_lib.text import chat

NAMES = {"flu": "Fluency", "coh": "Coherence", "bg": "Background", "pers": "Personality", "us": "Utterance style",
         "emo": "Emotion", "dec": "Decision", "hl": "Human-likeness"}
TOP = {d: 3 if d == "hl" else 2 for d in DIMENSIONS}  # the scale is 0..TOP

WHAT = {
    "flu": "is the reply well-formed language that reads without effort?",
    "coh": "does the reply respond to what was asked and stay on it?",
    "bg": "does what the reply says about the character (identity, past, abilities, knowledge, relationships) hold "
          "for this character?",
    "pers": "does the reply show this character's temperament and traits?",
    "us": "does the reply sound like this character talking (first person, their register and words), rather than "
          "a narrator, an encyclopedia or an assistant?",
    "emo": "are the feelings the reply shows, or holds back, the ones this character would have here?",
    "dec": "are the choices, actions and stances in the reply the ones this character would take, given their "
           "values and goals?",
    "hl": "does the reply read like a real person talking, rather than a machine?",
}

ANCHORS = {
    "flu": ("broken grammar or word order; parts are hard to make sense of",
            "understandable, with some awkward, wrong or clumsy phrasing",
            "smooth, grammatical and clear throughout"),
    "coh": ("does not address the question, or talks about something else",
            "addresses the question but drifts, leaves part of it open or adds unrelated matter",
            "answers the question directly and stays on it"),
    "bg": ("says things about the character that clash with the profile, or speaks as somebody else",
           "mostly fits the profile, with a detail that does not fit or cannot be right",
           "everything it says about the character fits the profile"),
    "pers": ("shows a temperament unlike, or opposite to, the profile's",
             "broadly fits the profile's temperament but is bland or partly off",
             "unmistakably this character's temperament and traits"),
    "us": ("not the character's voice: a narrator, an assistant, or a description of the character in the third "
           "person",
           "the character's voice with lapses: generic, stiff or out-of-register passages",
           "wholly the character's own voice"),
    "emo": ("feelings that do not fit the character or the moment, or a flat reply where the character would "
            "clearly feel something",
            "roughly the right feelings, but too strong or too weak",
            "the feelings fit the character and the moment"),
    "dec": ("choices or stances that go against the character's values or goals",
            "plausible for the character but not clearly theirs, or partly against their values",
            "choices and stances that follow from the character's values and goals"),
    "hl": ("broken or incoherent language",
           "fluent but mechanical: listed facts, assistant phrases, a template structure or padding",
           "natural on the whole, but generic or with some stock phrases",
           "reads like a real person talking: direct, personal and conversational"),
}

REFERENCE_ANCHORS = {
    "flu": ANCHORS["flu"],
    "coh": ("does not address what the reference answers, or talks about something else",
            "addresses it, but leaves out part of what the reference covers or adds unrelated matter",
            "answers what the reference answers, directly"),
    "bg": ("its facts contradict the reference or the profile, or belong to somebody else",
           "agrees with the reference in part, but misses or alters one of its facts, or adds a fact about the "
           "character that neither the reference nor the profile supports",
           "its facts agree with the reference and the profile"),
    "pers": ("the attitude is unlike, or opposite to, the one the reference implies",
             "roughly the reference's attitude, but weaker or partly different",
             "the same attitude and traits as the reference implies"),
    "us": ("not the character's voice: a narrator, an assistant, or the reference's third person copied",
           "the character's voice with lapses: generic, stiff or out-of-register passages",
           "wholly the character's own voice (the reference's facts in the character's first person)"),
    "emo": ("feelings unlike those the reference implies for the character here",
            "the feelings the reference implies, but too strong or too weak",
            "the feelings the reference implies, in the right strength"),
    "dec": ("choices or stances unlike the reference's, and not fitting the character either",
            "choices or stances unlike the reference's, but still fitting the character",
            "the same choices and stances as the reference"),
    "hl": ANCHORS["hl"],
}

SYSTEM = ("You rate one reply of a role-playing agent that speaks as a fictional character, on one dimension at a "
          "time. Judge only the texts you are shown, not anything you may know about the character from elsewhere.")


def options(dimension: str) -> dict[str, float]:
    """The digits of a dimension's scale and their values. ``options("hl") == {"0": 0.0, ..., "3": 3.0}``"""
    return {str(i): float(i) for i in range(TOP[dimension] + 1)}


def dimension_messages(dimension: str, name: str, work: str, profile: str, question: str, reply: str,
                       reference: str | None = None) -> list[dict]:
    """Rate ``reply`` on ``dimension``; with ``reference`` (the gold answer), against :data:`REFERENCE_ANCHORS`."""
    if dimension not in NAMES:
        raise ValueError(f"unknown dimension {dimension!r}; known: {', '.join(NAMES)}")
    anchors = (REFERENCE_ANCHORS if reference is not None else ANCHORS)[dimension]
    scale = "\n".join(f"{i} = {text}" for i, text in enumerate(anchors))
    shown = (f"Reference answer (what is true of {name} here, written about {name} in the third person): "
             f"{one_line(reference)}\n") if reference is not None else ""
    digits = ", ".join(str(i) for i in range(TOP[dimension])) + f" or {TOP[dimension]}"
    return chat(SYSTEM, (
        f"Character: {name} ({work})\nProfile of {name} (excerpts):\n{profile}\n\n"
        f"The user asked {name}: {one_line(question)}\n{name}'s reply: {one_line(reply) or '(empty)'}\n{shown}\n"
        f"Dimension: {NAMES[dimension]}: {WHAT[dimension]}\n{scale}\nAnswer with one digit: {digits}."
    ))


def content_free_messages(dimension: str, with_reference: bool) -> list[dict]:
    """The template with every slot :data:`~rpa_lib.evaluation.calibration.CONTENT_FREE`."""
    c = CONTENT_FREE
    return dimension_messages(dimension, c, c, c, c, c, c if with_reference else None)
