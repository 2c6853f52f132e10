"""Structure the review asked for: the settings lookup is a leaf module (no import cycle through it), and no module
of the LLM layer, the embedders or the index writes ``os.environ`` at run time; the package's public names load on
first use."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import rpa_lib

PACKAGE = Path(rpa_lib.__file__).parent
CHECKED = [*sorted((PACKAGE / "llm").glob("*.py")), *(PACKAGE / f for f in ("embeddings.py", "index.py", "settings.py"))]


def imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_the_settings_lookup_imports_nothing_of_the_library():
    assert not {m for m in imported_modules(PACKAGE / "settings.py") if m.startswith("rpa_lib")}


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


def test_the_package_resolves_every_public_name_and_a_kernel_extension_loads_no_layer():
    assert all(getattr(rpa_lib, name) is not None for name in rpa_lib.__all__)
    code = "import sys, rpa_lib.ipython; print(sorted(m for m in ('pandas', 'numpy', 'rpa_lib.llm') if m in sys.modules))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"  # every notebook kernel loads the extension: it costs no import of the library
