"""The content-word grounding check (:func:`rpa_lib.data.grounding.unsupported_words`), its reviewed list
(``grounding_reviewed.csv``) and how the validator and ``python -m rpa_lib.data grounding`` use them. Every expected
value below was worked out by hand from the small texts in this file (or the fixture character Ada Lindqvist)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from rpa_lib import paths
from rpa_lib.data import main, validate
from rpa_lib.data.grounding import content_words, stem, stems, unsupported_words
from rpa_lib.data.readers import read_grounding_reviewed
from rpa_lib.data.validate import grounding_report

ADA = "ada-lindqvist"
PERSONA = ("I keep the lighthouse on Varholm. My uncle taught me to repair the clockwork, and I still practise it. "
           "A storm broke the lamp, and I kept lanterns burning for four nights. I row to Skelde on Fridays.")


def test_stem_meets_the_usual_inflections():
    assert [stem(w) for w in ["stories", "story", "tries", "tried", "trying"]] == ["stori"] * 2 + ["tri"] * 3
    assert [stem(w) for w in ["burning", "burned", "burns", "burn"]] == ["burn"] * 4
    assert [stem(w) for w in ["makes", "making", "make", "stopped", "stop", "usually"]] == \
        ["mak", "mak", "mak", "stop", "stop", "usual"]
    assert [stem(w) for w in ["Himmel's", "boss", "bus"]] == ["himmel", "boss", "bus"]  # no plural -s to strip


def test_content_words_leave_out_stop_words_short_words_numbers_and_names():
    # "She", "the", "for", "on": short; "four": a number (the number check's); "after", "always": stop words;
    # "Skelde", "Varholm": names inside a sentence (the name check's); "Lanterns" starts the sentence: an ordinary word.
    words = content_words("Lanterns burned for four nights; after that she always rowed to Skelde, on Varholm.")
    assert words == [("lanterns", "lantern"), ("burned", "burn"), ("nights", "night"), ("rowed", "row")]
    assert content_words("Burning, burned, burns.") == [("burning", "burn")]  # once a stem, first form kept


def test_a_persona_fact_missing_from_the_evidence_is_flagged():
    answer = "Her uncle taught her to repair the clockwork."
    assert unsupported_words(answer, ["My uncle taught me."], "Who taught you?", stems(PERSONA)) == \
        ["repair", "clockwork"]


def test_a_paraphrase_in_the_evidence_is_not_flagged():
    # inflections meet (lanterns/lantern, burned/burning, nights/night); "candles" is not in the persona, so it
    # cannot point to a missing sentence; "storm" is in the question.
    answer = "In the storm she kept a lantern and candles burned for nights."
    evidence = ["A storm broke the lamp, and I kept lanterns burning for four nights."]
    assert unsupported_words(answer, evidence, "What did you do in the storm?", stems(PERSONA)) == []


def test_a_word_of_the_question_or_the_name_is_not_flagged():
    assert unsupported_words("She repairs clockwork.", ["I still practise it."], "Can you repair clockwork?",
                             stems(PERSONA)) == []


def _add_reviewed(data_dir: Path, *rows: str) -> Path:
    path = data_dir / "grounding_reviewed.csv"
    path.write_text("id,word,reason\n" + "".join(r + "\n" for r in rows), encoding="utf-8")
    return path


def _edit_answer(data_dir: Path, lineno: int, answer: str) -> Path:
    path = data_dir / "characters" / ADA / "qa.jsonl"
    lines = path.read_text(encoding="utf-8").split("\n")
    lines[lineno - 1] = json.dumps({**json.loads(lines[lineno - 1]), "answer": answer})
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def test_the_validator_fails_on_an_unreviewed_word_and_passes_once_it_is_reviewed(data_copy):
    # Ada's evidence for pair 01 is "I am Ada Lindqvist, a lighthouse keeper of thirty-four on the island of
    # Varholm."; "harbour" and "town" are persona words (Skelde is "the harbour town") that it lacks.
    path = _edit_answer(data_copy, 1, "She keeps the lighthouse on Varholm, far from the harbour town.")
    assert validate(data_copy, full=False) == [
        f"{path}:1: the answer of {ADA}-01 uses 'harbour', 'town': persona words in no evidence string (add the "
        f"persona sentence that says it, or review the word in grounding_reviewed.csv)"]
    reviewed = _add_reviewed(data_copy, f"{ADA}-01,harbour,paraphrase", f"{ADA}-01,Towns,general knowledge")
    assert validate(data_copy, full=False) == []  # matched by stem, case ignored
    report = grounding_report(data_copy)
    assert report.counts() == {"pairs flagged": 1, "words flagged": 2, "words reviewed": 2, "pairs unreviewed": 0,
                               "words unreviewed": 0, "stale rows": 0}
    assert report.flagged[0].reviewed == {"harbour": "paraphrase", "town": "general knowledge"}
    assert reviewed.is_file()


def test_a_stale_or_malformed_review_row_is_a_problem(data_copy):
    path = _add_reviewed(data_copy, f"{ADA}-01,lighthouse,was flagged once", f"{ADA}-02,oil,", f"{ADA}-99,lamp,gone",
                         "bram-okafor-01,ferry,another character")
    assert validate(data_copy, [ADA], full=False) == [
        f"{path}:3: id, word and reason must all be filled in",
        f"{path}:2: {ADA}-01 'lighthouse' is not flagged (no such pair, or its evidence or answer changed): remove the row",
        f"{path}:4: {ADA}-99 'lamp' is not flagged (no such pair, or its evidence or answer changed): remove the row"]
    assert len(validate(data_copy, full=False)) == 4  # every character checked: bram-okafor's row is stale too
    path.write_text("id,word\nx,y\n", encoding="utf-8")
    assert read_grounding_reviewed(path) == ([], [(1, "header must be id,word,reason, found id,word")])
    path.write_text("id,word,reason\na-01,town,x\na-01,TOWN,y\n", encoding="utf-8")
    assert read_grounding_reviewed(path)[1] == [(3, "a-01 'town' is listed twice (first at line 2)")]


def test_grounding_command_lists_flags_and_prints_rows_to_review(data_copy, capsys):
    path = _edit_answer(data_copy, 1, "She keeps the lighthouse on Varholm, far from the harbour town.")
    _add_reviewed(data_copy, f"{ADA}-01,harbour,paraphrase")
    assert main(["grounding", "--data-dir", str(data_copy)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out == [f"{path}:1: {ADA}-01: harbour (reviewed: paraphrase); town",
                   "content-word check: 2 character(s), 12 pairs; 1 pairs flagged with 2 words, 1 reviewed in "
                   "grounding_reviewed.csv; unreviewed: 1 words in 1 pairs; stale rows: 0"]
    assert main(["grounding", "--data-dir", str(data_copy), "--csv"]) == 1
    assert capsys.readouterr().out == f"{ADA}-01,town,\n"  # the reason is left for the reviewer
    _add_reviewed(data_copy, f"{ADA}-01,harbour,paraphrase", f"{ADA}-01,town,paraphrase")
    assert main(["grounding", "--data-dir", str(data_copy), "--unreviewed"]) == 0
    assert capsys.readouterr().out.startswith("content-word check: 2 character(s), 12 pairs; 1 pairs flagged")


def test_the_whole_dataset_is_checked_in_seconds_and_the_same_way_twice():
    start = time.perf_counter()
    first = grounding_report(paths.DATA_DIR)
    assert time.perf_counter() - start < 20  # about 1 s on an idle machine
    second = grounding_report(paths.DATA_DIR)
    assert [(f.qa.id, f.words, f.reviewed) for f in first.flagged] == \
        [(f.qa.id, f.words, f.reviewed) for f in second.flagged]
    assert first.pairs == 525 and first.file_problems == [] and first.stale == []
