"""RoleRAG on the fake backend: graph building with entity normalization, the on-disk graph cache and its cost,
failed extractions, the three retrieval routes, and the method end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rpa_lib.evaluation.runner import Job, index_costs, run_jobs
from rpa_lib.llm import FakeLLM, LLMError, RetryPolicy, Transient
from rpa_lib.methods import build_method
from rpa_lib.methods.rolerag_graph import entity_type, name_key
from rpa_lib.methods.rolerag_prompts import ANALYSIS_SCHEMA, EXTRACT_SCHEMA, MERGE_SCHEMA, boundary_note

FIXTURES = Path(__file__).parent / "fixtures" / "data"
ADA, BRAM = "ada-lindqvist", "bram-okafor"

# (a phrase of Ada's persona, the entity the fake extracts from a chunk holding it)
ENTITIES = [
    ("My uncle Per", {"name": "Per", "type": "person", "description": "Kept the light for thirty years."}),
    ("still writes to me", {"name": "Uncle Per", "type": "person", "description": "Gruff and kind; writes every month."}),
    ("Mira is the harbour master", {"name": "Mira", "type": "person", "description": "Harbour master of Skelde."}),
    ("alone with a book", {"name": "reading", "type": "hobby", "description": "An evening alone with a book."}),
    ("I can row", {"name": "rowing", "type": "Activity", "description": "Rowing in a heavy swell."}),
    ("harbour town of Skelde", {"name": "Skelde", "type": "location", "description": "The harbour town."}),
]
SYNONYMS = {"per", "uncle per"}
QUESTION = "Tell me about your uncle, your hobbies and Apollo 11."
ANALYSIS = [
    {"name": "Uncle Per", "type": "person", "relevant": True, "reason": "her uncle", "specificity": "specific"},
    {"name": "hobbies", "type": "activity", "relevant": True, "reason": "her pastimes", "specificity": "general"},
    {"name": "Apollo 11", "type": "event", "relevant": False, "reason": "a spaceflight far beyond her world",
     "specificity": "specific"},
]


def graph_fake(analysis=None, extract=None, log=None):
    """A FakeLLM answering every RoleRAG prompt in its expected format. ``extract(passage)`` may replace the
    extraction (return anything, e.g. invalid JSON); ``log`` collects (kind, purpose) of every round trip."""
    note = log.append if log is not None else (lambda purpose: None)

    def rule(kind, messages, spec):
        system, last = messages[0]["content"], messages[-1]["content"]
        if kind == "structured" and spec == EXTRACT_SCHEMA:
            passage = messages[1]["content"]
            note("extract")
            if extract is not None:
                return extract(passage)
            found = [e for phrase, e in ENTITIES if phrase in passage]
            return {"entities": [{"name": "I", "type": "person", "description": "A lighthouse keeper."}, *found],
                    "relations": [{"source": "I", "target": e["name"], "description": f"Ada knows {e['name']}."}
                                  for e in found]}
        if kind == "choose":  # the same-entity check of a candidate pair
            note("same")
            names = {name_key(line.split(":")[0][3:]) for line in last.splitlines() if line[:3] in ("1. ", "2. ")}
            return "same" if names <= SYNONYMS else "different"
        if kind == "structured" and spec == MERGE_SCHEMA:
            note("canonical")
            return {"name": "Uncle Per", "description": "Ada's uncle Per: kept the light, gruff and kind."}
        if kind == "structured" and spec == ANALYSIS_SCHEMA:
            return {"entities": ANALYSIS if analysis is None else analysis}
        if "help a role-playing system find" in system:
            return "She would talk about her uncle and her evenings."
        if "summarize" in system:
            return "A short summary."
        return "SYSTEM:" + system
    return FakeLLM(rule)


def make(llm, dataset=FIXTURES, **settings):
    settings = {"embedder": "hash-64", "chunk_length": 600, "overlap": 100, "merge_similarity": 0.5, **settings}
    return build_method("rolerag", llm, dataset=dataset, **settings)


# ---- the graph --------------------------------------------------------------------------------------------------

def test_synonyms_merge_into_one_canonical_node_with_merged_description():
    log = []
    m = make(graph_fake(log=log))
    g = m.index(ADA)
    nodes = dict(g.graph.nodes(data=True))
    assert g.node == "Ada Lindqvist" and "I" not in nodes  # the narrator is the character's node
    assert "Uncle Per" in nodes and "Per" not in nodes
    per = nodes["Uncle Per"]
    assert per["aliases"] == ["Per"] and per["type"] == "person"
    assert per["description"] == "Ada's uncle Per: kept the light, gruff and kind."
    assert {"Mira", "reading", "rowing", "Skelde"} <= set(nodes)
    assert nodes["reading"]["type"] == "activity" and nodes["Skelde"]["type"] == "place"  # types normalized
    assert g.graph.has_edge("Ada Lindqvist", "Uncle Per")
    assert "Ada knows Per." in g.graph.edges["Ada Lindqvist", "Uncle Per"]["description"]
    assert all(c.startswith(f"{ADA}:vanilla-600-100:") for c in per["chunks"]) and per["chunks"]
    cost = m.index_cost(ADA)
    assert log.count("canonical") == 1 and log.count("same") >= 1
    assert cost.merged_names == 1 and cost.names == cost.entities + 1 and cost.entities == len(nodes)
    assert cost.llm_calls == len(log) and cost.chunks == len(m.chunks(ADA)) == log.count("extract")
    assert cost.prompt_tokens > 0 and cost.failed_calls == 0 and cost.relations == g.graph.number_of_edges()


def test_names_the_llm_calls_different_stay_apart():
    m = make(graph_fake(), merge_similarity=-1.0)  # every pair is a candidate; only Per / Uncle Per are the same
    nodes = set(m.index(ADA).graph.nodes)
    assert {"Uncle Per", "Mira", "reading", "rowing", "Skelde", "Ada Lindqvist"} == nodes
    assert make(graph_fake(), merge_k=0).index(ADA).graph.has_node("Per")  # no normalization at all


def test_graph_is_cached_on_disk_and_rebuilt_when_the_persona_changes(data_copy):
    log = []
    first = make(graph_fake(log=log), dataset=data_copy)
    built = first.index(ADA)
    calls = len(log)
    again = make(graph_fake(log=log), dataset=data_copy)
    loaded = again.index(ADA)
    assert len(log) == calls and (built.source, loaded.source) == ("built", "disk")  # no LLM call the second time
    assert again.index_cost(ADA) == first.index_cost(ADA)
    assert set(loaded.graph.nodes) == set(built.graph.nodes)
    assert again.cache_path(ADA).parent.parent.name == "rolerag"
    assert json.loads(again.cache_path(ADA).read_text())["node"] == "Ada Lindqvist"
    persona = data_copy / "characters" / ADA / "persona.md"
    persona.write_text(persona.read_text() + "\nI also keep bees now.\n")
    assert make(graph_fake(log=log), dataset=data_copy).index(ADA).source == "built" and len(log) > calls
    assert make(graph_fake(), dataset=data_copy, merge_k=2).cache_key(ADA) != again.cache_key(ADA)


def test_graph_is_rebuilt_when_the_characters_name_or_work_changes(data_copy):
    """labels.csv's name and work are in the extraction prompts: a graph built for another work is stale."""
    first = make(graph_fake(), dataset=data_copy)
    key = first.cache_key(ADA)
    assert first.index(ADA).source == "built"
    labels = data_copy / "labels.csv"
    labels.write_text(labels.read_text().replace("Ada Lindqvist,Test Fixtures", "Ada Lindqvist,A Different Story"))
    again = make(graph_fake(), dataset=data_copy)
    assert again.cache_key(ADA) != key and again.index(ADA).source == "built"


