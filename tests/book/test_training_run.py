"""What every training chapter family's opening step shares: the tasks prepared and the training recipe."""

import pytest

from mtllib.book.training_run import TrainingRun


@pytest.fixture
def prepared(monkeypatch):
    """``prepare`` and ``load_tokenizer`` replaced by stand-ins that record what they were given."""
    import mtllib.data.features as features

    seen = {}
    monkeypatch.setattr(features, "load_tokenizer", lambda model: f"tokenizer of {model}")
    monkeypatch.setattr(features, "prepare", lambda tasks, tok, **kw: seen.update(tasks=tasks, tok=tok, **kw) or {"data": 1})
    return seen


def test_prepare_reads_the_tasks_and_sizes_from_the_parameters(prepared):
    params = {"model": "offline", "tasks": ["a", "b"], "max_train": {"a": 40, "default": None}, "max_eval": 20, "max_length": 32}
    run = TrainingRun(params=params)
    assert run.data is None and run.tokenizer is None
    assert run.prepare() == {"data": 1} and run.data == {"data": 1} and run.tokenizer == "tokenizer of offline"
    assert prepared == {"tasks": ["a", "b"], "tok": "tokenizer of offline", "seed": 0, "max_train": {"a": 40, "default": None},
                        "max_eval": 20, "max_length": 32}


def test_prepare_takes_the_tasks_a_chapter_names_over_its_parameter(prepared):
    run = TrainingRun(params={"model": "offline", "max_train": 40, "max_eval": 20, "max_length": 32})  # no `tasks` parameter
    run.prepare(["c"])
    assert prepared["tasks"] == ["c"] and prepared["max_train"] == 40


def test_the_recipe_takes_every_training_field_the_parameters_name_and_nothing_else():
    from mtllib.training.trainer import TrainConfig

    params = {"epochs": 3, "batch_size": 8, "lr": 2e-4, "device": "cpu", "sampler": "annealed", "keep_best": False,
              "patience": 2, "seeds": [0, 1], "alpha": 0.5, "max_train": 100}
    c = TrainingRun(params=params).recipe()
    assert (c.epochs, c.batch_size, c.lr, c.device, c.sampler, c.keep_best, c.patience) == (3, 8, 2e-4, "cpu", "annealed", False, 2)
    # what the parameters do not name keeps TrainConfig's default (`seeds` is not `seed`)
    assert (c.seed, c.warmup, c.temperature) == (TrainConfig.seed, TrainConfig.warmup, TrainConfig.temperature)
    # fields given override the parameters (a target chapter's pre-finetuning epochs)
    overridden = TrainingRun(params=params).recipe(epochs=5, device="auto")
    assert (overridden.epochs, overridden.device, overridden.lr) == (5, "auto", 2e-4)
    assert TrainingRun(params={"epochs": 2}).recipe() == TrainConfig(epochs=2)


def test_the_run_keeps_the_clock_of_a_chapter_run():
    import time

    assert abs(TrainingRun(started=time.perf_counter() - 60).minutes() - 1.0) < 0.01
