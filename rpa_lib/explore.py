"""Interactive exploration for JupyterLab (``notebooks/00_explore.ipynb``): :func:`ask` a character a question with
several methods and compare the answers side by side (:func:`compare_html`, with GS's walk), browse a persona's
chunks; :func:`explorer` and :func:`persona_browser` are the ipywidgets apps around them. It writes nothing but
the LLM cache."""

from __future__ import annotations

import functools
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from rpa_lib import display
from rpa_lib.data import Dataset, as_dataset
from rpa_lib.llm import get_llm
from rpa_lib.methods import METHODS, build_method, setting_names
from rpa_lib.methods.registry import VARIANTS, method_label
from rpa_lib.settings import setting
from rpa_lib.splitters import SPLITTER_NAMES, SPLITTERS, settings_for, split

LLM_CHOICES = {"local": "embedded SmolLM2 (in-process)", "fake": "fake (offline stand-in, instant)"}
DEFAULT_METHODS = ("naive_rag", "amadeus")
# settings the explorer exposes; each goes to the methods that declare it
SETTINGS = {"k": 3, "max_iterations": 8, "slot_size": 2, "max_tokens": 96}
# the small embedded model rarely writes valid JSON: AE asks for free text at once there (as the quick profile does)
LOCAL_SETTINGS = {"amadeus": {"extract_format": "text"}}


@dataclass
class Answer:
    """One method's answer to the question, with GS's walk when the method ran Guided Selection."""

    method: str
    response: object | None = None  # rpa_lib.methods.Response
    walk: list[tuple] | None = None  # [(Hit, verdict)] for the chunks GS examined, in order
    speculative: list = field(default_factory=list)  # Hits judged ahead of the walk and discarded
    retrieved: list = field(default_factory=list)  # the top-k Hits of the method's retriever (its knowledge)
    error: str | None = None
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)  # warnings raised while answering, one line each

    @property
    def label(self) -> str:
        return method_label(self.method)

    def html(self, price=None, free: bool = False) -> str:
        if self.error:
            return display.error_html(self.label, self.error)
        return display.response_html(self.response, walk=self.walk, speculative=self.speculative, price=price,
                                     free=free, retrieved=self.retrieved, label=self.label)

    _repr_html_ = html


def llm_choices() -> dict[str, str]:
    """The LLM specs offered: the embedded model, the fake one, and the configured one (``RPA_LLM_MODEL``, from the
    environment or ``.env``)."""
    choices = dict(LLM_CHOICES)
    if configured := setting("RPA_LLM_MODEL"):
        choices[configured] = f"configured: {configured} (RPA_LLM_MODEL)"
    return choices


def chosen_llm(llm: str | None) -> str:
    """``llm``, else the configured LLM (``RPA_LLM_MODEL``, from the environment or ``.env``), else the embedded one."""
    return llm or setting("RPA_LLM_MODEL") or "local"


def is_local(llm) -> bool:
    """True for an in-process engine (a spec or an LLM): free text only, one call at a time."""
    backend = llm.partition(":")[0] if isinstance(llm, str) else getattr(llm, "backend", "")
    return backend == "local"


def method_settings(name: str, llm, **settings) -> dict:
    """The ``settings`` method ``name`` declares, plus what engine ``llm`` needs (AE's format on the embedded one)."""
    declared = set(setting_names(name))
    chosen = {k: v for k, v in settings.items() if k in declared and v is not None}
    if is_local(llm):
        chosen.update(LOCAL_SETTINGS.get(name, {}))
    return chosen


def warning_notes(caught) -> list[str]:
    """Caught warnings as short lines, without file paths, each once; a warning's kind is named unless it is a plain
    UserWarning (``note: deprecation: ...``, ``note: 16 of 49 texts are longer ...``)."""
    def kind(w) -> str:
        name = w.category.__name__.replace("Warning", "").lower()
        return "" if w.category is UserWarning else f"{name or 'warning'}: "

    return list(dict.fromkeys(f"note: {kind(w)}{str(w.message).splitlines()[0]}" for w in caught))


def empty_attributes_note(dataset: Dataset, character: str) -> str | None:
    """"no text under Belief and Value: answers come from the other attributes", or None."""
    persona = dataset.persona(character)
    if empty := persona.empty_attributes:
        return f"{persona.name}'s persona has no text under {', '.join(empty)}: answers come from the other attributes"
    return None


def gs_walk(method, character: str, question: str, response) -> tuple[list[tuple], list]:
    """GS's walk rebuilt from the response: the ranked chunks (GS's own search) paired with the judge calls in walk
    order, and the ``speculative`` chunks judged ahead and discarded."""
    s, d = method.settings, response.details
    ranked = method.retriever(character).search(question, max(s.max_iterations, s.slot_size + 1))
    verdicts = [c.output == "yes" for c in response.calls if c.purpose == "judge"]
    examined = d.get("examined", len(verdicts))
    walk = list(zip(ranked[:examined], verdicts, strict=False))
    return walk, ranked[examined:examined + d.get("speculative", 0)]


