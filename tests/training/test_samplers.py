"""Samplers: probabilities against the formulas, schedules against the probabilities."""

import re

import numpy as np
import pytest

from mtllib.training import samplers
from mtllib.training.samplers import TaskSampler

SIZES = [400, 100, 25]


def test_probability_formulas():
    np.testing.assert_allclose(samplers.proportional_probs(SIZES), [400 / 525, 100 / 525, 25 / 525])
    np.testing.assert_allclose(samplers.temperature_probs(SIZES, 2), np.array([20, 10, 5]) / 35)  # square root
    np.testing.assert_allclose(samplers.temperature_probs(SIZES, 1), samplers.proportional_probs(SIZES))
    np.testing.assert_allclose(samplers.temperature_probs(SIZES, 1e9), [1 / 3] * 3, atol=1e-6)


def test_annealed_epsilon_is_eq_8():
    # eps = 1 - 0.8 (e - 1) / (E - 1): 1.0, 0.8, 0.6, 0.4, 0.2 over five epochs
    assert [samplers.annealed_epsilon(e, 5) for e in range(1, 6)] == pytest.approx([1.0, 0.8, 0.6, 0.4, 0.2])
    assert samplers.annealed_epsilon(1, 1) == 1.0  # E = 1: no division by zero
    w = np.array(SIZES, dtype=float) ** 0.6
    np.testing.assert_allclose(samplers.annealed_probs(SIZES, 3, 5), w / w.sum())
    with pytest.raises(ValueError, match="epoch must be in 1..num_epochs"):
        samplers.annealed_probs(SIZES, 0, 5)


def test_pals_variant_anneals_in_2400_step_epochs():
    total = 3 * 2400
    np.testing.assert_allclose(samplers.pals_annealed_probs(SIZES, 0, total), samplers.annealed_probs(SIZES, 1, 3))
    np.testing.assert_allclose(samplers.pals_annealed_probs(SIZES, 2399, total), samplers.annealed_probs(SIZES, 1, 3))
    np.testing.assert_allclose(samplers.pals_annealed_probs(SIZES, 2400, total), samplers.annealed_probs(SIZES, 2, 3))
    np.testing.assert_allclose(samplers.pals_annealed_probs(SIZES, total - 1, total), samplers.annealed_probs(SIZES, 3, 3))


def _frequencies(schedule, n):
    return np.bincount(schedule, minlength=n) / len(schedule)


def test_exact_coverage_visits_every_batch_once_per_epoch():
    sampler = TaskSampler("proportional", SIZES, num_epochs=2, seed=0)
    first, second = sampler.schedule(1), sampler.schedule(2)
    assert np.bincount(first).tolist() == SIZES and np.bincount(second).tolist() == SIZES
    assert not np.array_equal(first, second)  # reshuffled each epoch
    assert np.array_equal(first, TaskSampler("proportional", SIZES, 2, seed=0).schedule(1))  # seeded


@pytest.mark.parametrize("name, expected", [
    ("proportional-replacement", samplers.proportional_probs(SIZES)),
    ("sqrt", samplers.temperature_probs(SIZES, 2)),
    ("uniform", np.full(3, 1 / 3)),
])
def test_sampling_with_replacement_follows_its_probabilities(name, expected):
    sampler = TaskSampler(name, np.array(SIZES) * 40, num_epochs=1, seed=1)  # 21,000 steps
    np.testing.assert_allclose(_frequencies(sampler.schedule(1), 3), expected, atol=0.01)


def test_temperature_and_annealed_schedules_follow_their_probabilities():
    sizes = np.array(SIZES) * 40
    t = TaskSampler("temperature", sizes, num_epochs=1, temperature=3.0, seed=2)
    np.testing.assert_allclose(_frequencies(t.schedule(1), 3), samplers.temperature_probs(sizes, 3.0), atol=0.01)
    a = TaskSampler("annealed", sizes, num_epochs=4, seed=2)
    for epoch in (1, 4):
        np.testing.assert_allclose(_frequencies(a.schedule(epoch), 3), samplers.annealed_probs(sizes, epoch, 4), atol=0.01)
    p = TaskSampler("pals-annealed", sizes, num_epochs=1, seed=2)  # 21,000 steps = 9 PALs epochs
    schedule = p.schedule(1)
    np.testing.assert_allclose(_frequencies(schedule[:2400], 3), samplers.pals_annealed_probs(sizes, 0, 21000), atol=0.025)
    np.testing.assert_allclose(_frequencies(schedule[-2400:], 3), samplers.pals_annealed_probs(sizes, 20999, 21000), atol=0.025)


def test_round_robin_advances_through_tasks_across_epochs():
    sampler = TaskSampler("round-robin", [2, 2], num_epochs=2)  # 4 steps per epoch
    assert sampler.schedule(1).tolist() == [0, 1, 0, 1]
    odd = TaskSampler("round-robin", [2, 1, 2], num_epochs=2)  # 5 steps per epoch
    assert odd.schedule(1).tolist() == [0, 1, 2, 0, 1] and odd.schedule(2).tolist() == [2, 0, 1, 2, 0]


