"""Run the numbered notebooks headlessly with papermill: ``python -m rpa_lib.reproduce [--profile quick]``.

Each notebook gets the parameters of its profile (:mod:`rpa_lib.run.profiles`) and, as its ``run_mode``, the dry run
(``--plan``, :mod:`rpa_lib.run.plan`), the budget (``RPA_BUDGET_USD`` or ``budget_usd``; this module is the only
reader of that variable) or the batch rounds (``--batch``, :mod:`rpa_lib.run.rounds`). A notebook that is up to date
(:mod:`rpa_lib.run.stamps`) is not run again unless ``--force``. Design notes: ``docs/design/run.md``.
A mistyped option exits 2; a bad profile or folder, a failed notebook or check exits 1 with one line naming it;
Ctrl-C exits 130 (finished notebooks kept), output cut short by a closed pipe (``| head``) 141, without a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from rpa_lib import paths
from rpa_lib.data import Dataset
from rpa_lib.embeddings import STAND_IN_PREFIX, stand_in_name
from rpa_lib.errors import DataError, closed_pipe
from rpa_lib.llm import LLMError, LLMFatalError, get_llm, judge_llm
from rpa_lib.llm.answers import without_iri_grammars
from rpa_lib.llm.budget import Budget, BudgetExceeded, dollars, price_override, shared_budget, usd
from rpa_lib.llm.factory import check_setting_names
from rpa_lib.llm.rounds import log_round
from rpa_lib.model_files import require_models
from rpa_lib.notebook_params import parameters
from rpa_lib.run import stamps
from rpa_lib.run.plan import PER_CHARACTER, batch_text, character_sample, plan_rows, plan_table, plan_total
from rpa_lib.run.profiles import BATCH_MODES, load_profile, notebooks
from rpa_lib.run.rounds import batch_mode, engine_builder, run_rounds, unfinished_run
from rpa_lib.settings import setting, settings
from rpa_lib.text import read_jsonl

# errors only: the kernel's warning about TCP without encryption (on 127.0.0.1, signed) would split the progress lines
KERNEL_ARGUMENTS = ["--IPKernelApp.log_level=ERROR"]
# Seconds a kernel is given to exit once done, half before SIGTERM, half before SIGKILL (jupyter_client's default: 5):
# ipykernel 7.4 sometimes hangs joining its control thread until signalled, 3.2 s longer (1 of 50 runs with the default:
# python -m benchmarks kernel_exit). Every output and cache write is complete by then; a clean exit takes 0.2 s.
KERNEL_SHUTDOWN_SECONDS = 1.0
Setup = dict[Path, tuple[dict, dict]]  # notebook -> (its declared parameters, its parameters): each_notebook


def parameters_for(notebook: Path, profile: dict, output_dir: Path | None, *, outputs_in: Path | None = None,
                   declared: dict | None = None) -> dict:
    """The profile's parameters that this notebook declares (``declared``: read when None), each ``*_dir`` absolute
    (relative to the repository: a kernel starts in ``notebooks/``, and a stamp counts an absolute path by content);
    ``output_dir`` holds the outputs the profile does not place, ``outputs_in`` all (a dry run's or a batch round's)."""
    declared = parameters(notebook) if declared is None else declared
    params = {**(profile.get("defaults") or {}), **((profile.get("notebooks") or {}).get(notebook.stem) or {})}
    if output_dir:
        params.setdefault("figures_dir", str(output_dir / "figures"))
        params.setdefault("results_dir", str(output_dir / "results"))
    for key in [k for k in params if k.endswith("_dir")]:
        if isinstance(params[key], str) and params[key]:
            params[key] = str(paths.ROOT / Path(params[key]).expanduser())  # an absolute one stays as it is
    if outputs_in:
        params.update(figures_dir=str(outputs_in / "figures"), results_dir=str(outputs_in / "results"))
    return {k: v for k, v in params.items() if k in declared}


def each_notebook(books: list[Path], profile: dict, output_dir: Path | None) -> Setup:
    """Each notebook's declared parameters, read once, and :func:`parameters_for` it."""
    return {nb: (d := parameters(nb), parameters_for(nb, profile, output_dir, declared=d)) for nb in books}


