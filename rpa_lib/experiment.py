"""The experiment object of a notebook: built from its parameters, it hands out the models and the dataset and
owns the outputs, so a notebook's setup is one line. ``ex = Experiment("04_personality", globals())``.

It gives out, each built on first use and once:

- ``ex.llm``: the role-play LLM (``llm``), ``ex.judge``: the judge (``evaluator_llm``, else ``RPA_JUDGE_MODEL``,
  else the role-play LLM's settings), ``ex.gs_llm``: the LLM that runs Guided Selection and the Attribute Extractor
  (``gs_llm``; None: the role-play LLM itself), ``ex.rater(spec)``: further judge-role LLMs (a rater panel);
- ``ex.dataset`` and ``ex.characters`` (the ``characters`` parameter resolved), ``ex.embedder``: the retrieval
  embedder's label;
- ``ex.figures`` and ``ex.results``: the output folders; ``ex.models()``: the label columns of a CSV;
  ``ex.record(name, **fields)``: the run record with the parameters and the usage of every LLM handed out;
  ``ex.check(rows, what)``: the failure policy (``max_failed_share``);
- ``ex.repeats``: the runs of a repeated experiment (``repeats``, default 1), each a :class:`Repeat` whose LLMs
  answer as that run (run 0 exactly as an unrepeated run, run r > 0 with cache keys and seeds of its own);
  ``ex.each(fn)`` calls ``fn(run)`` for each and pools the rows, each tagged with its ``repeat`` when there are
  several runs, so the tables average over runs and their intervals resample characters with their runs inside;
  ``ex.interval_caption(n)`` says so in a caption.

In batch rounds (``run_mode`` with ``batch_store``: :mod:`rpa_lib.run.rounds`) an item whose answer is not in yet
is pending, not failed. ``ex.check`` of a frame of jobs or verdicts counts pending items apart and lets the
notebook go on (the items whose answers are in are judged in the same round, so rounds stay few); ``ex.check`` of
a listing of the run's failed items (:func:`~rpa_lib.evaluation.runner.failed_items`) and ``ex.record`` raise
:class:`~rpa_lib.evaluation.runner.PendingItems` instead of writing the record, the outcome ``reproduce``
recognises as "another round", and a round's tables go to its scratch folder, never to ``results/``. When nothing
is pending, the record names the rounds (``batch``: rounds, calls per round, price at batch rates).

Run modes come in as the declared ``run_mode`` parameter (``reproduce`` passes it: a dry run's plan file, a budget)
and wrap every LLM handed out (:class:`rpa_lib.llm.RunMode`). This module reads no environment variable of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd

from rpa_lib.data import Dataset
from rpa_lib.evaluation.runner import PendingItems, check_failures, pending_mask
from rpa_lib.evaluation.uncertainty import interval_caption
from rpa_lib.llm import LLM, RunMode, get_llm, judge_llm
from rpa_lib.llm.rounds import rounds_record
from rpa_lib.report import notebook_parameters, output_dirs, run_label, save_run_record
from rpa_lib.retrieval import persona_embedder


class Experiment:
    """One notebook run: ``Experiment(notebook, globals())``; ``notebook`` names ``notebooks/<notebook>.ipynb``,
    whose ``parameters`` cell says which of ``namespace``'s names are parameters."""

    def __init__(self, notebook: str, namespace: Mapping[str, Any]):
        self.notebook = notebook
        self.parameters = notebook_parameters(notebook, dict(namespace))
        get = self.parameters.get
        self.figures, self.results = output_dirs(namespace.get("figures_dir"), namespace.get("results_dir"))
        self.mode = RunMode.of(get("run_mode"))
        self.dataset = Dataset(get("data_dir"))
        self.characters = self.dataset.characters(get("characters")) if "characters" in self.parameters else []
        self.max_failed_share = float(get("max_failed_share") or 0.0)
        n = get("repeats", 1)
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"{notebook}: repeats is the number of runs, 1 or more: {n!r}")
        self.repeats = [Repeat(self, r) for r in range(n)]
        self._handed: dict[str, LLM] = {}
        self.pending: dict[str, int] = {}  # batch rounds: what -> items waiting for a round (ex.check)

    def __repr__(self) -> str:
        return (f"Experiment({self.notebook!r}, {len(self.characters)} character(s), {len(self.repeats)} run(s), "
                f"mode={self.mode})")

    # ---- models ----------------------------------------------------------------------------------------------

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
        """A judge-role LLM for ``spec`` (None: :attr:`judge`), e.g. one of a rater panel."""
        if spec is None:
            return self.judge
        return self._hand(f"rater {spec}", judge_llm(spec, mode=self.mode))

    @cached_property
    def embedder(self) -> str:
        """The retrieval embedder's label (``embedder``), as every CSV names it."""
        name = self.parameters.get("embedder", "minilm")
        return persona_embedder(self.dataset.persona(self.characters[0]), name).label

    def models(self, *, judged: bool = False, embedder: bool = True) -> dict[str, str]:
        """The label columns of a CSV: the role-play LLM, the embedder, and the judge when ``judged``."""
        out = {"llm": self.llm.label}
        if self.parameters.get("gs_llm") is not None:  # GS and AE on their own LLM: named beside the role-play LLM
            out["gs_llm"] = self.gs_llm.label
        if embedder:
            out["embedder"] = self.embedder
        if judged:
            out["judge"] = self.judge.label
        return out

    def label(self) -> str:
        """``LLM: ... | embedder: ...`` (and ``GS and AE: ...`` when they run on their own LLM), then the dataset
        (``data: the paper's dataset (data/)``, or your characters' folder), for captions."""
        label = run_label(self.llm.label, self.embedder if "embedder" in self.parameters else None)
        if self.parameters.get("gs_llm") is not None:
            label += f" | GS and AE: {self.gs_llm.label}"
        return f"{label} | data: {self.dataset.describe()}"

    # ---- repeated runs -----------------------------------------------------------------------------------------

    def each(self, fn: Callable[[Repeat], Any]) -> Any:
        """``fn(run)`` for each of :attr:`repeats`, pooled: one run returns ``fn``'s value as it is; several
        concatenate the DataFrames they return (or each DataFrame of the tuples they return), every row tagged with
        its run's ``repeat`` (0, 1, ...). ``answers = ex.each(lambda run: run_jobs(method(run.llm), jobs))``"""
        if len(self.repeats) == 1:
            return fn(self.repeats[0])
        outs = [fn(run) for run in self.repeats]
        if isinstance(outs[0], tuple):
            return tuple(pd.concat([o[i].assign(repeat=run.index) for o, run in zip(outs, self.repeats, strict=True)],
                                   ignore_index=True) for i in range(len(outs[0])))
        return pd.concat([o.assign(repeat=run.index) for o, run in zip(outs, self.repeats, strict=True)],
                         ignore_index=True)

    def interval_caption(self, n_characters) -> str:
        """:func:`~rpa_lib.evaluation.uncertainty.interval_caption` for this experiment's characters and runs."""
        return interval_caption(n_characters, runs=len(self.repeats))

    # ---- outputs ---------------------------------------------------------------------------------------------

    def usage(self) -> dict[str, dict]:
        """The usage record of every LLM handed out, by role."""
        return {role: llm.usage.to_dict() for role, llm in self._handed.items()}

    def record(self, name: str, **fields: Any) -> Path:
        """``results/<name>.run.json``: the parameters, the models by role, their usage, in batch rounds the rounds
        (``batch``), then ``fields``. PendingItems when an item checked was pending (batch rounds)."""
        if self.pending:
            waiting = ", ".join(f"{n} {what}" for what, n in self.pending.items())
            raise PendingItems(f"{self.notebook}: item(s) wait for a batch round ({waiting}); no record is written")
        if self.mode.batch_log:
            fields = {"batch": rounds_record(self.mode.batch_log, self.notebook), **fields}
        models = {role: llm.label for role, llm in self._handed.items()}
        return save_run_record(name, self.results, parameters=self.parameters,
                               **{"models": models, "usage_by_role": self.usage(), "characters": self.characters, **fields})

    def check(self, rows: pd.DataFrame, what: str, max_share: float | None = None) -> None:
        """The failure policy: :func:`~rpa_lib.evaluation.runner.check_failures` with ``max_failed_share``; in
        batch rounds, pending rows are counted in :attr:`pending` and left out of it (module docstring)."""
        listing = "part" in rows.columns and "where" in rows.columns  # failed_items(...): the run's last check
        if self.mode.batch_store and len(rows) and not listing:
            waiting = pending_mask(rows)
            if waiting.any():
                self.pending[what] = int(waiting.sum())
                rows = rows[~waiting]
        check_failures(rows, what, self.max_failed_share if max_share is None else max_share)


