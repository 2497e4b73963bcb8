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


# --- the steps moved out of the notebooks (stop 44) ----------------------------------------------------------------
def test_the_setup_table_is_the_papers_beside_the_runs_then_the_chapters_rows():
    from mtllib.training.trainer import TrainConfig

    params = {"model": "offline", "max_train": 500, "max_eval": 200, "max_length": 64, "seeds": [0, 1, 2], "alpha": 0.3}
    run = chapter.Start(params=params, config=TrainConfig(epochs=2, lr=1e-4))
    table = run.setup({"partners": ["QNLI, SST-2", "tweet-sentiment (SST-2)", "yes"]})
    assert list(table.index[:-1]) == list(paper.SETUP) and table.index[-1] == "partners"
    assert table.loc["partners"].tolist() == ["QNLI, SST-2", "tweet-sentiment (SST-2)", "yes"]
    assert table.loc["epochs", "ours"] == "2" and table.loc["learning rate", "ours"] == "0.0001"
    assert len(run.setup()) == len(paper.SETUP)


def _gate(verdicts: dict[str, str]) -> pd.DataFrame:
    return pd.DataFrame({"learned": ["3/3" if v == "yes" else "1/3" for v in verdicts.values()], "in the verdicts": list(verdicts.values())},
                        index=list(verdicts))


def test_the_gate_glue_names_each_task_left_out_with_its_count():
    glue = Glue()
    learned = chapter.glue_gate(_gate({"a": "yes", "b": "no", "c": "yes"}), ["a", "b", "c"], "seeds", glue=glue)
    assert learned == ["a", "c"]
    assert glue == {"n_learned": "2", "n_tasks": "3", "left_out": "b (learned in 1/3 seeds)"}
    chapter.glue_gate(_gate({"a": "yes"}), ["a"], "models", glue=glue)
    assert glue["left_out"] == "none"


def _dual_gate_rows() -> pd.DataFrame:
    """Pairs of bbc-lede, bbc-topic and tweet-sentiment over two seeds: tweet-sentiment is not learned in seed 1
    of its pair with bbc-topic, so only (bbc-lede, bbc-topic) enters the verdicts."""
    rows = []
    for seed in (0, 1):
        for a, b in (("bbc-lede", "bbc-topic"), ("bbc-topic", "tweet-sentiment")):
            learned_b = not (b == "tweet-sentiment" and seed == 1)
            rows.append({"seed": seed, "A": a, "B": b, "val_A": 80.0, "val_B": 70.0 if learned_b else 40.0, "majority_A": 50.0,
                         "majority_B": 45.0, "learned_A": True, "learned_B": learned_b, "train_seconds": 60.0 * (seed + 1)})
    return pd.DataFrame(rows)


def test_the_dual_gates_keep_the_pairs_of_tasks_learned_in_every_fine_tuned_model(capsys):
    glue = Glue()
    rows = _dual_gate_rows()
    gates, learned, verdict_rows, verdict_pairs = chapter.dual_gates(rows, None, ["bbc-lede", "bbc-topic", "tweet-sentiment"],
                                                                      [("bbc-lede", "bbc-topic"), ("bbc-topic", "tweet-sentiment")], glue=glue)
    assert learned == ["bbc-lede", "bbc-topic"] and verdict_pairs == [("bbc-lede", "bbc-topic")]
    assert len(verdict_rows) == 2 and set(verdict_rows.B) == {"bbc-topic"}
    assert list(gates.index.get_level_values("encoder").unique()) == ["fine-tuned"]
    assert gates.loc[("fine-tuned", "tweet-sentiment"), "learned"] == "1/2"
    assert (glue["n_verdict_pairs"], glue["n_pairs"], glue["left_out"]) == ("1", "2", "tweet-sentiment (learned in 1/2 models)")
    frozen = chapter.dual_gates(rows, rows.assign(learned_A=False), ["bbc-lede"], [], glue=glue)[0]
    assert list(frozen.index.get_level_values("encoder").unique()) == ["fine-tuned", "frozen encoder"]
    chapter.dual_times(rows, None, glue=glue)
    assert glue["train_minutes"] == 1.5 and glue["frozen_time"] == "No frozen-encoder model was trained."
    chapter.dual_times(rows, rows.iloc[:2], glue=glue)
    assert glue["frozen_time"] == "One frozen-encoder model took 1.0 minutes."
    assert "4 fine-tuned models (90 s of training each), 2 frozen-encoder models (60 s each)" in capsys.readouterr().out