def test_bad_sampler_settings():
    with pytest.raises(ValueError, match="unknown sampler 'balanced'; choose one of proportional"):
        TaskSampler("balanced", SIZES, 1)
    with pytest.raises(ValueError, match="whole numbers of batches >= 1"):
        TaskSampler("uniform", [3, 0], 1)
    with pytest.raises(ValueError, match="whole numbers of batches >= 1"):
        TaskSampler("uniform", [], 1)
    with pytest.raises(ValueError, match="temperature must be > 0"):
        TaskSampler("temperature", SIZES, 1, temperature=0)


# --- what the mutation run (make mutation) found unpinned -----------------------------------------------
def test_probabilities_refuse_sizes_that_are_not_a_list_of_positive_counts():
    with pytest.raises(ValueError, match="^sizes must be a non-empty list of task sizes$"):
        samplers.proportional_probs([])
    with pytest.raises(ValueError, match="sizes must be a non-empty list of task sizes"):
        samplers.proportional_probs([[1, 2], [3, 4]])
    with pytest.raises(ValueError, match=r"every task needs at least one example, got sizes \[3.0, 0.0\]"):
        samplers.temperature_probs([3, 0], 2.0)


def test_pals_steps_past_the_end_stay_in_the_last_epoch():
    # one PALs epoch in all (100 steps < 2,400): every step, even one past the end, samples proportionally
    np.testing.assert_allclose(samplers.pals_annealed_probs(SIZES, 5000, 100), samplers.proportional_probs(SIZES))


def test_sampler_defaults_are_temperature_2_and_seed_0():
    np.testing.assert_allclose(TaskSampler("temperature", SIZES, 1).probs(1), samplers.temperature_probs(SIZES, 2.0))
    assert np.array_equal(TaskSampler("proportional", SIZES, 2).schedule(1), TaskSampler("proportional", SIZES, 2, seed=0).schedule(1))
    assert not np.array_equal(TaskSampler("proportional", SIZES, 2).schedule(1), TaskSampler("proportional", SIZES, 2, seed=1).schedule(1))


def test_every_sampler_reports_the_distribution_it_samples_from():
    sampler = lambda name: TaskSampler(name, SIZES, 3, temperature=3.0)
    np.testing.assert_allclose(sampler("proportional").probs(1), samplers.proportional_probs(SIZES))
    np.testing.assert_allclose(sampler("proportional-replacement").probs(2), samplers.proportional_probs(SIZES))
    np.testing.assert_allclose(sampler("sqrt").probs(1), samplers.temperature_probs(SIZES, 2.0))
    np.testing.assert_allclose(sampler("temperature").probs(1), samplers.temperature_probs(SIZES, 3.0))
    np.testing.assert_allclose(sampler("annealed").probs(2), samplers.annealed_probs(SIZES, 2, 3))
    np.testing.assert_allclose(sampler("uniform").probs(1), [1 / 3] * 3)
    np.testing.assert_allclose(sampler("round-robin").probs(1), [1 / 3] * 3)


@pytest.mark.parametrize("sizes, epoch, step", [([2000, 400], 2, 2400), ([2000, 399], 2, 2399), ([2000, 400], 1, 0)])
def test_pals_probs_of_an_epoch_are_those_of_its_first_step(sizes, epoch, step):
    # our epoch of 2,400 or 2,399 steps against the PALs epoch of 2,400: the boundary decides the annealing stage
    sampler = TaskSampler("pals-annealed", sizes, 2)
    np.testing.assert_allclose(sampler.probs(epoch), samplers.pals_annealed_probs(sizes, step, 2 * sum(sizes)))


@pytest.mark.parametrize("sizes, shown", [([True, 2], "2"), ([1.5, 2], "1.5"), (["a", "b"], "'a'"), ([[1, 2]], "1, 2"), ([2, -1], "-1")])
def test_sampler_sizes_must_be_whole_batch_counts(sizes, shown):
    with pytest.raises(ValueError, match=r"TaskSampler sizes must be whole numbers of batches >= 1 per task, got \[.*" + re.escape(shown)):
        TaskSampler("uniform", sizes, 1)


@pytest.mark.parametrize("num_epochs", [0, True, 2.0, -1])
def test_sampler_epochs_must_be_a_positive_integer(num_epochs):
    with pytest.raises(ValueError, match=f"num_epochs must be an integer >= 1, got {num_epochs!r}"):
        TaskSampler("uniform", SIZES, num_epochs)


def test_unknown_sampler_lists_every_choice():
    with pytest.raises(ValueError, match="choose one of " + ", ".join(samplers.SAMPLERS)):
        TaskSampler("balanced", SIZES, 1)
