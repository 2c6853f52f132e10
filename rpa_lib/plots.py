"""The notebooks' figures, each a function of the DataFrames it draws (computed by ``rpa_lib.evaluation`` and
``rpa_lib.paper``) returning the matplotlib figure, its title saying what was run. It computes nothing and saves
nothing (:func:`rpa_lib.report.save_figure` does)."""

from __future__ import annotations

import re
import textwrap

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from rpa_lib.data.readers import QUESTIONNAIRE_ITEMS
from rpa_lib.evaluation.charactercraft_prompts import NAMES, TOP
from rpa_lib.evaluation.claims import PAPER_CHARACTERS, PAPER_ITEMS
from rpa_lib.evaluation.metrics.charactercraft import DIMENSIONS
from rpa_lib.evaluation.metrics.intervals import BOOTSTRAP
from rpa_lib.methods.registry import method_label
from rpa_lib.model_files import KNOWN_MODELS, PAPER_EMBEDDERS
from rpa_lib.persona import ATTRIBUTES
from rpa_lib.report import plural
from rpa_lib.splitters import SPLITTER_NAMES

# one colour per method and variant, all distinct (a test holds them to it), so no figure draws two methods alike
METHOD_COLORS = {"no_rag": "#8c8c8c", "naive_rag": "#4C72B0", "naive_rag_budget": "#A1C9F4",
                 "naive_rag_vanilla": "#2F4B7C", "crag": "#55A868", "lightrag": "#8172B3", "rolerag": "#937860",
                 "amadeus": "#DD8452", "crag_budget": "#8DE5A1", "lightrag_budget": "#D0BBFF",
                 "rolerag_budget": "#DEBB9B"}
SPLITTER_COLORS = {"vanilla": "#8c8c8c", "ats": "#4C72B0", "acts": "#DD8452", "vanilla-section": "#55A868",
                   "ats-document": "#8172B3", "acts-document": "#C44E52"}
_NAMED_COLORS = {SPLITTER_NAMES[s]: c for s, c in SPLITTER_COLORS.items()}  # by the tables' splitter names


def _finish(fig, title: str, fontsize: float = 12):
    """Lay the axes out, then set ``title`` above them, each of its lines wrapped to the figure's width (a caption
    that names the run is long: unwrapped, it would widen the saved image to thousands of pixels)."""
    fig.tight_layout()
    per_line = int(fig.get_figwidth() * 72 / (0.55 * fontsize))  # characters: about 0.55 em each
    lines = [wrapped for line in title.split("\n") for wrapped in textwrap.wrap(line, per_line) or [""]]
    fig.suptitle("\n".join(lines), fontsize=fontsize, y=1.0, va="bottom")  # grows upward; saved with a tight box
    return fig


def _offset(i: int, n: int, width: float) -> float:
    """How far bar ``i`` of ``n`` side by side sits from its group's centre."""
    return (i - (n - 1) / 2) * width


def dataset_figure(per_char: pd.DataFrame, per_par: pd.DataFrame):
    """AMADEUS Figure 3 for our dataset: persona lengths, QA pairs by attribute, paragraph lengths with l_max."""
    order = per_char.sort_values("characters_written").character.tolist()
    pc = per_char.set_index("character").loc[order]
    names = pc["name"].tolist()
    fig, (ax, qa_ax, box_ax) = plt.subplots(1, 3, figsize=(15, 5.2), gridspec_kw={"width_ratios": [1.1, 1.1, 1.5]})
    ax.barh(names, pc.characters_written / 1000, color="#4C72B0")
    ax.set(xlabel="persona length (thousand characters)",
           title=f"{len(per_char)} personas, {per_char.characters_written.sum()/1000:.0f}K characters")
    left = pd.Series(0, index=pc.index)
    for color, a in zip(plt.cm.Set2.colors, ATTRIBUTES):
        qa_ax.barh(names, pc[f"qa_{a}"], left=left, color=color, label=a)
        left += pc[f"qa_{a}"]
    qa_ax.set(yticklabels=[], xlabel="QA pairs", title=f"{per_char.qa_pairs.sum()} QA pairs (paper set) by attribute")
    qa_ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, frameon=False)  # below the bars
    data = [per_par.loc[per_par.character == c, "length"] for c in order]
    rows = np.arange(len(order))  # the rows barh puts the names on
    box_ax.boxplot(data, vert=False, positions=rows, tick_labels=[""] * len(order), showfliers=True,
                   flierprops={"markersize": 3})
    box_ax.scatter(pc.longest_paragraph, rows, marker="|", s=200, color="crimson", label="l_max (ACTS chunk length)")
    box_ax.set(ylim=ax.get_ylim(), xlabel="paragraph length (characters)", title="paragraph lengths per character")
    box_ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.14), frameon=False)  # below the boxes
    return _finish(fig, "CharacterRAG-EN (this repository's dataset; cf. AMADEUS Figure 3)")


