"""The prompts and JSON schemas of RoleRAG (:mod:`rpa_lib.methods.rolerag`): extraction, name normalization and
summaries for the index; the hypothetical context, the query analysis and the boundary note for the answer.
"""

from __future__ import annotations

import json

from rpa_lib.methods.prompts import about
from rpa_lib.text import chat

ENTITY_TYPES = ("person", "place", "organization", "event", "object", "activity", "concept", "other")
SAME_OPTIONS = ["same", "different"]


def _object(properties: dict, required: list[str]) -> dict:
    return {"type": "object", "properties": properties, "required": required}


def _array_of(properties: dict, required: list[str]) -> dict:
    return {"type": "array", "items": _object(properties, required)}


def _strings(*names: str) -> dict:
    return {n: {"type": "string"} for n in names}


EXTRACT_SCHEMA = _object({"entities": _array_of(_strings("name", "type", "description"), ["name"]),
                          "relations": _array_of(_strings("source", "target", "description"), ["source", "target"])},
                         ["entities", "relations"])
MERGE_SCHEMA = _object({"name": {"type": "string", "minLength": 1}, "description": {"type": "string"}},
                       ["name", "description"])
ANALYSIS_SCHEMA = _object({"entities": _array_of(
    {**_strings("name", "type"), "relevant": {"type": "boolean"}, "reason": {"type": "string"},
     "specificity": {"type": "string", "enum": ["specific", "general"]}}, ["name", "relevant", "specificity"])},
    ["entities"])

_TYPES = ", ".join(ENTITY_TYPES)


def _character(name: str, work: str) -> str:
    return f"Character: {name} ({work})\n"


def extract_messages(name: str, work: str, passage: str) -> list[dict]:
    """Entities and relations of one chunk ("I" is the character, named, so the character is one node)."""
    example = {"entities": [{"name": "...", "type": "person", "description": "..."}],
               "relations": [{"source": "...", "target": "...", "description": "..."}]}
    return chat("You build knowledge graphs of fictional characters. Reply with JSON only.", (
        f"{_character(name, work)}Passage from {name}'s profile (written as {name}; \"I\" means {name}):\n"
        f"{passage}\n\n"
        f"List the entities in this passage that matter to {name}: people, places, organizations, events, objects, "
        f"activities and ideas. Call {name} \"{name}\". For each give its name, a type (one of {_TYPES}) and one "
        f"sentence describing it as the passage does. Then list the relations between these entities, each with "
        f"a source, a target and one sentence saying how they are related. Use only the passage.\n"
        f"Reply as {json.dumps(example)}"
    ))


def same_entity_messages(name: str, work: str, a: str, a_description: str, b: str, b_description: str) -> list[dict]:
    return chat("You resolve names in knowledge graphs of fictional characters.", (
        f"{_character(name, work)}Two names from {name}'s story:\n"
        f"1. {a}: {a_description or 'no description'}\n2. {b}: {b_description or 'no description'}\n\n"
        f"Do these two names refer to the same person, place or thing? Answer same or different."
    ))


def canonical_messages(name: str, work: str, names: list[str], descriptions: list[str]) -> list[dict]:
    listing = "\n".join(f"- {n}" for n in names)
    facts = "\n".join(f"- {d}" for d in descriptions if d) or "- none"
    return chat("You resolve names in knowledge graphs of fictional characters. Reply with JSON only.", (
        f"{_character(name, work)}These names all refer to one entity in {name}'s story:\n{listing}\n\n"
        f"What is said about it:\n{facts}\n\n"
        f"Give the single name to use for it (its fullest usual form) and one description, of at most three "
        f"sentences, that keeps every distinct fact above.\n"
        'Reply as {"name": "...", "description": "..."}'
    ))


def summarize_messages(name: str, entity: str, descriptions: list[str]) -> list[dict]:
    facts = "\n".join(f"- {d}" for d in descriptions)
    return chat("You summarize facts about fictional characters.", (
        f"Facts about {entity}, from the profile of {name}:\n{facts}\n\n"
        f"Write one description of {entity} in at most four sentences that keeps the most important distinct "
        f"facts. Reply with the description only."
    ))


def hypothetical_messages(name: str, work: str, question: str) -> list[dict]:
    """RoleRAG's HyDE step: a guess at what the answer is about, used only to find the entities involved."""
    return chat("You help a role-playing system find what a question is about.", (
        f"{about(name, work, question)}In two or three sentences, guess what {name}'s answer would be about: "
        f"the people, places, events, things or habits from {name}'s life it would likely mention."
    ))


def analysis_messages(name: str, work: str, profile: str, question: str, hypothetical: str = "") -> list[dict]:
    """The query analysis: the question's entities, each with a type, a relevance and a specificity."""
    guess = f"A guess at what the answer involves: {hypothetical}\n" if hypothetical else ""
    example = {"entities": [{"name": "...", "type": "person", "relevant": True, "reason": "...",
                             "specificity": "specific"}]}
    return chat("You analyse questions put to a role-playing character. Reply with JSON only.", (
        f"{_character(name, work)}Who {name} is: {profile or 'unknown'}\n\n"
        f"Question someone asks {name}: {question}\n{guess}\n"
        f"List the entities the answer depends on, from the question and the guess. For each give: name; type "
        f"(one of {_TYPES}); relevant: true if {name} could know about it within their own world and time, false "
        f"if it lies outside it (say, a modern invention for someone from a medieval world); reason: one short "
        f"sentence why; specificity: \"specific\" for one particular named person, place, event or thing, "
        f"\"general\" for a kind of thing (hobbies, food, music).\n"
        f"Reply as {json.dumps(example)}"
    ))


def boundary_note(name: str, outside: list[tuple[str, str]]) -> str:
    """The note naming the question's entities outside what the character knows (``outside`` is never empty)."""
    if not outside:
        raise ValueError("boundary_note needs at least one out-of-scope entity (RoleRAG adds no note otherwise)")
    listed = "; ".join(f"{entity} ({reason})" if reason else entity for entity, reason in outside)
    return (f"Outside what {name} knows: {listed}. {name} has never heard of these and says so, in character, "
            f"instead of making anything up about them.")
