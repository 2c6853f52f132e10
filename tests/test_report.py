"""Tables (CSV + LaTeX) and figures (PDF + PNG + CSV) written to explicit folders."""

from __future__ import annotations

import json
import re

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from rpa_lib.data import DataError  # noqa: E402
from rpa_lib.paper import paper_table  # noqa: E402
from rpa_lib.report import (  # noqa: E402
    Timer,
    caption_line,
    notebook_parameters,
    output_dirs,
    run_label,
    save_figure,
    save_run_record,
    save_table,
)


@pytest.fixture
def table() -> pd.DataFrame:
    return pd.DataFrame({"splitter": ["Vanilla", "ATS", "ACTS"], "embedder": ["hash_64", "hash_64", "TF-IDF & co"],
                         "sum_mu": [1.234567, 2.0, np.nan], "sum_var": [0.1, 0.05, 0.025], "n_chars": [2, 2, 2]})


def test_save_table_writes_csv_and_latex(tmp_path, table):
    out = save_table(table, "table1_similarity", tmp_path / "results", caption="Scores of top_k chunks, 5% noise")
    assert out == {"csv": tmp_path / "results" / "table1_similarity.csv",
                   "tex": tmp_path / "results" / "table1_similarity.tex"}
    pd.testing.assert_frame_equal(pd.read_csv(out["csv"]), table)

    tex = out["tex"].read_text()
    assert r"\begin{table}[t]" in tex and r"\toprule" in tex and r"\bottomrule" in tex
    assert r"\caption{Scores of top\_k chunks, 5\% noise}" in tex
    assert r"\label{tab:table1_similarity}" in tex
    assert r"splitter & embedder & sum\_mu & sum\_var & n\_chars \\" in tex
    assert r"Vanilla & hash\_64 & 1.2346 & 0.1000 & 2 \\" in tex
    assert r"ACTS & TF-IDF \& co & - & 0.0250 & 2 \\" in tex  # NaN shown as "-", "&" escaped
    # Outside \label{...}, every underscore is escaped.
    assert not re.search(r"(?<!\\)_", re.sub(r"\\label\{[^}]*\}", "", tex))


def test_save_table_float_format_and_index(tmp_path, table):
    out = save_table(table.set_index("splitter"), "t", tmp_path, float_format="{:.1f}", index=True)
    assert pd.read_csv(out["csv"]).columns[0] == "splitter"
    assert "1.2 &" in out["tex"].read_text()


def test_save_figure_writes_pdf_png_and_csv(tmp_path, table):
    fig, ax = plt.subplots()
    ax.bar(table.splitter, table.sum_var)
    out = save_figure(fig, "table1_similarity", tmp_path / "figures", data=table)
    assert set(out) == {"pdf", "png", "csv"}
    assert out["pdf"].read_bytes().startswith(b"%PDF")
    assert out["png"].read_bytes().startswith(b"\x89PNG")
    pd.testing.assert_frame_equal(pd.read_csv(out["csv"]), table)
    assert out["pdf"].parent == tmp_path / "figures"

    without = save_figure(fig, "no_numbers", tmp_path / "figures")
    assert set(without) == {"pdf", "png"} and not (tmp_path / "figures" / "no_numbers.csv").exists()
    plt.close(fig)


def test_output_dirs_and_labels(tmp_path):
    figs, res = output_dirs(str(tmp_path / "f"), tmp_path / "r")
    assert (figs, res) == (tmp_path / "f", tmp_path / "r") and figs.is_dir() and res.is_dir()
    assert run_label("fake", "hash-64") == "LLM: fake | embedder: hash-64"
    assert run_label(embedder="minilm") == "embedder: minilm" and run_label() == ""


def test_save_run_record(tmp_path):
    path = save_run_record("table1_similarity", tmp_path, k=5, embedders=["hash-64"], when=np.float64(1.5))
    record = json.loads(path.read_text())
    assert path == tmp_path / "table1_similarity.run.json"
    assert (record["name"], record["k"], record["embedders"]) == ("table1_similarity", 5, ["hash-64"])
    assert "finished" in record and "python" in record