def error_bars(ax, x, frame: pd.DataFrame, column: str, **style) -> None:
    """``frame``'s 95% interval of ``column`` (``<column>_low``, ``<column>_high``) as error bars at ``x``, where
    those columns exist and are not NaN."""
    lo, hi = f"{column}_low", f"{column}_high"
    if lo not in frame or hi not in frame:
        return
    x = np.asarray(x, dtype=float)
    v, low, high = (pd.to_numeric(frame[c], errors="coerce").to_numpy(dtype=float) for c in (column, lo, hi))
    ok = ~(np.isnan(low) | np.isnan(high) | np.isnan(v))
    if ok.any():
        color = style.pop("color", "black")  # the series' colour: several intervals at one x stay told apart
        ax.errorbar(x[ok], v[ok], yerr=[v[ok] - low[ok], high[ok] - v[ok]], fmt="none", ecolor=color, elinewidth=0.8,
                    capsize=2, **style)


def interval_text(value: float, low: float, high: float, fmt: str = "{:.3f}") -> str:
    """``"0.750 [0.500, 1.000]"``, or the value alone when the interval is NaN."""
    if pd.isna(low) or pd.isna(high):
        return fmt.format(value)
    return f"{fmt.format(value)} [{fmt.format(low)}, {fmt.format(high)}]"


def paired_text(row) -> str:
    """One paired comparison (a ``*_paired.csv`` row) in a line.
    ``"Vanilla − ACTS: +0.099 [0.094, 0.105], 15/15 characters higher, sign p=6e-05"``"""
    return (f"{row.method} − {row.reference}: {row.difference:+.3g} [{row.diff_low:.3g}, {row.diff_high:.3g}], "
            f"{row.characters_better:.0f}/{row.n_characters:.0f} characters higher, sign p={row.p_character:.1g}")


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def similarity_figure(scores: pd.DataFrame, table: pd.DataFrame, splitters: list[str], k: int, characters: int,
                      questions: int, paired: pd.DataFrame | None = None, paper_embedders=()):
    """Table 1 as violins: retrieved chunks' similarity per splitter, a panel per embedder, annotated with the
    table's Σμ, Σσ² (over all retrieved scores) and Σσ²_q (over question means); under each panel its paired
    comparisons (``paired``: ``table1_similarity_paired.csv``, ``task`` the embedder), and a footer naming the
    embedders that stand in for ``paper_embedders``."""
    labels = list(dict.fromkeys(scores.embedder))
    fig, axes = plt.subplots(1, len(labels), figsize=(5.5 * len(labels), 4.4), squeeze=False)
    for ax, emb in zip(axes[0], labels):
        pairs = paired[paired.task == emb] if paired is not None else pd.DataFrame()
        ax.set_xlabel("\n".join(f"{'μ' if r.outcome == 'mu' else 'σ²'}: {paired_text(r)}"
                                for r in pairs.itertuples()), fontsize=7)  # paired by character
        data = [scores[(scores.embedder == emb) & (scores.splitter == s)].score for s in splitters]
        parts = ax.violinplot(data, showmedians=True)
        for body, s in zip(parts["bodies"], splitters):
            body.set(facecolor=SPLITTER_COLORS.get(s, "#55A868"), alpha=0.7)
        rows = table[table.embedder == emb].set_index("splitter")
        for i, s in enumerate(splitters, start=1):
            r = rows.loc[SPLITTER_NAMES.get(s, s)]
            mu = interval_text(r.sum_mu, r.get("sum_mu_low"), r.get("sum_mu_high"), "{:.2f}")
            var = interval_text(r.sum_var, r.get("sum_var_low"), r.get("sum_var_high"), "{:.3f}")
            ax.text(i, 1.01, f"Σμ={mu}\nΣσ²={var}\nΣσ²_q={r.sum_var_q:.4f}", transform=ax.get_xaxis_transform(),
                    ha="center", va="bottom", fontsize=7)  # above the axes, clear of the whiskers
        ax.set_xticks(range(1, len(splitters) + 1), [SPLITTER_NAMES.get(s, s) for s in splitters], fontsize=8)
        ax.set_title(emb, pad=40)
        ax.set_ylabel(f"cosine similarity of top-{k} chunks")
    paper = {_norm(p) for p in paper_embedders} | {_norm(KNOWN_MODELS[n][0].rsplit("/", 1)[-1]) for n in PAPER_EMBEDDERS}
    stand_ins = [e for e in labels if _norm(e) not in paper]  # our label of the paper's mE5 is its full model name
    if len(paper_embedders) and stand_ins:
        fig.text(0.5, 0, f"{', '.join(stand_ins)} stand in for the paper's embedders ({', '.join(paper_embedders)}): "
                 "the levels are not comparable to the paper's, only the splitters' order", ha="center", va="top",
                 fontsize=8, style="italic")
    return _finish(fig, f"Similarity of the top-{k} retrieved chunks to {questions} QA questions of "
                   f"{plural(characters, 'character')} (embedder per panel; sums over characters as in Table 1;\n"
                   "[95% interval: cluster bootstrap over characters])")


