"""How well predicted personality types match the true ones (AMADEUS Tables 4-5's accuracy and Avg F1)."""

from __future__ import annotations

import numpy as np

TIE = "-"  # a dimension whose score sits exactly on the midpoint: no letter, counted as a miss
NO_SCORE = "?"  # a dimension with no rated unit (every item failed): no letter, counted as a miss


def type_scores(predicted: list[str], truth: list[str]) -> dict:
    """``accuracy`` (of letters), ``avg_f1`` (mean over positions of the macro-F1 over the letters seen there),
    ``full_type_accuracy``, ``accuracy_per_position``, ``f1_per_position`` and ``misses`` (wrong letters per
    character). ``type_scores(["ENFP", "INTJ"], ["ENFP", "ENTJ"])["accuracy"] == 0.875``"""
    from sklearn.metrics import f1_score  # imported when used: loading scikit-learn takes about 0.3 s

    predicted, truth = [str(p) for p in predicted], [str(t) for t in truth]
    if len(predicted) != len(truth) or not truth:
        raise ValueError(f"need equally many predicted and true types, got {len(predicted)} and {len(truth)}")
    width = len(truth[0])
    bad = [(p, t) for p, t in zip(predicted, truth) if len(p) != width or len(t) != width]
    if bad:
        raise ValueError(f"types must all have {width} letters: {bad[:3]}")
    misses = [sum(a != b for a, b in zip(p, t)) for p, t in zip(predicted, truth)]
    acc_pos, f1_pos = [], []
    for i in range(width):
        t_col, p_col = [t[i] for t in truth], [p[i] for p in predicted]
        labels = sorted((set(t_col) | set(p_col)) - {TIE, NO_SCORE})
        acc_pos.append(sum(a == b for a, b in zip(t_col, p_col)) / len(truth))
        f1_pos.append(float(f1_score(t_col, p_col, labels=labels, average="macro", zero_division=0)))
    return {"accuracy": 1 - sum(misses) / (len(truth) * width), "avg_f1": float(np.mean(f1_pos)),
            "full_type_accuracy": sum(m == 0 for m in misses) / len(truth), "accuracy_per_position": acc_pos,
            "f1_per_position": f1_pos, "misses": misses}