def _value(params: dict, declared: dict, name: str, default=None):
    """A parameter's value: the profile's, else the notebook's default."""
    return params.get(name, getattr(declared.get(name), "default", default))


def uses_llm(notebook: Path, declared: dict) -> bool:
    """Does the notebook declare ``llm``/``evaluator_llm`` or call ``get_llm(``/``judge_llm(``? (Only those are
    planned.)"""
    if {"llm", "evaluator_llm"} & set(declared):
        return True
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    return any(re.search(r"\b(get|judge)_llm\(", "".join(c["source"])) for c in cells if c["cell_type"] == "code")


@contextlib.contextmanager
def environment(**values: str):
    """Set environment variables for the ``with`` block (and its kernels), then restore them."""
    saved = {k: os.environ.get(k) for k in values}
    try:
        os.environ.update(values)
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _snapshot(folders: list[Path]) -> dict[Path, float]:
    return {p: p.stat().st_mtime for f in folders if f.is_dir() for p in f.rglob("*") if p.is_file()
            and not {"cache", "notebooks"} & set(p.relative_to(f).parts)}  # the folders above are not ours


def _run_id() -> str:
    return f"run-{time.strftime('%Y%m%d-%H%M%S')}-{time.time_ns() % 10**9}"


def profile_environment(profile: dict):
    """For a ``with`` block: the profile's ``env`` and ``HF_HUB_OFFLINE=1`` where the user's environment or ``.env``
    does not set them."""
    given = {*os.environ, *(k for k in settings() if k.startswith(stamps.ENV_PREFIXES))}  # others read os.environ only
    return environment(**{k: str(v) for k, v in {**(profile.get("env") or {}), "HF_HUB_OFFLINE": "1"}.items()
                          if k not in given})


def budget_of(profile: dict) -> float | None:
    """The run's budget in dollars: ``RPA_BUDGET_USD``, else the profile's ``budget_usd``, else None."""
    raw = setting("RPA_BUDGET_USD")
    if raw is None:
        return profile.get("budget_usd")
    try:
        return dollars("RPA_BUDGET_USD", raw)
    except ValueError as e:
        raise SystemExit(str(e)) from None


def with_mode(params: dict, declared: dict, mode: dict) -> dict:
    """``params`` with ``run_mode`` set to ``mode`` when the notebook declares it (one that builds no LLM does not)."""
    return {**params, "run_mode": mode} if mode and "run_mode" in declared else params


def check_prices(setup: Setup, mode: dict) -> None:
    """SystemExit before anything runs when a notebook's LLM, judge, ``gs_llm`` or one of its ``rater_models`` has
    no known price (no budget can hold it); builds the backend objects only."""
    for nb, (declared, params) in setup.items():
        llm = _value(params, declared, "llm")
        try:
            if "llm" in declared:
                get_llm(llm, cache=False, mode=mode)
            if "evaluator_llm" in declared:
                judge_llm(_value(params, declared, "evaluator_llm"), default=llm, cache=False, mode=mode)
            if gs := _value(params, declared, "gs_llm"):  # None: the role-play LLM's
                get_llm(gs, role="gs", cache=False, mode=mode)
            for spec in _value(params, declared, "rater_models") or []:
                judge_llm(spec, cache=False, mode=mode)
        except (LLMError, ValueError) as e:
            raise SystemExit(f"{nb.stem}: cannot run under the budget: {e}") from None


def check_models(setup: Setup) -> None:
    """SystemExit before anything runs when an embedder a notebook would load has no weights on this machine
    (naming the models, the notebooks' parameters that ask for them and the command that fetches them), names a
    folder that does not exist (relative to ``notebooks/``, where kernels start) or is a dry run's stand-in."""
    asked: dict[str, list[str]] = {}
    for nb, (declared, params) in setup.items():
        for key in ("embedder", "embedders"):
            value = _value(params, declared, key)
            for name in value if isinstance(value, list | tuple) else [value]:
                if isinstance(name, str) and name:
                    asked.setdefault(name, []).append(f"{nb.stem}: {key}")

    def where(names: list[str]) -> str:
        return ", ".join(dict.fromkeys(w for n in names for w in asked[n]))

    if stand_ins := [n for n in asked if n.startswith(STAND_IN_PREFIX)]:
        raise SystemExit(f"{', '.join(stand_ins)} (asked for by {where(stand_ins)}): a stand-in embedder is for "
                         "--plan only; name the model itself")
    folders = [n for n in asked if n.startswith(("/", ".", "~"))]
    if missing := [n for n in folders if not (paths.NOTEBOOKS_DIR / Path(n).expanduser()).is_dir()]:
        raise SystemExit(f"embedding model folder(s) {', '.join(missing)} (asked for by {where(missing)}) not found; "
                         f"a relative folder is read from {paths.NOTEBOOKS_DIR}, where the kernels start")
    try:
        require_models([n for n in asked if n not in folders], where)
    except RuntimeError as e:
        raise SystemExit(str(e)) from None