def evidence_recall_figure(table: pd.DataFrame, characters: int, questions: int, qa_set: str = "paper"):
    """Evidence recall against k, a line per splitter, one panel per embedder (one question set's rows)."""
    labels = list(dict.fromkeys(table.embedder))
    fig, axes = plt.subplots(1, len(labels), figsize=(5.2 * len(labels), 4), squeeze=False, sharey=True)
    for ax, emb in zip(axes[0], labels):
        for splitter, g in table[table.embedder == emb].groupby("splitter", sort=False):
            color = _NAMED_COLORS.get(splitter, "#55A868")
            ax.plot(g.k, g.recall, marker="o", label=splitter, color=color)
            error_bars(ax, g.k, g, "recall", color=color)
            ax.plot(g.k, g.all_found, marker=".", ls=":", color=color)
        ax.set(xticks=sorted(table.k.unique()), xlabel="k (chunks retrieved)", title=emb, ylim=(0, 1.02))
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("evidence recall")
    styles = [Line2D([], [], color="black", marker="o", label="recall (95% interval: characters resampled)"),
              Line2D([], [], color="black", marker=".", ls=":", label="all evidence found")]
    handles, _ = axes[0][-1].get_legend_handles_labels()
    axes[0][-1].legend(handles=handles + styles, fontsize=7, loc="lower right")
    return _finish(fig, f"Evidence recall of retrieval, {questions} QA questions ({qa_set} set) of "
                   f"{plural(characters, 'character')} (no LLM)")


def budget_recall_figure(table: pd.DataFrame, characters: int, questions: int, tokenizer: str, qa_set: str = "paper"):
    """Evidence recall against the context budget (last chunk cut to fit): a line per splitter, a panel per
    embedder, a row per unit. ``table``: :func:`rpa_lib.evaluation.evidence.budget_table` for one question set."""
    labels, units = list(dict.fromkeys(table.embedder)), list(dict.fromkeys(table.unit))
    fig, axes = plt.subplots(len(units), len(labels), figsize=(5.2 * len(labels), 3.8 * len(units)), squeeze=False,
                             sharey=True)
    for row, unit in zip(axes, units):
        for ax, emb in zip(row, labels):
            part = table[(table.embedder == emb) & (table.unit == unit)]
            for splitter, g in part.groupby("splitter", sort=False):
                color = _NAMED_COLORS.get(splitter, "#55A868")
                ax.plot(g.budget_last_chunk_cut, g.recall, marker="o", ls="--" if "(document)" in splitter else "-",
                        label=splitter, color=color)
                error_bars(ax, g.budget_last_chunk_cut, g, "recall", color=color)
            ax.set(xlabel=f"context budget ({unit})", title=emb, ylim=(0, 1.02))
            ax.grid(alpha=0.3)
        row[0].set_ylabel("evidence recall (95% interval:\ncharacters resampled)")
    axes[0][-1].legend(fontsize=8, loc="lower right")
    return _finish(fig, f"Evidence recall at equal context budgets, {questions} QA questions ({qa_set} set) of "
                   f"{plural(characters, 'character')} (no LLM; the last chunk cut to the budget; tokens counted "
                   f"with {tokenizer})")


FEW_CHARACTERS = 6  # below it a cluster interval over characters is not drawn: too few clusters to mean anything


