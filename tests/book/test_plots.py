"""The book's figures: heat-map labels that contrast with their cells, per-seed dots with the mean's 95% CI,
and a figure handed to its caption once."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from mtllib.book import plots


def test_heatmap_labels_contrast_with_their_cells_and_skip_nan():
    fig, ax = plt.subplots()
    table = pd.DataFrame([[0.0, 1.0], [np.nan, 0.5]], index=["r0", "r1"], columns=["c0", "c1"])
    plots.heatmap(ax, table, cmap="Greys", fmt="{:.2f}")  # Greys: 0 is white, 1 is black
    labels = {t.get_text(): t.get_color() for t in ax.texts}
    assert set(labels) == {"0.00", "1.00", "0.50"}  # the NaN cell has no label
    assert labels["0.00"] == "black" and labels["1.00"] == "white"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["c0", "c1"]
    plt.close(fig)


def test_seeds_with_ci_draws_every_seed_and_the_t_interval():
    fig, ax = plt.subplots()
    per_seed = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [5.0, np.nan, 7.0]})
    plots.seeds_with_ci(ax, per_seed, paper=pd.Series({"a": 4.0}), ylabel="D (%)")
    points = [c for c in ax.collections if isinstance(c, matplotlib.collections.PathCollection)]
    seeds = sum(len(c.get_offsets()) for c in points if c.get_label() != "paper")
    assert seeds == 5  # three of a, two of b (NaN dropped)
    # a: mean 2, half-width t(0.975, 2) x 1 / sqrt(3) = 4.303 / 1.732 = 2.484
    bars = [line for line in ax.lines if len(line.get_ydata()) == 1]
    assert bars[0].get_ydata()[0] == pytest.approx(2.0)
    caps = sorted(y for line in ax.lines if line.get_marker() == "_" for x, y in zip(line.get_xdata(), line.get_ydata()) if x == pytest.approx(0.28))
    assert caps == pytest.approx([2.0 - 2.484, 2.0 + 2.484], abs=1e-3)
    paper = [c for c in points if c.get_label() == "paper"]
    assert paper[0].get_offsets()[0].tolist() == pytest.approx([0.28, 4.0])
    assert ax.get_ylabel() == "D (%)"
    plt.close(fig)


def test_the_paper_is_in_the_legend_when_only_a_later_item_has_a_paper_value():
    fig, ax = plt.subplots()
    plots.seeds_with_ci(ax, pd.DataFrame({"a": [1.0, 2.0], "b": [3.0, 4.0], "c": [0.0, 1.0]}), paper=pd.Series({"b": 2.0, "c": 1.0}))
    labels = ax.get_legend_handles_labels()[1]
    assert labels.count("paper") == 1 and "one seed" in labels
    plt.close(fig)


def test_glue_figure_stores_the_figure_and_closes_it():
    fig, _ = plt.subplots()
    glued = {}
    plots.glue_figure("fig_x", fig, glue=glued.__setitem__)
    assert glued == {"fig_x": fig}
    assert not plt.fignum_exists(fig.number)


def test_nothing_to_show_says_why_on_every_panel():
    fig, axes = plt.subplots(1, 2)
    plots.nothing_to_show(axes, "no sweep in this profile")
    for ax in axes:
        assert [t.get_text() for t in ax.texts] == ["no sweep in this profile"] and not ax.axison
        assert ax.texts[0].get_transform() == ax.transAxes  # the middle of the panel whatever the data limits
    fig2, ax = plt.subplots()
    plots.nothing_to_show(ax, "no task was learned")
    assert ax.texts[0].get_text() == "no task was learned"
    plt.close(fig)
    plt.close(fig2)
