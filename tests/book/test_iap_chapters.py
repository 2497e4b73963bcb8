"""The steps of the IAP chapters (02-05): the task table, the claims each chapter judges (hand-made rows with
known answers) and the figures' layout."""

from collections import Counter
from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from mtllib.analysis import stats
from mtllib.book import iap_chapters as chapter
from mtllib.papers import functional_specialization as paper


class Glue(dict):
    def __call__(self, key, value):
        self[key] = value


@pytest.fixture(scope="module")
def small_data():
    from mtllib.data.features import load_tokenizer, prepare

    return prepare(["bbc-topic", "tweet-sentiment"], load_tokenizer("offline"), seed=0, max_train=20, max_eval=10, max_length=32)


def test_the_task_table_describes_each_prepared_task(small_data):
    table = chapter.task_table(small_data)
    assert list(table.index) == ["bbc-topic", "tweet-sentiment"]
    assert list(table.columns) == ["paper's task", "input", "train", "test", "metric", "majority class, test (%)", "chance (%)"]
    assert table["paper's task"].tolist() == ["AG", "SST-2"]
    assert table["input"].tolist() == ["single", "single"]
    assert table["train"].tolist() == [20, 20] and table["test"].tolist() == [10, 10]
    assert table["chance (%)"].tolist() == [20.0, 33.3]  # 5 topics, 3 sentiments
    for name, d in small_data.items():  # the most frequent training label, scored on the test labels
        top = Counter(d.rows["train"]["label"]).most_common(1)[0][0]
        expected = round(100 * float(np.mean(np.asarray(d.rows["test"]["label"]) == top)), 1)
        assert table.loc[name, "majority class, test (%)"] == expected
    assert chapter.task_table(small_data, {"bbc-topic": "mine"})["paper's task"].tolist() == ["mine", "SST-2"]


def _dual_rows(frozen_shift: float = 0.0) -> pd.DataFrame:
    """Two pairs over three seeds: bbc-lede + bbc-topic (pair with single input: cross-paradigm) with D = 4, 5, 6
    and bbc-topic + tweet-sentiment (both single) with D = 0, 1, 2 (D_A = D_B = D, except one negative D_B)."""
    rows = []
    for seed in range(3):
        rows.append({"A": "bbc-lede", "B": "bbc-topic", "seed": seed, "D_A": 4.0 + seed, "D_B": 4.0 + seed, "D": 4.0 + seed})
        d_b = -1.0 if seed == 0 else float(seed)
        rows.append({"A": "bbc-topic", "B": "tweet-sentiment", "seed": seed, "D_A": float(seed), "D_B": d_b, "D": float(seed)})
    frame = pd.DataFrame(rows)
    frame[["D_A", "D_B", "D"]] -= frozen_shift
    return frame


PAIRS = [("bbc-lede", "bbc-topic"), ("bbc-topic", "tweet-sentiment")]


def test_dual_task_claims_judge_each_pair_the_average_and_the_paradigm_gap():
    glue = Glue()
    claims = chapter.dual_task_claims(_dual_rows(), PAIRS, None, None, glue=glue)
    assert list(claims.index) == ["D_A > 0: bbc-lede with bbc-topic", "D_B > 0: bbc-topic with bbc-lede",
                                  "D_A > 0: bbc-topic with tweet-sentiment", "D_B > 0: tweet-sentiment with bbc-topic",
                                  "average D > 0 over the pairs in the verdicts",
                                  "pairs of different input paradigms dissociate more (D cross - D same, points)"]
    # per seed, the mean D over both pairs is 2, 3, 4 -> 3 with half-width t(0.975, 2) * 1 / sqrt(3) = 2.48
    assert claims.loc["average D > 0 over the pairs in the verdicts", "ours"] == "3.00 [0.52, 5.48]"
    assert glue["avg_d"] == "3.00 [0.52, 5.48]"
    # cross minus same is 4 on every seed: no spread, an interval of zero width
    assert claims.attrs["raw"].loc["pairs of different input paradigms dissociate more (D cross - D same, points)", "mean"] == 4.0
    paper_gap = float(claims.loc["pairs of different input paradigms dissociate more (D cross - D same, points)", "paper"])
    assert abs(paper_gap - (paper.TABLE9_CROSS_PARADIGM - paper.TABLE9_SAME_PARADIGM)) < 0.01
    assert glue["n_double"] == "5/6"  # all but seed 0 of the single-input pair (D_A = 0, D_B = -1)
    assert glue["n_claims"] == "6"
    assert glue["frozen_note"].startswith("The frozen-encoder control was not run")
    # Table 9's pairs averaged by paradigm agree with the values the paper's text gives (to rounding)
    assert abs(float(glue["paper_cross"]) - paper.TABLE9_CROSS_PARADIGM) < 0.01
    assert abs(float(glue["paper_same"]) - paper.TABLE9_SAME_PARADIGM) < 0.01
    assert glue["paper_gain"] == f"{paper.TABLE9_FINETUNE_GAIN:.2f}"


