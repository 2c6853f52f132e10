"""Structure the review asked for: the settings lookup is a leaf module (no import cycle through it), and no module
of the LLM layer, the embedders or the index writes ``os.environ`` at run time."""

from __future__ import annotations

import ast
from pathlib import Path

import rpa_lib

PACKAGE = Path(rpa_lib.__file__).parent
CHECKED = [*sorted((PACKAGE / "llm").glob("*.py")), PACKAGE / "embeddings.py", PACKAGE / "index.py"]


def imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_the_settings_lookup_imports_nothing_of_the_llm_layer():
    assert not {m for m in imported_modules(PACKAGE / "llm" / "config.py") if m.startswith("rpa_lib.llm")}


def test_no_module_writes_the_environment():
    for path in CHECKED:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                target = ast.unparse(node.func)
                assert not target.startswith(("os.environ.", "os.putenv")) or target in ("os.environ.get",), \
                    f"{path.name}: {target}(...)"
            if isinstance(node, ast.Assign | ast.AugAssign | ast.Delete):
                targets = node.targets if isinstance(node, ast.Assign | ast.Delete) else [node.target]
                assert not any(ast.unparse(t).startswith("os.environ") for t in targets), path.name
