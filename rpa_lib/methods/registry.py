"""The method registry: a name per method class (``@register``), named variants with settings fixed
(:data:`VARIANTS`), and building a method from declared settings, an unknown one being an error.

>>> from rpa_lib.llm import FakeLLM
>>> m = build_method("naive_rag_vanilla", llm=FakeLLM())
>>> m.name, m.settings.splitter, method_label(m.name)
('naive_rag_vanilla', 'vanilla', 'Naive RAG (Vanilla)')
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from rpa_lib.data import as_dataset
from rpa_lib.llm import get_llm
from rpa_lib.methods.base import Method

METHODS: dict[str, type[Method]] = {}


@dataclass(frozen=True)
class Variant:
    """A registered ``method`` with ``settings`` fixed, named apart; ``requires``: settings the caller must give."""

    method: str
    settings: tuple[tuple[str, object], ...]
    label: str
    requires: tuple[str, ...] = ()


# method names: ours (tables, figures, the explorer) and those AMADEUS Table 6 prints
LABELS = {"no_rag": "No RAG", "naive_rag": "Naive RAG", "amadeus": "AMADEUS", "crag": "CRAG-offline",
          "lightrag": "LightRAG", "rolerag": "RoleRAG"}
BUDGETED = ("naive_rag", "crag", "lightrag", "rolerag")  # the methods a budget-matched control (``<name>_budget``) runs
VARIANTS: dict[str, Variant] = {
    "naive_rag_vanilla": Variant("naive_rag", (("splitter", "vanilla"),), "Naive RAG (Vanilla)"),
    **{f"{m}_budget": Variant(m, (), f"{LABELS[m]} (budget-matched)", requires=("budget_chars",)) for m in BUDGETED},
}
PAPER_NAMES = {"no_rag": "w/o RAG", "naive_rag": "Naive RAG", "lightrag": "LightRAG", "crag": "CRAG",
               "amadeus": "AMADEUS"}


def budget_controls(methods: list[str]) -> list[str]:
    """The budget-matched controls among ``methods``, each run at the context size AMADEUS showed
    (``Experiment.answer_controls`` measures it). ``budget_controls(["amadeus", "crag_budget"]) == ["crag_budget"]``"""
    return [m for m in methods if m in VARIANTS and "budget_chars" in VARIANTS[m].requires]


def budget_note(controls: list[str], unit: str, given: dict[str, int | None] | None = None) -> str:
    """A caption's sentence on the budget-matched ``controls`` ("" when none ran): each at AMADEUS's mean context
    (matched ``unit``, e.g. "task by task") or at the ``budget_chars`` it was ``given``."""
    def one(control: str) -> str:
        method = VARIANTS[control].method
        how = "filled from its ranking up to" if method == "naive_rag" else "cut to"  # a cut never adds text
        size = f"{n:,} characters" if (n := (given or {}).get(control)) else f"AMADEUS's mean context, {unit}"
        return f"{control} is {method_label(method)} {how} {size}"

    return f". {'; '.join(map(one, controls))}; the others run at their own sizes" if controls else ""


def method_label(name: str) -> str:
    """How a table names a method or variant. ``method_label("naive_rag_budget") == "Naive RAG (budget-matched)"``"""
    return VARIANTS[name].label if name in VARIANTS else LABELS.get(name, name)


def paper_name(name: str) -> str:
    """The method's name in AMADEUS Table 6, else :func:`method_label`. ``paper_name("no_rag") == "w/o RAG"``"""
    return PAPER_NAMES.get(name) or method_label(name)


def register(cls: type[Method]) -> type[Method]:
    """Add a method class under its ``name`` (used as ``@register`` above the class)."""
    if cls.name in METHODS and METHODS[cls.name] is not cls:
        raise ValueError(f"a method named {cls.name!r} is already registered ({METHODS[cls.name].__name__})")
    METHODS[cls.name] = cls
    return cls


def method_class(name: str) -> type[Method]:
    """The class of a registered method or of a variant's method."""
    base = VARIANTS[name].method if name in VARIANTS else name
    if base not in METHODS:
        raise ValueError(f"unknown method {name!r}; registered: {', '.join([*METHODS, *VARIANTS])}")
    return METHODS[base]


