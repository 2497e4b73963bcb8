"""The steps the IAT chapters (07, 07b, 07c) share: the opening, the IAT variants and the gate table."""

import pandas as pd
import pytest

from mtllib import checks
from mtllib.book import iat_chapters as chapter
from mtllib.book import runner


def _parameters(notebook: str, **changes) -> dict:
    """A notebook's parameters (its smoke defaults), as its ``globals()`` holds them."""
    return {**runner.default_parameters(runner.Project().source(notebook)), **changes}


class Glue(dict):
    def __call__(self, key, value):
        self[key] = value


def test_start_checks_every_parameter_and_builds_the_recipe_without_preparing_data(monkeypatch, capsys):
    import mtllib.data.features as features

    monkeypatch.setattr(features, "prepare", lambda *a, **k: pytest.fail("start must not prepare data"))
    with pytest.raises(checks.BadInput, match="delta"):
        chapter.start(_parameters("07c_iat_glue_like", delta=1.5), "07c_iat_glue_like")
    run = chapter.start(_parameters("07c_iat_glue_like", sampler="proportional", epochs=3, batch_size=8, lr=2e-4), "07c_iat_glue_like")
    c = run.config
    assert (c.epochs, c.batch_size, c.lr, c.device, c.sampler, c.keep_best) == (3, 8, 2e-4, "cpu", "proportional", True)
    assert run.data is None and run.tokenizer is None and str(run.device) == "cpu"
    assert "device: cpu" in capsys.readouterr().out
    # 07b compares schedules (no `sampler`) and may score the last epoch (keep_best False)
    schedules = chapter.start(_parameters("07b_iat_sampling", keep_best=False), "07b_iat_sampling")
    assert schedules.config.keep_best is False and "sampler" not in schedules.params


def test_an_iat_variant_takes_the_chapters_alpha_delta_and_importance_batches_unless_given():
    from mtllib.training.trainer import TrainConfig

    run = chapter.Start(params={"alpha": 0.3, "delta": 0.1, "importance_batches": 6}, device="cpu", config=TrainConfig())
    top = run.iat()
    assert (top.alpha, top.delta, top.heads, top.importance_batches) == (0.3, 0.1, "top", 6)
    swept = run.iat(0.5, 0.2, heads="random")
    assert (swept.alpha, swept.delta, swept.heads, swept.importance_batches) == (0.5, 0.2, "random", 6)
    assert run.iat(delta=0.2).alpha == 0.3


def _scores():
    """Two seeds of a baseline and an IAT model on three tasks; task c is not learned by the IAT model of seed 1."""
    rows = []
    for seed in (0, 1):
        for variant in ("multi-task", "IAT"):
            for task, validation, majority in (("a", 80.0, 50.0), ("b", 60.0 + seed, 40.0), ("c", 55.0, 50.0)):
                learned = not (task == "c" and variant == "IAT" and seed == 1)
                rows.append({"seed": seed, "variant": variant, "task": task, "validation": validation, "majority": majority, "learned": learned})
    return pd.DataFrame(rows)


def test_the_gate_keeps_the_tasks_every_model_learned_and_counts_the_models():
    glue = Glue()
    learned, table = chapter.gate(_scores(), glue=glue)
    assert learned == ["a", "b"]
    assert glue == {"learned": "a, b", "left_out": "c", "n_learned": "2/3"}
    assert table.loc["c", ("learned", "IAT")] == "1/2" and table.loc["c", ("learned", "multi-task")] == "2/2"
    assert table.loc["b", ("validation", "IAT")] == 60.5 and table.loc["a", ("majority", "IAT")] == 50.0
    by_seed = chapter.gate(_scores(), by=["seed", "variant"], glue=Glue())[1]
    assert by_seed.loc["c", ("learned", 1, "IAT")] == "0/1"


def test_changed_decisions_counts_changed_labels_and_leaves_regression_tasks_out():
    from types import SimpleNamespace

    from mtllib.experiments.iat import BASELINE, IATResult

    data = {"topic": SimpleNamespace(task=SimpleNamespace(kind="classification")),
            "similar": SimpleNamespace(task=SimpleNamespace(kind="regression"))}
    base = {"topic": [0, 1, 2, 1], "similar": [0.5, 1.0, 2.0, 3.0]}
    preds = {(0, BASELINE): base, (0, "IAT"): {"topic": [0, 2, 2, 0], "similar": [0.51, 1.0, 2.0, 3.0]},
             (1, BASELINE): base, (1, "IAT"): dict(base)}
    result = IATResult(pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), predictions=preds)
    changed, regression = chapter.changed_decisions(result, "IAT", data)
    assert regression == ["similar"]
    assert list(changed.columns) == ["topic"] and changed["topic"].to_dict() == {0: 2, 1: 0}
    with pytest.raises(KeyError, match="random heads"):
        chapter.changed_decisions(result, "random heads", data)