def test_dual_task_claims_compare_with_the_frozen_encoder_on_the_pairs_it_learned_too():
    gate = pd.DataFrame({"in the verdicts": ["yes", "yes", "no"]}, index=["bbc-lede", "bbc-topic", "tweet-sentiment"])
    glue = Glue()
    claims = chapter.dual_task_claims(_dual_rows(), PAIRS, _dual_rows(frozen_shift=1.5), gate, glue=glue)
    row = claims.loc["fine-tuning raises D over the frozen encoder (points)"]
    assert row["ours"] == "1.50 [1.50, 1.50]" and row["rule"] == "95% t-interval over seeds run both ways"
    assert glue["frozen_note"] == "1 of the 2 pairs in the verdicts were also learned with the frozen encoder."
    none_frozen = gate.assign(**{"in the verdicts": "no"})
    glue = Glue()
    claims = chapter.dual_task_claims(_dual_rows(), PAIRS, _dual_rows(frozen_shift=1.5), none_frozen, glue=glue)
    assert "fine-tuning raises D over the frozen encoder (points)" not in claims.index
    assert glue["frozen_note"].startswith("The frozen-encoder control learned none")


def test_dual_task_claims_with_no_pair_in_the_verdicts_say_why():
    glue = Glue()
    claims = chapter.dual_task_claims(_dual_rows().iloc[:0], [], None, None, glue=glue)
    assert claims.iloc[0, 0] == "no claim can be judged: no pair has both tasks learned in every model"
    assert glue["n_double"] == stats.DASH and glue["avg_d"] == stats.DASH and glue["n_claims"] == stats.DASH


def _result(seed: int, own_drop: float):
    """A three-task IAP result: base 80 for every task; pruning a task's own heads costs it ``own_drop`` points,
    pruning another task's costs 1 point."""
    tasks = ["bbc-lede", "bbc-topic", "tweet-sentiment"]
    perf = pd.DataFrame(80.0, index=["Base", *tasks], columns=tasks)
    for t in tasks:
        for j in tasks:
            perf.loc[j, t] = 80.0 - (own_drop if j == t else 1.0)
    return SimpleNamespace(seed=seed, perf=perf)


def test_multitask_claims_follow_eq7_on_the_learned_tasks():
    results = [_result(0, 9.0), _result(1, 9.0), _result(2, 9.0)]
    role = {t: paper.PAPER_NAME[t] for t in ("bbc-lede", "bbc-topic", "tweet-sentiment")}
    glue = Glue()
    claims, d_seed = chapter.multitask_claims(results, ["bbc-lede", "bbc-topic", "tweet-sentiment"], role, glue=glue)
    # Eq. 5-7 by hand: own 71/80, others 79/80 -> D_i = 100 * (79 - 71) / 80 = 10 for every task and seed
    assert np.allclose(d_seed.to_numpy(), 10.0) and list(d_seed.index) == [0, 1, 2]
    assert claims.loc["D_i > 0 for bbc-lede (QQP's role)", "ours"] == "10.00 [10.00, 10.00]"
    # the own-pruning drop is 100 * 9 / 80 for every task: pair minus single is 0
    assert claims.attrs["raw"].loc["own-head pruning costs pair tasks more (drop pair - drop single, points)", "mean"] == 0.0
    assert glue["own_lowest"] == "9/9" and glue["avg_d"] == "10.00 [10.00, 10.00]"
    claims, d_seed = chapter.multitask_claims(results, ["bbc-topic"], role, glue=glue)
    assert d_seed is None and glue["own_lowest"] == stats.DASH
    assert claims.iloc[0, 0] == "no claim can be judged: fewer than two tasks were learned in every seed"