def test_run_record_reads_the_notebooks_parameters(tmp_path):
    namespace = {"k": 3, "characters": None, "results_dir": str(tmp_path), "splitters": ["ATS"], "unrelated": 1}
    params = notebook_parameters("02_similarity_scores", namespace)
    assert params == {"k": 3, "characters": None, "splitters": ["ATS"]}  # declared and set; output folders left out
    record = json.loads(save_run_record("t", tmp_path, parameters=params, characters=["ada"]).read_text())
    assert (record["k"], record["characters"], record["splitters"]) == (3, ["ada"], ["ATS"])  # a field wins
    with pytest.raises(ValueError, match="99_missing: no notebook of that name"):
        notebook_parameters("99_missing", namespace)


def test_timer_and_caption_line():
    timing = Timer()
    with timing("judge check") as step:
        step["items"] = 4
    with timing("ratings", items=2):
        pass
    assert [(r["step"], r["items"]) for r in timing.rows] == [("judge check", 4), ("ratings", 2)]
    assert all(r["seconds"] >= 0 for r in timing.rows) and list(timing.table().columns) == ["step", "items", "seconds"]
    assert caption_line("LLM raters", ("judge", "fake"), ("GS N", None), "", None, ("k", 0)) == \
        "LLM raters | judge: fake | k: 0"


def test_paper_table():
    t = paper_table("table1_similarity")
    assert {"splitter", "embedder", "sum_mu", "sum_var"} <= set(t.columns)
    with pytest.raises(DataError, match="no transcribed paper table named 'table99'; known: "):
        paper_table("table99")


def test_figure1_draws_each_methods_usage_rate_with_its_interval():
    from rpa_lib.paper import figure1_rates
    from rpa_lib.plots import duplication_figure

    stats = pd.DataFrame({"method": ["naive_rag", "naive_rag", "amadeus", "amadeus", "amadeus"],
                          "character": ["a", "b", "a", "b", "a"], "question_set": ["MBTI"] * 4 + ["CharacterRAG"],
                          "usage_rate": [0.2, 0.4, 0.5, 0.3, 0.9]})
    rates = figure1_rates(stats).set_index("method")
    # two characters: the percentile cluster bootstrap runs from one character's rate to the other's
    assert rates.loc["amadeus", ["usage_rate", "usage_rate_low", "usage_rate_high"]].tolist() == pytest.approx([0.4, 0.3, 0.5])
    assert rates.paper_rate.tolist() == [0.3493, 0.4384]  # Figure 1's printed Naive RAG and AMADEUS rates
    freqs = pd.DataFrame({"method": ["naive_rag", "amadeus", "amadeus"], "uses": [1, 1, 2]})
    # two characters: no interval drawn, said so; the ceiling a dashed tick on each bar
    fig = duplication_figure(freqs, rates.reset_index().assign(ceiling_rate=[0.25, 0.3]), 4, 2, "fake run")
    side = fig.axes[1]
    assert not [c for c in side.containers if hasattr(c, "has_yerr") and c.has_yerr]
    assert "no interval (2 characters)" in fig.axes[0].get_legend().get_texts()[1].get_text()
    title = side.get_title().replace("-\n", "-").replace("\n", " ")
    assert "bounded by its ceiling (red dashes), not comparable to the paper's rate" in title
    (ticks,) = [c for c in side.collections if c.get_linestyle()[0][1]]  # the dashed ceilings
    assert [s[0, 1] for s in ticks.get_segments()] == [0.25, 0.3]
    plt.close(fig)
    six = rates.reset_index().assign(n_characters=6, interval_note=None)  # six characters: the interval drawn
    fig = duplication_figure(freqs, six, 4, 6, "fake run")
    (bars,) = [c for c in fig.axes[1].containers if hasattr(c, "has_yerr") and c.has_yerr]  # the error bars drawn
    segments = bars.lines[2][0].get_segments()
    assert np.concatenate([s[:, 1] for s in segments]) == pytest.approx([0.2, 0.4, 0.3, 0.5])  # Naive RAG, AMADEUS
    assert "cluster bootstrap over characters" in fig.axes[1].get_title().replace("\n", " ")
    assert "[30.00%, 50.00%]" in fig.axes[0].get_legend().get_texts()[1].get_text()
    plt.close(fig)
    fig = duplication_figure(freqs, six.assign(n_characters=15), 60, 15, "paper run")  # the paper's own design
    assert "not comparable" not in fig.axes[1].get_title().replace("\n", " ")
    plt.close(fig)


