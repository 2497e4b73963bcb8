"""Properties of the task samplers (hypothesis): distributions sum to one, schedules depend only on
(seed, epoch), Eq. 8's annealing runs from proportional (first epoch) to N^0.2 (last epoch)."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mtllib.training.samplers import SAMPLERS, TaskSampler, annealed_probs, proportional_probs, temperature_probs

sizes = st.lists(st.integers(1, 40), min_size=1, max_size=6)
epochs = st.integers(1, 6)


@given(sizes, epochs, st.sampled_from(SAMPLERS))
@settings(max_examples=60, deadline=None)
def test_every_sampler_gives_a_distribution_at_every_step(n, num_epochs, name):
    sampler = TaskSampler(name, n, num_epochs)
    for epoch in range(1, num_epochs + 1):
        p = sampler.probs(epoch, 0)
        assert p.shape == (len(n),) and np.all(p > 0) and p.sum() == pytest.approx(1.0)


@given(sizes, epochs, st.sampled_from(SAMPLERS), st.integers(0, 1000))
@settings(max_examples=40, deadline=None)
def test_a_schedule_depends_only_on_seed_and_epoch(n, num_epochs, name, seed):
    a, b = TaskSampler(name, n, num_epochs, seed=seed), TaskSampler(name, n, num_epochs, seed=seed)
    b.schedule(num_epochs)  # another epoch asked first changes nothing
    for epoch in range(1, num_epochs + 1):
        s = a.schedule(epoch)
        assert np.array_equal(s, b.schedule(epoch))
        assert len(s) == sum(n) and s.min() >= 0 and s.max() < len(n)


@given(sizes, epochs, st.integers(0, 1000))
@settings(max_examples=40, deadline=None)
def test_proportional_schedule_visits_every_batch_once_per_epoch(n, num_epochs, seed):
    sampler = TaskSampler("proportional", n, num_epochs, seed=seed)
    for epoch in range(1, num_epochs + 1):
        assert np.bincount(sampler.schedule(epoch), minlength=len(n)).tolist() == n


@given(sizes, st.integers(2, 10))
@settings(max_examples=60, deadline=None)
def test_eq8_anneals_from_proportional_to_the_fifth_root(n, num_epochs):
    sizes = np.asarray(n, dtype=float)
    np.testing.assert_allclose(annealed_probs(n, 1, num_epochs), sizes / sizes.sum())
    last = sizes ** 0.2
    np.testing.assert_allclose(annealed_probs(n, num_epochs, num_epochs), last / last.sum())
    # in between, the largest task's share never grows from one epoch to the next
    big = int(np.argmax(sizes))
    shares = [annealed_probs(n, e, num_epochs)[big] for e in range(1, num_epochs + 1)]
    assert all(later <= earlier + 1e-12 for earlier, later in zip(shares, shares[1:]))


@given(sizes)
def test_temperature_one_is_proportional_and_large_temperature_nears_uniform(n):
    np.testing.assert_allclose(temperature_probs(n, 1.0), proportional_probs(n))
    np.testing.assert_allclose(temperature_probs(n, 1e9), np.full(len(n), 1 / len(n)), atol=1e-6)