def test_table9_shows_each_pair_with_its_ci_and_the_papers_scores():
    rows = _dual_rows().assign(base_A=80.0, base_B=70.0)
    table = chapter.table9(rows, verdict_pairs=[("bbc-lede", "bbc-topic")])
    assert list(table.index) == PAIRS
    assert list(table.columns) == ["base A", "base B", "D_A", "D_B", "D", "paper D_A, D_B", "in the verdicts"]
    assert table.loc[PAIRS[0], "D"].startswith("5.0 [") and table["in the verdicts"].tolist() == ["yes", "no"]
    pa, pb = paper.table9_pair("bbc-lede", "bbc-topic")
    assert table.loc[PAIRS[0], "paper D_A, D_B"] == f"{pa:.2f}, {pb:.2f}"
    frozen = chapter.table9(rows, "BERT-base*")
    assert "paper D_A, D_B (BERT-base*)" in frozen.columns and "in the verdicts" not in frozen.columns
    fa, fb = paper.table9_pair("bbc-lede", "bbc-topic", "BERT-base*")
    assert frozen.loc[PAIRS[0], "paper D_A, D_B (BERT-base*)"] == f"{fa:.2f}, {fb:.2f}" and (fa, fb) != (pa, pb)
    assert chapter.table9(None).iloc[0, 0].startswith("not run")


def test_the_dual_exercise_works_d_a_out_from_the_scores():
    glue = Glue()
    row = pd.Series({"A": "bbc-lede", "B": "bbc-topic", "seed": 2, "base_A": 80.0, "A_pruned_on_A": 60.0, "B_pruned_on_A": 76.0,
                     "D_A": 20.0, "D_B": 4.0, "D": 12.0})
    chapter.glue_dual_exercise(row, glue=glue)
    assert glue["ex_pair"] == "bbc-lede + bbc-topic, seed 2"
    assert glue["ex_by_hand"] == "20.00" and glue["ex_D_A"] == "20.00"  # 100 * (76 - 60) / 80


def _iap_result(seed: int, perf: pd.DataFrame, masks=None, learned=None):
    gate = pd.DataFrame({"score": perf.loc["Base"], "threshold": 60.0, "learned": learned or [True] * perf.shape[1]}, index=perf.columns)
    return SimpleNamespace(seed=seed, perf=perf, masks=masks, gate=gate, tasks=list(perf.columns))


#: a model on three tasks: row = whose heads are pruned ("Base": none), column = the task evaluated
PERF = pd.DataFrame([[80.0, 60.0, 90.0], [60.0, 40.0, 81.0], [76.0, 57.0, 72.0], [72.0, 54.0, 63.0]],
                    index=["Base", "a", "b", "c"], columns=["a", "b", "c"])


def test_the_multitask_exercise_agrees_with_eq_5_and_7_worked_by_hand():
    glue = Glue()
    chapter.glue_multitask_exercise(_iap_result(0, PERF), ["a", "b", "c"], ["a", "b", "c"], glue=glue)
    # task a: RP = 60/80 = 0.75 own, 76/80 = 0.95 and 72/80 = 0.90 others: D_a = 100 * (0.925 - 0.75) = 17.50
    assert (glue["ex_task"], glue["ex_base"], glue["ex_own"]) == ("a", "80.00", "60.00")
    assert glue["ex_by_hand"] == glue["ex_library"] == "17.50"
    assert glue["ex_others"] == "76.00 with b's heads pruned; 72.00 with c's heads pruned"
    assert glue["ex_gate_line"] == "a 80.0 (learned); b 60.0 (learned); c 90.0 (learned)"
    chapter.glue_multitask_exercise(_iap_result(0, PERF, learned=[True, False, False]), ["a"], ["a", "b", "c"], glue=glue)
    assert glue["ex_task"] == glue["ex_by_hand"] == stats.DASH and "b 60.0 (needs 60.0)" in glue["ex_gate_line"]


def test_the_overlap_table_is_the_mean_share_of_heads_in_common():
    import torch

    glue = Glue()
    masks = {"a": torch.tensor([[1, 1, 0, 0]], dtype=torch.bool), "b": torch.tensor([[1, 0, 1, 1]], dtype=torch.bool)}
    table = chapter.overlap_table([_iap_result(0, PERF, masks)], 0.3, glue=glue)
    assert table.loc["b", "a"] == 50.0 and round(table.loc["a", "b"], 1) == 33.3  # 1 of a's 2 heads; 1 of b's 3
    assert table.loc["a", "a"] == stats.DASH
    assert round(glue["overlap_mean"], 2) == 41.67 and glue["alpha_pct"] == 30.0
    assert glue["overlap_paper"] == pytest.approx(float(paper.TABLE11.stack().mean()))


