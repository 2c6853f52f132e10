"""Benchmarks run from the command line: ``python -m benchmarks index|llm|gs|methods [args]``.

Each benchmark is a module here with ``main(argv)``; ``__main__`` imports only the one asked for.
Importing this package runs nothing.
"""
