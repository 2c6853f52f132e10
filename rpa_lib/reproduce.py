"""Run the numbered notebooks headlessly with papermill: ``python -m rpa_lib.reproduce [--profile quick]``.

Parameters come from one YAML file per profile (``profiles/<name>.yaml``): ``defaults`` go to every notebook
that declares them in its ``parameters`` cell, ``notebooks.<NN_name>`` to that notebook only. Executed copies
are saved under ``results/notebooks/`` (or ``--output-dir``); each notebook prints a progress line, and a
summary gives the time per notebook and the files it wrote. A failing notebook stops the run with its name
and the failing cell's error.

Profiles: ``quick`` (default; the embedded LLM, a subset, minutes), ``paper`` (the papers' full settings;
meant for a real LLM), ``smoke`` (fixture data, fake LLM and hash embedder; what the tests run).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import yaml

from rpa_lib import paths
from rpa_lib.notebook_params import check_value, parameters

PATH_PARAMETERS = ("data_dir", "figures_dir", "results_dir")


def load_profile(name: str) -> dict:
    """The profile ``profiles/<name>.yaml``, checked against every notebook's parameters cell: an unknown
    notebook, parameter or top-level key, a value of the wrong type or malformed YAML is a ``SystemExit`` whose
    one line names the profile file and the key."""
    path = paths.PROFILES_DIR / f"{name}.yaml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in paths.PROFILES_DIR.glob("*.yaml")))
        raise SystemExit(f"unknown profile {name!r} ({path} not found); known: {known}")
    try:
        profile = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark else ""
        raise SystemExit(f"{path}: not valid YAML ({where}{getattr(e, 'problem', None) or e})") from None
    if not isinstance(profile, dict):
        raise SystemExit(f"{path}: a profile is a mapping with description, defaults, notebooks and env")
    unknown = set(profile) - {"description", "defaults", "notebooks", "env"}
    if unknown:
        raise SystemExit(f"{path}: unknown top-level key(s) {', '.join(sorted(unknown))}")
    check_profile(path, profile)
    return profile


def check_profile(path: Path, profile: dict) -> None:
    """Every key of ``defaults`` declared by some notebook, every ``notebooks.<NN_name>`` an existing notebook
    and each of its keys declared by it, every value of the declared type."""
    declared = {nb.stem: parameters(nb) for nb in notebooks()}
    sections = {"defaults": profile.get("defaults") or {}, **{f"notebooks.{k}": v or {} for k, v in
                                                               (profile.get("notebooks") or {}).items()}}
    for section, values in sections.items():
        if not isinstance(values, dict):
            raise SystemExit(f"{path}: {section} must be a mapping of parameter: value")
        stem = section.removeprefix("notebooks.")
        if section != "defaults" and stem not in declared:
            raise SystemExit(f"{path}: {section}: no such notebook; notebooks: {', '.join(declared)}")
        scope = {stem: declared[stem]} if section != "defaults" else declared
        for key, value in values.items():
            owners = [params[key] for params in scope.values() if key in params]
            if not owners:
                valid = sorted({p for params in scope.values() for p in params})
                raise SystemExit(f"{path}: {section}.{key}: not a parameter of "
                                 f"{stem if section != 'defaults' else 'any notebook'}; parameters: {', '.join(valid)}")
            for param in owners:
                try:
                    check_value(key, value, param)
                except ValueError as e:
                    raise SystemExit(f"{path}: {section}.{e}") from None


def notebooks(only: list[str] | None = None) -> list[Path]:
    """The numbered notebooks (``NN_name.ipynb``) in order; ``only`` keeps those whose number or name match."""
    found = sorted(p for p in paths.NOTEBOOKS_DIR.glob("[0-9][0-9]_*.ipynb"))
    if only:
        found = [p for p in found if any(p.stem == o or p.stem.startswith(f"{o}_") or p.stem[:2] == o for o in only)]
        if not found:
            raise SystemExit(f"no notebook matches --only {','.join(only)}")
    return found


def parameters_for(notebook: Path, profile: dict, output_dir: Path | None) -> dict:
    """The profile's parameters that this notebook declares, with relative paths made absolute."""
    declared = parameters(notebook)
    params = {**(profile.get("defaults") or {}), **((profile.get("notebooks") or {}).get(notebook.stem) or {})}
    if output_dir:
        params.setdefault("figures_dir", str(output_dir / "figures"))
        params.setdefault("results_dir", str(output_dir / "results"))
    for key in PATH_PARAMETERS:
        if params.get(key) and not Path(params[key]).is_absolute():
            params[key] = str(paths.ROOT / params[key])
    return {k: v for k, v in params.items() if k in declared}