def check_data(setup: Setup) -> None:
    """A one-line SystemExit before anything runs when a ``data_dir`` the profile gives a notebook is no folder, or a
    ``characters`` (``character``) it gives is not in the notebook's dataset: a mistyped slug or folder would stop the
    run only at that notebook, after those before it ran. A notebook's own defaults are its own to check."""
    for nb, (declared, params) in setup.items():
        dataset = Dataset(_value(params, declared, "data_dir"))
        if "data_dir" in params and not dataset.root.is_dir():
            raise SystemExit(f"{nb.stem}: data_dir: {dataset.root}: no such folder")
        for key in ("characters", "character"):
            if (value := params.get(key)) is not None:
                try:
                    dataset.characters([value] if key == "character" and isinstance(value, str) else value)
                except DataError as e:
                    raise SystemExit(f"{nb.stem}: {key}: {e}") from None


def pending(setup: Setup, output_dir: Path | None, library: str) -> tuple[Setup, dict[Path, tuple]]:
    """The notebooks of ``setup`` from the first one that is not up to date (a run skips those before it), and what
    it found of each notebook it looked at: (inputs digest, up-to-date stamp or None)."""
    executed_dir, order, known = (output_dir or paths.RESULTS_DIR) / "notebooks", notebooks(), {}
    for i, (nb, (_, params)) in enumerate(setup.items()):
        inputs = _inputs(nb, params, order, executed_dir, library)
        known[nb] = (inputs, stamps.up_to_date(executed_dir / nb.name, inputs))
        if not known[nb][1]:
            return dict(list(setup.items())[i:]), known
    return {}, known


def _inputs(nb: Path, params: dict, order: list[Path], executed_dir: Path, library: str) -> str:
    """The digest of ``nb``'s inputs that its stamp records: notebook, parameters, library, data, settings and the
    stamps of the notebooks before it in ``order`` (all of them, whichever ``--only`` runs)."""
    upstream = [stamps.outputs_digest(stamps.read(executed_dir / b.name)) for b in order[:order.index(nb)]]
    return stamps.inputs_digest(nb, params, upstream, library)


def run(profile_name: str = "quick", only: list[str] | None = None, output_dir: Path | None = None,
        force: bool = False, batch: str | None = None) -> list[dict]:
    """Execute the notebooks that are not up to date (all with ``force``), under the run's budget, in batch rounds
    when ``batch`` (or the profile's ``batch``) names a mode."""
    profile = load_profile(profile_name)
    output_dir = output_dir and Path(os.path.abspath(output_dir))  # kernels start elsewhere (notebooks/)
    writable(output_dir or paths.RESULTS_DIR)
    with profile_environment(profile):
        check_settings()
        setup = each_notebook(notebooks(only), profile, output_dir)
        limit = budget_of(profile)
        batch = batch or profile.get("batch")
        mode, budget = {}, None
        if limit is not None:
            ledger = paths.cache_dir() / "budget" / f"{_run_id()}.json"
            mode = {"budget_usd": float(limit), "budget_ledger": str(ledger)}
            check_prices(setup, mode)
        library = stamps.library_digest()
        todo, known = (setup, {}) if force else pending(setup, output_dir, library)
        check_data(todo)
        check_models(todo)
        if limit is not None:
            print(f"budget: {usd(limit)} for the uncached LLM calls of this run (ledger {ledger})", flush=True)
            budget = shared_budget(limit, ledger)  # the one the LLMs of this process book in
        try:
            if not batch:
                return _run(profile_name, setup, output_dir, force, mode, library, known)
            mode = {**mode, **batch_rounds(profile, todo, batch, mode, budget, setup)}  # every answer in, then run
            ran = _run(profile_name, setup, output_dir, force, mode, library, known)
            log_round(mode["batch_log"], batch, None, finished=True)  # its records are written: the command is done
            return ran
        except BudgetExceeded as e:  # a batch round held more than is left: the run's one line
            raise SystemExit(str(e)) from None
        finally:
            if budget is not None:
                print(f"budget: ${budget.spent:.4f} of {usd(limit)} spent", flush=True)


