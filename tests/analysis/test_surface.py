"""Surface baselines on hand-made splits whose answer a surface cue gives (or does not)."""

import numpy as np
import pandas as pd
import pytest

from mtllib.analysis import surface
from mtllib.data.tasks import get_task


def test_overlap_features_by_hand():
    f = surface.overlap_features(["The cat sat.", "a b"], ["the CAT", "c d"]).iloc[0]
    assert f.jaccard == pytest.approx(2 / 3) and f.b_in_a == 1.0 and f.a_in_b == pytest.approx(2 / 3) and f.subset == 1.0
    g = surface.overlap_features(["The cat sat.", "a b"], ["the CAT", "c d"]).iloc[1]
    assert (g.jaccard, g.b_in_a, g.a_in_b, g.subset) == (0.0, 0.0, 0.0, 0.0)


def _pairs(n, seed):
    """Paraphrase-like pairs: label 1 iff the second text is the first with its words reordered (a subset)."""
    rng = np.random.default_rng(seed)
    vocab = [f"w{i}" for i in range(200)]
    rows = []
    for i in range(n):
        a = list(rng.choice(vocab, 8, replace=False))
        same = i % 2 == 1
        b = list(rng.permutation(a)) if same else list(rng.permutation(a[:5] + list(rng.choice(vocab, 3))))
        rows.append({"text": " ".join(a), "text_pair": " ".join(b), "label": int(same)})
    return pd.DataFrame(rows)


def test_a_pair_task_solved_by_word_subsets_is_caught_by_the_overlap_rule():
    task = get_task("bbc-paraphrase")
    table = surface.baselines(task, {"train": _pairs(200, 0), "validation": _pairs(100, 1), "test": _pairs(100, 2)})
    rule = table[(table.baseline == "overlap rule") & (table.split == "validation")].iloc[0]
    assert rule.score > 97 and rule.metric == "f1"
    assert "equivalent when" in rule.rule
    best = surface.best(table)
    assert best.score > 97 and best.baseline in ("overlap rule", "bag of words")
    majority = table[(table.baseline == "majority class") & (table.split == "test")].score.iloc[0]
    assert majority < 70


def test_bag_of_words_finds_a_label_word_and_the_rule_is_absent_for_single_texts():
    task = get_task("tweet-sentiment")  # labels: negative, neutral, positive
    rng = np.random.default_rng(0)

    def split(n):
        labels = rng.integers(0, 3, n)
        marker = np.array(["awful", "okay", "great"])[labels]
        return pd.DataFrame({"text": [f"today was {m} {rng.integers(1000)}" for m in marker], "label": labels})

    table = surface.baselines(task, {"train": split(150), "validation": split(60), "test": split(60)})
    assert set(table.baseline) == {"majority class", "bag of words"}
    assert table[(table.baseline == "bag of words")].score.min() == 100.0


def test_kinds_without_a_surface_baseline_give_an_empty_table():
    assert surface.baselines(get_task("bbc-truecase"), {"train": pd.DataFrame()}).empty


@pytest.mark.parametrize("score, base, expected", [(90.0, 84.9, True), (90.0, 85.1, False), (50.0, 50.0, False)])
def test_beating_the_surface_baseline_needs_the_margin(score, base, expected):
    assert surface.beats_surface(score, base) is expected


@pytest.mark.parametrize("score, base, margin", [(float("nan"), 50.0, 5.0), (60.0, float("inf"), 5.0), (60.0, 50.0, 0.0), (60.0, 50.0, -1.0)])
def test_beating_the_surface_baseline_refuses_bad_numbers(score, base, margin):
    with pytest.raises(ValueError):
        surface.beats_surface(score, base, margin)
