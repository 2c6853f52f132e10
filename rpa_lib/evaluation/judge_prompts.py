"""Every prompt the LLM judges of the QA evaluation send (AMADEUS Table 6's ACC, ACC_L and HS; RAGEval's key
points and their labels), each with its scale and anchors spelled out. Verdicts are constrained choices among short
options; :mod:`rpa_lib.evaluation.judges` maps an option to its value. Every prompt tells the judge to use only the
texts shown. Plain functions returning chat messages; calls no LLM.
"""

from __future__ import annotations

from collections.abc import Sequence

from rpa_lib.text import chat

JUDGE_SYSTEM = (
    "You grade answers that a role-playing agent gave in the voice of a fictional character. Judge only the texts "
    "you are shown. Do not use anything you may know about the character or their story from elsewhere."
)

ACC_OPTIONS = {"yes": 1.0, "no": 0.0}
SCALE_OPTIONS = {str(i): float(i) for i in range(1, 11)}
# RAGEval's three labels (rpa_lib.evaluation.metrics.keypoints.LABELS) as single-letter options
KEYPOINT_OPTIONS = {"A": "covered", "B": "not_covered", "C": "contradicted"}

ACC_L_ANCHORS = (
    "1 = does not reflect the correct answer at all: it is missing, off the topic, or the response contradicts it\n"
    "3 = touches the topic, but the core fact of the correct answer is missing or wrong\n"
    "5 = gives part of the correct answer; its core fact is vague or only half right\n"
    "7 = gives the core fact, with some details missing or slightly off\n"
    "9 = gives the whole correct answer with only a minor imprecision\n"
    "10 = gives the whole correct answer, accurately\n"
    "(2, 4, 6 and 8 lie between the anchors on either side.)"
)

HS_ANCHORS = (
    "1 = every claim of fact in the response is stated in, or follows directly from, {sources}; nothing is "
    "distorted and nothing is added\n"
    "3 = one minor detail is unsupported or slightly distorted\n"
    "5 = several details are unsupported, or one clear fact is invented or distorted\n"
    "7 = many claims are invented or distorted, beside some supported ones\n"
    "10 = the response is invented throughout, or contradicts {sources}\n"
    "(2, 4, 6, 8 and 9 lie between the anchors on either side.)"
)


def one_line(text: str) -> str:
    return " ".join(str(text).split())


def _qa_block(name: str, question: str, gold: str, reply: str) -> str:
    return (f"Character: {name}\n"
            f"Question asked to {name}: {one_line(question)}\n"
            f"Correct answer (it describes {name} in the third person): {one_line(gold)}\n"
            f"{name}'s response (in the first person): {one_line(reply) or '(empty)'}\n\n")


def passages_text(context: Sequence[dict]) -> str:
    """A ``run_jobs`` row's context items, numbered, with role and label: ``[1] (knowledge: Early life) text``."""
    lines = []
    for i, item in enumerate(context, start=1):
        tag = item.get("role", "")
        if item.get("label"):
            tag = f"{tag}: {one_line(item['label'])}"
        lines.append(f"[{i}] ({tag}) {one_line(item.get('text', ''))}")
    return "\n".join(lines)


def acc_messages(name: str, question: str, gold: str, reply: str) -> list[dict]:
    """ACC (AMADEUS, "whether the character's response contains the correct answer or not"): yes or no."""
    return chat(JUDGE_SYSTEM, (
        f"{_qa_block(name, question, gold, reply)}"
        "Does the response contain the correct answer?\n"
        "yes = the response states the correct answer, or at least its core fact, even in other words, in the "
        "first person or among other talk\n"
        "no = the response leaves the core fact out, gives a different one, refuses, or only hints at it\n"
        "Answer yes or no."
    ))


def acc_l_messages(name: str, question: str, gold: str, reply: str) -> list[dict]:
    """ACC_L (AMADEUS: "how well the character's response reflects the correct answer"), 1-10."""
    return chat(JUDGE_SYSTEM, (
        f"{_qa_block(name, question, gold, reply)}"
        f"How well does the response reflect the correct answer? Use this scale:\n{ACC_L_ANCHORS}\n"
        "Answer with the number only."
    ))


