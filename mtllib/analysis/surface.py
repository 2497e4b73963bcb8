"""Surface baselines: how far a task can be solved without understanding it (issue 62).

A task plays a paper's role only if a model beats what surface cues give. Two baselines, both fit on the
training split and scored with the task's own main metric:

- **overlap rule** (pair tasks): the best single threshold on one word-overlap feature of the two texts
  (Jaccard, either side's containment in the other, one side's words a subset of the other's): a depth-1
  decision tree over :data:`OVERLAP_FEATURES`; for multiple choice, the choice that shares most words with
  the text;
- **bag of words**: a linear model (logistic regression; ridge for regression) on TF-IDF word and bigram
  features of each text field, with the overlap features for pairs.

Words are lower-cased runs of letters and digits. Sequence labelling and span QA have no surface baseline
here (their scores are computed over the model's sub-word positions, which a word rule does not see).
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from mtllib.analysis.learnability import majority_score
from mtllib.data import metrics as metric_fns

OVERLAP_FEATURES = ("jaccard", "b_in_a", "a_in_b", "subset")
#: the features in words, for the rule a reader sees
FEATURE_WORDS = {"jaccard": "word overlap (Jaccard)", "b_in_a": "share of the second text's words found in the first",
                 "a_in_b": "share of the first text's words found in the second", "subset": "one text's words are a subset of the other's"}
KINDS = ("classification", "regression", "multiple_choice")
_WORD = re.compile(r"[a-z0-9]+")


def words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def overlap_features(a: list[str], b: list[str]) -> pd.DataFrame:
    """One row per pair: :data:`OVERLAP_FEATURES` of the word sets of ``a[i]`` and ``b[i]``."""
    rows = []
    for x, y in zip(a, b):
        wa, wb = words(x), words(y)
        common = len(wa & wb)
        rows.append({"jaccard": common / max(1, len(wa | wb)), "b_in_a": common / max(1, len(wb)), "a_in_b": common / max(1, len(wa)),
                     "subset": float(wa <= wb or wb <= wa)})
    return pd.DataFrame(rows, columns=list(OVERLAP_FEATURES))


def _frame(rows) -> pd.DataFrame:
    return rows.to_pandas() if hasattr(rows, "to_pandas") else pd.DataFrame(rows)


def _score(task, predictions, references) -> float:
    value = metric_fns.compute([task.main_metric], predictions, references)[task.main_metric]
    return float(value) if np.isfinite(value) else 0.0


def overlap_rule(task, splits: dict) -> dict | None:
    """The overlap rule fit on ``splits["train"]``: ``{"rule": text, split: score, ...}``; ``None`` for a
    single-text task."""
    from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

    frames = {s: _frame(rows) for s, rows in splits.items()}
    if task.kind == "multiple_choice":
        out = {"rule": "the choice with the largest share of its words in the text"}
        for split, frame in frames.items():
            picks = [int(np.argmax(overlap_features([t] * len(c), list(c))["b_in_a"].to_numpy())) for t, c in zip(frame["text"], frame["choices"])]
            out[split] = _score(task, np.asarray(picks), np.asarray(frame["label"]))
        return out
    if task.paradigm != "pair":
        return None
    feats = {s: overlap_features(list(f["text"]), list(f["text_pair"])) for s, f in frames.items()}
    regression = task.kind == "regression"
    tree = (DecisionTreeRegressor if regression else DecisionTreeClassifier)(max_depth=1, random_state=0)
    tree.fit(feats["train"], np.asarray(frames["train"]["label"]))
    rule = _describe(tree, task)
    out = {"rule": rule}
    for split, f in feats.items():
        out[split] = _score(task, tree.predict(f), np.asarray(frames[split]["label"], dtype=np.float64 if regression else None))
    return out


def _describe(tree, task) -> str:
    """A fitted depth-1 tree as a sentence: the feature, its threshold and what each side predicts."""
    node = tree.tree_
    if node.node_count == 1:
        return "the same answer for every pair (no threshold helps)"
    feature, cut = OVERLAP_FEATURES[node.feature[0]], node.threshold[0]
    left, right = node.children_left[0], node.children_right[0]
    if task.kind == "regression":
        return f"{FEATURE_WORDS[feature]}: {node.value[left].item():.2f} up to {cut:.3f}, {node.value[right].item():.2f} above"
    name = lambda leaf: str(task.label_names[int(tree.classes_[int(np.argmax(node.value[leaf]))])])  # noqa: E731
    if feature == "subset":
        return f"{name(right)} when {FEATURE_WORDS[feature]}, else {name(left)}"
    return f"{name(right)} when the {FEATURE_WORDS[feature]} is above {cut:.3f}, else {name(left)}"


def bag_of_words(task, splits: dict, seed: int = 0) -> dict:
    """The bag-of-words model fit on ``splits["train"]``: ``{split: score, ...}``."""
    from sklearn.compose import ColumnTransformer
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression, Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    frames = {s: _frame(rows) for s, rows in splits.items()}
    pair = task.paradigm == "pair"

    def table(frame):
        out = pd.DataFrame({"text": list(frame["text"])})
        if pair:
            out["text_pair"] = list(frame["text_pair"])
            out = pd.concat([out, overlap_features(out["text"].tolist(), out["text_pair"].tolist())], axis=1)
        return out

    vectorizer = dict(ngram_range=(1, 2), min_df=1, sublinear_tf=True)
    parts = [("a", TfidfVectorizer(**vectorizer), "text")]
    if pair:
        parts += [("b", TfidfVectorizer(**vectorizer), "text_pair"), ("overlap", StandardScaler(), list(OVERLAP_FEATURES))]
    regression = task.kind == "regression"
    model = Ridge(alpha=1.0) if regression else LogisticRegression(max_iter=2000, C=1.0, random_state=seed)
    pipeline = make_pipeline(ColumnTransformer(parts), model)
    pipeline.fit(table(frames["train"]), np.asarray(frames["train"]["label"]))
    return {split: _score(task, pipeline.predict(table(f)), np.asarray(f["label"], dtype=np.float64 if regression else None))
            for split, f in frames.items()}


def baselines(task, splits: dict, seed: int = 0) -> pd.DataFrame:
    """Majority class, overlap rule and bag of words of one task (``splits``: ``train`` and the splits to
    score, in the task's standard columns): one row per baseline and split, with the metric and score
    (percent); the overlap rule's row names its rule. An empty frame for a kind without surface baselines."""
    if task.kind not in KINDS:
        return pd.DataFrame(columns=["baseline", "split", "metric", "score", "rule"])
    rows = []
    scored = [s for s in splits if s != "train"]
    train_labels = list(splits["train"]["label"])
    for split in scored:
        refs = np.asarray(splits[split]["label"], dtype=np.float64 if task.kind == "regression" else None)
        rows.append({"baseline": "majority class", "split": split, "score": majority_score(task, train_labels, refs), "rule": ""})
    rule = overlap_rule(task, splits)
    if rule is not None:
        rows += [{"baseline": "overlap rule", "split": s, "score": rule[s], "rule": rule["rule"]} for s in scored]
    if task.kind != "multiple_choice":
        bow = bag_of_words(task, splits, seed)
        rows += [{"baseline": "bag of words", "split": s, "score": bow[s], "rule": ""} for s in scored]
    out = pd.DataFrame(rows)
    out.insert(2, "metric", task.main_metric)
    return out[["baseline", "split", "metric", "score", "rule"]]


#: points on validation by which a model must beat its task's best surface baseline for the task to play a
#: paper's role in a verdict: about two standard errors of an accuracy near 80% on 300 examples (2.3 points)
SURFACE_MARGIN = 5.0


def best(table: pd.DataFrame, split: str = "validation") -> pd.Series:
    """The best surface baseline (not the majority class) of one task's :func:`baselines` on ``split``: its row,
    or an empty row when the task has none."""
    rows = table[(table.split == split) & (table.baseline != "majority class")]
    return rows.loc[rows.score.idxmax()] if len(rows) else pd.Series(dtype=object)


def beats_surface(score: float, surface: float, margin: float = SURFACE_MARGIN) -> bool:
    """Whether a model's validation ``score`` is at least ``margin`` points above the best surface baseline's."""
    if not (np.isfinite(score) and np.isfinite(surface)):
        raise ValueError(f"scores must be finite, got model {score!r} and surface baseline {surface!r}")
    if not (np.isfinite(margin) and margin > 0):
        raise ValueError(f"the margin must be a positive number of points, got {margin!r}")
    return bool(score >= surface + margin)
