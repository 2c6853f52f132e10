"""Dispatch ``python -m benchmarks NAME [args]`` to ``benchmarks.NAME.main(args)``.

Only the named benchmark is imported, so one that is missing or broken does not stop the others.
"""

from __future__ import annotations

import importlib
import sys

# each is benchmarks/<name>.py
BENCHMARKS = ("index", "llm", "gs", "methods", "update", "engines", "shared_cache", "kernel_exit", "kernel_imports",
              "cpu_probe")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    usage = "usage: python -m benchmarks {" + "|".join(BENCHMARKS) + "} [args]  (NAME --help for its options)"
    if not args or args[0] in ("-h", "--help"):
        print(usage)
        return 0 if args else 2
    name, rest = args[0], args[1:]
    if name not in BENCHMARKS:
        print(f"unknown benchmark {name!r}\n{usage}", file=sys.stderr)
        return 2
    module_name = f"benchmarks.{name}"
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name != module_name:  # the benchmark exists but one of its own imports is missing
            raise
        print(f"benchmark {name!r} is not written yet (no module {module_name})", file=sys.stderr)
        return 2
    return module.main(rest) or 0


if __name__ == "__main__":
    sys.exit(main())
