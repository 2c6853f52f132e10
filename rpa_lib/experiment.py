"""The experiment object of a notebook: built from its parameters, it hands out the models (each built on first use,
wrapped in the ``run_mode`` that ``reproduce`` passes), the dataset and its characters, the methods and their
budget-matched controls, the runs of a repeated experiment, the output folders, the run record and the failure
policy. ``ex = Experiment("04_personality", globals())``

It reads no environment variable of its own. Batch rounds and repeats: ``docs/design/run.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from rpa_lib import paths
from rpa_lib.data import Dataset
from rpa_lib.embeddings import check_embedder
from rpa_lib.evaluation.chunk_usage import COMPARISONS
from rpa_lib.evaluation.context import matched_budgets
from rpa_lib.evaluation.human_prompts import RATER_PERSONAS
from rpa_lib.evaluation.keypoints import KEYPOINT_FORMATS
from rpa_lib.evaluation.personality import SCORINGS
from rpa_lib.evaluation.runner import PendingItems, check_failures, pending_mask
from rpa_lib.evaluation.uncertainty import interval_caption
from rpa_lib.llm import LLM, RunMode, get_llm, judge_llm
from rpa_lib.llm.rounds import rounds_record
from rpa_lib.methods import Method, budget_controls, budget_note, build_control, build_methods, method_class
from rpa_lib.methods.amadeus import EXTRACT_FORMATS
from rpa_lib.methods.registry import method_settings, setting_names
from rpa_lib.notebook_params import check_injected, check_value, parameters
from rpa_lib.report import Written, notebook_parameters, output_dirs, run_label, save_figure, save_run_record
from rpa_lib.retrieval import persona_embedder

SHARED_SETTINGS = ("embedder", "k", "max_iterations", "slot_size", "max_tokens", "extract_retries")  # parameters
# that go to every method declaring them (``method_settings`` overrides them for one method)


class Experiment:
    """One run of ``notebooks/<notebook>.ipynb``, whose ``parameters`` cell says which names of ``namespace`` count."""

    def __init__(self, notebook: str, namespace: Mapping[str, Any]):
        self.notebook = notebook
        self.parameters = notebook_parameters(notebook, dict(namespace))
        _check(notebook, namespace)
        get = self.parameters.get
        self.figures, self.results = output_dirs(namespace.get("figures_dir"), namespace.get("results_dir"))
        self.mode = RunMode.of(get("run_mode"))
        self.dataset = Dataset(get("data_dir"))
        self.characters = self.dataset.characters(get("characters")) if "characters" in self.parameters else []
        self.max_failed_share = float(get("max_failed_share") or 0.0)
        self.repeats = [Repeat(self, r) for r in range(get("repeats", 1))]
        self.method_settings: dict[str, dict] = get("method_settings") or {}
        self.shared = {k: self.parameters[k] for k in SHARED_SETTINGS if k in self.parameters}
        self.controls = budget_controls(get("methods") or [])  # naive_rag_budget, crag_budget, ...: see answer_controls
        self.given = {c: (self.method_settings.get(c) or {}).get("budget_chars") for c in self.controls}  # else AMADEUS's
        self.budgets: dict[tuple[int, str], dict[str, int]] = {}  # (run, control) -> {group: characters a question}
        self._handed: dict[str, LLM] = {}
        self.pending: dict[str, int] = {}  # batch rounds: what -> items waiting for a round

    def __repr__(self) -> str:
        return (f"Experiment({self.notebook!r}, {len(self.characters)} character(s), {len(self.repeats)} run(s), "
                f"mode={self.mode})")

    def _hand(self, role: str, llm: LLM) -> LLM:
        self._handed[role] = llm
        return llm

    @cached_property
    def llm(self) -> LLM:
        """The role-play LLM (``llm``; None: the environment, else the embedded model)."""
        return self._hand("llm", get_llm(self.parameters.get("llm"), mode=self.mode))

    @cached_property
    def judge(self) -> LLM:
        """The judge (``evaluator_llm``; None: ``RPA_JUDGE_MODEL``, else the role-play LLM's settings)."""
        return self._hand("judge", judge_llm(self.parameters.get("evaluator_llm"), default=self.parameters.get("llm"),
                                             mode=self.mode))

    @cached_property
    def gs_llm(self) -> LLM:
        """The LLM of Guided Selection and the Attribute Extractor (``gs_llm``; None: the role-play LLM)."""
        spec = self.parameters.get("gs_llm")
        return self.llm if spec is None else self._hand("gs_llm", get_llm(spec, role="gs", mode=self.mode))

    def rater(self, spec: str | None) -> LLM:
        """The judge-role LLM of ``spec`` (None: :attr:`judge`), e.g. one of a rater panel: one per spec, so a spec
        named twice counts its calls once in the run record's usage."""
        if spec is None:
            return self.judge
        return self._handed.get(f"rater {spec}") or self._hand(f"rater {spec}", judge_llm(spec, mode=self.mode))

    @cached_property
    def embedder(self) -> str:
        """The retrieval embedder's label (``embedder``), as every CSV names it."""
        name = self.parameters.get("embedder", "minilm")
        first = (self.characters or self.dataset.characters())[0]  # no characters given (from Python): the dataset's
        return persona_embedder(self.dataset.persona(first), name).label

    def models(self, *, judged: bool = False) -> dict[str, str]:
        """The label columns of a CSV: the role-play LLM (and GS's own), the embedder, and the judge when ``judged``."""
        out = {"llm": self.llm.label}
        if self.parameters.get("gs_llm") is not None:
            out["gs_llm"] = self.gs_llm.label
        out["embedder"] = self.embedder
        if judged:
            out["judge"] = self.judge.label
        return out

    def label(self) -> str:
        """``LLM: ... | embedder: ... [| GS and AE: ...] | data: ...``, for captions."""
        label = run_label(self.llm.label, self.embedder if "embedder" in self.parameters else None)
        if self.parameters.get("gs_llm") is not None:
            label += f" | GS and AE: {self.gs_llm.label}"
        return f"{label} | data: {self.dataset.describe()}"

    def each(self, fn: Callable[[Repeat], Any]) -> Any:
        """``fn(run)`` for each run, pooled: one run's value as it is, several runs' DataFrames (or tuples of them)
        concatenated, each row tagged with its ``repeat``.
        ``answers = ex.each(lambda run: run_jobs(method(run.llm), jobs))``"""
        if len(self.repeats) == 1:
            return fn(self.repeats[0])
        outs = [fn(run) for run in self.repeats]

        def pooled(frames: list[pd.DataFrame]) -> pd.DataFrame:
            return pd.concat([f.assign(repeat=run.index) for f, run in zip(frames, self.repeats, strict=True)],
                             ignore_index=True)

        return tuple(map(pooled, zip(*outs, strict=True))) if isinstance(outs[0], tuple) else pooled(outs)

    @property
    def agents(self) -> list[Method]:
        """The methods of the first run (:attr:`Repeat.agents`)."""
        return self.repeats[0].agents

    def answer_controls(self, run: Repeat, rows: pd.DataFrame, by: str, groups: Iterable[str],
                        answer: Callable[[Method, str], Any], names: list[str] | None = None) -> list:
        """``answer(control, group)`` for each budget-matched control (``names``; None: :attr:`controls`) and each of
        ``groups`` (values of ``rows[by]``: a task, question set or questionnaire), the control built with ``run``'s
        LLM at AMADEUS's mean context on that group's ``rows`` alone (:func:`matched_budgets`; a group AMADEUS did not
        answer is left out), or at the ``budget_chars`` given it. The answers come control by control, each with its
        groups in order; each control's budgets are kept in :attr:`budgets` and printed."""
        out = []
        for name in self.controls if names is None else names:
            given = self.given.get(name)
            self.budgets[run.index, name] = budgets = matched_budgets(rows, by, groups, given=given)
            out += [answer(build_control(name, budget, run.llm, dataset=self.dataset,
                                         per_method=self.method_settings, **self.shared), group)
                    for group, budget in budgets.items()]
            how = "given" if given else f"AMADEUS's mean on each {by.replace('_', ' ')}"
            print(f"{name}: characters a question {budgets} ({how})")
        return out

    def budget_note(self, unit: str) -> str:
        """The captions' sentence on the controls (:func:`~rpa_lib.methods.registry.budget_note`)."""
        return budget_note(self.controls, unit, self.given)

    def interval_caption(self, n_characters) -> str:
        return interval_caption(n_characters, runs=len(self.repeats))

    @cached_property
    def figure_note(self) -> str:
        """The line :meth:`save_figure` adds under a figure's title: ``"quick profile | characters: Frieren"``;
        worked out once (it reads every profile file)."""
        profile = profile_of(self.notebook, self.parameters)
        names = self.dataset.names()
        shown = (f"characters: {', '.join(names.get(s, s) for s in self.characters)}" if len(self.characters) <= 6
                 else f"{len(self.characters)} characters")
        return " | ".join([*([f"{profile} profile"] if profile else []), *([shown] if self.characters else [])])

    def save_figure(self, fig, name: str, **data: Any) -> dict[str, Path]:
        """:func:`~rpa_lib.report.save_figure` into the figures folder, :meth:`figure_note` under the figure's title.
        A dry run draws nothing (it closes ``fig``): its numbers come from a stand-in LLM and its files are thrown
        away."""
        if self.mode.plan_file:
            import matplotlib.pyplot as plt  # loaded already: the figure exists

            plt.close(fig)
            return Written()
        if (note := self.figure_note) and (title := fig.get_suptitle()):  # the title every plots.py figure sets
            # on its Text: fig.suptitle(text) would put back the default size, position and alignment
            next(t for t in fig.texts if t.get_text() == title).set_text(f"{title}\n{note}")
        return save_figure(fig, name, self.figures, **data)

    def record(self, name: str, **fields: Any) -> Path:
        """``results/<name>.run.json``: the parameters, the models and usage by role, the batch rounds, ``fields``;
        PendingItems when a checked item is pending."""
        if self.pending:
            waiting = ", ".join(f"{n} {what}" for what, n in self.pending.items())
            raise PendingItems(f"{self.notebook}: item(s) wait for a batch round ({waiting}); no record is written")
        if self.mode.batch_log:
            fields = {"batch": rounds_record(self.mode.batch_log, self.notebook), **fields}
        models = {role: llm.label for role, llm in self._handed.items()}
        usage = {role: llm.usage.to_dict() for role, llm in self._handed.items()}
        return save_run_record(name, self.results, parameters=self.parameters,
                               **{"models": models, "usage_by_role": usage, "characters": self.characters, **fields})

    def check(self, rows: pd.DataFrame, what: str) -> None:
        """:func:`~rpa_lib.evaluation.runner.check_failures` with ``max_failed_share``; in batch rounds pending rows
        are counted in :attr:`pending` instead (a listing of failed items is checked whole)."""
        listing = "part" in rows.columns and "where" in rows.columns  # failed_items(...): the run's last check
        if self.mode.batch_store and len(rows) and not listing:
            waiting = pending_mask(rows)
            if waiting.any():
                self.pending[what] = int(waiting.sum())
                rows = rows[~waiting]
        check_failures(rows, what, self.max_failed_share)


def profile_of(notebook: str, parameters: Mapping[str, Any]) -> str | None:
    """The one profile (``profiles/<name>.yaml``) whose settings for ``notebook`` this run's ``parameters`` hold, e.g.
    ``"quick"``; None where none or several do. Folders (``*_dir``) are not compared: the runner makes them absolute."""
    found = []
    for path in sorted(paths.PROFILES_DIR.glob("*.yaml")):
        profile = yaml.safe_load(path.read_text()) or {}
        given = {**(profile.get("defaults") or {}), **((profile.get("notebooks") or {}).get(notebook) or {})}
        if all(parameters.get(k) == v for k, v in given.items() if k in parameters and not k.endswith("_dir")):
            found.append(path.stem)
    return found[0] if len(found) == 1 else None


# parameters with a fixed set of values (each item of a list one of them): a typo would fail only after the answers
CHOICES = {"comparison": tuple(COMPARISONS), "scoring": SCORINGS, "keypoint_format": KEYPOINT_FORMATS,
           "extract_format": EXTRACT_FORMATS, "raters": tuple(RATER_PERSONAS)}


def _check(notebook: str, namespace: Mapping[str, Any]) -> None:
    """Every parameter of ``namespace`` the notebook declares (output folders too) against its declaration
    (:func:`~rpa_lib.notebook_params.check_value`) and :func:`check_choice`, and no undeclared one injected by
    papermill: one ValueError naming the notebook, the parameter and the problem."""
    declared = parameters(paths.NOTEBOOKS_DIR / f"{notebook}.ipynb")
    try:
        check_injected(namespace, declared)
        for name, param in declared.items():
            if name in namespace:
                check_value(name, namespace[name], param)
                check_choice(name, namespace[name])
        check_controls(namespace.get("methods"), namespace.get("method_settings"))
    except ValueError as e:
        raise ValueError(f"{notebook}: {e}") from None


def check_controls(methods: list[str] | None, settings: dict | None) -> None:
    """ValueError when a budget-matched control in ``methods`` has neither AMADEUS beside it nor a ``budget_chars``
    of its own in ``settings`` (``method_settings``): its budget is AMADEUS's context, known once AMADEUS answered."""
    if not methods or "amadeus" in methods:
        return
    if alone := [c for c in budget_controls(methods) if not ((settings or {}).get(c) or {}).get("budget_chars")]:
        raise ValueError(f"methods: {', '.join(alone)} {'is' if len(alone) == 1 else 'are'} matched to AMADEUS's "
                         f"mean context: add amadeus to methods, or give a budget in method_settings, e.g. "
                         f"{{{alone[0]!r}: {{'budget_chars': 2000}}}}")


def check_choice(name: str, value: Any) -> None:
    """ValueError when parameter ``name`` holds a value (or, for a list, an item) outside its :data:`CHOICES`,
    ``embedder`` an unknown embedder, ``methods`` an unregistered method, or ``method_settings`` anything but a dict
    of a method's own settings with values its ``Settings`` take. ``reproduce`` checks a profile with it before the
    first notebook runs."""
    if name in CHOICES:
        given = value if isinstance(value, list) else [value]
        if unknown := [v for v in given if v is not None and v not in CHOICES[name]]:
            raise ValueError(f"{name}: {', '.join(map(repr, unknown))} is not one of {', '.join(CHOICES[name])}")
    if name == "embedder":
        try:
            check_embedder(value)
        except ValueError as e:
            raise ValueError(f"embedder: {e}") from None
    for method in (value or []) if name == "methods" else []:
        try:
            method_class(method)
        except ValueError as e:
            raise ValueError(f"methods: {e}") from None
    for method, given in (value or {}).items() if name == "method_settings" else []:
        if not isinstance(given, dict):
            raise ValueError(f"method_settings: {method!r}: expected a dict of settings, e.g. {{'k': 3}}, got "
                             f"{type(given).__name__} {given!r}")
        try:
            method_settings(method, given)
        except (ValueError, TypeError) as e:  # TypeError: a setting of the wrong type compared with a number
            raise ValueError(f"method_settings.{method}: {e}") from None


class Repeat:
    """Run ``index`` of a repeated experiment: the experiment's LLMs answering as that run
    (:meth:`rpa_lib.llm.LLM.for_repeat`); usage counts on the experiment's LLMs."""

    def __init__(self, experiment: Experiment, index: int):
        self.experiment, self.index = experiment, index

    def __repr__(self) -> str:
        return f"Repeat({self.index})"

    def of(self, rows: pd.DataFrame) -> pd.DataFrame:
        return rows[rows.repeat == self.index] if "repeat" in rows else rows

    @cached_property
    def llm(self) -> LLM:
        return self.experiment.llm.for_repeat(self.index)

    @cached_property
    def judge(self) -> LLM:
        return self.experiment.judge.for_repeat(self.index)

    @cached_property
    def gs_llm(self) -> LLM:
        return self.experiment.gs_llm.for_repeat(self.index)

    @cached_property
    def agents(self) -> list[Method]:
        """The methods of ``methods`` but the budget-matched controls, answering with this run's LLMs, each with the
        run's :data:`SHARED_SETTINGS` it declares (one none of them declares, GS's N without AMADEUS, is left out) and
        its own ``method_settings``."""
        ex = self.experiment
        if "methods" not in ex.parameters:
            raise ValueError(f"{ex.notebook}: the notebook has no methods parameter, so it has no agents")
        names = [m for m in ex.parameters["methods"] if m not in ex.controls]
        declared = {s for m in names for s in setting_names(m)}
        return build_methods(names, self.llm, gs_llm=self.gs_llm, dataset=ex.dataset,
                             **{k: v for k, v in ex.shared.items() if k in declared},
                             per_method={m: s for m, s in ex.method_settings.items() if m not in ex.controls})
