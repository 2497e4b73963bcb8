"""The main paper's published numbers: the averages its text quotes, Table 11's seed means, the task mapping."""

import numpy as np
import pytest

from mtllib.papers import functional_specialization as paper


def test_table_11_entries_are_means_over_three_seeds_of_43_heads():
    """round(0.3 * 144) = 43 heads per task; over the paper's 3 seeds every overlap in Table 11 is k/129 for
    a whole k (several entries are not k/43, so they are means over seeds, not one model's overlap)."""
    shares = paper.TABLE11.stack().dropna()
    shared = shares * 129 / 100
    assert ((shared - shared.round()).abs() < 0.05).all()
    assert ((shares * 43 / 100 - (shares * 43 / 100).round()).abs() > 0.1).any()


def test_table_9_gives_back_the_averages_quoted_in_the_text():
    """Sec. 6.1: RoBERTa-base and DeBERTaV3-base average 13.44% and 10.88% over the ten pairs, and
    fine-tuning raises BERT-base's average by 6.32 points over the frozen encoder; Sec. 6.2: pairs of
    different input paradigms average 12.654%, pairs of the same paradigm 3.016%."""
    mean_d = {m: paper.table9_pairs(m).D.mean() for m in paper.TABLE9.index}
    assert mean_d["RoBERTa-base"] == pytest.approx(13.44, abs=0.01)
    assert mean_d["DeBERTaV3-base"] == pytest.approx(10.88, abs=0.01)
    assert mean_d["BERT-base"] - mean_d["BERT-base*"] == pytest.approx(paper.TABLE9_FINETUNE_GAIN, abs=0.01)
    bert = paper.table9_pairs("BERT-base")
    cross = np.array([paper.PARADIGM[a] != paper.PARADIGM[b] for a, b in zip(bert.A, bert.B)])
    assert bert.D[cross].mean() == pytest.approx(paper.TABLE9_CROSS_PARADIGM, abs=0.001)
    assert bert.D[~cross].mean() == pytest.approx(paper.TABLE9_SAME_PARADIGM, abs=0.002)
    # "dissociation scores ... are all positive when fine-tuning": every model but the frozen one
    assert (paper.TABLE9.drop(index="BERT-base*") > 0).all().all()
    assert (paper.TABLE9.loc["BERT-base*"] < 0).any()


def test_table9_pair_maps_our_tasks_in_either_order():
    assert paper.table9_pair("bbc-next", "bbc-topic") == (11.36, 16.26)  # MNLI + AG
    assert paper.table9_pair("bbc-topic", "bbc-next") == (16.26, 11.36)
    assert paper.table9_pair("ag_news", "sst2", "BERT-base*") == (2.48, 3.90)
    assert np.isnan(paper.table9_pair("bbc-topic", "bbc-cloze")[0])


def test_our_setup_names_this_run_for_every_setting_of_the_paper():
    from mtllib.training.trainer import TrainConfig

    config = TrainConfig(epochs=2, lr=1e-4, warmup=0.2, device="cpu")
    ours = paper.our_setup("offline", config, max_train={"tweet-sentiment": 900, "default": 448}, max_eval=None,
                           max_length=64, seeds=[0, 1, 2], alpha=0.3)
    assert set(ours) == set(paper.SETUP)
    assert ours["training examples per task"] == "tweet-sentiment 900, default 448"
    assert ours["test examples per task"] == "all"
    assert ours["warm-up"] == "linear, 20% of steps" and ours["precision"] == "fp32 (CPU)" and ours["seeds"] == 3
    table = paper.deviations(ours)
    assert table.loc["alpha", "differs"] == "" and table.loc["epochs", "differs"] == "yes"