def duplication_figure(freqs: pd.DataFrame, rates: pd.DataFrame, items: int, characters: int, label: str):
    """AMADEUS Figure 1: how many chunks 1, 2, ... questions used, Naive RAG beside AMADEUS, and each one's average
    chunk usage rate with its 95% interval beside the paper's. ``rates``: :func:`rpa_lib.paper.figure1_rates`."""
    fig, (ax, side) = plt.subplots(1, 2, figsize=(9.5, 4.2), gridspec_kw={"width_ratios": [3, 1]})
    top = max(items, int(freqs.uses.max()) if len(freqs) else 1)  # every frequency from 1 to the questions asked
    bins = np.arange(1, top + 2)
    shown = ["naive_rag", "amadeus"]
    rate = rates.set_index("method").reindex(shown)
    few = int(rate.n_characters.max()) if "n_characters" in rate and rate.n_characters.notna().any() else characters
    no_interval = f"no interval ({plural(few, 'character')})" if few < FEW_CHARACTERS else ""
    if no_interval:  # an interval from so few clusters says nothing: none drawn
        rate = rate.assign(usage_rate_low=np.nan, usage_rate_high=np.nan)
    for offset, m in ((-0.2, "naive_rag"), (0.2, "amadeus")):
        counts = np.bincount(freqs[freqs.method == m].uses, minlength=top + 1)[1:]
        r = rate.loc[m]
        usage = interval_text(r.usage_rate, r.usage_rate_low, r.usage_rate_high, "{:.2%}")
        usage += f", {no_interval}" if no_interval else ""
        ax.bar(bins[:-1] + offset, counts, width=0.4, color=METHOD_COLORS[m],
               label=f"{method_label(m)}: avg. chunk usage {usage} (paper {r.paper_rate:.2%})")
    ax.set(xlabel=f"duplication frequency: questions (of {items}) that used the chunk",
           ylabel="chunks (all characters)", xticks=bins[:-1])
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), frameon=False)  # below, off the bars
    x = np.arange(len(shown))
    side.bar(x, rate.usage_rate, 0.6, color=[METHOD_COLORS[m] for m in shown], edgecolor="black", linewidth=0.6)
    error_bars(side, x, rate, "usage_rate")
    side.plot(x, rate.paper_rate, marker="D", ls="none", mfc="white", mec="black", label="paper (GPT-4.1)")
    if "ceiling_rate" in rate and rate.ceiling_rate.notna().any():  # the most our questions could use
        side.hlines(rate.ceiling_rate, x - 0.4, x + 0.4, colors="crimson", linestyles="--", lw=2,
                    label="our ceiling: chunks shown / persona chunks")
    side.set_xticks(x, [method_label(m) for m in shown], fontsize=8)
    side.set_ylabel("avg. chunk usage rate")
    notes = rate.interval_note.dropna().unique() if "interval_note" in rate else []
    shown_ci = no_interval or f"95% interval: {BOOTSTRAP}" + "".join(f"; {n}" for n in notes)
    paper_items = PAPER_ITEMS["mbti"]
    design = ("" if (items, characters) == (paper_items, PAPER_CHARACTERS) else
              f", not comparable to the paper's rate ({paper_items} questions, {PAPER_CHARACTERS} characters)")
    side.set_title(textwrap.fill(f"ours is bounded by its ceiling (red dashes){design}; {shown_ci}", 45), fontsize=7)
    side.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.12), frameon=False)
    return _finish(fig, f"Chunk duplication on MBTI questions, {plural(characters, 'character')} (our rate is bounded "
                   f"by the ceiling its question count allows)\n{label}", fontsize=10)


def settings_text(settings: dict) -> str:
    """A method-settings dict as prose. ``settings_text({"amadeus": {"k": 3}}) == "AMADEUS: k 3"``"""
    return "; ".join(f"{method_label(m)}: " + ", ".join(f"{k} {v}" for k, v in given.items())
                     for m, given in settings.items())


def _method_name(m: str, context: pd.DataFrame | None, qname: str) -> str:
    """The method's label, saying so where no context reached its LLM (``context``: mean context_chars by method
    and questionnaire) though it is meant to retrieve some: its answers are No RAG's."""
    if m.startswith("paper"):
        return m
    got = context[(context.method == m) & (context.questionnaire == qname)] if context is not None else []
    empty = m != "no_rag" and len(got) and (got.context_chars == 0).all()
    return method_label(m) + (" (no context: 0 characters)" if empty else "")


def personality_figure(per_dim: pd.DataFrame, types: pd.DataFrame, characters: int, label: str,
                       context: pd.DataFrame | None = None, names: dict[str, str] | None = None):
    """Tables 4-5 per dimension: the share of characters with the right letter by method, beside the paper's
    AMADEUS (hatched); each title gives our share of undecided letters. For one character in one run, whose shares
    are all 0 or 1, the letters themselves (:func:`letters_figure`). ``context``: see :func:`_method_name`."""
    if characters == 1 and not types.duplicated(["method", "questionnaire"]).any():  # several runs: shares
        return letters_figure(per_dim, types, label, context, names)
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.2), gridspec_kw={"width_ratios": [4, 5]})
    colors = {**METHOD_COLORS, "paper AMADEUS (GPT-4.1)": "#ffffff"}
    for ax, (qname, title) in zip(axes, [("mbti", "MBTI (Table 4)"), ("bigfive", "Big Five SLOAN (Table 5)")]):
        d = per_dim[per_dim.questionnaire == qname]
        shown = list(dict.fromkeys(d.method))
        x, width = np.arange(d.dimension.nunique()), 0.8 / len(shown)
        for i, m in enumerate(shown):
            v, at, paper = d[d.method == m], x + _offset(i, len(shown), width), m.startswith("paper")
            bars = ax.bar(at, v.accuracy, width, label=_method_name(m, context, qname),
                          color=colors.get(m, plt.cm.tab20(i)), edgecolor="black", hatch="//" if paper else None,
                          linewidth=0.6)
            ax.bar_label(bars, fmt="%.2g", fontsize=7, padding=1)
            error_bars(ax, at, v, "accuracy")
        ours = types[types.questionnaire == qname].predicted.str.cat()
        undecided = (ours.count("-") + ours.count("?")) / max(len(ours), 1)
        ax.set(xticks=x, xticklabels=list(dict.fromkeys(d.dimension)), ylim=(0, 1.1),
               ylabel="share of characters with the right letter\n(whiskers: 95% exact binomial interval)")
        ax.set_title(f"{title}; our undecided letters: {undecided:.0%}", fontsize=10)
        ax.axhline(0.5, color="grey", lw=0.6, ls=":", label="chance (one letter of two)" if qname == "bigfive" else None)
    axes[1].legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, frameon=False)
    return _finish(fig, f"Per-dimension accuracy, {plural(characters, 'character')}. {label}", fontsize=9)