def setting_names(name: str) -> list[str]:
    return sorted(f.name for f in fields(method_class(name).Settings))


def method_settings(name: str, settings: dict):
    """The ``Settings`` of method (or variant) ``name``: ``settings`` over a variant's fixed ones, over the defaults;
    ValueError naming an unknown method or setting, or the Settings' own for a value out of range."""
    unknown = sorted(set(settings) - set(setting_names(name)))
    if unknown:
        raise ValueError(f"method {name!r} has no setting{'s' * (len(unknown) > 1)} {', '.join(map(repr, unknown))}; "
                         f"its settings: {', '.join(setting_names(name))}")
    variant = VARIANTS.get(name)
    return method_class(name).Settings(**{**dict(variant.settings if variant else {}), **settings})


def build_method(name: str, llm=None, *, dataset=None, gs_llm=None, **settings) -> Method:
    """A registered method with its settings. ``llm`` defaults to ``get_llm()``, ``dataset`` (a Dataset or a folder)
    to ``data/``; ``gs_llm`` runs Guided Selection and the Attribute Extractor (None: the role-play LLM)."""
    checked = method_settings(name, settings)
    variant = VARIANTS.get(name)
    if variant and (missing := [k for k in variant.requires if settings.get(k) is None]):
        raise ValueError(f"method {name!r} ({variant.label}) needs the setting(s) {', '.join(missing)}")
    method = method_class(name)(get_llm() if llm is None else llm, checked, as_dataset(dataset))
    if gs_llm is not None:
        if not hasattr(method, "gs_llm"):
            raise ValueError(f"method {name!r} has no Guided Selection or Attribute Extractor to give gs_llm")
        method.gs_llm = gs_llm
    if variant:
        method.name = name  # its rows and table entries are its own
    return method


def build_methods(names: list[str], llm=None, *, dataset=None, per_method: dict[str, dict] | None = None,
                  gs_llm=None, **settings) -> list[Method]:
    """Several methods sharing one set of run settings: each goes to every method that declares it (one none
    declares is an error; None means the default). ``per_method`` adds or overrides one method's settings
    (``{"lightrag": {"max_gleaning": 0}}``)."""
    if isinstance(names, str):
        raise ValueError(f"methods must be a list of names, e.g. [{names!r}]")
    for name in names:
        method_class(name)  # an unknown name first: it would read as settings given for a method not run
    per_method = per_method or {}
    foreign = sorted(set(per_method) - set(names))
    if foreign:
        raise ValueError(f"settings given for {', '.join(map(repr, foreign))}, which is not among the methods run "
                         f"({', '.join(names)})")
    declared = {n: set(setting_names(n)) for n in names}
    stray = sorted(k for k in settings if not any(k in d for d in declared.values()))
    if stray:
        raise ValueError(f"no method of {', '.join(names)} has the setting(s) {', '.join(map(repr, stray))}; "
                         f"their settings: {', '.join(sorted(set().union(*declared.values())))}")
    return [build_method(n, llm, dataset=dataset, gs_llm=gs_llm if hasattr(method_class(n), "gs_llm") else None,
                         **{**_declared(n, settings), **per_method.get(n, {})}) for n in names]


def _declared(name: str, settings: dict) -> dict:
    """Those of the run's shared ``settings`` that method ``name`` declares, None (the default) left out."""
    declared = set(setting_names(name))
    return {k: v for k, v in settings.items() if k in declared and v is not None}


def build_control(name: str, budget_chars: int, llm=None, *, dataset=None, per_method: dict[str, dict] | None = None,
                  **settings) -> Method:
    """The budget-matched control ``name`` (:func:`budget_controls`) at ``budget_chars``: the method it controls as
    the run set it up (those of the shared ``settings`` it declares, then its own from ``per_method``), then any of
    the control's own ``per_method`` settings."""
    own = per_method or {}
    return build_method(name, llm, dataset=dataset, **{
        **_declared(name, settings), **own.get(VARIANTS[name].method, {}), **own.get(name, {}),
        "budget_chars": budget_chars})