def test_the_similarity_gate_keeps_tasks_learned_alone_and_in_every_multitask_model(monkeypatch, small_data):
    import mtllib.training.trainer as trainer

    scores = {"bbc-topic": 90.0, "tweet-sentiment": 20.0}  # tweet-sentiment below its majority class alone
    monkeypatch.setattr(trainer, "evaluate", lambda model, data, split, batch: pd.DataFrame({"score": [scores[next(iter(data))]]}))
    glue = Glue()
    multi = _gate({"bbc-topic": "yes", "tweet-sentiment": "yes"})
    table, learned, pairs = chapter.similarity_gate({"bbc-topic": None, "tweet-sentiment": None}, small_data, multi, glue=glue)
    assert learned == ["bbc-topic"] and pairs == []
    assert list(table.columns) == ["score", "majority", "threshold", "learned"] and not table.loc["tweet-sentiment", "learned"]
    assert glue == {"n_learned": "1", "n_tasks": "2", "n_verdict_pairs": "0", "n_all_pairs": "1"}
    scores["tweet-sentiment"] = 95.0
    assert chapter.similarity_gate({"bbc-topic": None, "tweet-sentiment": None}, small_data, multi, glue=glue)[2] == ["bbc-topic + tweet-sentiment"]


def test_pair_dissociation_averages_the_two_directions_over_the_models():
    results = [_iap_result(0, PERF), _iap_result(1, PERF)]
    d, table = chapter.pair_dissociation(results, ["a", "b", "c"], ["a + b"])
    # a + b: D_a with b pruned = 100 * (76/80 - 60/80) = 20; D_b with a pruned = 100 * (40/60 - 57/60) = -28.33...
    assert list(d.index) == ["a + b", "a + c", "b + c"]
    assert d["a + b"] == pytest.approx((20.0 - 28.333333) / 2, abs=1e-4)
    assert table["in the verdicts"].tolist() == ["yes", "no", "no"] and table.loc["a + b", "D (%)"].startswith("-4.17")
    assert list(chapter.pair_dissociation(results, ["a"], [])[0].index) == ["a + b", "a + c", "b + c"]  # all tasks when < 2 learned


def test_similarity_claims_need_two_pairs_and_read_a_negative_correlation():
    glue = Glue()
    pairs = ["a + b", "a + c", "b + c"]
    table = pd.DataFrame([[1.0, 0.9, 0.1], [0.9, 1.0, 0.5], [0.1, 0.5, 1.0]], index=["a", "b", "c"], columns=["a", "b", "c"])
    d = pd.Series({"a + b": 1.0, "a + c": 9.0, "b + c": 5.0})  # the more similar, the less dissociated
    claims = chapter.similarity_claims({"DSE": table, "CRA": table}, d, pairs, glue=glue)
    assert list(claims.index) == ["DSE: more similar pairs dissociate less", "CRA: more similar pairs dissociate less"]
    assert claims.loc["DSE: more similar pairs dissociate less", "ours"].startswith("-1.00")  # a perfect negative correlation...
    assert claims.verdict.tolist() == ["inconclusive at this budget"] * 2 and glue["n_inconclusive"] == "2"  # ...over 3 pairs only
    nothing = chapter.similarity_claims({"DSE": table}, d, pairs[:1], glue=glue)
    assert "fewer than two pairs" in nothing.to_string()


def test_the_similarity_exercise_numbers_are_the_fisher_z_arithmetic():
    glue = Glue()
    chapter.glue_similarity_exercise(4, 3, glue=glue)
    assert (glue["ex_z95"], glue["ex_r10"], glue["ex_pairs_here"], glue["ex_ahp_uniform"]) == ("1.96", "0.63", "3", "0.25")
    assert int(glue["ex_needed_05"]) == stats.points_needed(-0.5) > 10


def test_the_paradigm_exercise_recovers_the_papers_printed_d_from_its_scores():
    glue = Glue()
    row = paper.TABLE4.iloc[0]
    chapter.glue_paradigm_exercise(row, 2.0, glue=glue)
    # Eq. 6 on the printed scores gives back the printed D's up to their rounding
    assert abs(float(glue["ex_da"]) - row.D_A) < 0.05 and abs(float(glue["ex_db"]) - row.D_B) < 0.05
    assert float(glue["ex_gap"]) < 0.05 and glue["ex_margin"] == "2" and glue["ex_pair"] == f"{row.A} + {row.B}"
