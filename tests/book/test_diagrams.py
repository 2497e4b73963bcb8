"""The transferability diagrams are drawn from the settings they are given: every task, group and scheme
appears, targets are told apart from pre-finetuning tasks."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from mtllib.book import diagrams

GROUPS = {"SL": ["bbc-pos", "bbc-chunk"], "QA": ["bbc-wh"], "C": ["bbc-topic"]}
TARGETS = {"SL": ["tweet-pos"], "C": ["tweet-sentiment", "bbc-pair"]}


def texts(fig):
    return [t.get_text() for ax in fig.axes for t in ax.texts]


def test_task_groups_shows_every_task_once_and_dashes_only_the_targets():
    fig = diagrams.task_groups(GROUPS, TARGETS)
    shown = texts(fig)
    for task in [*sum(GROUPS.values(), []), *sum(TARGETS.values(), [])]:
        assert shown.count(task) == 1, task
    styles = [p.get_linestyle() for p in fig.axes[0].patches]
    assert styles.count("--") == 3 and styles.count("-") == 4
    plt.close(fig)


def test_workflow_has_one_row_per_scheme_with_its_task_count():
    schemes = ["Baseline", "Only-SL", "SL+QA+C"]
    fig = diagrams.workflow(schemes, GROUPS, TARGETS)
    shown = texts(fig)
    assert all(s in shown for s in schemes)
    assert "2 tasks" in shown and "4 tasks" in shown and "none (Baseline)" in shown
    assert any("3 targets" in t for t in shown)
    plt.close(fig)
