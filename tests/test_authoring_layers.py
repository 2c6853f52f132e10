"""Authoring a character is a package of its own above reading data/ (DESIGN.md, layers): nothing in
``rpa_lib/data`` imports ``rpa_lib.authoring`` (not even inside a function), and the modules of both packages, with
everything they import in the library, form no import cycle. Read from the source with ``ast``, so imports inside
functions count; importing ``a.b.c`` counts as importing the packages ``a.b`` and ``a`` too, as Python runs them
(except the importing module's own packages, which are already running)."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LIB = ROOT / "rpa_lib"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in LIB.rglob("*.py")}


def imports(name: str) -> set[str]:
    """Library modules ``name`` imports anywhere in its source, with their parent packages."""
    tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
    package = name if MODULES[name].name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        targets = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            targets = [base] + [f"{base}.{a.name}" for a in node.names]
        for t in targets:
            parts = t.split(".")
            found |= {".".join(parts[:i]) for i in range(2, len(parts) + 1) if ".".join(parts[:i]) in MODULES}
    ancestors = {name.rsplit(".", i)[0] for i in range(1, name.count(".") + 1)}
    return found - ancestors - {name}  # a module's own packages are running already: no cycle through them


@functools.cache
def graph() -> dict[str, set[str]]:
    """Each library module's imports (read once, by the tests that need them: not while pytest collects)."""
    return {m: imports(m) for m in MODULES}


def test_data_never_imports_authoring():
    offenders = {m: sorted(i for i in graph()[m] if i.startswith("rpa_lib.authoring"))
                 for m in MODULES if m == "rpa_lib.data" or m.startswith("rpa_lib.data.")}
    assert {m: i for m, i in offenders.items() if i} == {}


def cycle_through(start: str) -> list[str] | None:
    """An import cycle that starts and ends at ``start``, or None."""
    stack, seen = [(start, [start])], set()
    while stack:
        node, path = stack.pop()
        for nxt in graph().get(node, ()):
            if nxt == start:
                return path + [start]
            if nxt not in seen and nxt != "rpa_lib":
                seen.add(nxt)
                stack.append((nxt, path + [nxt]))
    return None


@pytest.mark.parametrize("package", ["rpa_lib.data", "rpa_lib.authoring"])
def test_no_import_cycle_through_data_or_authoring(package):
    cycles = {m: cycle_through(m) for m in MODULES if m == package or m.startswith(package + ".")}
    assert {m: " -> ".join(c) for m, c in cycles.items() if c} == {}