class Repeat:
    """Run ``index`` of a repeated experiment: the experiment's LLMs answering as that run
    (:meth:`rpa_lib.llm.LLM.for_repeat`: run 0 as an unrepeated run; run r > 0 sends every request as sample r, so
    it has cache keys of its own and, where the backend takes one, a seed of its own). Usage is counted on the
    experiment's LLMs, whatever the run. An index a method builds (LightRAG's and RoleRAG's graphs) is built once and
    shared by the runs: the runs repeat the answers, not the indexing."""

    def __init__(self, experiment: Experiment, index: int):
        self.experiment, self.index = experiment, index

    def __repr__(self) -> str:
        return f"Repeat({self.index})"

    def of(self, rows: pd.DataFrame) -> pd.DataFrame:
        """The rows of ``rows`` that belong to this run (all of them when they carry no ``repeat``: one run)."""
        return rows[rows.repeat == self.index] if "repeat" in rows else rows

    @cached_property
    def llm(self) -> LLM:
        """The role-play LLM of this run."""
        return self.experiment.llm.for_repeat(self.index)

    @cached_property
    def judge(self) -> LLM:
        """The judge of this run."""
        return self.experiment.judge.for_repeat(self.index)

    @cached_property
    def gs_llm(self) -> LLM:
        """The LLM of Guided Selection and the Attribute Extractor in this run."""
        return self.experiment.gs_llm.for_repeat(self.index)