def letters_figure(per_dim: pd.DataFrame, types: pd.DataFrame, label: str, context: pd.DataFrame | None = None,
                   names: dict[str, str] | None = None):
    """Tables 4-5 for one character: the letter each method gave on each dimension (``per_dim.letters``), green
    where it is the character's, red where it is not, grey where undecided; each title says how many items a letter
    rests on (``types.n_rated``), ours and the paper's."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 0.45 * per_dim.method.nunique() + 1.6),
                             gridspec_kw={"width_ratios": [4, 5]})
    shades = {1: "#9fd89f", 0: "#f2a7a7", -1: "#e0e0e0"}  # right, wrong, undecided
    rows = None  # the left panel's method names
    for ax, (qname, title) in zip(axes, [("mbti", "MBTI (Table 4)"), ("bigfive", "Big Five SLOAN (Table 5)")]):
        d = per_dim[per_dim.questionnaire == qname]
        dims, shown = list(dict.fromkeys(d.dimension)), list(dict.fromkeys(d.method))
        truth = types[types.questionnaire == qname].truth.iloc[0]
        for row, m in enumerate(shown):
            given = d[d.method == m]
            for col, (letter, right) in enumerate(zip(given.letters, given.accuracy)):
                ax.add_patch(plt.Rectangle((col - 0.5, row - 0.5), 1, 1, edgecolor="white",
                                           facecolor=shades[int(right) if letter.isalpha() else -1]))
                ax.text(col, row, letter, ha="center", va="center", fontsize=11)
        ax.set(xlim=(-0.5, len(dims) - 0.5), ylim=(len(shown) - 0.5, -0.5))
        ax.set_xticks(range(len(dims)), [f"{dim}\n(is {t})" for dim, t in zip(dims, truth)])
        labels = [_method_name(m, context, qname) for m in shown]
        ax.set_yticks(range(len(shown)), [] if labels == rows else labels)  # the right panel: only where they differ
        rows = rows or labels
        rated = types[types.questionnaire == qname].get("n_rated", pd.Series(dtype=float)).max()
        per, paper = rated / len(dims), QUESTIONNAIRE_ITEMS[qname][1]  # items a letter rests on
        items = plural(int(per) if per % 1 == 0 else round(per, 1), "item")
        per_letter = "" if pd.isna(per) else f"\na letter from {items} (paper {paper})"
        ax.set_title(title + per_letter, fontsize=10)
    axes[1].legend(handles=[Patch(color=c, label=n) for c, n in zip(shades.values(), ["right", "wrong", "undecided"])],
                   loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, frameon=False)
    who = types.character.iloc[0] if "character" in types else "one character"
    return _finish(fig, f"The letters each method gave {(names or {}).get(who, who)} (a share needs more characters). "
                   f"{label}", fontsize=9)


def _ours_labels(ax, at, rows: pd.DataFrame, metric: str) -> None:
    """Our values above their whiskers, "no interval" where the interval is NaN (not drawn as if certain)."""
    low, high = (rows.get(f"{metric}_{end}", pd.Series(np.nan, index=rows.index)) for end in ("low", "high"))
    for xi, value, lo, hi in zip(at, rows[metric], low, high):
        if not pd.isna(value):
            none = pd.isna(lo) or pd.isna(hi)
            ax.text(xi, value if none else max(value, hi), f" {value:.2g}" + (" no interval" if none else ""),
                    rotation=90, ha="center", va="bottom", fontsize=6)


def qa_figure(long: pd.DataFrame, breakdown: pd.DataFrame, label: str):
    """AMADEUS Table 6 on CharacterRAG: ACC, ACC_L and HS per method, ours beside the paper's LLMs (hatched), and our
    ACC per QA attribute. ``long``: :func:`rpa_lib.paper.table6_beside_paper`'s numbers; ``breakdown``:
    :func:`rpa_lib.evaluation.qa.attribute_breakdown`."""
    fig, axes = plt.subplots(1, 4, figsize=(20, 4.4), gridspec_kw={"width_ratios": [5, 5, 5, 4]})
    qa = long[long.task == "CharacterRAG"]
    methods = list(dict.fromkeys(qa.method))
    groups = list(dict.fromkeys(zip(qa.source, qa.llm)))
    x, width = np.arange(len(methods)), 0.8 / max(len(groups), 1)
    shades = ["#ffffff", "#d9d9d9", "#a6a6a6"]
    ours_as = qa[qa.source == "ours"].drop_duplicates("method").set_index("method").ours_method
    named = [m if ours_as.get(m, m) == m else f"{m} (ours: {ours_as[m]})" for m in methods]
    for ax, metric, title, top in ((axes[0], "acc", "ACC (share judged to contain the answer)", 1.3),
                                   (axes[1], "acc_l", "ACC_L (1-10)", 13),
                                   (axes[2], "hs", "HS (1-10; lower: fewer unsupported facts)", 13)):  # room for labels
        paper_i = 0
        for i, (source, llm) in enumerate(groups):
            rows = qa[(qa.source == source) & (qa.llm == llm)].set_index("method").reindex(methods)
            v, at, ours = rows[metric], x + _offset(i, len(groups), width), source == "ours"
            color = "#DD8452" if ours else shades[paper_i % len(shades)]
            paper_i += not ours
            bars = ax.bar(at, v.fillna(0), width, color=color, edgecolor="black", linewidth=0.6,
                          hatch=None if ours else "//", label=f"ours ({llm})" if ours else f"paper, {llm}")
            if ours:  # our 95% interval: characters resampled (none with one character)
                error_bars(ax, at, rows, metric)
                _ours_labels(ax, at, rows, metric)
            else:
                ax.bar_label(bars, labels=["-" if pd.isna(a) else f"{a:.2g}" for a in v], fontsize=6, padding=2,
                             rotation=90)
        same = qa[qa.source == "ours"][metric].dropna()
        if len(same) > 1 and same.nunique() == 1:  # a judge that scores everything alike measures nothing
            ax.text(0.5, 0.98, textwrap.fill(f"ours: every method scored {same.iloc[0]:g}: the judge gave them all "
                                             "the same score, agreement not measurable", 50),
                    transform=ax.transAxes, ha="center", va="top", fontsize=7,
                    bbox={"facecolor": "white", "edgecolor": "grey", "alpha": 0.9})
        ax.set_xticks(x, [textwrap.fill(n, 12) for n in named], fontsize=8)
        ax.set_ylim(0, top)
        ax.set_title(title, fontsize=10)
    handles, names = axes[0].get_legend_handles_labels()
    fig.legend(handles, names, fontsize=8, frameon=False, loc="upper center", ncol=len(groups),
               bbox_to_anchor=(0.4, 0.0))
    ax = axes[3]
    if len(breakdown):
        wide = breakdown.pivot(index="attribute", columns="method", values="acc")
        wide = wide.loc[list(dict.fromkeys(breakdown.attribute)), list(dict.fromkeys(breakdown.method))]
        ax.imshow(wide.to_numpy(dtype=float), vmin=0, vmax=1, cmap="Greens", aspect="auto")
        for (r, c), value in np.ndenumerate(wide.to_numpy(dtype=float)):
            ax.text(c, r, "-" if np.isnan(value) else f"{value:.2f}", ha="center", va="center", fontsize=8,
                    color="white" if value > 0.6 else "black")
        ax.set_xticks(range(wide.shape[1]), [textwrap.fill(method_label(m), 12) for m in wide.columns], fontsize=8)
        ax.set_yticks(range(wide.shape[0]), [a.replace(" and ", " & ") for a in wide.index], fontsize=8)
    ax.set_title("our ACC per QA attribute", fontsize=10)
    return _finish(fig, f"AMADEUS Table 6 (CharacterRAG): ACC, ACC_L and HS. {label}", fontsize=9)


def table2_figure(long: pd.DataFrame, label: str, intervals: dict | None = None, paper: dict | None = None,
                  alphas: dict | None = None, characters: int | None = None):
    """AMADEUS Table 2's ratings: per task, each rater's count of each rating 1-5 (stacked) and the task's mean,
    with its 95% interval where ``intervals`` (``{task: (low, high)}``) has one (else why not: ``characters``
    and the samples rated), beside the paper's mean where ``paper`` (``{task: mu}``) has one, and Cronbach's alpha,
    ours beside the paper's, where ``alphas`` (``{task: (ours, paper)}``) has them."""
    intervals, paper, alphas = intervals or {}, paper or {}, alphas or {}
    tasks = [t for t in ("BFI", "MBTI") if t in set(long.task)] + sorted(set(long.task) - {"BFI", "MBTI"})
    fig, axes = plt.subplots(1, max(1, len(tasks)), figsize=(6 * max(1, len(tasks)), 4.2), squeeze=False)
    colors = plt.cm.RdYlGn(np.linspace(0.1, 0.9, 5))
    for ax, task in zip(axes[0], tasks):
        rows = long[long.task == task]
        counts = (rows.groupby(["rater", "rating"]).size().unstack(fill_value=0)
                  .reindex(columns=[1.0, 2.0, 3.0, 4.0, 5.0], fill_value=0))
        left = np.zeros(len(counts))
        for color, rating in zip(colors, counts.columns):
            ax.barh(counts.index, counts[rating], left=left, color=color, label=f"{rating:.0f}")
            left += counts[rating].to_numpy()
        ci = intervals.get(task, (np.nan, np.nan))
        notes = []
        if task in intervals and (pd.isna(ci[0]) or pd.isna(ci[1])):  # given, and NaN
            samples = rows.sample_id.nunique() if "sample_id" in long else None
            why = ", ".join(plural(n, noun) for n, noun in ((characters, "character"), (samples, "sample")) if n)
            notes.append(f"(no interval: {why})" if why else "(no interval)")
        ours_a, paper_a = alphas.get(task, (np.nan, np.nan))
        if not (pd.isna(ours_a) and pd.isna(paper_a)):
            notes.append("Cronbach's α " + ("-" if pd.isna(ours_a) else f"{ours_a:.2f}")
                         + ("" if pd.isna(paper_a) else f" (paper: {paper_a:.3g})"))
        ax.set_title(f"{task}: mean rating {interval_text(rows.rating.mean(), *ci, '{:.2f}')}"
                     + (f" (paper: {paper[task]:.2f}, human raters)" if paper.get(task) is not None else "")
                     + (f"\n{'; '.join(notes)}" if notes else ""), fontsize=10)
        ax.set_xlabel("samples")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes[0][-1].legend(title="rating", fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)
    return _finish(fig, f"AMADEUS Table 2 ratings per rater\n{label}", fontsize=9)


