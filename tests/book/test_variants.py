"""The shared steps of the variant chapters on hand-made rows: learned tasks glued, the score table's cells and
average, the slowest variant's minutes per seed."""

import pandas as pd

from mtllib.book import variants

ROWS = pd.DataFrame([("shared", 0, "a", 80.0, True, 60.0), ("shared", 1, "a", 82.0, True, 60.0),
                     ("pals", 0, "a", 84.0, True, 120.0), ("pals", 1, "a", 86.0, True, 180.0),
                     ("shared", 0, "b", 50.0, False, 60.0), ("shared", 1, "b", 52.0, True, 60.0),
                     ("pals", 0, "b", 54.0, True, 120.0), ("pals", 1, "b", 56.0, True, 180.0)],
                    columns=["variant", "seed", "task", "score", "learned", "train_seconds"])


def test_learned_tasks_are_glued_and_returned():
    glued = {}
    assert variants.learned_tasks(ROWS, ["a", "b"], glue=glued.__setitem__) == ["a"]  # one shared model missed b
    assert glued == {"learned": "a", "n_learned": "1"}
    variants.learned_tasks(ROWS[ROWS.task == "b"], ["b"], glue=glued.__setitem__)
    assert glued == {"learned": "none", "n_learned": "0"}


def test_score_table_and_the_average_over_the_learned_tasks():
    table, per_seed = variants.score_table(ROWS, ["a", "b"], ["a"])
    assert list(table.columns) == ["a", "b", "average (learned)"] and list(table.index) == ["shared", "pals"]
    # two seeds, 84 and 86: mean 85, half-width t(0.975, 1) x sd / sqrt 2 = 12.706 x 1.414 / 1.414 = 12.7
    assert table.loc["pals", "a"] == "85.0 [72.3, 97.7]" and table.loc["pals", "average (learned)"] == table.loc["pals", "a"]
    assert per_seed.loc[1, "pals"] == 86.0
    table, per_seed = variants.score_table(ROWS, ["a", "b"], [])
    assert "average (learned)" not in table and per_seed.empty


def test_train_minutes_is_the_slowest_variant_per_seed():
    # shared: one model of 60 s per seed; pals: models of 120 s and 180 s over two seeds -> 2.5 min per seed
    assert variants.train_minutes(ROWS, [0, 1]) == 2.5


def test_the_variants_figure_has_both_panels_and_the_margin_lines():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    _, per_seed = variants.score_table(ROWS, ["a", "b"], ["a"])
    fig = variants.variants_figure(per_seed, {"pals\nminus shared": per_seed["pals"] - per_seed["shared"]}, order=["pals", "shared"], margin=1.0)
    top, bottom = fig.axes
    assert [t.get_text() for t in top.get_xticklabels()] == ["pals", "shared"]
    assert bottom.get_title().endswith("(dotted: \u00b11)")
    assert sorted(line.get_ydata()[0] for line in bottom.lines if line.get_linestyle() == ":") == [-1.0, 1.0]
    plt.close(fig)
    empty = variants.variants_figure(per_seed.iloc[:, :0], {})
    assert [t.get_text() for ax in empty.axes for t in ax.texts] == ["no task was learned by every model", "no claim could be judged"]
    plt.close(empty)


def test_compare_reads_the_rows_once_for_the_whole_chapter():
    glued = {}
    runs = variants.compare(ROWS.assign(validation=70.0, majority=50.0), ["a", "b"], [0, 1],
                            parameters=pd.Series({"pals": "1.5x", "shared": "1.0x"}), glue=glued.__setitem__)
    assert glued == {"train_minutes": 2.5, "learned": "a", "n_learned": "1"}
    assert runs.learned == ["a"]
    assert runs.table.loc["pals", "parameters"] == "1.5x" and runs.table.loc["shared", "parameters"] == "1.0x"
    assert runs.table.loc["pals", "average (learned)"] == "85.0 [72.3, 97.7]"  # the learned task only
    assert runs.per_seed.loc[0, "shared"] == 80.0
    assert runs.gate.loc["b", ("learned", "shared")] == "1/2" and runs.gate.loc["a", ("learned", "pals")] == "2/2"
    by_method = variants.compare(ROWS.rename(columns={"variant": "method"}).assign(validation=70.0, majority=50.0), ["a", "b"], [0, 1],
                                 by="method", glue=glued.__setitem__)
    assert "parameters" not in by_method.table and list(by_method.per_seed.columns) == ["shared", "pals"]


def test_a_stand_in_is_labelled_with_its_glue_role():
    assert variants.glue_role("bbc-next") == "mnli" and variants.glue_role("bbc-acceptability") == "cola"
    assert variants.glue_role("rte") == "rte" and variants.glue_role("bbc-topic") is None
    assert variants.role_label("bbc-entailment") == "bbc-entailment (rte)"
    assert variants.role_label("rte") == "rte" and variants.role_label("bbc-topic") == "bbc-topic"


def test_the_gains_figure_shows_the_learned_tasks_with_their_roles_and_the_average():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    gains = pd.DataFrame({"bbc-next": [1.0, 2.0], "bbc-topic": [0.5, 0.0], "bbc-entailment": [3.0, -1.0], "average": [1.5, 0.5]})
    fig = variants.gains_figure(gains, ["bbc-next", "bbc-topic"], "the title", "points", paper=pd.Series({"average": 0.76}))
    (ax,) = fig.axes
    assert [t.get_text() for t in ax.get_xticklabels()] == ["bbc-next (mnli)", "bbc-topic", "average"]  # bbc-entailment not learned
    assert ax.get_title() == "the title" and ax.get_ylabel() == "points"
    diamonds = [c for c in ax.collections if len(c.get_offsets()) == 1 and c.get_offsets()[0][1] == 0.76]
    assert len(diamonds) == 1 and round(diamonds[0].get_offsets()[0][0]) == 2  # the paper's value beside "average"
    plt.close(fig)
    empty = variants.gains_figure(gains, [], "t", "points")
    assert [t.get_text() for t in empty.axes[0].get_xticklabels()] in ([], ["average"])
    plt.close(empty)
