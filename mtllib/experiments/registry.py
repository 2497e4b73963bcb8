"""The library's experiments, registered with :mod:`mtllib.experiments.jobs` when this module is imported."""

from mtllib.experiments import iap_job, multitask, surface_baselines  # noqa: F401
