"""Every prompt the LLM judges of the QA evaluation send (AMADEUS Table 6, RAGEval key points), written for this
repository, each with its scale and the anchors of the scale spelled out.

- :func:`acc_messages`: ACC, does the response contain the correct answer (yes / no);
- :func:`acc_l_messages`: ACC_L, how well the response reflects the correct answer (1-10);
- :func:`hs_messages`: HS, how much of the response is hallucinated given what the method put in front of its
  LLM and, for QA, the correct answer (1-10, 1 = nothing hallucinated);
- :func:`keypoint_messages` / :func:`keypoint_lines_messages`: a gold answer's key points (RAGEval section 3.5),
  as a JSON object, or one a line for a judge that cannot write the JSON;
- :func:`keypoint_label_messages`: one key point against one response: covered, not covered or contradicted.

Verdicts are asked as constrained choices among short options (single letters or numbers, so that a local
model scoring options by likelihood favours none for being short); :mod:`rpa_lib.evaluation.judges` maps the
option to the value. Every prompt tells the judge to use only the texts shown, never what it may know about a
famous character from elsewhere: the evaluation measures the role-playing agent, not the judge's memory.
Prompts are plain functions returning chat messages; this module calls no LLM.
"""

from __future__ import annotations

from collections.abc import Sequence

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


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _qa_block(name: str, question: str, gold: str, reply: str) -> str:
    return (f"Character: {name}\n"
            f"Question asked to {name}: {_one_line(question)}\n"
            f"Correct answer (it describes {name} in the third person): {_one_line(gold)}\n"
            f"{name}'s response (in the first person): {_one_line(reply) or '(empty)'}\n\n")


def passages_text(context: Sequence[dict]) -> str:
    """The context items a method used, numbered, each with its role and label:
    ``[1] (knowledge: Early life) text``. ``context`` holds the dicts of a ``run_jobs`` row."""
    lines = []
    for i, item in enumerate(context, start=1):
        tag = item.get("role", "")
        if item.get("label"):
            tag = f"{tag}: {_one_line(item['label'])}"
        lines.append(f"[{i}] ({tag}) {_one_line(item.get('text', ''))}")
    return "\n".join(lines)


def acc_messages(name: str, question: str, gold: str, reply: str) -> list[dict]:
    """ACC (AMADEUS, "whether the character's response contains the correct answer or not"): yes or no.

    The gold answer speaks of the character in the third person and the response in the first, so the judge is
    told that a restatement in other words, in the first person or inside other talk still counts, and that a
    hint, a refusal or a different fact does not."""
    return [
        {"role": "system", "content": JUDGE_SYSTEM},
        {"role": "user", "content": (
            f"{_qa_block(name, question, gold, reply)}"
            "Does the response contain the correct answer?\n"
            "yes = the response states the correct answer, or at least its core fact, even in other words, in the "
            "first person or among other talk\n"
            "no = the response leaves the core fact out, gives a different one, refuses, or only hints at it\n"
            "Answer yes or no."
        )},
    ]


def acc_l_messages(name: str, question: str, gold: str, reply: str) -> list[dict]:
    """ACC_L (AMADEUS: "how well the character's response reflects the correct answer", 1-10), with the scale's
    anchors :data:`ACC_L_ANCHORS`. Answered with the number only."""
    return [
        {"role": "system", "content": JUDGE_SYSTEM},
        {"role": "user", "content": (
            f"{_qa_block(name, question, gold, reply)}"
            f"How well does the response reflect the correct answer? Use this scale:\n{ACC_L_ANCHORS}\n"
            "Answer with the number only."
        )},
    ]


def hs_messages(name: str, question: str, context: Sequence[dict], reply: str, gold: str | None = None, *,
                reference: bool = False) -> list[dict]:
    """HS, the Hallucination Score (AMADEUS: "close to 1 when the response faithfully reflects only the facts
    contained in the chunks or answer without distortion or addition"), 1-10 with :data:`HS_ANCHORS`.

    The judge sees the question, the context the method actually put in front of its LLM (``context``: the
    ``run_jobs`` row's items) and, for a QA question, the correct answer (``gold``; None for an interview
    question, whose reply is judged against the passages alone). Only claims of fact count: the character's
    tone, greetings and feelings are no hallucination, and a preference that follows from the passages is
    supported. With ``reference``, ``context`` is a reference from the persona shared by every method, and the
    judge is told so instead."""
    sources = "the passages or the correct answer" if gold is not None else "the passages"
    heading = f"Passages from {name}'s persona (the reference)" if reference else "Passages the agent was given"
    shown = f"{heading}:\n{passages_text(context) or '(none)'}\n\n"
    if gold is not None:
        shown += f"Correct answer (it describes {name} in the third person): {_one_line(gold)}\n"
    return [
        {"role": "system", "content": JUDGE_SYSTEM},
        {"role": "user", "content": (
            f"Character: {name}\n{shown}"
            f"Question asked to {name}: {_one_line(question)}\n"
            f"{name}'s response (in the first person): {_one_line(reply) or '(empty)'}\n\n"
            f"How much of the response is hallucinated, that is, states facts about {name} or their world that "
            f"{sources} do not support, or distorts what they say? Count only claims of fact (events, people, places, "
            "numbers, abilities, relationships, habits); tone, greetings and feelings are not hallucinations, and a "
            f"preference that follows from {sources} is supported. Use this scale:\n"
            f"{HS_ANCHORS.format(sources=sources)}\nAnswer with the number only."
        )},
    ]


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
    """RAGEval's key points of a gold answer (typically 1-5 facts), as ``{"key_points": [...]}``
    (:data:`KEYPOINT_SCHEMA`). The judge may only split and restate the answer, never add to it."""
    return [
        {"role": "system", "content": "You break reference answers into their key facts. Reply with JSON only."},
        {"role": "user", "content": (
            f"Question asked to {name}: {_one_line(question)}\nAnswer: {_one_line(answer)}\n\n{_KEYPOINT_TASK}\n"
            'Reply as {"key_points": ["...", "..."]}'
        )},
    ]


def keypoint_lines_messages(name: str, question: str, answer: str) -> list[dict]:
    """The same request for a judge that cannot write the JSON of :func:`keypoint_messages`: one key point a
    line, nothing else."""
    return [
        {"role": "system", "content": "You break reference answers into their key facts."},
        {"role": "user", "content": (
            f"Question asked to {name}: {_one_line(question)}\nAnswer: {_one_line(answer)}\n\n{_KEYPOINT_TASK}\n"
            "Write one key point per line and nothing else."
        )},
    ]


def keypoint_label_messages(name: str, question: str, key_point: str, reply: str) -> list[dict]:
    """One key point against one response (RAGEval's indicator functions): A covered (stated, correctly),
    B not covered (neither stated nor contradicted), C contradicted. Options :data:`KEYPOINT_OPTIONS`."""
    return [
        {"role": "system", "content": JUDGE_SYSTEM},
        {"role": "user", "content": (
            f"Character: {name}\nQuestion asked to {name}: {_one_line(question)}\n"
            f"Key point (a fact about {name}): {_one_line(key_point)}\n"
            f"{name}'s response (in the first person): {_one_line(reply) or '(empty)'}\n\n"
            "Compare the response with the key point.\n"
            "A = covered: the response states this point, correctly (other words are fine)\n"
            "B = not covered: the response neither states this point nor says anything against it\n"
            "C = contradicted: the response says something that conflicts with this point\n"
            "Answer A, B or C."
        )},
    ]