def writable(folder: Path, what: str = "output folder") -> None:
    """:func:`rpa_lib.paths.check_writable` as a one-line SystemExit, before anything runs."""
    try:
        paths.check_writable(folder, what)
    except ValueError as e:
        raise SystemExit(str(e)) from None


def check_settings() -> None:
    """A one-line SystemExit before anything runs for a setting (the environment, ``.env`` or the profile's ``env``)
    that would stop every notebook: an LLM setting's name that nothing reads (a misspelt budget would run without a
    limit), one price without the other, or a cache or index folder (``RPA_CACHE_DIR``, ``RPA_INDEX_DIR``) that
    cannot be written."""
    try:
        check_setting_names()
        price_override()
        paths.check_cache_folders()
    except ValueError as e:
        raise SystemExit(str(e)) from None


def batch_rounds(profile: dict, todo: Setup, batch: str, mode: dict, budget: Budget | None,
                 setup: Setup | None = None) -> dict:
    """Batch rounds (:func:`rpa_lib.run.rounds.run_rounds`) of the notebooks of ``todo`` that use an LLM (one up to
    date would pay for answers no run reads); returns the run mode of batch mode, every answer in. Results in
    ``<cache>/batch`` (a restart resumes), each run's rounds in its ``runs/`` folder; the command (``setup``: every
    notebook it runs, up to date or not, with the settings that pick models) stopped before its records were written
    goes on in its folder."""
    if batch not in BATCH_MODES:
        raise SystemExit(f"--batch must be one of {', '.join(BATCH_MODES)}, not {batch!r}")
    store = paths.cache_dir() / "batch"
    writable(store, "batch folder")
    by_stem = {nb.stem: (nb, declared) for nb, (declared, _) in todo.items() if uses_llm(nb, declared)}
    command = {nb.stem: params for nb, (declared, params) in (setup or todo).items() if uses_llm(nb, declared)}
    key = stamps.json_sha([batch, command, stamps.environment_settings()])[:16]
    resumed = unfinished_run(store / "runs", key)  # this command, stopped before its end: its rounds go on
    run_dir = resumed or store / "runs" / _run_id()
    print(f"batch: {batch} rounds for {', '.join(by_stem) or 'no notebook'}; results in {store}, rounds in {run_dir}"
          + (" (resuming the rounds this command ran before it stopped)" if resumed else ""), flush=True)

    def collect(stem: str, round_mode: dict, scratch: Path) -> str | None:
        nb, declared = by_stem[stem]
        params = parameters_for(nb, profile, None, outputs_in=scratch, declared=declared)
        executed = paths.ensure(scratch / "notebooks") / nb.name
        with environment(RPA_OUTPUT_DIR=str(scratch)):
            return _attempt(nb, executed, with_mode(params, declared, {**mode, **round_mode}))[0]

    try:
        run_rounds(list(by_stem), collect, mode=batch, store=store, run_dir=run_dir, budget=budget,
                   build=engine_builder(budget), key=key)
    except LLMFatalError as e:  # no key, a server without a Batch API, a bad results file: the run's one line
        raise SystemExit(str(e)) from None
    return batch_mode(store, run_dir / "final.misses.jsonl", run_dir / "rounds.json")


