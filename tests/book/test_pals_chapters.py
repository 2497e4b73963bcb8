"""The steps the "BERT and PALs" chapters (06-06f) share: the opening, the parameter tables as a page shows
them, the per-seed differences and shifts the claims read, the average figure and the set-up table."""

import matplotlib

matplotlib.use("Agg")
import numpy as np
import pandas as pd
import pytest
from transformers import BertConfig

from mtllib import checks
from mtllib.book import pals_chapters as chapter
from mtllib.book import runner


def _parameters(notebook: str = "06_bert_and_pals", **changes) -> dict:
    """A notebook's parameters (its smoke defaults), as its ``globals()`` holds them."""
    return {**runner.default_parameters(runner.Project().source(notebook)), **changes}


def test_start_checks_every_parameter_and_prepares_nothing(monkeypatch, capsys):
    import mtllib.data.features as features

    monkeypatch.setattr(features, "prepare", lambda *a, **k: pytest.fail("start must not prepare data"))
    with pytest.raises(checks.BadInput, match="lr"):
        chapter.start(_parameters(lr=-1.0), "06_bert_and_pals")
    run = chapter.start(_parameters(seeds=[0, 1]), "06_bert_and_pals")
    assert run.data is None and run.config is None and str(run.device) == "cpu"
    # all-MiniLM-L6-v2, the offline encoder: 6 layers of 12 heads, hidden size 384
    assert run.encoder_text() == "offline (6 layers x 12 heads, hidden 384)"
    assert set(run.matched) >= {"pals", "low_rank"} and run.budget > 1
    assert "seeds: [0, 1]" in capsys.readouterr().out
    assert 0 <= run.minutes() < 1


def _start(notebook: str, **changes) -> chapter.Start:
    params = _parameters(notebook, **changes)
    return chapter.Start(params=params, encoder_config=BertConfig(), budget=1.13, matched={"pals": {"size": 204}}, device="cpu")


def test_prepare_reads_the_sizes_and_builds_the_recipe_from_the_parameters(monkeypatch):
    import mtllib.data.features as features

    seen = {}
    monkeypatch.setattr(features, "load_tokenizer", lambda model: f"tokenizer of {model}")
    monkeypatch.setattr(features, "prepare", lambda tasks, tok, **kw: seen.update(tasks=tasks, tok=tok, **kw) or {"data": True})
    run = _start("06_bert_and_pals", max_train=40, max_eval=20, max_length=32, epochs=3, batch_size=8, lr=2e-4, sampler="round-robin")
    assert run.prepare() == {"data": True} and run.data == {"data": True}
    assert seen == {"tasks": run.params["tasks"], "tok": "tokenizer of offline", "seed": 0, "max_train": 40, "max_eval": 20, "max_length": 32}
    c = run.config
    assert (c.epochs, c.batch_size, c.lr, c.device, c.sampler) == (3, 8, 2e-4, "cpu", "round-robin")


def test_the_sampling_chapter_keeps_the_trainers_default_schedule(monkeypatch):
    import mtllib.data.features as features
    from mtllib.training.trainer import TrainConfig

    monkeypatch.setattr(features, "load_tokenizer", lambda model: None)
    monkeypatch.setattr(features, "prepare", lambda *a, **k: {})
    run = _start("06d_sampling")  # no `sampler` parameter (it compares several): the recipe keeps the default
    run.prepare()
    assert "sampler" not in run.params and run.config.sampler == TrainConfig().sampler


class _Data:
    def __init__(self, n):
        self.features = {"train": range(n)}


def test_the_setup_table_puts_the_common_rows_first_and_the_seeds_last():
    run = _start("06_bert_and_pals", epochs=2, batch_size=32, lr=1e-4, seeds=[0, 1, 2], sampler="proportional")
    table = run.setup_table({"max length (tokens)": 128}, {"max length (tokens)": 64})
    assert list(table.index) == ["model", "tasks", "training", "sampling", "max length (tokens)", "seeds"]
    assert table.loc["model", "paper"] == "BERT-base (12 layers x 12 heads, hidden 768)"
    assert table.loc["model", "ours"] == "offline (12 layers x 12 heads, hidden 768)"  # BertConfig() stands in here
    assert table.loc["training", "ours"] == "2 epoch(s), batch 32, lr 0.0001, the epoch with the best average dev score"
    assert table.loc["tasks", "ours"] == "2 offline tasks: bbc-topic, tweet-sentiment"
    assert (table.loc["seeds", "paper"], table.loc["seeds", "ours"]) == ("not stated", 3)
    run.data = {"bbc-topic": _Data(1200), "tweet-sentiment": _Data(40)}
    replaced = run.setup_table({"seeds": "one run", "tasks": "SQuAD"}, {"seeds": 5, "tasks": "stand-ins"})
    assert list(replaced.index)[-1] == "seeds" and replaced.loc["seeds"].tolist() == ["one run", 5]
    assert replaced.loc["tasks"].tolist() == ["SQuAD", "stand-ins"]
    assert run.tasks_text() == "2 offline tasks: bbc-topic (1,200), tweet-sentiment (40)"
    with pytest.raises(ValueError, match="budget"):
        run.setup_table({"budget": "1.5M"}, {})


