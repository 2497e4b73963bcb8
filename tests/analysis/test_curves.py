"""Appendix A of "BERT and PALs": how much a task's dev score moves over training, and how far it ends below its best."""

import numpy as np
import pandas as pd
import pytest

from mtllib.analysis import curves

# two runs; task "small" moves 70 -> 80 -> 74 -> 77 in run (pals, 0), "large" 60 -> 70 -> 71 -> 72
HISTORY = pd.DataFrame(
    [("pals", 0, e, "small", s) for e, s in zip((1, 2, 3, 4), (70, 80, 74, 77))]
    + [("pals", 0, e, "large", s) for e, s in zip((1, 2, 3, 4), (60, 70, 71, 72))]
    + [("low_rank", 0, e, "small", s) for e, s in zip((4, 3, 2, 1), (50, 50, 50, 40))],  # epochs out of order
    columns=["variant", "seed", "epoch", "task", "score"])


def test_variation_is_the_sd_of_the_scores_from_the_second_epoch_on():
    v = curves.variation(HISTORY)
    # by hand: sd of (80, 74, 77) = sqrt(((3)^2 + (-3)^2 + 0^2) / 2) = 3; of (70, 71, 72) = 1; of (50, 50, 50) = 0
    assert v[("pals", 0, "small")] == pytest.approx(3.0)
    assert v[("pals", 0, "large")] == pytest.approx(1.0)
    assert v[("low_rank", 0, "small")] == pytest.approx(0.0)
    every = curves.variation(HISTORY, first_epoch=1)
    assert every[("pals", 0, "small")] == pytest.approx(np.std([70, 80, 74, 77], ddof=1))
    assert curves.variation(HISTORY, first_epoch=4).isna().all()  # one epoch left: no spread to speak of


def test_late_fall_is_best_minus_last_epoch():
    fall = curves.late_fall(HISTORY)
    assert fall[("pals", 0, "small")] == pytest.approx(3.0)   # best 80, last (epoch 4) 77
    assert fall[("pals", 0, "large")] == pytest.approx(0.0)   # the last epoch is the best
    assert fall[("low_rank", 0, "small")] == pytest.approx(0.0)  # last epoch is epoch 4 (50), not the last row (40)


def test_bad_histories_and_epochs_are_named():
    with pytest.raises(ValueError, match=r"lacks column\(s\) \['seed'\]"):
        curves.variation(HISTORY.drop(columns="seed"))
    with pytest.raises(ValueError, match="first_epoch"):
        curves.variation(HISTORY, first_epoch=0)


def test_resource_halves_split_by_training_size():
    assert curves.resource_halves({"big": 1000, "small": 320}) == (["small"], ["big"])
    assert curves.resource_halves({"a": 5, "b": 1, "c": 3, "d": 9, "e": 7}) == (["b", "c"], ["e", "d"])  # by size; "a" (middle) in neither
    with pytest.raises(ValueError, match="at least two tasks"):
        curves.resource_halves({"only": 10})


def test_low_minus_high_per_run():
    v = curves.variation(HISTORY)
    diff = curves.low_minus_high(v[v.index.get_level_values("variant") == "pals"], {"small": 320, "large": 1000})
    assert diff[("pals", 0)] == pytest.approx(3.0 - 1.0)
    # low_rank has no "large" row: NaN, not a comparison with a missing task
    assert np.isnan(curves.low_minus_high(v, {"small": 320, "large": 1000})[("low_rank", 0)])
    with pytest.raises(ValueError, match=r"no values for task\(s\) \['other'\]"):
        curves.low_minus_high(v, {"small": 320, "other": 1000})
