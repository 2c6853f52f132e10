"""Read a notebook's ``parameters`` cell with :mod:`ast` (never executed) and check values against it: each
``name = literal`` declares a parameter of its default's type, or the one :data:`NONE_DEFAULTS` names (papermill
cannot read annotations such as ``list[str] | None``, so the cells carry none).

>>> check_value("k", 5, Parameter("k", 3, "int"))
>>> check_value("characters", "frieren", Parameter("characters", None, "list[str] | None"))
Traceback (most recent call last):
ValueError: characters: expected list[str] | None, got str 'frieren'
>>> check_value("qa_questions", -1, Parameter("qa_questions", 2, "int | None"))
Traceback (most recent call last):
ValueError: qa_questions: expected 1 or more (or None), got -1
"""

from __future__ import annotations

import ast
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rpa_lib.errors import did_you_mean

# parameters that may be None ("all", "the environment") whatever their default, by the name every notebook uses
NONE_DEFAULTS = {"characters": "list[str] | None", "data_dir": "str | None", "figures_dir": "str | None",
                 "results_dir": "str | None", "llm": "str | None", "evaluator_llm": "str | None",
                 "gs_llm": "str | None", "multi_questions": "int | None",
                 "qa_questions": "int | None", "mbti_questions": "int | None", "mbti_items": "int | None",
                 "bigfive_items": "int | None", "questions_per_character": "int | None", "window": "int | str | None",
                 "rater_models": "list[str] | None", "human_ratings_dir": "str | None", "rungs": "list[str] | None"}
_SIMPLE = {"int": int, "float": (int, float), "str": (str, os.PathLike), "bool": bool, "dict": dict,
           "None": type(None), "list": list}
# the least value of an int parameter, 1 unless named here (None: any); a count of 0 or less would run a table of
# nothing or cut a list from its end. A share lies in [0, 1]; an empty list is an error unless named here.
LEAST = {"seed": None, "multi_questions": 0, "extract_retries": 0, "human_raters": 0, "max_iterations": 0,
         "check_items": 0, "profile_chars": 0}
SHARES = {"max_failed_share"}
MAY_BE_EMPTY = {"reference_dimensions"}  # none judged with and without the reference


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
        if (base == "int" and isinstance(value, bool)) or not isinstance(value, expected):
            continue
        if base != "list" or not inner or all(_matches(v, inner.rstrip("]")) for v in value):
            return True
    return False


def check_value(name: str, value: Any, declared: Parameter) -> None:
    """A ValueError naming the parameter, the expected type and the value when they disagree (a declared type of
    ``None`` accepts anything), or when the value is out of range: an int below its :data:`LEAST`, a share outside
    [0, 1], a blank string where None is allowed, an empty list."""
    if declared.type == "None":
        return
    none = " (or None)" if "None" in declared.type.split(" | ") else ""
    if not _matches(value, declared.type):
        text = isinstance(value, str) and value.lstrip()[:1] in ("[", "{")  # papermill -p passes a list as text
        hint = f"; papermill's -p passes text, -y passes YAML: -y '{name}: {value}'" if text else ""
        raise ValueError(f"{name}: expected {declared.type}, got {type(value).__name__} {value!r}{hint}")
    least = LEAST.get(name, 1)
    if isinstance(value, int) and not isinstance(value, bool) and least is not None and value < least:
        raise ValueError(f"{name}: expected {least} or more{none}, got {value!r}")
    if name in SHARES and not 0 <= value <= 1:
        raise ValueError(f"{name}: expected a share from 0 to 1, got {value!r}")
    if none and isinstance(value, str) and not value.strip():  # "" read as None: the default, or "all"
        raise ValueError(f"{name}: expected {declared.type}, got an empty string (None for the default)")
    if isinstance(value, list) and not value and name not in MAY_BE_EMPTY:
        raise ValueError(f"{name}: an empty list: name at least one{none}")


def check_injected(namespace: Mapping[str, Any], declared: dict[str, Parameter]) -> None:
    """A ValueError naming each parameter papermill injected (the cell whose source opens with ``# Parameters``, in
    IPython's input history ``In``) that the notebook does not declare: papermill only logs it and runs the
    default. Outside a kernel there is no history and nothing to check."""
    for source in namespace.get("In", []):
        if isinstance(source, str) and source.startswith("# Parameters\n"):
            names = [t.id for node in ast.parse(source).body if isinstance(node, ast.Assign)
                     for t in node.targets if isinstance(t, ast.Name)]
            if unknown := [n for n in names if n not in declared]:
                raise ValueError(f"no parameter(s) {', '.join(map(repr, unknown))}{did_you_mean(unknown, declared)}; "
                                 f"parameters: {', '.join(declared)}")
