"""The method registry: a name per method class, and building a method from declared settings.

>>> from rpa_lib.llm import FakeLLM
>>> build_method("naive_rag", llm=FakeLLM(), k=2).settings.k
2
>>> build_method("naive_rag", llm=FakeLLM(), max_iteration=8)
Traceback (most recent call last):
ValueError: method 'naive_rag' has no setting 'max_iteration'; its settings: embedder, k, max_tokens, splitter

Adding a method is one module (a :class:`~rpa_lib.methods.base.Method` subclass with ``name`` and a frozen
``Settings`` dataclass) and one ``register(...)`` line in ``rpa_lib/methods/__init__.py``.
"""

from __future__ import annotations

from dataclasses import fields

from rpa_lib.methods.base import Method

METHODS: dict[str, type[Method]] = {}


def register(cls: type[Method]) -> type[Method]:
    """Add a method class under its ``name`` (a second class with the same name is an error)."""
    if cls.name in METHODS and METHODS[cls.name] is not cls:
        raise ValueError(f"a method named {cls.name!r} is already registered ({METHODS[cls.name].__name__})")
    METHODS[cls.name] = cls
    return cls


def method_class(name: str) -> type[Method]:
    if name not in METHODS:
        raise ValueError(f"unknown method {name!r}; registered: {', '.join(METHODS)}")
    return METHODS[name]


def setting_names(name: str) -> list[str]:
    """The settings a method declares, sorted."""
    return sorted(f.name for f in fields(method_class(name).Settings))


def build_method(name: str, llm=None, *, dataset=None, **settings) -> Method:
    """A registered method with its settings; an unknown setting is a ValueError naming the valid ones.
    ``llm`` defaults to ``get_llm()``; ``dataset`` (a :class:`rpa_lib.data.Dataset` or a folder) to ``data/``."""
    from rpa_lib.data import as_dataset

    cls = method_class(name)
    unknown = sorted(set(settings) - set(setting_names(name)))
    if unknown:
        raise ValueError(f"method {name!r} has no setting{'s' * (len(unknown) > 1)} {', '.join(map(repr, unknown))}; "
                         f"its settings: {', '.join(setting_names(name))}")
    if llm is None:
        from rpa_lib.llm import get_llm

        llm = get_llm()
    return cls(llm, cls.Settings(**settings), as_dataset(dataset))


def build_methods(names: list[str], llm=None, *, dataset=None, per_method: dict[str, dict] | None = None,
                  **settings) -> list[Method]:
    """Several methods sharing one set of run settings: each setting goes to every method that declares it
    (``k`` to Naive RAG and AMADEUS, not to no RAG); a setting that none of them declares is an error, so a
    typo never passes silently. ``None`` values mean "the method's default". ``per_method`` adds or overrides
    settings of one method (``{"lightrag": {"max_gleaning": 0}}``); a method it names must be among ``names``."""
    if isinstance(names, str):
        raise ValueError(f"methods must be a list of names, e.g. [{names!r}]")
    per_method = per_method or {}
    foreign = sorted(set(per_method) - set(names))
    if foreign:
        raise ValueError(f"settings given for {', '.join(map(repr, foreign))}, which is not among the methods run "
                         f"({', '.join(names)})")
    declared = {n: set(setting_names(n)) for n in names}
    stray = sorted(k for k in settings if not any(k in d for d in declared.values()))
    if stray:
        valid = sorted(set().union(*declared.values())) if declared else []
        raise ValueError(f"no method of {', '.join(names)} has the setting(s) {', '.join(map(repr, stray))}; "
                         f"their settings: {', '.join(valid)}")
    shared = {n: {k: v for k, v in settings.items() if k in declared[n] and v is not None} for n in names}
    return [build_method(n, llm, dataset=dataset, **{**shared[n], **per_method.get(n, {})}) for n in names]