def test_counts_are_shown_with_separators_and_multipliers_with_their_digits():
    table = pd.DataFrame({"d_s": [204, 10], "added per task": [1811520, 15360], "added, 8 tasks": [14492160, 122880],
                          "multiplier": [1.13, 1.0014], "multiplier, 2 tasks": [1.0325, 1.0004]}, index=["pals", "low_rank"])
    shown = chapter.counts_shown(table, digits=3)
    assert shown.loc["pals"].tolist() == [204, "1,811,520", "14,492,160", "1.130x", "1.032x"]
    assert chapter.counts_shown(table, digits=4).loc["low_rank", "multiplier"] == "1.0014x"
    assert table.loc["pals", "added per task"] == 1811520  # the input is left as it was


def test_the_multipliers_on_bert_base_are_table_1s():
    shown = chapter.multipliers(BertConfig(), ["shared", "pals"], 8)
    assert shown["shared"] == "1.000x"
    assert shown["pals"].startswith("1.13")  # "BERT and PALs", Table 1: PALs (d_s 204) with 8 tasks, 1.13x


def _per_seed():
    return pd.DataFrame({"shared": [70.0, 72.0, 71.0], "pals": [71.0, 71.5, np.nan], "low_rank": [69.0, 72.0, 70.0]},
                        index=pd.Index([0, 1, 2], name="seed"))


def test_differences_are_paired_by_seed_and_kept_for_the_figure():
    difference = chapter.Differences(_per_seed())
    d = difference("pals", "shared")
    assert d.tolist() == [1.0, -0.5] and list(d.index) == [0, 1]  # seed 2 has no PALs score: dropped
    difference("low_rank", "shared")
    assert list(difference) == ["pals\nminus shared", "low_rank\nminus shared"]
    assert difference["low_rank\nminus shared"].tolist() == [-1.0, 0.0, -1.0]


def test_moved_is_each_variants_shift_from_the_shared_model_of_its_seed():
    shift = chapter.moved(_per_seed())
    assert list(shift.columns) == ["pals", "low_rank"]
    assert shift.low_rank.tolist() == [-1.0, 0.0, -1.0] and shift.pals.iloc[:2].tolist() == [1.0, -0.5] and np.isnan(shift.pals.iloc[2])
    assert chapter.moved(_per_seed().drop(columns="shared")).empty
    assert chapter.moved(pd.DataFrame()).empty


def test_the_average_figure_says_so_when_no_task_was_learned():
    fig = chapter.average_figure(_per_seed(), ["bbc-topic"], order=["low_rank", "shared"])
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["low_rank", "shared"]
    assert ax.get_title() == "average over the learned tasks (bbc-topic)"
    empty = chapter.average_figure(pd.DataFrame(), [])
    assert [t.get_text() for t in empty.axes[0].texts] == ["no task was learned by every model"]


def test_the_fully_shared_models_are_read_from_a_chapter_that_trained_them_on_the_same_recipe(tmp_path):
    from tiny import PreparedSizes, executed_copy

    from mtllib.book import results
    from mtllib.experiments.adapters import RUN_COLUMNS
    from mtllib.experiments.iat import BASELINE

    params, data = {"model": "offline", "max_length": 64}, {"a": PreparedSizes(8, 4, 4), "b": PreparedSizes(8, 4, 4)}
    recipe = results.recipe_frame(params, data, chapter.TrainingRun(params={"epochs": 2, "lr": 1e-4}).recipe())
    scores = pd.DataFrame([(s, v, t, 50.0 + 10 * s + (v == "IAT"), 60.0, 40.0, True, 30.0, 0)
                           for s in (0, 1, 2) for v in (BASELINE, "IAT") for t in ("a", "b")],
                          columns=["seed", "variant", "task", "score", "validation", "majority", "learned", "train_seconds", "best_epoch"])
    executed_copy(tmp_path, "07c", {"scores": scores, "recipe": recipe}, {"profile": "cpu", "commit": "abc1234", "executed_at": "2026-12-04 07:00 UTC"})
    rows, source = chapter.borrowed_shared("07c", recipe, [0, 2], tmp_path / "book")
    assert list(rows.columns) == ["method", *RUN_COLUMNS[1:]] and set(rows.method) == {"shared"}
    assert rows[["seed", "task", "score"]].values.tolist() == [[0, "a", 50.0], [0, "b", 50.0], [2, "a", 70.0], [2, "b", 70.0]]  # the baseline, not IAT
    assert source == "07c (cpu profile, commit abc1234, executed 2026-12-04 07:00 UTC)"
    with pytest.raises(checks.BadInput, match=r"07c has no MTL model for seed\(s\) \[3\]"):
        chapter.borrowed_shared("07c", recipe, [0, 3], tmp_path / "book")
    longer = results.recipe_frame(params, data, chapter.TrainingRun(params={"epochs": 3, "lr": 1e-4}).recipe())
    with pytest.raises(checks.BadInput, match="epochs: 2 there, 3 here"):
        chapter.borrowed_shared("07c", longer, [0], tmp_path / "book")
