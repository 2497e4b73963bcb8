"""The steps the IAT chapters (07, 07b, 07c) share: the opening, the IAT variants and the gate table."""

import numpy as np
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


def _result(seeds, variants=("MTL", "IAT"), shift=0.0):
    """An IAT result as :func:`mtllib.experiments.iat.run` returns it: two tasks (one a regression), every table
    filled, predictions that the IAT model changes on seed-dependent examples."""
    from mtllib.experiments.iat import IATResult

    scores = pd.DataFrame([{"seed": s, "variant": v, "task": t, "score": 50.0 + 10 * s + (v == "IAT") + shift, "validation": 60.0,
                            "majority": 40.0, "learned": True, "alpha": 0.3 if v == "IAT" else 1.0}
                           for s in seeds for v in variants for t in ("topic", "similar")])
    dissociation = pd.DataFrame([{"seed": s, "variant": v, "task": t, "D": 1.0 + s} for s in seeds for v in variants for t in ("topic", "similar")])
    pruned = pd.DataFrame([{"seed": s, "task": t, "score": 40.0 + s} for s in seeds for t in ("topic", "similar")])
    predictions = {(s, v): {"topic": np.array([0, 1, 2, 1]) if v != "IAT" else np.array([0, 1, 2, 1])[::-1].copy() if s % 2 else np.array([0, 1, 2, 2]),
                            "similar": np.array([0.5, 1.25, 2.0]) + (v == "IAT") * 0.1}
                   for s in seeds for v in variants}
    masks = {(s, "IAT"): {"topic": np.ones((2, 2), bool)} for s in seeds}
    return IATResult(scores, dissociation, pruned, masks=masks, predictions=predictions, logs={(s, "MTL"): "log" for s in seeds})


def _share(tmp_path, page, result, recipe, settings, record=True):
    """``page``'s executed copy in ``tmp_path/book`` holding what :func:`share_seeds` glues for ``result``."""
    from tiny import glued_copy

    glued = []
    chapter.share_seeds(result, recipe, settings, glue=lambda key, value: glued.append((key, value)))
    glued_copy(tmp_path, page, glued, {"profile": "cpu", "commit": "abc1234", "executed_at": "2026-12-06 13:00 UTC"} if record else None)
    return [key for key, _ in glued]


def _recipe(epochs=2):
    from tiny import PreparedSizes

    from mtllib.book import results

    params, data = {"model": "offline", "max_length": 64}, {"topic": PreparedSizes(8, 4, 4), "similar": PreparedSizes(8, 4, 4)}
    return results.recipe_frame(params, data, chapter.TrainingRun(params={"epochs": epochs, "lr": 1e-4}).recipe())


SETTINGS = {"alpha": 0.3, "delta": 0.1, "importance_batches": 6, "iap_alpha": None}


def test_a_page_reads_another_pages_seeds_into_every_table_and_its_predictions(tmp_path):
    from mtllib.experiments.iat import changed_predictions

    recipe = _recipe()
    glued = _share(tmp_path, "part2", _result([2]), recipe, SETTINGS)
    assert glued == ["recipe", "iat_settings", "iat_scores", "iat_dissociation", "iat_pruned", "iat_predictions"]
    here = _result([0, 1])
    joined, lines = chapter.join_seeds(here, ["part2"], recipe, SETTINGS, tmp_path / "book")
    whole = _result([0, 1, 2])  # the same three seeds trained on one page
    for table in ("scores", "dissociation", "pruned_least"):
        pd.testing.assert_frame_equal(getattr(joined, table), getattr(whole, table), check_dtype=False)
    assert sorted(joined.predictions) == sorted(whole.predictions)
    pd.testing.assert_frame_equal(changed_predictions(joined, "IAT"), changed_predictions(whole, "IAT"))
    assert changed_predictions(joined, "IAT")["topic"].tolist() == [1, 4, 1]  # [0, 1, 2, 2]; reversed: all four; [0, 1, 2, 2]
    np.testing.assert_allclose(joined.predictions[(2, "IAT")]["similar"], [0.6, 1.35, 2.1])  # real values, ten digits kept
    assert set(joined.masks) == {(0, "IAT"), (1, "IAT")} and set(joined.logs) == {(0, "MTL"), (1, "MTL")}  # this page's only
    assert lines == [([2], "part2 (cpu profile, commit abc1234, executed 2026-12-06 13:00 UTC)")]
    assert chapter.seeds_line([0, 1], lines) == ("Seeds 0, 1 trained on this page; seed 2 read from part2 (cpu profile, commit abc1234, "
                                                 "executed 2026-12-06 13:00 UTC), trained on the same recipe (checked).")
    assert chapter.seeds_line([2], []) == "Seed 2 trained on this page."
    assert (chapter.seed_words([2]), chapter.seed_words([0, 1, 2])) == ("seed 2", "seeds 0, 1, 2")
    assert chapter.join_seeds(here, [], recipe, SETTINGS) == (here, [])  # nothing named: nothing read