def hs_messages(name: str, question: str, context: Sequence[dict], reply: str, gold: str | None = None, *,
                reference: bool = False) -> list[dict]:
    """HS, the Hallucination Score (AMADEUS: "close to 1 when the response faithfully reflects only the facts
    contained in the chunks or answer"), 1-10, against ``context`` (the method's own, or with ``reference`` one
    shared by every method) and ``gold`` (None for an interview question)."""
    sources = "the passages or the correct answer" if gold is not None else "the passages"
    heading = f"Passages from {name}'s persona (the reference)" if reference else "Passages the agent was given"
    shown = f"{heading}:\n{passages_text(context) or '(none)'}\n\n"
    if gold is not None:
        shown += f"Correct answer (it describes {name} in the third person): {one_line(gold)}\n"
    return chat(JUDGE_SYSTEM, (
        f"Character: {name}\n{shown}"
        f"Question asked to {name}: {one_line(question)}\n"
        f"{name}'s response (in the first person): {one_line(reply) or '(empty)'}\n\n"
        f"How much of the response is hallucinated, that is, states facts about {name} or their world that "
        f"{sources} do not support, or distorts what they say? Count only claims of fact (events, people, places, "
        "numbers, abilities, relationships, habits); tone, greetings and feelings are not hallucinations, and a "
        f"preference that follows from {sources} is supported. Use this scale:\n"
        f"{HS_ANCHORS.format(sources=sources)}\nAnswer with the number only."
    ))


KEYPOINT_SCHEMA = {
    "type": "object",
    "properties": {"key_points": {"type": "array", "items": {"type": "string", "minLength": 1},
                                  "minItems": 1, "maxItems": 5}},
    "required": ["key_points"],
}

_KEYPOINT_TASK = (
    "List the key points of this answer: the separate facts a reply must state to answer the question fully. "
    "Give between 1 and 5 key points, in the order the answer gives them. Each is one short sentence that stands on "
    "its own (use the character's name instead of he or she) and says nothing the answer does not say. An answer "
    "with a single fact has a single key point."
)


def keypoint_messages(name: str, question: str, answer: str) -> list[dict]:
    """RAGEval's key points (1-5) of a gold answer as :data:`KEYPOINT_SCHEMA` JSON: split and restated, never added."""
    return chat("You break reference answers into their key facts. Reply with JSON only.", (
        f"Question asked to {name}: {one_line(question)}\nAnswer: {one_line(answer)}\n\n{_KEYPOINT_TASK}\n"
        'Reply as {"key_points": ["...", "..."]}'
    ))


def keypoint_lines_messages(name: str, question: str, answer: str) -> list[dict]:
    """:func:`keypoint_messages` for a judge that cannot write the JSON: one key point a line."""
    return chat("You break reference answers into their key facts.", (
        f"Question asked to {name}: {one_line(question)}\nAnswer: {one_line(answer)}\n\n{_KEYPOINT_TASK}\n"
        "Write one key point per line and nothing else."
    ))


def keypoint_label_messages(name: str, question: str, key_point: str, reply: str) -> list[dict]:
    """One key point against one response (RAGEval): A covered, B not covered, C contradicted."""
    return chat(JUDGE_SYSTEM, (
        f"Character: {name}\nQuestion asked to {name}: {one_line(question)}\n"
        f"Key point (a fact about {name}): {one_line(key_point)}\n"
        f"{name}'s response (in the first person): {one_line(reply) or '(empty)'}\n\n"
        "Compare the response with the key point.\n"
        "A = covered: the response states this point, correctly (other words are fine)\n"
        "B = not covered: the response neither states this point nor says anything against it\n"
        "C = contradicted: the response says something that conflicts with this point\n"
        "Answer A, B or C."
    ))
