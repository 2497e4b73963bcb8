"""Each metric against a case computed by hand."""

import pytest

from mtllib.data import metrics


def test_accuracy_f1_macro_f1():
    assert metrics.accuracy([1, 0, 1, 1], [1, 1, 1, 0]) == 0.5
    # tp=1 fp=1 fn=1 -> P = R = 1/2
    assert metrics.f1([1, 1, 0, 0], [1, 0, 1, 0]) == pytest.approx(0.5)
    # class 0: P=1/1 R=1/2 F=2/3; class 1: P=1/2 R=1/1 F=2/3; class 2: P=1 R=1 F=1
    assert metrics.macro_f1([0, 1, 1, 2], [0, 0, 1, 2]) == pytest.approx((2 / 3 + 2 / 3 + 1) / 3)


def test_matthews_correlation():
    assert metrics.mcc([1, 1, 0, 0], [1, 0, 1, 0]) == pytest.approx(0.0)
    # tp=2 tn=2 fp=1 fn=0 -> (2*2 - 1*0) / sqrt(3*2*2*3) = 4/6
    assert metrics.mcc([1, 1, 0, 0, 1], [1, 1, 0, 0, 0]) == pytest.approx(2 / 3)


def test_correlations():
    # x = 1,2,3; y = 2,4,7: cov = 5, |dx| = sqrt(2), |dy| = sqrt(114)/3 -> r = 15/sqrt(228)
    assert metrics.pearson([1, 2, 3], [2, 4, 7]) == pytest.approx(15 / 228 ** 0.5)
    # ranks 1,3,2,4 vs 1,2,3,4: sum d^2 = 2 -> rho = 1 - 6*2/(4*15)
    assert metrics.spearman([10, 30, 20, 40], [1, 2, 3, 4]) == pytest.approx(0.8)


def test_entity_f1_counts_whole_entities():
    gold = [["B-PER", "I-PER", "O", "B-LOC"]]
    assert metrics.entity_f1([["B-PER", "I-PER", "O", "B-ORG"]], gold) == pytest.approx(0.5)
    assert metrics.entity_f1([["B-PER", "O", "O", "B-LOC"]], gold) == pytest.approx(0.5)  # a partial entity is wrong
    assert metrics.entity_f1(gold, gold) == 1.0


def test_word_f1_ignores_none_tag_and_unscored_words():
    # scored: pred 1,1,0 vs gold 0,1,2 -> tp=1, predicted=2, actual=2
    assert metrics.word_f1([[1, 1, 0, 2]], [[0, 1, 2, -100]]) == pytest.approx(0.5)
    assert metrics.word_f1([[0, 0]], [[0, 0]]) == 0.0
    with pytest.raises(ValueError, match="tag 2 and 3 words"):
        metrics.word_f1([[0, 1]], [[0, 1, 1]])


def test_squad_normalisation_exact_match_and_f1():
    assert metrics.normalize_answer("The  Cat's!") == "cats"
    assert metrics.normalize_answer("an apple, a pear") == "apple pear"
    assert metrics.exact_match(["the Eiffel Tower", "Paris"], [["Eiffel Tower"], ["London", "Rome"]]) == 0.5
    # pred tokens {in, big, city} vs gold {city}: P = 1/3, R = 1 -> F = 1/2; best over golds
    assert metrics.squad_f1(["in the big city"], [["the city", "nothing"]]) == pytest.approx(0.5)
    assert metrics.squad_f1(["x"], ["y"]) == 0.0


def test_compute_returns_percentages_and_rejects_unknown_metrics():
    assert metrics.compute(["accuracy", "f1"], [1, 0], [1, 1]) == {"accuracy": 50.0, "f1": pytest.approx(200 / 3)}
    with pytest.raises(ValueError, match="unknown metric"):
        metrics.compute(["bleu"], [1], [1])
