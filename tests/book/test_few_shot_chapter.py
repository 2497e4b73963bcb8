"""The steps of the few-shot transfer chapter (08): the opening, Tables 6 and 8, the gate and the claims, and the
figure, on hand-made few-shot rows with known answers."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd
import pytest

from mtllib import checks
from mtllib.book import few_shot_chapter as chapter
from mtllib.book import runner
from mtllib.experiments import iat as exp
from mtllib.papers import functional_specialization_transfer as paper


class Glue(dict):
    def __call__(self, key, value):
        self[key] = value


def _parameters(**changes) -> dict:
    """Chapter 08's smoke parameters, as its ``globals()`` holds them."""
    return {**runner.default_parameters(runner.Project().source("08_few_shot_transfer")), **changes}


@pytest.fixture(scope="module")
def targets_data():
    from mtllib.data.features import load_tokenizer, prepare

    return prepare(["bbc-pair", "tweet-pair"], load_tokenizer("offline"), seed=0, max_train=40, max_eval=20, max_length=32)


def _rows(gain: float = 5.0, seeds=range(10), base: float = 60.0) -> pd.DataFrame:
    """Few-shot rows: on bbc-pair IAT scores ``gain`` points above the baseline at every k and seed (seed s adds s
    points to both), random heads 1 point above the baseline; tweet-pair at chance for every source."""
    rows = []
    for seed in seeds:
        for k in (4, 16):
            for source, shift in ((exp.BASELINE, 0.0), ("IAT", gain), ("random heads", 1.0)):
                if source == "random heads" and k != 4:
                    continue
                rows.append({"target": "bbc-pair", "source": source, "k": k, "seed": seed, "accuracy": base + seed + shift})
                rows.append({"target": "tweet-pair", "source": source, "k": k, "seed": seed, "accuracy": 50.0})
    return pd.DataFrame(rows)


def test_start_checks_parameters_and_targets_and_builds_both_recipes(capsys):
    glue = Glue()
    with pytest.raises(checks.BadInput, match="few_shot_lr"):
        chapter.start(_parameters(few_shot_lr=-1.0), "08_few_shot_transfer", glue=glue)
    with pytest.raises(checks.BadInput, match="bbc-topic"):  # a target that is also in the multi-task suite
        chapter.start(_parameters(targets=["bbc-topic", "tweet-pair"]), "08_few_shot_transfer", glue=glue)
    run = chapter.start(_parameters(sampler="annealed", epochs=2, few_shot_epochs=3, few_shot_lr=2e-4), "08_few_shot_transfer", glue=glue)
    assert (run.config.epochs, run.config.sampler, run.config.keep_best) == (2, "annealed", True)
    f = run.few_shot_config
    assert (f.epochs, f.lr, f.keep_best, f.sampler) == (3, 2e-4, False, "proportional")  # the multi-task schedule is not the targets'
    assert list(run.variants) == ["IAT", "random heads"] and run.variants["random heads"].heads == "random"
    assert set(run.data) == {"bbc-topic", "tweet-sentiment", "bbc-pair", "tweet-pair"}
    assert glue["target_names"] == "bbc-pair (in SciTail's role), tweet-pair (in IMDB's role)"
    assert glue["paper_scitail"] == f"{paper.table6_gain('SciTail', min(paper.KS)):+.2f}"
    assert list(chapter.start(_parameters(ablation_k=None), "08_few_shot_transfer", glue=glue).variants) == ["IAT"]
    assert "k per class" in capsys.readouterr().out


def test_table6_stars_iat_when_the_paired_bootstrap_finds_it_better():
    glue = Glue()
    rows = _rows()
    table = chapter.table6(rows, ["bbc-pair", "tweet-pair"], [4, 16], list(range(10)), glue=glue)
    assert list(table.index) == [("bbc-pair", 4), ("bbc-pair", 16), ("tweet-pair", 4), ("tweet-pair", 16)]
    assert table.loc[("bbc-pair", 4), exp.BASELINE] == "64.50 (3.03)" and table.loc[("bbc-pair", 4), "IAT"] == "69.50 (3.03)*"
    assert float(table.loc[("bbc-pair", 4), "p (IAT > MTL)"]) < 0.05
    assert not table.loc[("tweet-pair", 4), "IAT"].endswith("*") and float(table.loc[("tweet-pair", 4), "p (IAT > MTL)"]) > 0.05
    theirs = paper.TABLE6[(paper.TABLE6.target == "SciTail") & (paper.TABLE6.k == 4)].set_index("model")
    assert table.loc[("bbc-pair", 4), "paper: BERT-base"] == f"{theirs.loc['BERT-base', 'mean']:.2f}"
    assert (glue["n_same"], glue["n_paired"]) == ("20", "40")  # tweet-pair's runs are tied