def test_a_long_run_caption_wraps_to_the_figures_width(tmp_path):
    """A figure's title names the whole run (models, settings, CRAG's departures: 1,500 characters or more): wrapped
    to the figure's width, the saved image stays as wide as the figure instead of some thousands of pixels."""
    from PIL import Image

    from rpa_lib.plots import duplication_figure

    rates = pd.DataFrame({"method": ["amadeus"], "usage_rate": [0.4], "usage_rate_low": [0.3],
                          "usage_rate_high": [0.5], "paper_rate": [0.4384]})
    freqs = pd.DataFrame({"method": ["amadeus"], "uses": [1]})
    caption = " | ".join(f"setting {i}: a value that names part of the run" for i in range(40))
    fig = duplication_figure(freqs, rates, 4, 2, caption)
    title = fig.get_suptitle()
    assert title.replace("\n", " ").endswith(caption) and title.count("\n") >= 5
    width = fig.get_figwidth()
    save_figure(fig, "long", tmp_path)
    assert Image.open(tmp_path / "long.png").size[0] <= 1.1 * width * 200  # 200 dpi


def test_tables_4_5_for_one_character_show_its_letters_not_shares_of_0_or_1():
    """One character: each method's letter per dimension, coloured right, wrong or undecided. Two characters, or one
    in several runs: shares with their intervals."""
    from rpa_lib.plots import personality_figure

    dims = {"mbti": ["E/I", "S/N", "T/F", "J/P"], "bigfive": ["S/R", "L/C", "O/U", "A/E", "I/N"]}
    given = {("no_rag", "mbti"): "ENF-", ("amadeus", "mbti"): "INTJ", ("no_rag", "bigfive"): "RCUEN",
             ("amadeus", "bigfive"): "RCOEI"}
    truth = {"mbti": "INTP", "bigfive": "RCUEI"}
    types = pd.DataFrame([{"method": m, "questionnaire": q, "predicted": p, "truth": truth[q]}
                          for (m, q), p in given.items()])
    given.update({("paper AMADEUS (GPT-4.1)", "mbti"): "ISTP", ("paper AMADEUS (GPT-4.1)", "bigfive"): "RCUAI"})
    rows = [{"questionnaire": q, "dimension": d, "method": m, "accuracy": float(given[m, q][i] == truth[q][i]),
             "accuracy_low": 0.0, "accuracy_high": 1.0, "letters": given[m, q][i]} for q in dims
            for m in ("no_rag", "amadeus", "paper AMADEUS (GPT-4.1)") for i, d in enumerate(dims[q])]
    per_dim = pd.DataFrame(rows)
    fig = personality_figure(per_dim, types, 1, "fake run")
    mbti, bigfive = fig.axes
    assert [t.get_text() for t in mbti.texts] == list("ENF-" "INTJ" "ISTP")
    assert [t.get_text() for t in bigfive.texts][-5:] == list("RCUAI")
    colours = [matplotlib.colors.to_hex(p.get_facecolor()) for p in mbti.patches]
    right, wrong, undecided = "#9fd89f", "#f2a7a7", "#e0e0e0"
    assert colours[:4] == [wrong, right, wrong, undecided] and colours[8:] == [right, wrong, right, right]
    assert [t.get_text() for t in mbti.get_xticklabels()] == ["E/I\n(is I)", "S/N\n(is N)", "T/F\n(is T)", "J/P\n(is P)"]
    assert [t.get_text() for t in bigfive.get_yticklabels()] == ["", "", ""]  # the same rows as the left panel
    plt.close(fig)
    for shares in (personality_figure(per_dim, types, 2, "fake run"),  # two characters, or one in two runs
                   personality_figure(per_dim, pd.concat([types, types]), 1, "fake run")):
        assert len(shares.axes[0].patches) == 12 and "our undecided letters: 12%" in shares.axes[0].get_title()  # bars
        plt.close(shares)