def retrieved(method, character: str, question: str) -> list:
    """The top-k chunks (its ``k`` setting) of a method that retrieves persona chunks; empty without ``k``."""
    k = getattr(method.settings, "k", 0)
    return method.retriever(character).search(question, k) if k and hasattr(method.settings, "splitter") else []


def ask(character: str, question: str, methods=DEFAULT_METHODS, llm="fake", dataset: Dataset | None = None,
        embedder: str | None = None, progress=None, **settings) -> list[Answer]:
    """Each method's answer to ``question`` as ``character`` (a failure an :class:`Answer` with its error), side by
    side unless the engine is in-process. ``llm``: a spec (``"fake"``, ``"openai:gpt-4.1"``; None:
    :func:`chosen_llm`) or an LLM;
    ``progress(method, state)`` hears ``"running"``, ``"done"``, ``"failed"``; ``settings`` go to the methods."""
    dataset = as_dataset(dataset)
    dataset.characters([character])  # an unknown slug is a clear error
    if not isinstance(question, str) or not question.strip():
        raise ValueError(f"question must be a non-empty string, not {question!r}")
    methods = chosen_methods(methods)
    if stray := sorted(set(settings) - {n for m in METHODS for n in setting_names(m)}):
        raise ValueError(f"no method has the setting(s) {', '.join(map(repr, stray))}")
    llm = get_llm(chosen_llm(llm)) if llm is None or isinstance(llm, str) else llm
    progress = progress or (lambda method, state: None)

    def one(name: str) -> Answer:
        progress(name, "running")
        start = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                method = build_method(name, llm=llm, dataset=dataset,
                                      **method_settings(name, llm, embedder=embedder, **settings))
                response = method.respond(character, question)
                walk, ahead = gs_walk(method, character, question, response) if "examined" in response.details \
                    else (None, [])
                answer = Answer(name, response, walk, ahead, retrieved(method, character, question))
            except Exception as e:  # shown in the method's column; the other methods still answer
                answer = Answer(name, error=f"{type(e).__name__}: {e}")
        answer.seconds, answer.notes = time.perf_counter() - start, warning_notes(caught)
        progress(name, "failed" if answer.error else "done")
        return answer

    workers = 1 if is_local(llm) else min(len(methods), max(1, getattr(llm, "max_workers", 1)))
    if workers == 1:
        return [one(name) for name in methods]
    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(one, methods))


def chosen_methods(methods, known=(*METHODS, *VARIANTS)) -> list[str]:
    """``methods`` (one name or several) as a list; ValueError for none or a name not ``known`` (the registered
    methods and their variants; the explorer offers the registered ones)."""
    methods = [methods] if isinstance(methods, str) else list(methods)
    if not methods:
        raise ValueError("no method selected: choose one or more methods")
    if unknown := [m for m in methods if m not in known]:
        raise ValueError(f"unknown method(s) {', '.join(map(repr, unknown))}; known: {', '.join(known)}")
    return methods


def first_pick(slugs: list[str], character: str | None) -> tuple[str, str]:
    """The character an app shows first, and a note when the one asked for is not in the dataset (the app still
    opens, on the first character: a parameter left at ``frieren`` for another dataset)."""
    if character is None or character in slugs:
        return character or slugs[0], ""
    return slugs[0], f"{character!r} is not in this dataset: showing {slugs[0]} first"


def compare_html(answers: list[Answer], price=None, free: bool = False) -> str:
    cols = []
    for a in answers:
        notes = "".join(f'<div class="rpa-muted">{display.esc(n)}</div>' for n in a.notes)
        cols.append(f'<div class="rpa-col" style="flex:1 1 0;min-width:320px;overflow-x:auto">{a.html(price, free)}{notes}'
                    f'<div class="rpa-muted">{a.seconds:.1f} s wall</div></div>')
    return f'<div class="rpa-compare" style="display:flex;gap:16px;align-items:flex-start">{"".join(cols)}</div>'


def persona_html(character: str, splitter: str, dataset: Dataset | None = None, limit: int | None = None) -> str:
    """A persona's chunks under one splitter, with its chunk length (l_max for ATS/ACTS) and overlap."""
    persona = as_dataset(dataset).persona(character)
    s, chunks = settings_for(persona, splitter), split(persona, splitter)
    length = "l_max" if splitter in ("ats", "acts") else "chunk length"
    head = (f"<div><b>{display.esc(persona.name)}</b> · {SPLITTER_NAMES[splitter]}: {len(chunks)} chunks, "
            f"{length} = {s.chunk_length} characters, overlap = {s.overlap}"
            f"{', heading path in front of each chunk' if s.with_context else ''}</div>")
    return head + display.chunks_html(chunks, limit=limit)