def _run(profile_name: str, setup: Setup, output_dir: Path | None, force: bool, mode: dict, library: str,
         known: dict[Path, tuple]) -> list[dict]:
    executed_dir = paths.ensure((output_dir or paths.RESULTS_DIR) / "notebooks")
    print(f"reproduce: profile {profile_name!r}, {len(setup)} notebook(s), executed copies in {executed_dir}",
          flush=True)
    order, summary = notebooks(), []
    # the notebooks write the committed figures/ and results/ (or --output-dir's): rpa_lib.paths.output_root
    with environment(RPA_OUTPUT_DIR=str(output_dir or paths.ROOT)):
        for i, (nb, (declared, params)) in enumerate(setup.items(), start=1):
            executed = executed_dir / nb.name
            if nb not in known:  # after the first notebook that runs: pending looked no further
                inputs = _inputs(nb, params, order, executed_dir, library)
                known[nb] = (inputs, None if force else stamps.up_to_date(executed, inputs))
            inputs, done = known[nb]
            params = with_mode(params, declared, mode)  # after the digest: a budget is no input
            if done:
                print(f"[{i}/{len(setup)}] {nb.stem}: up to date (notebook, parameters, library, data, settings and "
                      f"the {len(done['outputs'])} file(s) it wrote, its executed copy among them, unchanged since "
                      f"{done['finished']}), not run; "
                      "--force runs it", flush=True)
                summary.append({"notebook": nb.stem, "seconds": 0.0, "written": [], "skipped": True})
                continue
            stamps.write(executed, None, [], 0.0)  # not done until it succeeds; its files stay recorded
            watch = [Path(params.get("figures_dir") or paths.FIGURES_DIR),
                     Path(params.get("results_dir") or paths.RESULTS_DIR)]
            before = _snapshot(watch)
            print(f"[{i}/{len(setup)}] {nb.stem}: ", end="", flush=True)  # one line per notebook, ended below
            start = time.perf_counter()
            failure = _papermill(nb, executed, params)
            seconds = time.perf_counter() - start
            changed = [p for p, t in _snapshot(watch).items() if before.get(p) != t]
            if failure:
                kept = sorted(p.name for p in changed)
                print(f"FAILED after {seconds:.1f} s", flush=True)
                print(f"{nb.name}: {failure}\n"
                      + (f"(what it saved before it stopped: {', '.join(kept)})\n" if kept else "")
                      + f"(executed copy with the traceback: {executed})", file=sys.stderr)
                raise SystemExit(1)
            stamps.write(executed, inputs, changed, seconds)
            written = sorted(str(p.relative_to(paths.ROOT) if p.is_relative_to(paths.ROOT) else p) for p in changed)
            print(f"ok in {seconds:.1f} s, {len(written)} file(s) written", flush=True)
            summary.append({"notebook": nb.stem, "seconds": round(seconds, 1), "written": written, "skipped": False})
    total = sum(s["seconds"] for s in summary)
    skipped = sum(s["skipped"] for s in summary)
    print(f"\nsummary (profile {profile_name!r}, {total / 60:.1f} min in all"
          + (f"; {skipped} notebook(s) up to date, not run" if skipped else "") + ")")
    for s in summary:
        what = "up to date, not run" if s["skipped"] else ", ".join(s["written"][:6]) + (
            f" (+{len(s['written']) - 6} more)" if len(s["written"]) > 6 else "")
        print(f"  {s['notebook']:<28} {s['seconds']:>8.1f} s  {what}")
    return summary


def _papermill(nb: Path, executed: Path, params: dict) -> str | None:
    """Execute ``nb`` to ``executed``: None, or the failure as "cell N raised Error: message" or "the kernel died"."""
    without_iri_grammars()  # papermill -> nbformat -> jsonschema: a plan's workers and the command line start here
    import papermill
    from nbclient.exceptions import DeadKernelError
    from traitlets.config import Config

    try:
        # the kernel starts in notebooks/ (nbclient's resources path), as JupyterLab's would; papermill's own cwd=
        # would chdir this whole process, which the plan's dry runs in threads would race on
        papermill.execute_notebook(str(nb), str(executed), parameters=params, kernel_name="python3",
                                   resources={"metadata": {"path": str(paths.NOTEBOOKS_DIR)}}, progress_bar=False,
                                   log_output=False, extra_arguments=KERNEL_ARGUMENTS,
                                   config=Config(KernelManager={"shutdown_wait_time": KERNEL_SHUTDOWN_SECONDS}))
    except papermill.PapermillExecutionError as e:
        return f"cell {e.exec_count} raised {e.ename}: {e.evalue}"
    except DeadKernelError as e:  # out of memory, a crash in native code, os._exit
        return f"the kernel died ({e})"
    return None


