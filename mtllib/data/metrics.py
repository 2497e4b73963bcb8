"""Task metrics, computed with scikit-learn, scipy and seqeval (the ``evaluate`` package fetches metric
scripts from the hub at run time, so it is not used).

Every metric takes ``(predictions, references)`` and returns a float in the metric's natural scale
(accuracy 0-1, correlations -1..1); :func:`compute` returns several at once, in percent, as the papers report.

- ``accuracy``, ``f1`` (binary, positive class 1), ``macro_f1``, ``mcc`` (Matthews correlation, CoLA):
  scikit-learn.
- ``pearson``, ``spearman`` (STS-B): scipy.
- ``entity_f1``: entity-level micro F1 over BIO tag sequences (CoNLL, WNUT): seqeval.
- ``word_f1``: micro F1 over word tags other than tag 0 (the "none"/"lower" tag), for word-tagging tasks
  such as punctuation and true-casing, where each word is its own unit.
- ``exact_match``, ``squad_f1``: SQuAD v1.1's official definitions, with its answer normalisation
  (lower case, no punctuation, no articles a/an/the, single spaces), maximised over the gold answers.
"""

from __future__ import annotations

import collections
import re
import string
from collections.abc import Sequence

import numpy as np
from scipy import stats
from sklearn import metrics as skm


def accuracy(predictions, references) -> float:
    return float(skm.accuracy_score(references, predictions))


def f1(predictions, references) -> float:
    return float(skm.f1_score(references, predictions, average="binary", pos_label=1, zero_division=0))


def macro_f1(predictions, references) -> float:
    return float(skm.f1_score(references, predictions, average="macro", zero_division=0))


def mcc(predictions, references) -> float:
    return float(skm.matthews_corrcoef(references, predictions))


def pearson(predictions, references) -> float:
    return float(stats.pearsonr(np.asarray(predictions, float), np.asarray(references, float)).statistic)


def spearman(predictions, references) -> float:
    return float(stats.spearmanr(np.asarray(predictions, float), np.asarray(references, float)).statistic)


def entity_f1(predictions: Sequence[Sequence[str]], references: Sequence[Sequence[str]]) -> float:
    """Entity-level micro F1 of BIO-tagged sequences (lists of tag strings), as CoNLL scores it."""
    from seqeval.metrics import f1_score

    return float(f1_score([list(r) for r in references], [list(p) for p in predictions], zero_division=0))


def word_f1(predictions: Sequence[Sequence[int]], references: Sequence[Sequence[int]]) -> float:
    """Micro F1 over words whose gold or predicted tag is not 0; reference tags of -100 are not scored."""
    pred = np.concatenate([np.asarray(p) for p in predictions]) if len(predictions) else np.array([])
    gold = np.concatenate([np.asarray(r) for r in references]) if len(references) else np.array([])
    if pred.shape != gold.shape:
        raise ValueError(f"predictions and references tag {pred.shape[0]} and {gold.shape[0]} words")
    scored = gold != -100
    pred, gold = pred[scored], gold[scored]
    true_positive = np.sum((pred == gold) & (gold != 0))
    predicted, actual = np.sum(pred != 0), np.sum(gold != 0)
    if predicted == 0 or actual == 0:
        return 0.0
    precision, recall = true_positive / predicted, true_positive / actual
    return float(0.0 if true_positive == 0 else 2 * precision * recall / (precision + recall))


# --- SQuAD v1.1 -----------------------------------------------------------------------------------------
def normalize_answer(text: str) -> str:
    """SQuAD's official normalisation: lower case, drop punctuation and the articles a/an/the, squash spaces."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def _squad_f1_one(prediction: str, gold: str) -> float:
    pred_tokens, gold_tokens = normalize_answer(prediction).split(), normalize_answer(gold).split()
    common = collections.Counter(pred_tokens) & collections.Counter(gold_tokens)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred_tokens), same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def _golds(reference) -> list[str]:
    return [reference] if isinstance(reference, str) else list(reference)


def exact_match(predictions: Sequence[str], references: Sequence[str | Sequence[str]]) -> float:
    """Share of predictions equal to one of their gold answers after normalisation."""
    scores = [max(normalize_answer(p) == normalize_answer(g) for g in _golds(r)) for p, r in zip(predictions, references, strict=True)]
    return float(np.mean(scores)) if scores else 0.0


def squad_f1(predictions: Sequence[str], references: Sequence[str | Sequence[str]]) -> float:
    """Mean over questions of the best token-overlap F1 against the gold answers."""
    scores = [max(_squad_f1_one(p, g) for g in _golds(r)) for p, r in zip(predictions, references, strict=True)]
    return float(np.mean(scores)) if scores else 0.0


METRICS = {
    "accuracy": accuracy,
    "f1": f1,
    "macro_f1": macro_f1,
    "mcc": mcc,
    "pearson": pearson,
    "spearman": spearman,
    "entity_f1": entity_f1,
    "word_f1": word_f1,
    "exact_match": exact_match,
    "squad_f1": squad_f1,
}


def compute(names: Sequence[str], predictions, references) -> dict[str, float]:
    """``{metric: value in percent}`` for each named metric."""
    unknown = [n for n in names if n not in METRICS]
    if unknown:
        raise ValueError(f"unknown metric(s) {unknown}; known: {', '.join(METRICS)}")
    return {name: 100.0 * METRICS[name](predictions, references) for name in names}