def test_the_letters_figure_names_the_character_the_items_a_letter_rests_on_and_an_empty_context():
    """LightRAG on an empty graph puts nothing before its LLM: its letters are No RAG's, and the row says why."""
    from rpa_lib.plots import personality_figure, settings_text

    dims = {"mbti": (["E/I", "S/N", "T/F", "J/P"], "INTP"), "bigfive": (["S/R", "L/C", "O/U", "A/E", "I/N"], "RCUEI")}
    rows = [{"questionnaire": q, "dimension": d, "method": m, "accuracy": 1.0, "letters": letter}
            for q, (ds, truth) in dims.items() for m in ("no_rag", "lightrag") for d, letter in zip(ds, truth)]
    types = pd.DataFrame([{"method": m, "questionnaire": q, "character": "frieren", "predicted": truth, "truth": truth,
                           "n_rated": len(ds)} for q, (ds, truth) in dims.items() for m in ("no_rag", "lightrag")])
    context = pd.DataFrame({"method": ["no_rag", "lightrag"], "questionnaire": "mbti", "context_chars": [0.0, 0.0]})
    fig = personality_figure(pd.DataFrame(rows), types, 1, "run", context=context, names={"frieren": "Frieren"})
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["No RAG", "LightRAG (no context: 0 characters)"]
    assert ax.get_title() == "MBTI (Table 4)\na letter from 1 item (paper 15)"
    assert "The letters each method gave Frieren" in fig.get_suptitle()
    plt.close(fig)
    assert settings_text({"amadeus": {"extract_format": "text"}, "crag": {"search_k": 3, "strip_sentences": 4}}) == \
        "AMADEUS: extract_format text; CRAG-offline: search_k 3, strip_sentences 4"


def test_table6_figure_says_when_the_judge_scored_every_method_alike_and_where_no_interval_is():
    from rpa_lib.plots import qa_figure

    ours = pd.DataFrame({"source": "ours", "llm": "tiny", "method": ["Naive RAG", "AMADEUS"], "ours_method": None,
                         "task": "CharacterRAG", "acc": [0.5, 0.75], "acc_low": [np.nan, 0.5], "acc_high": [np.nan, 1.0],
                         "acc_l": [7.0, 7.0], "hs": [1.0, 1.0]})
    paper = ours[["method", "task"]].assign(source="AMADEUS paper", llm="GPT-4.1", acc=0.9, acc_l=9.2, hs=[3.13, 2.89])
    fig = qa_figure(pd.concat([ours, paper], ignore_index=True), pd.DataFrame(), "run")
    acc, acc_l, hs = fig.axes[:3]
    texts = {t.get_text(): t for t in acc.texts}
    assert " 0.5 no interval" in texts and texts[" 0.75"].get_position()[1] == 1.0  # above the whisker
    assert not any("same score" in t.get_text() for t in acc.texts)
    for ax in (acc_l, hs):
        assert any("the judge gave them all the same score" in t.get_text().replace("\n", " ") for t in ax.texts)
    assert hs.get_title().startswith("HS") and [t.get_text() for t in hs.texts if "3.1" in t.get_text()]  # the paper's
    plt.close(fig)


def test_the_kendall_figure_draws_no_tau_from_too_few_replies_and_says_when_every_rung_scored_alike():
    from rpa_lib.evaluation.metrics.charactercraft import DIMENSIONS
    from rpa_lib.plots import agreement_figure

    agree = pd.DataFrame([{"mode": "with", "dimension": d, "tau": -1.0 if d == "emo" else 0.5,
                           "n": 2 if d == "emo" else 6} for d in DIMENSIONS]
                         + [{"mode": "without", "dimension": "pers", "tau": np.nan, "n": 4}])
    rungs = ["in_character", "garbled"]
    means = pd.DataFrame([{"mode": "with", "dimension": d, "rung": r, "mean": 2.0} for d in DIMENSIONS for r in rungs])
    fig = agreement_figure(agree, means, paper_table("charactercraft_table6_kendall"), rungs, "run")
    ax = fig.axes[0]
    assert "n=2, too few" in [t.get_text() for t in ax.texts]
    heights = [p.get_height() for p in ax.containers[0].patches]  # ours, with reference
    assert np.isnan(heights[DIMENSIONS.index("emo")]) and heights[0] == 0.5
    assert "ours, without reference" not in [t.get_text() for t in ax.get_legend().get_texts()]  # all NaN
    assert [t.get_text() for t in ax.get_xticklabels()][:2] == ["Fluency", "Coherence"]
    assert "the judge gave every rung the same scores: agreement not measurable" in fig.get_suptitle()
    plt.close(fig)


