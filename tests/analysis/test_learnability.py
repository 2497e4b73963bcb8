"""The learnability gate: thresholds per metric, the majority baseline, the gate over tasks and seeds."""

import numpy as np
import pytest

from mtllib.analysis import learnability as L
from mtllib.data.tasks import get_task


@pytest.mark.parametrize("metric, score, majority, learned", [
    ("accuracy", 65.0, 50.0, True),    # exactly 15 points above the majority class
    ("accuracy", 64.9, 50.0, False),
    ("accuracy", 80.0, 66.0, False),   # 14 above a skewed majority
    ("mcc", 30.0, 0.0, True), ("mcc", 29.9, 0.0, False),
    ("macro_f1", 52.0, 30.0, True), ("macro_f1", 49.0, 20.0, False),  # F1 also needs 50
    ("word_f1", 60.0, 50.0, False),    # and 15 above the majority
    ("squad_f1", float("nan"), 0.0, False),
])
def test_thresholds(metric, score, majority, learned):
    assert L.is_learned(metric, score, majority) is learned


def test_unknown_metric_and_bad_majority_are_refused():
    with pytest.raises(ValueError, match="no learnability rule for metric 'bleu'"):
        L.threshold("bleu", 0.0)
    with pytest.raises(ValueError, match="majority baseline"):
        L.threshold("accuracy", 120.0)


def test_majority_baseline_of_a_classification_task_by_hand():
    task = get_task("tweet-sentiment")  # three classes
    train = [0, 2, 2, 2, 1]
    refs = np.array([2, 2, 0, 1])
    assert L.majority_score(task, train, refs) == pytest.approx(50.0)
    assert L.chance(task) == pytest.approx(100 / 3)


def test_the_majority_baseline_of_a_correlation_scored_task_is_zero_without_a_warning(recwarn):
    task = get_task("bbc-similarity")  # regression, Spearman: the baseline predicts the training mean everywhere
    assert list(L.majority_predictions(task, [0.0, 4.0, 2.0], np.array([1.0, 3.0]))) == [2.0, 2.0]
    assert L.majority_score(task, [0.0, 4.0, 2.0], np.array([1.0, 3.0, 0.0])) == 0.0
    assert not [w for w in recwarn.list if "constant" in str(w.message).lower()]


def test_majority_and_chance_of_a_multiple_choice_task_by_hand():
    task = get_task("bbc-continuation")  # four choices: the baseline always picks the most frequent right position
    assert L.majority_score(task, [1, 3, 3, 0, 3], np.array([3, 1, 2, 3])) == pytest.approx(50.0)
    assert L.chance(task) == pytest.approx(25.0)


def test_majority_for_reads_train_labels_and_the_split_s_gold_answers():
    from datasets import Dataset

    from mtllib.data.features import TaskData

    rows = {"train": Dataset.from_dict({"label": [1, 1, 1, 0]}), "validation": Dataset.from_dict({"label": [1, 0, 0, 0, 0]}),
            "test": Dataset.from_dict({"label": [1, 1, 1, 0]})}
    td = TaskData(get_task("bbc-pair"), {}, rows, 0)
    assert L.majority_for(td, "validation") == pytest.approx(20.0)  # the train majority (1) is a minority here
    assert L.majority_for(td, "test") == pytest.approx(75.0)


def test_majority_baseline_of_sequence_labelling_predicts_the_commonest_tag():
    task = get_task("bbc-truecase")  # word_f1 on the 'capitalised' class
    train = [[0, 0, 1, -100], [0, 1]]
    refs = [np.array([0, 1]), np.array([1])]
    assert L.majority_predictions(task, train, refs) == [[0, 0], [0]]
    assert L.majority_score(task, train, refs) == 0.0


def test_gate_over_tasks_and_seeds():
    g1 = L.gate({"a": 80.0, "b": 55.0}, {"a": 50.0, "b": 50.0}, {"a": "accuracy", "b": "accuracy"})
    g2 = L.gate({"a": 70.0, "b": 70.0}, {"a": 50.0, "b": 50.0}, {"a": "accuracy", "b": "accuracy"})
    assert g1.learned.tolist() == [True, False] and "55.0 < 65.0" in g1.loc["b", "reason"]
    assert L.learned_in_every([g1, g2]) == ["a"]
