"""Profiles (``profiles/<name>.yaml`` or a path), checked against every numbered notebook's parameters cell before
anything runs, and the list of numbered notebooks. This module runs nothing (:mod:`rpa_lib.run.reproduce` does).
"""

from __future__ import annotations

import math
from pathlib import Path

import yaml

from rpa_lib import paths
from rpa_lib.errors import did_you_mean
from rpa_lib.experiment import check_choice, check_controls
from rpa_lib.llm.factory import setting_problem
from rpa_lib.notebook_params import check_value, parameters

TOP_LEVEL = ("description", "defaults", "notebooks", "env", "budget_usd", "batch")
RUNNER_ONLY = ("run_mode",)  # parameters the runner passes (a profile setting one would turn a real run into a dry run)
BATCH_MODES = ("local", "openai", "files")  # the profile's ``batch``: how its rounds are answered (rpa_lib.run.rounds)


def profile_path(name: str) -> Path:
    """``profiles/<name>.yaml``, or a ``.yaml`` path (relative: to the working directory, else the repository).
    ``profile_path("profiles/paper.yaml") == profile_path("paper")``"""
    if not name.endswith((".yaml", ".yml")):
        return paths.PROFILES_DIR / f"{name}.yaml"
    path = Path(name)
    return path if path.is_absolute() or path.is_file() else paths.ROOT / path


class _UniqueKeys(yaml.SafeLoader):
    """YAML that refuses a key given twice in one mapping (PyYAML would keep the last silently)."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(None, None, f"{key!r} is given twice", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep)


def load_profile(name: str) -> dict:
    """The checked profile; an unknown notebook, parameter or key, a value of the wrong type or malformed YAML is a
    one-line ``SystemExit`` naming the profile file and the key."""
    path = profile_path(name)
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in paths.PROFILES_DIR.glob("*.yaml")))
        raise SystemExit(f"unknown profile {name!r} ({path} not found); known: {known}")
    try:
        profile = yaml.load(path.read_text(encoding="utf-8"), Loader=_UniqueKeys) or {}  # a SafeLoader
    except UnicodeDecodeError as e:
        raise SystemExit(f"{path}: not UTF-8 text (byte {e.start}): a profile is a YAML file") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark else ""
        raise SystemExit(f"{path}: not valid YAML ({where}{getattr(e, 'problem', None) or e})") from None
    if not isinstance(profile, dict):
        raise SystemExit(f"{path}: a profile is a mapping with {', '.join(TOP_LEVEL[:-1])} and {TOP_LEVEL[-1]}")
    if unknown := set(profile) - set(TOP_LEVEL):
        raise SystemExit(f"{path}: unknown top-level key(s) {', '.join(map(str, sorted(unknown, key=str)))}; "
                         f"keys: {', '.join(TOP_LEVEL)}{did_you_mean(unknown, TOP_LEVEL)}")
    budget = profile.get("budget_usd")
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int | float)
                               or not 0 <= budget < math.inf):  # NaN fails the comparison too
        raise SystemExit(f"{path}: budget_usd: expected a non-negative number of dollars, got {budget!r}")
    if profile.get("batch") is not None and profile["batch"] not in BATCH_MODES:
        raise SystemExit(f"{path}: batch: expected one of {', '.join(BATCH_MODES)}, got {profile['batch']!r}")
    books = profile.get("notebooks")
    for section, value in [("defaults", profile.get("defaults")), ("notebooks", books), ("env", profile.get("env")),
                           *((f"notebooks.{k}", v) for k, v in (books.items() if isinstance(books, dict) else ()))]:
        if not isinstance(value or {}, dict):
            raise SystemExit(f"{path}: {section}: expected a mapping of name: value, got {value!r}")
    for key, value in (profile.get("env") or {}).items():
        if not isinstance(key, str) or not key:
            raise SystemExit(f"{path}: env: {key!r} is no variable name (a string, such as RPA_LLM_MODEL)")
        if isinstance(value, bool) or not isinstance(value, str | int | float):  # null would be set as "None"
            raise SystemExit(f"{path}: env.{key}: expected a string or a number, got {value!r}")
        if problem := setting_problem(key):
            raise SystemExit(f"{path}: env.{key} {problem}")
    check_profile(path, profile)
    return profile


def check_profile(path: Path, profile: dict) -> None:
    """Every key of ``defaults`` declared by some notebook, of ``notebooks.<NN_name>`` by that notebook, every
    value of the declared type and among the parameter's choices (a method registered, a scoring known)."""
    declared = {nb.stem: parameters(nb) for nb in notebooks()}
    sections = {"defaults": profile.get("defaults") or {}, **{f"notebooks.{k}": v or {} for k, v in
                                                               (profile.get("notebooks") or {}).items()}}
    for section, values in sections.items():  # mappings, as load_profile checked
        stem = section.removeprefix("notebooks.")
        if section != "defaults" and stem not in declared:
            raise SystemExit(f"{path}: {section}: no such notebook; notebooks: {', '.join(declared)}"
                             + did_you_mean([stem], declared))
        scope = {stem: declared[stem]} if section != "defaults" else declared
        for key, value in values.items():
            if key in RUNNER_ONLY:
                raise SystemExit(f"{path}: {section}.{key}: set by the runner, not by a profile (--plan makes a dry "
                                 "run; budget_usd and batch set the rest)")
            owners = [params[key] for params in scope.values() if key in params]
            if not owners:
                valid = sorted({p for params in scope.values() for p in params})
                raise SystemExit(f"{path}: {section}.{key}: not a parameter of "
                                 f"{stem if section != 'defaults' else 'any notebook'}; parameters: "
                                 f"{', '.join(valid)}{did_you_mean([key], valid)}")
            try:
                for param in owners:
                    check_value(key, value, param)
                check_choice(key, value)  # once, whichever notebooks declare it
            except ValueError as e:
                raise SystemExit(f"{path}: {section}.{e}") from None
        given = {**sections["defaults"], **values}  # a notebook's section over the defaults, as the runner merges them
        if section != "defaults" and "methods" in given and "methods" in declared[stem]:
            try:
                check_controls(given["methods"], given.get("method_settings"))
            except ValueError as e:
                raise SystemExit(f"{path}: {section}.{e}") from None


def notebooks(only: list[str] | None = None) -> list[Path]:
    """The numbered notebooks (``NN_name.ipynb``) in order; ``only`` keeps those whose number (``02`` or ``2``) or
    name (``02_similarity_scores`` or ``similarity_scores``) match, each entry at least one."""
    found = sorted(paths.NOTEBOOKS_DIR.glob("[0-9][0-9]_*.ipynb"))
    if only:
        def matches(p: Path, o: str) -> bool:
            return (o in (p.stem, p.stem[3:]) or p.stem.startswith(f"{o}_")
                    or (o.isdigit() and int(o) == int(p.stem[:2])))

        if unmatched := [o for o in only if not any(matches(p, o) for p in found)]:
            raise SystemExit(f"no notebook matches --only {','.join(unmatched)}; notebooks: "
                             f"{', '.join(p.stem for p in found)}")
        found = [p for p in found if any(matches(p, o) for o in only)]
    return found
