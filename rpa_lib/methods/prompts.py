"""Every prompt the role-playing methods send, written for this repository, each saying what it asks and why.

Prompts are plain functions returning chat messages, so a test can read them and a researcher can change one
in one place. The evaluators' prompts live with the evaluations (``rpa_lib.evaluation``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rpa_lib.splitters import Chunk

if TYPE_CHECKING:
    from rpa_lib.methods.base import ContextItem

JUDGE_OPTIONS = ["yes", "no"]

AE_SCHEMA = {
    "type": "object",
    "properties": {
        "belief_and_value": {"type": "string"},
        "psychological_traits": {"type": "string"},
    },
    "required": ["belief_and_value", "psychological_traits"],
}
AE_KEYS = {"belief_and_value": "Belief and Value", "psychological_traits": "Psychological Traits"}


def _passages(chunks: list[Chunk] | list[ContextItem]) -> str:
    return "\n\n".join(f"[{i}] {c.text}" for i, c in enumerate(chunks, start=1))


def _about(name: str, work: str, question: str) -> str:
    """The opening every analysis prompt shares: who the character is and what they were asked."""
    return f"Character: {name} ({work})\nQuestion someone asks {name}: {question}\n\n"


def judge_messages(name: str, work: str, question: str, chunk: Chunk) -> list[dict]:
    """Guided Selection's per-chunk test (Algorithm 1, line 8).

    Asks whether this one passage lets us infer what the character is like *with respect to the question*,
    not whether it answers the question: for out-of-knowledge questions ("Do you like big parties?") a passage
    about how the character behaved at a festival is exactly what GS should keep. Answered yes/no by
    constrained choice, so every backend returns a valid verdict.
    """
    return [
        {"role": "system", "content": "You help a role-playing system decide which passages of a character profile are useful."},
        {"role": "user", "content": (
            f"{_about(name, work, question)}Passage from {name}'s profile:\n{chunk.text}\n\n"
            f"From this passage, can you tell something about {name}'s attitudes, values, personality, habits or past "
            f"behaviour that would shape how {name} answers this question? Answer yes or no."
        )},
    ]


def extract_messages(name: str, work: str, question: str, chunks: list[Chunk]) -> list[dict]:
    """The Attribute Extractor: the two attributes that drive behaviour, inferred from the GS passages.

    The paper's AE keeps Belief and Value and Psychological Traits because those shape *how* a character
    answers; we ask for them as they bear on the question, grounded in the passages only, as a JSON object.
    """
    return [
        {"role": "system", "content": "You analyse fictional characters from passages of their profile. Reply with JSON only."},
        {"role": "user", "content": (
            f"{_about(name, work, question)}Passages:\n{_passages(chunks)}\n\n"
            f"Using only these passages, describe in one or two sentences each:\n"
            f"- belief_and_value: the principles and values of {name} that would guide the answer;\n"
            f"- psychological_traits: the personality, feelings and habits of mind of {name} that would show in it.\n"
            'Reply as {"belief_and_value": "...", "psychological_traits": "..."}'
        )},
    ]


def extract_text_messages(name: str, work: str, question: str, chunks: list[Chunk], attribute: str) -> list[dict]:
    """The Attribute Extractor's free-text fallback, one attribute at a time, for an LLM that cannot produce the
    JSON of :func:`extract_messages` (a very small local model). Same question, no format to get wrong."""
    what = {"Belief and Value": "the principles and values", "Psychological Traits": "the personality, feelings and habits of mind"}
    return [
        {"role": "system", "content": "You analyse fictional characters from passages of their profile."},
        {"role": "user", "content": (
            f"{_about(name, work, question)}Passages:\n{_passages(chunks)}\n\n"
            f"In one sentence, using only these passages: what are {what[attribute]} of {name} that would shape the answer?"
        )},
    ]


def respond_messages(name: str, work: str, question: str, context: list[ContextItem] | None = None,
                     max_sentences: int = 4) -> list[dict]:
    """The role-playing reply, used by every method. The context items go in two blocks: what the character
    knows (``knowledge`` items, and any role a method adds) and who the character is, for questions the profile
    does not cover (``attribute`` items, then ``selected`` passages). No RAG: no context; Naive RAG: knowledge
    only; AMADEUS: knowledge, plus the AE attributes and the GS passages.

    Asks for a short in-character first-person answer that uses the knowledge when relevant and, when the
    knowledge is silent, answers the way the attributes suggest instead of refusing or inventing facts.
    """
    context = context or []
    knowledge = [c for c in context if c.role not in ("attribute", "selected")]
    attributes = [c for c in context if c.role == "attribute"]
    selected = [c for c in context if c.role == "selected"]
    parts = [f"You are {name} from {work}. Stay in character: answer as {name}, in the first person, with "
             f"{name}'s voice, memories and attitudes. Answer the question directly in at most {max_sentences} sentences."]
    if knowledge:
        parts.append(f"What you know (passages of your profile):\n{_passages(knowledge)}")
    if attributes or selected:
        lines = [f"- {a.label}: {a.text}" for a in attributes if a.text]
        if selected:
            lines.append(f"- Passages showing how you think and act:\n{_passages(selected)}")
        parts.append("Who you are, for questions your profile does not cover:\n" + "\n".join(lines))
    if context:
        parts.append("Use these facts when they are relevant and never contradict them. If they do not cover the "
                     "question, answer the way your character would, without making up new facts about your story.")
    return [{"role": "system", "content": "\n\n".join(parts)}, {"role": "user", "content": question}]