def test_a_failed_extraction_is_counted_not_fatal():
    def extract(passage):
        if "Mira" in passage:
            return "this is not JSON"
        return {"entities": [{"name": "reading", "type": "activity", "description": "Books."}], "relations": []}

    m = make(graph_fake(extract=extract))
    cost = m.index_cost(ADA)
    assert cost.failed_extractions == 1 and cost.failed_calls == 1 and "Mira" not in m.index(ADA).graph
    r = m.respond(ADA, QUESTION)
    assert r.details["graph"]["failed_extractions"] == 1 and r.reply.startswith("SYSTEM:")


def test_a_fault_in_an_extraction_fails_the_build_and_nothing_is_cached():
    def extract(passage):
        if "Mira" in passage:
            raise Transient("HTTP 503")
        return {"entities": [], "relations": []}

    m = make(FakeLLM(graph_fake(extract=extract).rule, retry=RetryPolicy(attempts=2, base_delay=0.001, max_delay=0.001)))
    with pytest.raises(LLMError, match="failed after 2 attempts: HTTP 503"):
        m.index(ADA)  # not a graph with a hole where the fault was, saved for every later run
    assert not m.cache_path(ADA).exists()


def test_every_extraction_failing_still_answers_with_an_empty_graph():
    m = make(graph_fake(extract=lambda passage: {"wrong": 1}))
    r = m.respond(ADA, QUESTION)
    cost = m.index_cost(ADA)
    assert cost.failed_extractions == cost.chunks and cost.entities == 1  # the character's own node
    assert [i.role for i in r.context] == ["boundary"] and "Apollo 11" in r.context[0].text
    assert r.reply.startswith("SYSTEM:You are Ada Lindqvist")


