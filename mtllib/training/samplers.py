"""Task samplers: which task the next training batch comes from (in the spirit of jiant's task samplers).

Sources: "BERT and PALs" Sec. 4.1 (proportional, square-root and annealed sampling, round-robin) and
Appendix F, Eq. 8 of "Interpreting and Exploiting Functional Specialization in Multi-Head Attention under
Multi-task Learning" (annealed sampling, which that paper's GLUE models use; proportional is its default).

The probabilities are plain functions of the task sizes ``N_i`` (:func:`proportional_probs`,
:func:`temperature_probs`, :func:`annealed_probs`, :func:`pals_annealed_probs`); a :class:`TaskSampler`
turns them into a seeded *schedule*: the list of task indices for the steps of one epoch. A schedule
depends only on ``(seed, epoch)``, so a resumed run replays exactly the same tasks.

Heterogeneous batches (examples of several tasks in one batch, "Exploring the Role of Task Transferability
in Large-Scale Multi-Task Learning") are not a task sampler: see ``batching="heterogeneous"`` in
:mod:`mtllib.training.trainer`.
"""

from __future__ import annotations

import math

import numpy as np

SAMPLERS = ("proportional", "proportional-replacement", "sqrt", "temperature", "annealed", "pals-annealed", "uniform", "round-robin")
#: an "epoch" of the PALs annealing schedule, in training steps ("BERT and PALs", Sec. 4.1)
PALS_STEPS_PER_EPOCH = 2400


def _sizes(sizes) -> np.ndarray:
    sizes = np.asarray(sizes, dtype=np.float64)
    if sizes.ndim != 1 or len(sizes) == 0:
        raise ValueError("sizes must be a non-empty list of task sizes")
    if np.any(sizes <= 0):
        raise ValueError(f"every task needs at least one example, got sizes {sizes.tolist()}")
    return sizes


def proportional_probs(sizes) -> np.ndarray:
    """``p_i = N_i / sum_j N_j``."""
    sizes = _sizes(sizes)
    return sizes / sizes.sum()


def temperature_probs(sizes, temperature: float) -> np.ndarray:
    """``p_i proportional to N_i^(1/T)``: T = 1 is proportional, T = 2 square-root, T -> inf uniform."""
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    weights = _sizes(sizes) ** (1.0 / temperature)
    return weights / weights.sum()


def annealed_epsilon(epoch: int, num_epochs: int) -> float:
    """Eq. 8's exponent ``eps = 1 - 0.8 (e - 1) / (E - 1)``, epochs counted from 1; ``E = 1`` gives 1."""
    if num_epochs < 1 or not 1 <= epoch <= num_epochs:
        raise ValueError(f"epoch must be in 1..num_epochs (num_epochs >= 1), got epoch={epoch}, num_epochs={num_epochs}")
    return 1.0 if num_epochs == 1 else 1.0 - 0.8 * (epoch - 1) / (num_epochs - 1)


def annealed_probs(sizes, epoch: int, num_epochs: int) -> np.ndarray:
    """Eq. 8: ``p_i proportional to N_i^eps`` with ``eps = 1 - 0.8 (e - 1)/(E - 1)``: proportional in the first
    epoch, close to uniform (``N_i^0.2``) in the last."""
    weights = _sizes(sizes) ** annealed_epsilon(epoch, num_epochs)
    return weights / weights.sum()


def pals_annealed_probs(sizes, step: int, total_steps: int, steps_per_epoch: int = PALS_STEPS_PER_EPOCH) -> np.ndarray:
    """The PALs variant: the same formula, with an "epoch" of ``steps_per_epoch`` training steps (2,400 in
    "BERT and PALs") counted from step 0, so the schedule anneals within what our trainer calls an epoch."""
    num_epochs = max(1, math.ceil(total_steps / steps_per_epoch))
    epoch = min(step // steps_per_epoch + 1, num_epochs)
    return annealed_probs(sizes, epoch, num_epochs)


class TaskSampler:
    """A seeded schedule of tasks. ``sizes`` are the numbers of training *batches* of each task per epoch
    (for the size-based samplers any positive sizes work; exact coverage needs batch counts)."""

    def __init__(self, name: str, sizes, num_epochs: int, temperature: float = 2.0, seed: int = 0):
        if name not in SAMPLERS:
            raise ValueError(f"unknown sampler {name!r}; choose one of {', '.join(SAMPLERS)}")
        self.name = name
        raw = np.asarray(sizes)
        has_bool = raw.ndim == 1 and any(isinstance(x, (bool, np.bool_)) for x in (sizes if isinstance(sizes, (list, tuple)) else raw))
        if has_bool or raw.ndim != 1 or raw.size == 0 or raw.dtype == bool or not np.issubdtype(raw.dtype, np.number) or np.any(raw != np.round(raw)) or np.any(raw < 1):
            raise ValueError(f"TaskSampler sizes must be whole numbers of batches >= 1 per task, got {list(np.atleast_1d(sizes))}")
        self.sizes = _sizes(raw)
        if isinstance(num_epochs, bool) or not isinstance(num_epochs, (int, np.integer)) or num_epochs < 1:
            raise ValueError(f"num_epochs must be an integer >= 1, got {num_epochs!r}")
        self.num_epochs = num_epochs
        self.temperature = temperature
        if name == "temperature":
            temperature_probs(self.sizes, temperature)  # validates the temperature now
        self.seed = seed

    @property
    def steps_per_epoch(self) -> int:
        """One epoch visits as many batches as the tasks have together."""
        return int(self.sizes.sum())

    def probs(self, epoch: int, step_in_epoch: int = 0) -> np.ndarray:
        """The sampling distribution at a step (uniform for round-robin, which is deterministic)."""
        if self.name in ("proportional", "proportional-replacement"):
            return proportional_probs(self.sizes)
        if self.name == "sqrt":
            return temperature_probs(self.sizes, 2.0)
        if self.name == "temperature":
            return temperature_probs(self.sizes, self.temperature)
        if self.name == "annealed":
            return annealed_probs(self.sizes, epoch, self.num_epochs)
        if self.name == "pals-annealed":
            step = (epoch - 1) * self.steps_per_epoch + step_in_epoch
            return pals_annealed_probs(self.sizes, step, self.num_epochs * self.steps_per_epoch)
        return np.full(len(self.sizes), 1.0 / len(self.sizes))

    def schedule(self, epoch: int) -> np.ndarray:
        """Task index of every step of ``epoch`` (1-based), the same for the same ``(seed, epoch)``."""
        annealed_epsilon(epoch, self.num_epochs)  # validates the epoch
        n, steps = len(self.sizes), self.steps_per_epoch
        rng = np.random.default_rng([self.seed, epoch, 7])
        if self.name == "proportional":  # exact coverage: every batch of every task once, shuffled
            return rng.permutation(np.repeat(np.arange(n), self.sizes.astype(np.int64)))
        if self.name == "round-robin":  # keeps advancing across epochs
            return (np.arange(steps) + (epoch - 1) * steps) % n
        if self.name == "pals-annealed":  # the distribution changes within the epoch: inverse-CDF per step
            cumulative = np.cumsum([self.probs(epoch, s) for s in range(steps)], axis=1)
            return np.minimum((rng.random(steps)[:, None] >= cumulative).sum(axis=1), n - 1)
        return rng.choice(n, size=steps, p=self.probs(epoch))