def _paradigm_rows() -> pd.DataFrame:
    """bbc-topic (AG's role) and bbc-pair (AG-Pair's) each with tweet-sentiment (SST-2's), three seeds: D of
    the pair version is 1 point above the single version's; its own-pruning drop 5 points above."""
    rows = []
    for seed in range(3):
        rows.append({"A": "bbc-topic", "B": "tweet-sentiment", "seed": seed, "D": 3.0 + seed, "drop_A": 10.0 + seed})
        rows.append({"A": "bbc-pair", "B": "tweet-sentiment", "seed": seed, "D": 4.0 + seed, "drop_A": 15.0 + seed})
    return pd.DataFrame(rows)


def _theirs() -> pd.DataFrame:
    return pd.DataFrame({"A": ["AG", "AG-Pair"], "B": ["SST-2", "SST-2"], "D": [2.0, 2.5], "drop_A": [4.0, 9.0]}).set_index(["A", "B"])


def test_paradigm_claims_test_equivalence_of_d_and_the_gap_in_own_pruning_drop():
    role = {"bbc-topic": "AG", "bbc-pair": "AG-Pair", "tweet-sentiment": "SST-2"}
    glue = Glue()
    claims = chapter.paradigm_claims(_paradigm_rows(), _theirs(), ["tweet-sentiment"], "bbc-topic", "bbc-pair", role, 2.0, glue=glue)
    same = claims.loc["same D with tweet-sentiment: D(bbc-pair) - D(bbc-topic), points"]
    assert same["ours"] == "1.00 [1.00, 1.00]" and same["paper"] == "0.50" and same["verdict"] == stats.HOLDS  # inside +-2
    drop = claims.loc["bbc-pair drops more than bbc-topic under own pruning, with tweet-sentiment (points)"]
    assert drop["ours"] == "5.00 [5.00, 5.00]" and drop["paper"] == "5.00"
    assert (glue["drop_single_paper"], glue["drop_pair_paper"], glue["margin"]) == ("4.0", "9.0", "2")
    claims = chapter.paradigm_claims(_paradigm_rows(), _theirs(), [], "bbc-topic", "bbc-pair", role, 2.0, glue=glue)
    assert claims.iloc[0, 0] == "no claim can be judged: no partner has all its tasks learned in every model"


def test_the_figures_lay_out_what_they_are_given():
    fig = chapter.dual_grid_figure(_dual_rows(), None, PAIRS, PAIRS[:1], alpha=0.3)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["ours, fine-tuned", "paper, BERT-base", "paper, BERT-base*"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["bbc-lede +\nbbc-topic", "bbc-topic +\ntweet-sentiment \u2020"]
    assert ax.get_title() == "average D per pair (alpha = 30%)"
    plt.close(fig)
    fig = chapter.dual_scores_figure(_dual_rows(), [])
    assert fig.axes[0].texts[0].get_text() == "no pair has both tasks learned in every model"
    plt.close(fig)
    import torch

    result = SimpleNamespace(importance={t: torch.rand(2, 3) + 0.1 for t in "abcde"},
                             masks={t: torch.tensor([[1, 0, 0], [0, 0, 1]]) for t in "abcde"})
    fig = chapter.importance_maps(result, list("abcde"))
    assert [ax.get_title() for ax in fig.axes[:5]] == list("abcde") and not fig.axes[5].axison
    assert len(fig.axes[0].collections[0].get_offsets()) == 2  # the two pruned heads outlined
    plt.close(fig)
    seven = {t: torch.rand(2, 3) + 0.1 for t in "abcdefg"}
    fig = chapter.importance_maps(SimpleNamespace(importance=seven, masks={t: result.masks["a"] for t in seven}), list("abcdefg"))
    assert len(fig.axes) == 9 and [ax.get_title() for ax in fig.axes[:7]] == list("abcdefg")  # a third row, none dropped
    plt.close(fig)
    tables = {name: pd.DataFrame([[1.0, 0.5], [0.5, 1.0]], index=["x", "y"], columns=["x", "y"]) for name in ("DSE", "CRA", "AHP")}
    fig = chapter.similarity_heatmaps(tables)
    assert [ax.get_title() for ax in fig.axes if ax.get_title()] == ["DSE", "CRA", "AHP (row: source, column: target)"]
    plt.close(fig)
