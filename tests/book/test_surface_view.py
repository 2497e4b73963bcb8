"""Chapter 01's surface-baseline view: its table from stored results, and findings that follow the numbers."""

import numpy as np
import pandas as pd

from mtllib.book import surface_view
from mtllib.experiments import jobs
from mtllib.store.results import Result


def _result(rows):
    return Result({"key": "k"}, {"baselines": pd.DataFrame(rows, columns=["baseline", "split", "metric", "score", "rule"])}, {})


def _view(entailment_rule_score):
    results = {
        jobs.Job("surface-baselines", task="bbc-entailment"): _result([
            ("majority class", "validation", "accuracy", 50.0, ""), ("overlap rule", "validation", "accuracy", entailment_rule_score, "entailment when X"),
            ("bag of words", "validation", "accuracy", 70.0, ""), ("overlap rule", "test", "accuracy", 1.0, "entailment when X")]),
        jobs.Job("surface-baselines", task="bbc-topic"): _result([
            ("majority class", "validation", "accuracy", 24.0, ""), ("bag of words", "validation", "accuracy", 90.0, "")]),
    }
    return surface_view.table(results)


def test_the_table_has_one_row_per_task_with_each_baseline_on_validation():
    view = _view(99.0)
    assert view.loc["bbc-entailment", "overlap rule"] == 99.0 and view.loc["bbc-entailment", "plays"] == "RTE"
    assert np.isnan(view.loc["bbc-topic", "overlap rule"]) and view.loc["bbc-topic", "bag of words"] == 90.0
    assert view.loc["bbc-topic", "overlap rule in words"] == "no pair of texts to compare"


def test_findings_name_the_tasks_a_surface_cue_solves_and_only_those():
    text = surface_view.findings(_view(99.0))
    assert text.startswith("On 1 of 2 tasks a surface baseline scores 95 or more: bbc-entailment (RTE's role: 99.0)")
    assert '"entailment when X"' in text and "bbc-topic" not in text
    assert surface_view.findings(_view(80.0)).startswith("No task's surface baseline reaches 95")


def test_the_figure_draws_every_task():
    fig = surface_view.figure(_view(99.0))
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["bbc-topic (accuracy)", "bbc-entailment (accuracy)"]
    assert {t.get_text() for t in fig.axes[0].get_legend().get_texts()} == set(surface_view.BASELINES)