# ---- the three routes -------------------------------------------------------------------------------------------

def test_specific_entity_brings_its_description_and_its_relation_to_the_character():
    r = make(graph_fake(analysis=ANALYSIS[:1]), k=1).context(ADA, "What about your uncle?")
    labels = [i.label for i in r.items]
    assert labels == ["profile", "entity: Uncle Per", "relation: Ada Lindqvist — Uncle Per"]  # nothing out of scope
    entity = r.items[1]
    assert entity.role == "graph" and entity.text.startswith("Uncle Per (person): Ada's uncle Per")
    assert entity.chunk_ids and all(c.startswith(f"{ADA}:vanilla-600-100:") for c in entity.chunk_ids)
    assert r.details["entities"][0]["route"] == "specific" and r.details["entities"][0]["matched"] == ["Uncle Per"]
    assert r.details["out_of_scope"] == [] and [c.purpose for c in r.calls] == ["hypothetical", "analyse"]


def test_general_entity_brings_the_characters_neighbours_of_that_type():
    r = make(graph_fake(analysis=ANALYSIS[1:2])).context(ADA, "What are your hobbies?")
    entities = [i.label for i in r.items if i.label.startswith("entity: ")]
    assert sorted(entities) == ["entity: reading", "entity: rowing"]  # activities only: no person, no place
    assert r.details["entities"][0]["route"] == "general"
    assert not [i for i in r.items if i.label.startswith("relation: ")]
    assert len(make(graph_fake(analysis=ANALYSIS[1:2]), neighbours=1).context(ADA, "Hobbies?").items) == 2  # profile, 1


def test_out_of_scope_entity_is_named_in_the_boundary_note():
    m = make(graph_fake(analysis=ANALYSIS[2:]))
    r = m.respond(ADA, "What do you think of Apollo 11?")
    boundary = r.items("boundary")
    assert len(boundary) == 1 and boundary[0].chunk_ids == ()
    assert "Apollo 11 (a spaceflight far beyond her world)" in boundary[0].text
    assert not [i for i in r.context if i.label.startswith(("entity: ", "relation: "))]
    assert r.details["out_of_scope"] == ["Apollo 11"] and boundary[0].text in r.reply  # shown as knowledge


def test_no_boundary_note_when_no_entity_is_out_of_scope():
    m = make(graph_fake(analysis=ANALYSIS[:2]))
    r = m.respond(ADA, "What about your uncle and your hobbies?")
    assert r.details["out_of_scope"] == [] and r.items("boundary") == []
    assert "Outside what" not in r.reply and "does not know" not in r.reply  # the prompt carries no note either
    with pytest.raises(ValueError, match="at least one out-of-scope entity"):
        boundary_note("Ada", [])


def test_all_three_routes_together_and_a_failed_analysis_falls_back_to_the_question():
    r = make(graph_fake()).context(ADA, QUESTION)
    assert [e["route"] for e in r.details["entities"]] == ["specific", "general", "out_of_scope"]
    assert r.items[-1].role == "boundary" and sum(i.role == "boundary" for i in r.items) == 1
    labels = [i.label for i in r.items]
    assert len(labels) == len(set(labels))  # an entity reached by two routes is shown once
    r = make(graph_fake(analysis=[{"name": "x"}]), hypothetical=False).context(ADA, "Who is Mira?")
    assert r.details["analysis_failed"] and r.details["entities"][0]["route"] == "specific"
    assert [c.purpose for c in r.calls] == ["analyse"] and r.calls[0].output.startswith("failed")
    assert r.details["entities"][0]["matched"]


def test_a_fault_in_the_analysis_fails_the_answer_instead_of_falling_back():
    m = make(graph_fake())
    m.index(ADA)  # built first: the fault below is the analysis's only

    def rule(kind, messages, spec):
        if spec == ANALYSIS_SCHEMA:
            raise Transient("HTTP 503")
        return graph_fake().rule(kind, messages, spec)
    m.llm = FakeLLM(rule, retry=RetryPolicy(attempts=2, base_delay=0.001, max_delay=0.001))
    with pytest.raises(LLMError, match="structured call .*failed after 2 attempts: HTTP 503") as err:
        m.context(ADA, QUESTION)
    assert [c.purpose for c in err.value.calls] == ["hypothetical", "analyse"]  # what the failed row counts


