"""Every prompt the role-playing methods send (GS's judge, the Attribute Extractor, the role-play reply), as plain
functions returning chat messages. Not here: the evaluators' prompts (``rpa_lib.evaluation``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rpa_lib.splitters import Chunk
from rpa_lib.text import chat

if TYPE_CHECKING:
    from rpa_lib.methods.base import ContextItem

JUDGE_OPTIONS = ["yes", "no"]

AE_SCHEMA = {"type": "object", "properties": {"belief_and_value": {"type": "string"},
                                              "psychological_traits": {"type": "string"}},
             "required": ["belief_and_value", "psychological_traits"]}
AE_KEYS = {"belief_and_value": "Belief and Value", "psychological_traits": "Psychological Traits"}


def _passages(chunks: list[Chunk] | list[ContextItem]) -> str:
    return "\n\n".join(f"[{i}] {c.text}" for i, c in enumerate(chunks, start=1))


def about(name: str, work: str, question: str) -> str:
    return f"Character: {name} ({work})\nQuestion someone asks {name}: {question}\n\n"


def judge_messages(name: str, work: str, question: str, chunk: Chunk) -> list[dict]:
    """Guided Selection's per-chunk test (Algorithm 1, line 8): does the passage show what the character is like
    with respect to the question (not: does it answer it)?"""
    return chat("You help a role-playing system decide which passages of a character profile are useful.", (
        f"{about(name, work, question)}Passage from {name}'s profile:\n{chunk.text}\n\n"
        f"From this passage, can you tell something about {name}'s attitudes, values, personality, habits or past "
        f"behaviour that would shape how {name} answers this question? Answer yes or no."
    ))


def extract_messages(name: str, work: str, question: str, chunks: list[Chunk]) -> list[dict]:
    """The Attribute Extractor: Belief and Value and Psychological Traits from the GS passages, as JSON."""
    return chat("You analyse fictional characters from passages of their profile. Reply with JSON only.", (
        f"{about(name, work, question)}Passages:\n{_passages(chunks)}\n\n"
        f"Using only these passages, describe in one or two sentences each:\n"
        f"- belief_and_value: the principles and values of {name} that would guide the answer;\n"
        f"- psychological_traits: the personality, feelings and habits of mind of {name} that would show in it.\n"
        'Reply as {"belief_and_value": "...", "psychological_traits": "..."}'
    ))


def extract_text_messages(name: str, work: str, question: str, chunks: list[Chunk], attribute: str) -> list[dict]:
    """The Attribute Extractor's free-text fallback, one attribute at a time."""
    what = {"Belief and Value": "the principles and values", "Psychological Traits": "the personality, feelings and habits of mind"}
    return chat("You analyse fictional characters from passages of their profile.", (
        f"{about(name, work, question)}Passages:\n{_passages(chunks)}\n\n"
        f"In one sentence, using only these passages: what are {what[attribute]} of {name} that would shape the answer?"
    ))


def respond_messages(name: str, work: str, question: str, context: list[ContextItem] | None = None,
                     max_sentences: int = 4) -> list[dict]:
    """The role-playing reply of every method: what the character knows (``knowledge`` and any role a method adds),
    passages a search across characters' profiles found (``external``: CRAG's, each naming whose profile), who the
    character is (``attribute`` items, then ``selected`` passages), and a method's notes (``boundary``: RoleRAG's)."""
    context = context or []
    own = ("attribute", "selected", "external", "boundary")  # the roles with a place of their own below
    knowledge = [c for c in context if c.role not in own]
    attributes = [c for c in context if c.role == "attribute"]
    selected = [c for c in context if c.role == "selected"]
    external = [c for c in context if c.role == "external"]
    parts = [f"You are {name} from {work}. Stay in character: answer as {name}, in the first person, with "
             f"{name}'s voice, memories and attitudes. Answer the question directly in at most {max_sentences} sentences."]
    if knowledge:
        parts.append(f"What you know (passages of your profile):\n{_passages(knowledge)}")
    if external:
        parts.append("Found by a search across characters' profiles (each passage begins with whose profile it is from):\n"
                     + _passages(external))
    parts += [c.text for c in context if c.role == "boundary"]
    if attributes or selected:
        lines = [f"- {a.label}: {a.text}" for a in attributes if a.text]
        if selected:
            lines.append(f"- Passages showing how you think and act:\n{_passages(selected)}")
        parts.append("Who you are, for questions your profile does not cover:\n" + "\n".join(lines))
    if context:
        parts.append("Use these facts when they are relevant and never contradict them. If they do not cover the "
                     "question, answer the way your character would, without making up new facts about your story.")
    return chat("\n\n".join(parts), question)
