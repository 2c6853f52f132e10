"""Turning model text into valid answers (an allowed option, a JSON object valid against a schema), and the prompt
instructions that ask for them. Pure functions: no model calls, no re-asking (``base`` decides when to re-ask).
"""

from __future__ import annotations

import json
import math
import re
import sys
from typing import Any

_TRIM = " \t\r\n\"'`*_.,;:!?()[]{}<>"
_CONSTANTS = {"boolean": False, "null": None}  # schema_example's value of these types


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip(_TRIM)).lower()


def match_option(text: str, options: list[str]) -> str | None:
    """The option ``text`` answers with (exactly, ignoring case and markup, as ``{"answer": ...}``, or as the one
    option it starts with), else None. ``match_option("**Yes.**", ["yes", "no"]) == "yes"``"""
    if text in options:
        return text
    by_norm = {_norm(o): o for o in options}
    norm = _norm(text)
    if norm in by_norm:
        return by_norm[norm]
    try:
        answer = extract_json(text).get("answer")
        if isinstance(answer, str | int | float) and _norm(str(answer)) in by_norm:
            return by_norm[_norm(str(answer))]
    except ValueError:
        pass
    starts = {o for n, o in by_norm.items() if n and re.match(re.escape(n) + r"(?![\w])", norm)}
    return starts.pop() if len(starts) == 1 else None


def extract_json(text: str) -> dict:
    """The first JSON object in ``text``; ValueError if none. ``extract_json('Sure: {"a": 1} ok') == {"a": 1}``"""
    decoder = json.JSONDecoder()
    for match in re.finditer(r"\{", text):
        try:
            obj, _ = decoder.raw_decode(text, match.start())
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            return obj
    raise ValueError("no JSON object found in the reply")


def without_iri_grammars() -> None:
    """Before jsonschema's first import: mark ``rfc3987_syntax`` absent, so jsonschema does not compile its grammars
    (1 s) for "iri" formats that neither our schemas nor nbformat's use (docs/design/llm.md)."""
    if "jsonschema" not in sys.modules and "rfc3987_syntax" not in sys.modules:
        sys.modules["rfc3987_syntax"] = None  # type: ignore[assignment]


def schema_error(data: object, schema: dict) -> str | None:
    """Why ``data`` breaks ``schema`` (one line), or None when it is valid."""
    without_iri_grammars()
    import jsonschema

    validator = jsonschema.validators.validator_for(schema)(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path) or "(root)"
    return f"at {where}: {error.message}"


def parse_structured(text: str, schema: dict, data: dict | None = None) -> tuple[dict | None, str | None]:
    """``(dict, None)`` when ``text`` (or ``data``) holds a valid object, else ``(None, problem)``."""
    if data is None:
        try:
            data = extract_json(text)
        except ValueError as exc:
            return None, str(exc)
    problem = schema_error(data, schema)
    return (data, None) if problem is None else (None, problem)


def choice_instruction(options: list[str]) -> str:
    return "Answer with exactly one of: " + ", ".join(json.dumps(o, ensure_ascii=False) for o in options) + "."


def schema_instruction(schema: dict) -> str:
    return ("Reply with only a JSON object, no other text, that matches this JSON Schema:\n"
            + json.dumps(schema, ensure_ascii=False))


def example_instruction(schema: dict) -> str:
    """An example object to imitate, for a model writing JSON unaided (small models copy a schema back)."""
    return ("Reply with only a JSON object, no other text, with the same keys and kinds of values as this example "
            "(your own values):\n" + json.dumps(_example(schema, "value"), ensure_ascii=False))


def _example(schema: dict, name: str) -> object:
    """Like :func:`schema_example`, with ``"<name>"`` placeholders for strings."""
    kind = schema.get("type", "object" if "properties" in schema else "string")
    if kind == "object" and "properties" in schema:
        return {k: _example(v, k) for k, v in schema["properties"].items()}
    if kind == "array" and "enum" not in schema:
        return [_example(schema.get("items", {}), name)]
    if kind == "string" and "enum" not in schema and "const" not in schema:
        return f"<{name}>"
    return schema_example(schema, name)


def with_instruction(messages: list[dict], instruction: str) -> list[dict]:
    """``messages`` with ``instruction`` appended to the last user message (or as a new one)."""
    messages = [dict(m) for m in messages]
    if messages and messages[-1].get("role") == "user":
        messages[-1]["content"] = f"{messages[-1]['content']}\n\n{instruction}"
    else:
        messages.append({"role": "user", "content": instruction})
    return messages


def schema_example(schema: dict, name: str = "value") -> object:
    """A small value satisfying ``schema`` (strings ``"fake <name>"``, numbers at their minimum, first enum value).
    ``schema_example({"type": "integer", "minimum": 1}) == 1``"""
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            return schema_example(schema[key][0], name)
    kind = schema.get("type", "object" if "properties" in schema else "string")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        return {k: schema_example(v, k) for k, v in schema.get("properties", {}).items()}
    if kind == "array":
        return [schema_example(schema.get("items", {}), name) for _ in range(schema.get("minItems", 0))]
    if kind in ("number", "integer"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", 0))
        low = low + 1 if "exclusiveMinimum" in schema and "minimum" not in schema else low
        return int(low) if kind == "integer" else float(low)
    if kind in _CONSTANTS:
        return _CONSTANTS[kind]
    text = f"fake {name}"
    return text.ljust(schema.get("minLength", 0), "x")[: schema.get("maxLength", len(text) + 10**6)]


def _field(item: Any, name: str) -> Any:
    return item.get(name) if isinstance(item, dict) else getattr(item, name, None)


def first_token_scores(content: Any, options: list[str]) -> dict[str, float] | None:
    """Per option, the log of the probability mass of the first token's top alternatives that begin it; None when
    none does. ``content``: an OpenAI-style ``logprobs.content`` list (objects or dicts)."""
    if not content or not isinstance(content, list):
        return None
    mass = dict.fromkeys(options, 0.0)
    for alt in _field(content[0], "top_logprobs") or []:
        token = str(_field(alt, "token") or "").strip().lower()
        logprob = _field(alt, "logprob")
        for option in options:
            if token and option.lower().startswith(token):
                mass[option] += math.exp(float(-math.inf if logprob is None else logprob))
    if not any(mass.values()):
        return None
    return {o: (math.log(m) if m > 0 else -math.inf) for o, m in mass.items()}