def _sampled(nb: Path, params: dict, declared: dict) -> tuple[list[str], int] | None:
    """(the characters to dry-run ``nb`` on, how many it runs on), or None to run whole (not per character, or
    too few characters)."""
    if nb.stem not in PER_CHARACTER or "characters" not in declared:
        return None
    dataset = Dataset(params.get("data_dir"))
    chosen = dataset.characters(params.get("characters"))
    sample = character_sample({c: dataset.persona_path(c).stat().st_size for c in chosen})
    return (sample, len(chosen)) if len(sample) < len(chosen) else None


def plan(profile_name: str = "quick", only: list[str] | None = None, workers: int | None = None,
         exact: bool = False) -> list[dict]:
    """Print what a run would call, cost and find cached, from dry runs of the notebooks that use an LLM (``workers``
    at once, default one per core up to 4; outputs in a temporary folder), and return the table's rows. Unless
    ``exact``, a per-character notebook is dry-run on a sample of its characters and its counts scaled to all."""
    from rpa_lib.evaluation.power import power_text, profile_sizes

    profile = load_profile(profile_name)
    with profile_environment(profile):
        check_settings()  # a dry run reads and fills the reply cache
        books = notebooks(only)
        limit = budget_of(profile)
        workers = workers or max(1, min(os.cpu_count() or 1, 4))
        setup = each_notebook(books, profile, None)
        check_data(setup)
        skipped = {nb.stem: "no LLM calls" for nb, (declared, _) in setup.items() if not uses_llm(nb, declared)}
        planned = [nb for nb in books if nb.stem not in skipped]
        print(f"plan: profile {profile_name!r}, {len(books)} notebook(s), {len(planned)} of them with LLM calls, "
              "dry-run as they finish; no model is called", flush=True)
        start_all = time.perf_counter()
        factors: dict[str, float] = {}
        samples: dict[str, tuple[list[str], int]] = {}
        done: dict[str, list[dict]] = {}  # notebook -> its dry run's calls
        # each dry run is a kernel process of its own
        with tempfile.TemporaryDirectory(prefix="rpa-plan-") as tmp, ThreadPoolExecutor(workers) as pool:
            out, futures = Path(tmp), {}
            for nb in planned:
                declared = setup[nb][0]
                params = parameters_for(nb, profile, None, outputs_in=out / nb.stem, declared=declared)
                if not exact and (drawn := _sampled(nb, params, declared)):
                    samples[nb.stem] = drawn
                    params["characters"] = drawn[0]
                    factors[nb.stem] = drawn[1] / len(drawn[0])
                    for name in PER_CHARACTER[nb.stem]:  # counted over all characters: a share for the sample
                        value = _value(params, declared, name)
                        if isinstance(value, int) and value > 0:
                            params[name] = max(1, round(value / factors[nb.stem]))
                record = out / f"{nb.stem}.plan.jsonl"
                params = dry_run_parameters(params, declared, record)
                futures[pool.submit(_attempt, nb, out / nb.name, params)] = nb, record
            for i, future in enumerate(as_completed(futures), start=1):
                (nb, record), (problem, seconds) = futures[future], future.result()
                if problem:
                    skipped[nb.stem] = problem
                done[nb.stem] = read_jsonl(record)
                on = f" on {len(samples[nb.stem][0])} of {samples[nb.stem][1]} characters" if nb.stem in samples else ""
                print(f"[{i}/{len(planned)}] {nb.stem}: {len(done[nb.stem]):,} calls, dry run{on} in {seconds:.1f} s",
                      flush=True)
        rows = plan_rows({nb.stem: done[nb.stem] for nb in planned}, factors)  # in notebook order: repeats count so
        said = None
        if samples:
            drawn = {tuple(chars) for chars, _ in samples.values()}
            said = (f"A fast plan: {', '.join(samples)} dry-run on {len(next(iter(drawn)))} characters "
                    f"({'; '.join(', '.join(d) for d in drawn)}; spread over the persona sizes), their counts scaled "
                    f"to all ({', '.join(f'x{f:.3g}' for f in dict.fromkeys(factors.values()))}; within 5% of an exact "
                    "plan in the tests). --exact dry-runs every character.")
        print()
        print(plan_table(rows, [nb.stem for nb in books], skipped, said))
        walks = [_value(setup[nb][1], setup[nb][0], "max_iterations", 0) for nb in planned]  # Guided Selection's N
        print(batch_text(rows, max((n for n in walks if isinstance(n, int)), default=0)))
        if limit is not None:
            cost = plan_total(rows)
            verdict = ("unknown (a model has no price)" if cost is None else
                       f"the estimate ${cost:,.2f} is {'within' if cost <= limit else 'OVER'} it")
            print(f"budget: {usd(limit)} (RPA_BUDGET_USD or budget_usd); {verdict}")
        print(power_text(profile_sizes(profile)))  # what differences these sizes can detect
        print(f"plan made in {time.perf_counter() - start_all:.1f} s")
        return rows