MIN_TAU_N = 4  # replies a tau must rest on to be drawn: from 2 or 3 it takes a few values, ±1 among them, by chance


def agreement_figure(agree: pd.DataFrame, means: pd.DataFrame, paper: pd.DataFrame, rungs: list[str], label: str):
    """CharacterCraft Table 6: our judge's Kendall's tau-b per dimension with and without the reference, beside the
    paper's GPT-4o, and its mean score per rung and dimension (with the reference)."""
    fig, axes = plt.subplots(1, 2, figsize=(14, 4.6), gridspec_kw={"width_ratios": [1.2, 1]})
    ax = axes[0]
    x = np.arange(len(DIMENSIONS))
    ours = {m: agree[agree["mode"] == m].set_index("dimension").reindex(DIMENSIONS) for m in ("with", "without")}
    bars = [(f"ours, {m} reference", rows.tau, rows.n) for m, rows in ours.items()]  # n: replies each tau rests on
    gpt = paper[paper.judge == "GPT-4o"].set_index("reference")
    bars += [(f"GPT-4o vs people, {ref} (paper)", gpt.loc[ref, list(DIMENSIONS)].astype(float) / 100, None)
             for ref in ("with", "without") if ref in gpt.index]
    width = 0.8 / len(bars)
    for i, (name, values, n) in enumerate(bars):
        at = x + _offset(i, len(bars), width)
        shown = values if n is None else values.where(n >= MIN_TAU_N)  # a tau from under 4 replies: no bar
        ax.bar(at, shown.to_numpy(dtype=float), width, label=name if shown.notna().any() else "_nolegend_",
               hatch="//" if n is None else None, alpha=0.6 if n is None else 1.0)
        if n is None:  # the paper's: no counts printed
            continue
        for xi, tau, count in zip(at, shown, n):  # how many replies each tau rests on; where it is undefined
            if not pd.isna(count):
                text = (f"n={count:.0f}, too few" if count < MIN_TAU_N else
                        f"n={count:.0f}" if not pd.isna(tau) else f"undef. (n={count:.0f})")
                ax.text(xi, 0, text, rotation=90, ha="center", va="bottom" if pd.isna(tau) or tau >= 0 else "top",
                        fontsize=6)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xticks(x, [NAMES[d] for d in DIMENSIONS], fontsize=7, rotation=30, ha="right")
    ax.set(ylabel="Kendall's tau-b",
           title="agreement per dimension (missing bar: undefined, under 4 replies or not judged)")
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.25), ncol=2, frameon=False)  # off the bars
    ax = axes[1]
    grid = (means[means["mode"] == "with"].pivot(index="rung", columns="dimension", values="mean")
            .reindex(index=rungs, columns=list(DIMENSIONS)))
    share = grid / pd.Series(TOP)[grid.columns]  # each dimension on its own scale (0-2, human-likeness 0-3)
    im = ax.imshow(share.to_numpy(dtype=float), cmap="viridis", aspect="auto", vmin=0, vmax=1)
    ax.set_xticks(range(len(DIMENSIONS)), [f"{NAMES[d]} (0-{TOP[d]})" for d in DIMENSIONS], fontsize=7, rotation=30,
                  ha="right")
    ax.set_yticks(range(len(rungs)), [r.replace("_", " ") for r in rungs], fontsize=8)
    for (i, j), v in np.ndenumerate(grid.to_numpy(dtype=float)):
        if not np.isnan(v):
            ax.text(j, i, f"{v:.1f}", ha="center", va="center", color="white" if share.iat[i, j] < 0.5 else "black",
                    fontsize=8)
    ax.set_title("judge's mean score per rung (with reference)")
    fig.colorbar(im, ax=ax, fraction=0.04, label="share of the dimension's top score")
    flat = [d for d in grid.columns if grid[d].notna().sum() > 1 and grid[d].nunique() == 1]  # one score, every rung
    same = ("" if not flat else ": the judge gave every rung the same scores: agreement not measurable"
            if len(flat) == grid.notna().any().sum() else f": the judge gave every rung the same score on "
            f"{', '.join(NAMES[d] for d in flat)}: agreement not measurable there")
    return _finish(fig, f"CharacterCraft Table 6 on our data{same}\n{label}", fontsize=9)