def _snapshot(folders: list[Path]) -> dict[Path, float]:
    return {p: p.stat().st_mtime for f in folders if f.is_dir() for p in f.rglob("*") if p.is_file()
            and "cache" not in p.parts and "notebooks" not in p.relative_to(f).parts}


def run(profile_name: str = "quick", only: list[str] | None = None, output_dir: Path | None = None) -> list[dict]:
    import papermill

    profile = load_profile(profile_name)
    for key, value in (profile.get("env") or {}).items():
        os.environ.setdefault(key, str(value))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    executed_dir = paths.ensure((output_dir or paths.RESULTS_DIR) / "notebooks")
    books = notebooks(only)
    print(f"reproduce: profile {profile_name!r}, {len(books)} notebook(s), executed copies in {executed_dir}", flush=True)
    summary = []
    for i, nb in enumerate(books, start=1):
        params = parameters_for(nb, profile, output_dir)
        watch = [Path(params.get("figures_dir") or paths.FIGURES_DIR), Path(params.get("results_dir") or paths.RESULTS_DIR)]
        before = _snapshot(watch)
        print(f"[{i}/{len(books)}] {nb.stem}: running", flush=True)
        start = time.perf_counter()
        try:
            papermill.execute_notebook(str(nb), str(executed_dir / nb.name), parameters=params, kernel_name="python3",
                                       cwd=str(paths.NOTEBOOKS_DIR), progress_bar=False, log_output=False)
        except papermill.PapermillExecutionError as e:
            print(f"[{i}/{len(books)}] {nb.stem}: FAILED after {time.perf_counter() - start:.1f} s")
            print(f"{nb.name}: cell {e.exec_count} raised {e.ename}: {e.evalue}\n"
                  f"(executed copy with the traceback: {executed_dir / nb.name})", file=sys.stderr)
            raise SystemExit(1) from None
        seconds = time.perf_counter() - start
        after = _snapshot(watch)
        written = sorted(str(p.relative_to(paths.ROOT) if p.is_relative_to(paths.ROOT) else p)
                         for p, t in after.items() if before.get(p) != t)
        print(f"[{i}/{len(books)}] {nb.stem}: ok in {seconds:.1f} s, {len(written)} file(s) written", flush=True)
        summary.append({"notebook": nb.stem, "seconds": round(seconds, 1), "written": written})
    total = sum(s["seconds"] for s in summary)
    print(f"\nsummary (profile {profile_name!r}, {total / 60:.1f} min in all)")
    for s in summary:
        print(f"  {s['notebook']:<28} {s['seconds']:>8.1f} s  " + ", ".join(s["written"][:6])
              + (f" (+{len(s['written']) - 6} more)" if len(s["written"]) > 6 else ""))
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rpa_lib.reproduce", description=__doc__.split("\n")[0])
    parser.add_argument("--profile", default="quick", help="profiles/<name>.yaml: quick (default), paper or smoke")
    parser.add_argument("--only", help="comma-separated notebook numbers or names, e.g. 02,04")
    parser.add_argument("--output-dir", type=Path, help="write figures/, results/ and notebooks/ here instead")
    args = parser.parse_args(argv)
    run(args.profile, args.only.split(",") if args.only else None, args.output_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