def dry_run_parameters(params: dict, declared: dict, record: Path) -> dict:
    """A dry run's parameters: the run mode's ``plan_file`` (no budget), and each paper embedder whose weights are
    missing named as its labelled stand-in (:func:`rpa_lib.embeddings.stand_in_name`)."""
    params = with_mode(params, declared, {"plan_file": str(record)})
    for name in ("embedder", "embedders"):
        value = _value(params, declared, name)
        if isinstance(value, str):
            params[name] = stand_in_name(value)
        elif isinstance(value, list):
            params[name] = [stand_in_name(v) if isinstance(v, str) else v for v in value]
    return params


def _attempt(nb: Path, executed: Path, params: dict) -> tuple[str | None, float]:
    """Execute ``nb`` (a dry run or a batch round): (None, or why it stopped early; seconds)."""
    start = time.perf_counter()
    try:
        failure = _papermill(nb, executed, params)
        problem = f"dry run stopped: {failure}; the counts cover the calls before it" if failure else None
    except Exception as e:  # e.g. the kernel died: report it beside the counts made so far
        problem = f"dry run failed, {type(e).__name__}: {e}; the counts cover the calls before it"
    return problem, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rpa_lib.reproduce", description=__doc__.split("\n")[0])
    parser.add_argument("--profile", default="quick",
                        help="profiles/<name>.yaml (quick (default), paper or smoke) or a path to a YAML file")
    parser.add_argument("--only", "--notebooks", dest="only",
                        help="comma-separated notebook numbers or names, e.g. 02,04")
    parser.add_argument("--output-dir", type=Path, help="write figures/, results/ and notebooks/ here instead")
    parser.add_argument("--force", action="store_true",
                        help="run every notebook, also those up to date (same inputs, outputs untouched)")
    parser.add_argument("--plan", action="store_true",
                        help="run nothing: print the LLM calls, cached calls, tokens and dollars of each notebook")
    parser.add_argument("--exact", action="store_true",
                        help="with --plan: dry-run every character (slower), not a sample scaled to all")
    parser.add_argument("--batch", choices=BATCH_MODES,
                        help="batch rounds (half price on OpenAI): local (in-process engines), openai (the Batch API) "
                             "or files (request files for an offline engine such as vllm run-batch)")
    args = parser.parse_args(argv)
    only = None if args.only is None else [o.strip() for o in args.only.split(",")]
    if only is not None and not all(only):
        parser.error(f"--only {args.only!r}: an empty entry; give notebook numbers or names, e.g. 02,04")
    if args.exact and not args.plan:
        parser.error("--exact goes with --plan")
    if args.batch and args.plan:
        parser.error("--batch runs the rounds; --plan prices them without it")
    try:
        if args.plan:
            plan(args.profile, only, exact=args.exact)
        else:
            run(args.profile, only, args.output_dir, args.force, args.batch)
    except KeyboardInterrupt:
        resume = ("the same command without --force resumes (with it, every notebook runs again)" if args.force else
                  "the same command resumes")
        print("\ninterrupted: no plan printed (a dry run keeps nothing); the same command makes it" if args.plan else
              f"\ninterrupted: the notebooks that finished are kept, and the LLM replies received are cached; {resume}",
              file=sys.stderr)
        return 130
    except BrokenPipeError:  # a finished notebook's stamp is written before its line
        return closed_pipe()
    return 0


if __name__ == "__main__":
    sys.exit(main())