VERDICT_COLORS = {"supported": "#55A868", "contradicted": "#C44E52", "not distinguishable": "#8c8c8c",
                  "not testable": "#ffffff", "mixed": "#CCB974"}


def _verdict_color(v: str) -> str:
    return next((c for k, c in VERDICT_COLORS.items() if str(v).startswith(k)), "#ffffff")


def _untestable(verdict: str) -> str:
    """``"not testable: 1 character"`` from ``"not testable with this run: 1 character (SmolLM2 ...)"``."""
    return "not testable: " + re.split(r" \(|; ", str(verdict).split(": ", 1)[-1])[0]


def claims_figure(claims: pd.DataFrame, label: str):
    """The paper's claims as a forest plot: per claim the difference in its favour with its 95% interval, from the
    paper's printed evidence (squares) and this run (circles), filled by verdict. ``claims``:
    :func:`rpa_lib.evaluation.claims.claims_table`."""
    fig, ax = plt.subplots(figsize=(9, 0.42 * len(claims) + 1.6))
    y = np.arange(len(claims))[::-1]
    shapes = []
    for (col, marker, dy, who) in (("paper", "s", 0.15, "paper's printed evidence"), ("ours", "o", -0.15, "this run")):
        d = claims[f"{col}_difference"].astype(float) * claims.direction
        a, b = (claims[f"{col}_{end}"].astype(float) * claims.direction for end in ("low", "high"))
        n = claims.get(f"{col}_n_characters", pd.Series(np.nan, index=claims.index))
        for yi, di, low, high, v, ni in zip(y, d, np.fmin(a, b), np.fmax(a, b), claims[f"{col}_verdict"], n):
            if col == "ours" and str(v).startswith("not testable"):  # an estimate it cannot test: a note, no circle
                ax.text(0, yi + dy, " " + _untestable(v), fontsize=7, style="italic", color="dimgrey", va="center")
                continue
            if np.isnan(di):
                continue
            if not (np.isnan(low) or np.isnan(high)):
                ax.plot([low, high], [yi + dy] * 2, color="black", lw=1)
            ax.plot(di, yi + dy, marker=marker, ms=7, mfc=_verdict_color(v), mec="black", ls="none")
            if col == "ours" and not pd.isna(ni):  # how many characters the circle rests on
                ax.annotate(f"n={ni:.0f} char.", (di, yi + dy), xytext=(0, -6), textcoords="offset points",
                            ha="center", va="top", fontsize=6)
        shapes.append(Line2D([], [], marker=marker, mfc="#bbbbbb", mec="black", ls="none", label=who))
    ax.axvline(0, color="grey", lw=0.8, ls=":")
    def tick(r) -> str:  # a claim of several comparisons: which one the circle is
        n = getattr(r, "ours_comparisons", 1)
        return f"{r.claim_id}: {r.claim}" + (f" (circle: {r.ours_comparison}, first of {n:.0f})" if n > 1 else "")

    ax.set_yticks(y, [textwrap.fill(tick(r), 55) for r in claims.itertuples()], fontsize=7)
    ax.set_xlabel("difference in the claim's favour (95% interval: characters resampled)", fontsize=8)
    # two legends, each with its title, so a shape (whose evidence) is never read as a fill (which verdict)
    fills = [Patch(facecolor=c, edgecolor="black", label=k) for k, c in VERDICT_COLORS.items()]
    for handles, title, top in ((shapes, "shape: evidence", 1.0), (fills, "fill: verdict", 0.8)):
        fig.legend(handles=handles, title=title, fontsize=7, title_fontsize=7, loc="upper left", frameon=False,
                   bbox_to_anchor=(1.01, top), bbox_transform=ax.transAxes, alignment="left")
    ax.set_title(f"AMADEUS claims re-tested (fill: verdict; no point: no difference to draw, the verdict is in the "
                 f"table; each claim in its own units)\n{label}", fontsize=9, wrap=True)
    fig.tight_layout()
    return fig