def test_a_saved_figure_names_its_profile_and_characters(tmp_path, fixture_data):
    """A figure of the quick profile read as the paper's: its title now ends with the profile and the characters."""
    import yaml

    from rpa_lib import paths
    from rpa_lib.experiment import Experiment, profile_of

    ex = Experiment("05_qa_evaluation", {"data_dir": str(fixture_data), "llm": "fake", "characters": ["ada-lindqvist"],
                                         "figures_dir": str(tmp_path)})
    fig, _ = plt.subplots()
    fig.suptitle("Table 6")
    ex.save_figure(fig, "f")
    assert fig.get_suptitle() == "Table 6\ncharacters: Ada Lindqvist"  # no profile holds these settings
    plt.close(fig)
    quick = yaml.safe_load((paths.PROFILES_DIR / "quick.yaml").read_text())
    settings = {**quick["defaults"], **quick["notebooks"]["03_chunk_usage"]}
    assert profile_of("03_chunk_usage", settings) == "quick"
    assert profile_of("03_chunk_usage", {**settings, "max_iterations": 30}) is None


def test_table1_figure_gives_each_panels_paired_result_and_names_the_stand_in_embedders():
    from rpa_lib.plots import similarity_figure

    scores = pd.DataFrame([{"embedder": "TF-IDF", "splitter": s, "score": v} for s in ("vanilla", "acts")
                           for v in (0.1, 0.2, 0.3)])
    table = pd.DataFrame({"embedder": "TF-IDF", "splitter": ["Vanilla", "ACTS"], "sum_mu": [2.6, 1.8],
                          "sum_var": [0.1, 0.06], "sum_var_q": [0.03, 0.02]})
    paired = pd.DataFrame([{"task": "TF-IDF", "outcome": "mu", "method": "Vanilla", "reference": "ACTS",
                            "difference": 0.0991, "diff_low": 0.0936, "diff_high": 0.105, "characters_better": 15,
                            "n_characters": 15, "p_character": 6.1e-5}])
    fig = similarity_figure(scores, table, ["vanilla", "acts"], 5, 15, 450, paired=paired,
                            paper_embedders=["BGE-M3", "TF-IDF "])
    assert fig.axes[0].get_xlabel() == "μ: Vanilla − ACTS: +0.0991 [0.0936, 0.105], 15/15 characters higher, sign p=6e-05"
    assert [t.get_text() for t in fig.texts] == [fig.get_suptitle()]  # TF-IDF is one of the paper's here: no stand-in to name
    plt.close(fig)
    fig = similarity_figure(scores, table, ["vanilla", "acts"], 5, 15, 450, paper_embedders=["BGE-M3"])
    (footer,) = [t for t in fig.texts if t.get_text() != fig.get_suptitle()]
    assert footer.get_text().startswith("TF-IDF stand in for the paper's embedders (BGE-M3)")
    plt.close(fig)
    me5 = scores.assign(embedder="multilingual-e5-large-instruct")  # our label of the paper's mE5-large-instruct
    fig = similarity_figure(me5, table.assign(embedder="multilingual-e5-large-instruct"), ["vanilla", "acts"], 5, 15,
                            450, paper_embedders=["BGE-M3", "mE5-large-instruct"])
    assert [t.get_text() for t in fig.texts] == [fig.get_suptitle()]  # the paper's own embedder, not a stand-in
    plt.close(fig)
