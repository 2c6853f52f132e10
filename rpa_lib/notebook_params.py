"""Read a notebook's ``parameters`` cell with :mod:`ast` (never executed) and check values against it: each
``name = literal`` declares a parameter of its default's type, or the one :data:`NONE_DEFAULTS` names (papermill
cannot read annotations such as ``list[str] | None``, so the cells carry none).

>>> check_value("k", 5, Parameter("k", 3, "int"))
>>> check_value("characters", "frieren", Parameter("characters", None, "list[str] | None"))
Traceback (most recent call last):
ValueError: characters: expected list[str] | None, got str 'frieren'
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# parameters that may be None ("all", "the environment") whatever their default, by the name every notebook uses
NONE_DEFAULTS = {"characters": "list[str] | None", "data_dir": "str | None", "figures_dir": "str | None",
                 "results_dir": "str | None", "llm": "str | None", "evaluator_llm": "str | None",
                 "gs_llm": "str | None", "multi_questions": "int | None",
                 "qa_questions": "int | None", "mbti_questions": "int | None", "mbti_items": "int | None",
                 "bigfive_items": "int | None", "questions_per_character": "int | None", "window": "int | str | None",
                 "rater_models": "list[str] | None", "human_ratings_dir": "str | None", "rungs": "list[str] | None"}
_SIMPLE = {"int": int, "float": (int, float), "str": str, "bool": bool, "dict": dict, "None": type(None),
           "list": list}


@dataclass(frozen=True)
class Parameter:
    name: str
    default: Any
    type: str  # "int", "list[str] | None", ...


def parameters(notebook: Path) -> dict[str, Parameter]:
    """The parameters declared by the notebook's cell tagged ``parameters`` (empty when it has none)."""
    cells = json.loads(Path(notebook).read_text())["cells"]
    cell = next((c for c in cells if "parameters" in c.get("metadata", {}).get("tags", [])), None)
    if cell is None:
        return {}
    out = {}
    for node in ast.parse("".join(cell["source"])).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name, value, annotation = node.targets[0].id, node.value, None
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            name, value, annotation = node.target.id, node.value, ast.unparse(node.annotation)
        else:
            continue
        default = ast.literal_eval(value)
        inferred = NONE_DEFAULTS.get(name, "None" if default is None else type(default).__name__)
        out[name] = Parameter(name, default, annotation or inferred)
    return out


def _matches(value: Any, type_text: str) -> bool:
    for option in (t.strip() for t in type_text.split("|")):
        base, _, inner = option.partition("[")
        expected = _SIMPLE.get(base)
        if expected is None:
            return True  # a type we do not model: accept rather than guess
        if base == "int" and isinstance(value, bool):
            continue
        if isinstance(value, expected):
            if base == "list" and inner:
                item = inner.rstrip("]")
                if not all(_matches(v, item) for v in value):
                    continue
            return True
    return False


def check_value(name: str, value: Any, declared: Parameter) -> None:
    """A ValueError naming the parameter, the expected type and the value when they disagree (a declared type of
    ``None`` accepts anything)."""
    if declared.type != "None" and not _matches(value, declared.type):
        raise ValueError(f"{name}: expected {declared.type}, got {type(value).__name__} {value!r}")