def test_table8_sets_random_heads_between_the_baseline_and_iat():
    table = chapter.table8(_rows(), ["bbc-pair"], 4, list(range(10)))
    assert table.loc[[exp.BASELINE, "random heads", "IAT"], "bbc-pair"].tolist() == ["64.50 (3.03)", "65.50 (3.03)", "69.50 (3.03)"]
    assert table["paper (SciTail, IMDB)"].str.count(",").eq(1).all()
    assert chapter.table8(_rows(), ["bbc-pair"], None, [0]).empty


def test_only_targets_that_pass_the_gate_enter_the_claims(targets_data):
    glue = Glue()
    seeds = list(range(10))
    gate, claims = chapter.gate_and_claims(_rows(base=80.0), targets_data, ["bbc-pair", "tweet-pair"], [4, 16], 4, seeds, glue=glue)
    assert gate.loc["bbc-pair", "learned"] and not gate.loc["tweet-pair", "learned"]  # tweet-pair sits at chance
    assert gate.loc["bbc-pair", "reason"] == "" and gate.loc["tweet-pair", "reason"].startswith("accuracy ")  # the gate says why
    assert glue["judged"] == "bbc-pair"
    assert list(claims.index) == ["bbc-pair: IAT transfers better than the baseline at k = 4 (points)",
                                  "bbc-pair: IAT transfers better than random heads at k = 4 (points)"]
    assert claims.verdict.tolist() == ["holds", "holds"]
    assert (glue["ex_target"], glue["ex_iat_gain"]) == ("bbc-pair", "+5.00") and glue["ex_gate"].endswith(": passed")
    none = chapter.gate_and_claims(_rows(base=10.0), targets_data, ["bbc-pair"], [4], None, seeds, glue=glue)[1]
    assert glue["judged"] == "none" and "no target passed" in none.to_string()


def test_a_target_in_no_papers_role_is_judged_by_direction_and_titled_by_name(targets_data, monkeypatch):
    monkeypatch.delitem(chapter.ROLE, "bbc-pair")  # as a user's own target would be
    glue = Glue()
    _, claims = chapter.gate_and_claims(_rows(base=80.0), targets_data, ["bbc-pair"], [4, 16], 4, list(range(10)), glue=glue)
    assert claims.verdict.tolist() == ["holds", "holds"] and claims.paper.eq("positive").all()  # a direction, no paper value
    fig = chapter.few_shot_figure(_rows(), targets_data, ["bbc-pair"], [4, 16], list(range(10)))
    assert fig.axes[0].get_title() == "bbc-pair"
    plt.close(fig)


def test_the_page_names_its_recipe_and_who_takes_imdbs_role():
    from mtllib.data.tasks import GLUE_LIKE

    assert chapter.source_recipe(["bbc-topic", "tweet-sentiment"]) == "chapter 07's recipe"
    assert chapter.source_recipe(list(reversed(GLUE_LIKE.values()))) == "chapter 07c's recipe on the GLUE-like suite"
    suite = list(GLUE_LIKE.values())
    assert chapter.role_note(["bbc-pair", "bbc-topic"], suite).startswith("bbc-topic takes IMDB's role")
    assert "not a sentiment task" in chapter.role_note(["bbc-topic"], suite)
    none_here = chapter.role_note(["bbc-pair"], ["bbc-topic", "tweet-sentiment"])
    assert none_here.startswith("This page has no target in IMDB's role") and "is one of this suite's tasks" in none_here
    assert "when `targets` names it" in chapter.role_note(["bbc-pair"], suite)  # not in the suite: it could be a target
    assert chapter.role_note(["imdb"], ["sst2", "mnli"]) == "imdb takes IMDB's role"
    both = chapter.role_note(["tweet-pair", "bbc-topic"], suite).split(". ")
    assert both[0] == "tweet-pair takes IMDB's role" and both[1].startswith("bbc-topic takes IMDB's role as a classification")


def test_the_figure_has_a_panel_per_target_and_a_line_per_source(targets_data):
    fig = chapter.few_shot_figure(_rows(), targets_data, ["bbc-pair", "tweet-pair"], [4, 16], list(range(10)))
    assert len(fig.axes) == 2
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert sorted(labels) == sorted([exp.BASELINE, "IAT", "random heads", "majority class"])
    assert fig.axes[0].get_title() == "bbc-pair (SciTail's role)"
    plt.close(fig)