def explorer(dataset: Dataset | None = None, character: str | None = None, methods=DEFAULT_METHODS,
             llm: str | None = None, question: str = "", embedder: str = "minilm"):
    """The question app: character, methods, LLM, settings and a question; "Ask" shows each method's answer in a
    column, and while they run, each method's state and the LLM calls so far. Returns the widget."""
    import ipywidgets as w

    dataset = as_dataset(dataset)
    slugs = dataset.characters()
    character, missing = first_pick(slugs, character)
    names = dataset.names()
    wide = {"description_width": "initial"}
    caption = w.HTML(f'<div class="rpa-muted">Dataset: {display.esc(dataset.describe())}'
                     f'{display.esc(" · " + missing) if missing else ""}</div>')
    pick = w.Dropdown(options=[(names.get(s, s), s) for s in slugs], description="character", style=wide,
                      value=character, layout={"width": "340px"})
    chosen = w.SelectMultiple(options=[(method_label(m), m) for m in METHODS],
                              value=tuple(chosen_methods(methods, METHODS)), rows=6, description="methods")
    choices = llm_choices()
    llm = chosen_llm(llm)
    choices.setdefault(llm, f"given: {llm}")  # a spec passed in, e.g. "openai:gpt-4.1"
    model = w.Dropdown(options=[(v, k) for k, v in choices.items()], value=llm,
                       description="LLM", style=wide, layout={"width": "max-content", "min_width": "340px"})
    knobs = {k: w.BoundedIntText(value=v, min=0 if k == "k" else 1, max=4096, description=k, layout={"width": "170px"})
             for k, v in SETTINGS.items()}
    text = w.Textarea(value=question, placeholder="Ask the character a question…", layout={"width": "100%"})
    button = w.Button(description="Ask", button_style="primary", icon="comment")
    status, out = w.HTML(), w.HTML()
    llms = functools.cache(get_llm)  # each LLM built once, on first use

    def run(_=None) -> None:
        problem = ("Select at least one method." if not chosen.value
                   else "Type a question first." if not text.value.strip() else None)
        if problem:
            status.value = f'<span class="rpa-error">{problem}</span>'
            return
        button.disabled = True
        states: dict[str, tuple[str, float]] = {m: ("waiting", time.perf_counter()) for m in chosen.value}
        start, stop = time.perf_counter(), threading.Event()

        def progress(method: str, state: str) -> None:
            states[method] = (state, time.perf_counter())

        def tick() -> None:  # started once the engine is built
            while not stop.wait(1.0):
                now = time.perf_counter()
                parts = [f"{method_label(m)}: {state}" + (f" {now - since:.0f} s" if state == "running" else "")
                         for m, (state, since) in states.items()]
                status.value = display.esc(f"{' · '.join(parts)} · {engine.usage.calls - calls_before} LLM call(s) · "
                                           f"{now - start:.0f} s elapsed")

        try:
            status.value = f"loading {display.esc(choices[model.value])}…"
            engine = llms(model.value)
            calls_before = engine.usage.calls
            threading.Thread(target=tick, daemon=True).start()
            answers = ask(pick.value, text.value.strip(), chosen.value, engine, dataset, embedder, progress=progress,
                          **{k: v.value for k, v in knobs.items()})
            stop.set()
            note = empty_attributes_note(dataset, pick.value)
            out.value = (f'<div class="rpa-muted">{display.esc(note)}</div>' if note else "") + \
                compare_html(answers, price=getattr(engine, "price", None), free=engine.usage.free)
            failed = sum(bool(a.error) for a in answers)
            status.value = display.esc(f"done: {len(answers)} method(s) in {time.perf_counter() - start:.1f} s, "
                                       f"{engine.usage.calls - calls_before} LLM call(s)"
                                       + (f", {failed} failed" if failed else ""))
        except Exception as e:  # an LLM that cannot be built (no model, no key): one line, not a traceback
            status.value = f'<span class="rpa-error">{display.esc(type(e).__name__)}: {display.esc(e)}</span>'
        finally:
            stop.set()
            button.disabled = False

    button.on_click(run)
    controls = w.HBox([w.VBox([pick, model, w.HBox([button, status])]), chosen, w.VBox(list(knobs.values()))])
    return w.VBox([caption, controls, text, out])


def persona_browser(dataset: Dataset | None = None, character: str | None = None, limit: int = 60):
    """The persona app: a character and a splitter; shows :func:`persona_html`."""
    import ipywidgets as w

    dataset = as_dataset(dataset)
    slugs = dataset.characters()
    character, missing = first_pick(slugs, character)
    pick = w.Dropdown(options=slugs, value=character, description="character")
    splitter = w.ToggleButtons(options=[(SPLITTER_NAMES[s], s) for s in SPLITTERS], value="acts")
    out = w.HTML()

    def show(_=None) -> None:
        out.value = (f'<div class="rpa-muted">{display.esc(missing)}</div>' if missing else "") + \
            persona_html(pick.value, splitter.value, dataset, limit=limit)

    pick.observe(show, "value")
    splitter.observe(show, "value")
    show()
    return w.VBox([w.HBox([pick, splitter]), out])