def test_seeds_from_another_recipe_other_settings_twice_or_with_other_variants_are_refused(tmp_path):
    recipe = _recipe()
    here = _result([0, 1])
    with pytest.raises(checks.BadInput, match="part2 has no executed copy"):
        chapter.join_seeds(here, ["part2"], recipe, SETTINGS, tmp_path / "book")
    _share(tmp_path, "part2", _result([2]), _recipe(epochs=3), SETTINGS)
    with pytest.raises(checks.BadInput, match="epochs: 3 there, 2 here"):
        chapter.join_seeds(here, ["part2"], recipe, SETTINGS, tmp_path / "book")
    _share(tmp_path, "part2", _result([2]), recipe, {**SETTINGS, "delta": 0.2, "iap_alpha": 0.3})
    with pytest.raises(checks.BadInput, match=r"other settings \(delta: 0.2 there, 0.1 here; iap_alpha: 0.3 there, None here\)"):
        chapter.join_seeds(here, ["part2"], recipe, SETTINGS, tmp_path / "book")
    _share(tmp_path, "part2", _result([1, 2]), recipe, SETTINGS)
    with pytest.raises(checks.BadInput, match="seed 1 is trained both on this page and on part2"):
        chapter.join_seeds(here, ["part2"], recipe, SETTINGS, tmp_path / "book")
    _share(tmp_path, "part2", _result([2]), recipe, SETTINGS)
    _share(tmp_path, "part3", _result([2]), recipe, SETTINGS)
    with pytest.raises(checks.BadInput, match="seed 2 is trained both on part2 and on part3"):
        chapter.join_seeds(here, ["part2", "part3"], recipe, SETTINGS, tmp_path / "book")
    _share(tmp_path, "part2", _result([2], variants=("MTL", "IAT", "random heads")), recipe, SETTINGS)
    with pytest.raises(checks.BadInput, match=r"part2's seed 2 has the variants \['IAT', 'MTL', 'random heads'\], this page's seeds \['IAT', 'MTL'\]"):
        chapter.join_seeds(here, ["part2"], recipe, SETTINGS, tmp_path / "book")
    # a sweep on one of this page's seeds is not a variant every seed has: the other page need not train it
    swept = _result([0, 1])
    swept = swept.__class__(pd.concat([swept.scores, swept.scores[swept.scores.seed == 0].assign(variant="IAT alpha 50%")], ignore_index=True),
                            swept.dissociation, swept.pruned_least, swept.masks, swept.predictions, swept.logs)
    _share(tmp_path, "part2", _result([2]), recipe, SETTINGS)
    assert sorted(set(chapter.join_seeds(swept, ["part2"], recipe, SETTINGS, tmp_path / "book")[0].scores.seed)) == [0, 1, 2]


def test_a_page_checks_the_pages_it_reads_seeds_from_before_any_work_and_glues_where_each_seed_came_from(tmp_path, monkeypatch):
    import mtllib.data.features as features
    from tiny import PreparedSizes

    book = tmp_path / "book"
    params = _parameters("07c_iat_glue_like", seeds=[0, 1], seed_pages=["part2"], max_length=64, epochs=2, lr=1e-4)
    settings = {k: params.get(k) for k in chapter.SEED_SETTINGS}
    with pytest.raises(checks.BadInput, match="part2 has no executed copy"):
        chapter.start(params, "07c_iat_glue_like", book)
    with pytest.raises(checks.BadInput, match=r"seed_pages names this page itself \(07c_iat_glue_like\)"):
        chapter.start({**params, "seed_pages": ["07c_iat_glue_like"]}, "07c_iat_glue_like", book)
    with pytest.raises(checks.BadInput, match=r"seed_pages\[0\]"):
        chapter.start({**params, "seed_pages": [3]}, "07c_iat_glue_like", book)
    _share(tmp_path, "part2", _result([1]), _recipe(), settings)
    with pytest.raises(checks.BadInput, match="seed 1 is trained both on this page and on part2"):
        chapter.start(params, "07c_iat_glue_like", book)
    _share(tmp_path, "part2", _result([2]), _recipe(), {**settings, "alpha": 0.5})
    with pytest.raises(checks.BadInput, match="alpha: 0.5 there, 0.3 here"):
        chapter.start(params, "07c_iat_glue_like", book)
    data = {"topic": PreparedSizes(8, 4, 4), "similar": PreparedSizes(8, 4, 4)}
    monkeypatch.setattr(features, "load_tokenizer", lambda model: "tokenizer")
    monkeypatch.setattr(features, "prepare", lambda *a, **k: data)
    _share(tmp_path, "part2", _result([2]), _recipe(epochs=3), settings)
    run = chapter.start(params, "07c_iat_glue_like", book)  # the recipe needs the prepared tasks: checked by prepare
    with pytest.raises(checks.BadInput, match="epochs: 3 there, 2 here"):
        run.prepare()
    _share(tmp_path, "part2", _result([2]), run.recipe_frame(), settings)
    with pytest.raises(RuntimeError, match="call prepare"):
        run.join_seeds(_result([0, 1]), glue=Glue())
    assert run.prepare() is data
    assert [(p.page, p.path, sorted(set(p.scores.seed))) for p in run.checked_pages] == [("part2", book / "part2.ipynb", [2])]
    with pytest.raises(checks.BadInput, match="seed 2 is trained both on this page and on part2"):  # the trained seeds, not the parameter
        run.join_seeds(_result([0, 2]), glue=Glue())
    glue = Glue()
    with monkeypatch.context() as m:
        m.setattr(chapter, "check_seed_pages", lambda *a, **k: pytest.fail("checked twice"))  # the join reads what prepare checked
        joined = run.join_seeds(_result([0, 1]), glue=glue)
    assert sorted(set(joined.scores.seed)) == [0, 1, 2]
    assert glue["seeds_line"].startswith("Seeds 0, 1 trained on this page; seed 2 read from part2 (cpu profile")
    assert {"recipe", "iat_scores", "iat_predictions", "iat_settings"} <= set(glue)  # this page's own seeds, for a page reading it
    alone = chapter.start({**params, "seed_pages": []}, "07c_iat_glue_like", book)
    alone.prepare()
    glue = Glue()
    assert sorted(set(alone.join_seeds(_result([0, 1]), glue=glue).scores.seed)) == [0, 1]
    assert glue["seeds_line"] == "Seeds 0, 1 trained on this page."