# ---- settings and the runner ------------------------------------------------------------------------------------

def test_settings_are_validated():
    with pytest.raises(ValueError, match="has no setting 'chunk_size'; its settings: budget_chars, chunk_length, embedder"):
        make(FakeLLM(), chunk_size=10)
    with pytest.raises(ValueError, match="acts derives its chunk length"):
        build_method("rolerag", FakeLLM(), dataset=FIXTURES, splitter="acts", chunk_length=600)
    with pytest.raises(ValueError, match="overlap < chunk_length"):
        make(FakeLLM(), chunk_length=300, overlap=400)
    with pytest.raises(ValueError, match="merge_similarity"):
        make(FakeLLM(), merge_similarity=2.0)
    default = build_method("rolerag", FakeLLM(), dataset=FIXTURES)
    assert default.settings.lengths == (2400, 400) and default.chunks(ADA)[0].id == f"{ADA}:vanilla-2400-400:0000"
    acts = build_method("rolerag", FakeLLM(), dataset=FIXTURES, splitter="acts")
    assert acts.chunks(ADA)[0].id == f"{ADA}:acts:0000"


def test_helpers():
    assert name_key(" Uncle  Per. ") == "uncle per"
    assert [entity_type(t) for t in ("Location", "hobby", "PERSON", "spaceship", None)] == \
        ["place", "activity", "person", "other", "other"]


def test_end_to_end_through_run_jobs():
    m = make(graph_fake())
    jobs = [Job(ADA, "a", QUESTION), Job(BRAM, "b", QUESTION), Job(ADA, "c", "Who is Mira?")]
    rows = run_jobs(m, jobs, progress=False)
    assert rows.error.isna().all() and list(rows.method) == ["rolerag"] * 3
    assert {rows.details[0]["index"], rows.details[2]["index"]} <= {"built", "memory"}
    assert rows.llm_calls.tolist() == [3, 3, 3]  # hypothetical, analyse, respond: the index is a one-off cost
    assert all(r.startswith("SYSTEM:You are ") for r in rows.reply) and rows.chunk_ids[0]
    assert m.index_cost(BRAM).chunks >= 1


def test_index_costs_has_one_row_per_graph_method_and_character():
    graph = make(graph_fake())
    naive = build_method("naive_rag", FakeLLM(), dataset=FIXTURES, embedder="hash-64")
    costs = index_costs([naive, graph], [ADA, BRAM])
    assert list(costs.method) == ["rolerag", "rolerag"] and list(costs.character) == [ADA, BRAM]
    assert costs.entities.iloc[0] == graph.index_cost(ADA).entities and (costs.llm_calls > 0).all()
    assert index_costs([naive], [ADA]).empty


def test_index_costs_say_whether_this_run_built_the_index_or_loaded_it(tmp_path, monkeypatch):
    # a notebook that loads a graph another notebook built lists that build's calls: index says they are not its own
    monkeypatch.setenv("RPA_CACHE_DIR", str(tmp_path / "cache"))
    first = index_costs([make(graph_fake())], [ADA])
    again = index_costs([make(graph_fake())], [ADA])
    assert (first["index"].tolist(), again["index"].tolist()) == (["built"], ["disk"])
    assert again.llm_calls.tolist() == first.llm_calls.tolist()  # what the build took, whoever paid it


def test_at_a_character_budget_the_graph_is_cut_and_the_boundary_note_kept_whole():
    whole = make(graph_fake()).context(ADA, QUESTION)
    note, graph = whole.items[-1], whole.items[:-1]
    assert note.role == "boundary" and len(graph) >= 3
    budget = len(note.text) + len(graph[0].text) + len(graph[1].text) // 2  # one item whole, the next cut at a word
    settings = {"embedder": "hash-64", "chunk_length": 600, "overlap": 100, "merge_similarity": 0.5}
    cut = build_method("rolerag_budget", graph_fake(), dataset=FIXTURES, budget_chars=budget, **settings).context(
        ADA, QUESTION)
    assert cut.items[0] == graph[0] and cut.items[-1] == note and len(cut.items) == 3
    assert graph[1].text.startswith(cut.items[1].text) and len(cut.items[1].text) < len(graph[1].text)
    assert sum(len(i.text) for i in cut.items) <= budget and cut.details["budget_chars"] == budget
    tiny = build_method("rolerag_budget", graph_fake(), dataset=FIXTURES, budget_chars=5, **settings).context(
        ADA, QUESTION)
    assert tiny.items == [note]  # a budget smaller than the note: the note alone, never cut
