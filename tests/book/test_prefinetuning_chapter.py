"""The opening of the pre-finetuning chapter (09a): checks before any work, the recipe, the data and the glued text."""

import pytest

from mtllib import checks
from mtllib.book import prefinetuning_chapter as chapter
from mtllib.training.trainer import TrainConfig

NOTEBOOK = "09a_transfer_prefinetuning"


class Glue(dict):
    def __call__(self, key, value):
        self[key] = value


def _parameters(**changes):
    """The chapter's parameters (its smoke defaults), as its ``globals()`` holds them."""
    from mtllib.book import runner

    return {**runner.default_parameters(runner.Project().source(NOTEBOOK)), **changes}


@pytest.fixture
def prepared(monkeypatch):
    """Stand-ins for the tokenizer and :func:`mtllib.data.features.prepare`; the calls they saw. The split sizes
    are not read (building the silver tasks takes minutes; tests/book/test_params.py checks sizes)."""
    import mtllib.book.params as params
    import mtllib.data.features as features

    monkeypatch.setattr(params, "split_sizes", lambda names: {})
    calls = []
    monkeypatch.setattr(features, "load_tokenizer", lambda model: f"tokenizer of {model}")
    monkeypatch.setattr(features, "prepare", lambda names, tok, **kw: calls.append((names, tok, kw)) or {"prepared": names})
    return calls


def test_start_refuses_bad_parameters_and_designs_before_preparing_data(prepared):
    with pytest.raises(checks.BadInput, match="lr"):
        chapter.start(_parameters(lr=0), NOTEBOOK, glue=Glue())
    groups = _parameters()["groups"]
    with pytest.raises(ValueError, match="bbc-topic"):  # a target that is also pre-finetuned on
        chapter.start(_parameters(targets={"C": ["bbc-topic"]}), NOTEBOOK, glue=Glue())
    assert prepared == [] and "bbc-topic" in groups["C"]


def test_start_builds_the_recipe_prepares_every_task_and_glues_the_text(prepared, capsys):
    glue = Glue()
    params = _parameters(pf_epochs=3, patience=2, pf_train={"default": 24, "bbc-pos": 48})
    run = chapter.start(params, NOTEBOOK, glue=glue)
    pf_tasks = [t for g in params["groups"].values() for t in g]
    assert run.schemes[0] == "Baseline" and len(run.schemes) == 8 and run.pf_tasks == pf_tasks
    # the recipe the chapter used to write by hand, so its encoders keep their model-cache keys
    assert run.config == TrainConfig(epochs=3, batch_size=params["batch_size"], lr=params["lr"], device=run.device, patience=2)
    assert prepared == [(pf_tasks, "tokenizer of offline", {"max_length": params["max_length"], "max_train": params["pf_train"],
                                                             "max_eval": params["pf_eval"]})]
    assert run.data == {"prepared": pf_tasks}
    assert (glue["n_schemes_pf"], glue["n_pf_tasks"], glue["pf_train"], glue["pf_epochs"], glue["patience"]) == ("7", "12", "24 (bbc-pos 48)", "3", "2")
    assert glue["n_targets"] == str(sum(map(len, params["targets"].values())))
    assert (glue["paper_n_seeds"], glue["paper_epoch_all"], glue["paper_epoch_sl"]) == ("5", "4,884", "1,131")  # Appendix B.3
    assert "schemes: Only-SL" in capsys.readouterr().out
