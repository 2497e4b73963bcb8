"""The steps of the transferability target pages (09b, 09c, 09c2, 09d, 09d2: one source): tables, gate, figure,
what a page says of its group, and the glued results the Tables chapter reads back."""

import io
import json

import matplotlib

matplotlib.use("Agg")
import pandas as pd
import pytest

from mtllib import checks
from mtllib.book import transfer_targets as chapter
from mtllib.experiments import transferability as tr

SCHEMES = tr.all_schemes(["SL", "C", "QA"])
SOURCE = "09b_transfer_sl_targets"  # the source of every target page


def _scores():
    """Two QA targets, three seeds: score = 50 + 2 * (scheme's position) + target offset + seed."""
    rows = []
    for i, scheme in enumerate(SCHEMES):
        for target, offset in (("qa-1", 0.0), ("qa-2", 10.0)):
            for seed in range(3):
                rows.append({"scheme": scheme, "group": "QA", "target": target, "seed": seed, "score": 50 + 2 * i + offset + seed})
    return pd.DataFrame(rows)


class Glue(dict):
    def __call__(self, key, value):
        self[key] = value


def test_the_scheme_table_puts_the_papers_row_beside_ours():
    glue = Glue()
    table = chapter.scheme_table(_scores(), SCHEMES, "QA", glue=glue)
    assert list(table.index) == SCHEMES
    assert list(table.columns) == ["qa-1", "qa-2", "average over our QA targets", "paper: its QA targets (Table 2)"]
    # Baseline (position 0): qa-1 seeds 50, 51, 52 -> 51.0 (sd 1.0); qa-2 61.0; their average 56.0 (sd 1.0)
    assert table.loc["Baseline", "qa-1"] == "51.0 (1.0)" and table.loc["Baseline", "qa-2"] == "61.0 (1.0)"
    assert table.loc["Baseline", "average over our QA targets"] == "56.0 (1.0)"
    assert table.loc["SL+C+QA", "average over our QA targets"] == f"{56 + 2 * 7:.1f} (1.0)"
    assert table.loc["Only-QA", "paper: its QA targets (Table 2)"] == "75.3"  # 75.252
    assert table.loc["C+QA", "paper: its QA targets (Table 2)"] == "75.0"  # the paper's "QA+C", 75.035
    assert glue == {"best_ours": "SL+C+QA", "best_paper": "SL+C+QA", "spread_ours": "14.0",
                    # the first target for an exercise: the baseline, each one-group scheme and the scheme with every group
                    "first_target": "qa-1", "first_among": "Baseline, Only-SL, Only-C, Only-QA, SL+C+QA",
                    "first_order": "SL+C+QA > Only-QA > Only-C > Only-SL > Baseline", "first_sd": "1.0"}


def test_the_gate_is_glued_with_its_worked_example():
    gate = pd.DataFrame({"metric": ["squad_f1", "squad_f1"], "Baseline (mean)": [61.84, 40.0], "majority": [0.0, 0.0],
                         "threshold": [50.0, 50.0], "learned": [True, False]}, index=pd.Index(["qa-1", "qa-2"], name="target"))
    glue = Glue()
    shown = chapter.glue_gate(gate, glue=glue)
    assert shown.loc["qa-1", "Baseline (mean)"] == 61.8
    assert glue["learned"] == "qa-1" and glue["not_learned"] == "qa-2"
    assert (glue["ex_target"], glue["ex_majority"], glue["ex_threshold"], glue["ex_baseline"], glue["ex_verdict"]) == ("qa-1", "0.0", "50.0", "61.8", "learned")
    assert (glue["ex_metric"], glue["ex_rule"]) == ("squad_f1", "the larger of 50 and the majority class's score plus 15 points")
    glue = Glue()
    chapter.glue_gate(gate.assign(learned=False), glue=glue)
    assert glue["learned"] == "none" and glue["ex_verdict"] == "not learned"


def test_the_ranking_orders_the_named_schemes_by_mean_score():
    scores = _scores()
    assert chapter.ranking(scores, "qa-1", ["Baseline", "Only-QA", "Only-SL"]) == "Only-QA > Only-SL > Baseline"
    with pytest.raises(KeyError, match="Only-NER"):
        chapter.ranking(scores, "qa-1", ["Baseline", "Only-NER"])


def test_the_figure_has_a_panel_per_target_and_a_dot_per_seed():
    fig = chapter.scores_figure(_scores(), SCHEMES, ["qa-1", "qa-2"], {"qa-1": 0.0, "qa-2": 5.0})
    axes = fig.axes
    assert [ax.get_title() for ax in axes] == ["qa-1", "qa-2"]
    dots = sum(len(c.get_offsets()) for c in axes[1].collections if isinstance(c, matplotlib.collections.PathCollection))
    assert dots == len(SCHEMES) * 3
    assert [t.get_text() for t in axes[0].get_xticklabels()] == SCHEMES
    assert axes[1].lines[-1].get_ydata()[0] == 5.0  # the majority class of qa-2
    matplotlib.pyplot.close(fig)


def test_the_differences_table_reads_the_chapters_settings():
    frame = chapter.differences("offline", {"SL": ["a", "b"], "QA": ["c"]}, "QA", ["t1", "t2"], pf_train=100, pf_epochs=2,
                                seeds=[0, 1, 2], patience=3, epochs=2, n_test=100)
    assert list(frame.columns) == ["paper", "ours"]
    assert frame.loc["pre-finetuning tasks", "ours"].startswith("3 tasks")
    assert frame.loc["targets", "ours"] == "2 unseen QA targets in this chapter"
    assert frame.loc["fine-tuning seeds"].tolist() == ["5", "3"]
    assert frame.loc["targets", "paper"] == "12 unseen datasets"
    assert frame.loc["scored on", "ours"] == "test split, 100 examples per target"
    assert frame.loc["pre-finetuning size", "ours"] == "100 examples per task, at most 2 epochs"
    sized = chapter.differences("offline", {"SL": ["a", "b"], "QA": ["c"]}, "QA", ["t1"], pf_train={"default": 100, "c": 400}, pf_epochs=2,
                                seeds=[0], patience=3, epochs=2, n_test=100)
    assert sized.loc["pre-finetuning size", "ours"] == "100 (c 400) examples per task, at most 2 epochs"


def test_fine_tuning_the_targets_glues_what_the_tables_chapter_reads(tmp_path, monkeypatch):
    """The four tables go into the notebook as JSON that :func:`mtllib.book.results.read_frame` parses back."""
    scores = _scores()
    costs = pd.DataFrame([{"scheme": s, "tasks": 0 if s == "Baseline" else 4, "train examples": 0, "epochs": 2, "best epoch": 2,
                           "stopped early": False, "examples processed": 0, "seconds": 0.0 if s == "Baseline" else 30.0,
                           "cached": s != "Baseline", "total seconds": 1.0} for s in SCHEMES])
    calls = {}

    def fake_run(make_model, groups, targets, data, pf, ft, seeds, schemes, progress):
        calls.update(targets=targets, seeds=seeds, schemes=schemes)
        return {"scores": scores, "costs": costs}

    gate = pd.DataFrame({"metric": ["squad_f1"] * 2, "Baseline (mean)": [51.0, 61.0], "majority": [0.0, 0.0], "threshold": [50.0, 50.0],
                         "learned": [True, True]}, index=pd.Index(["qa-1", "qa-2"], name="target"))
    monkeypatch.setattr(tr, "run", fake_run)
    monkeypatch.setattr(tr, "target_gate", lambda s, d: gate)
    glue = Glue()
    groups = {"SL": ["a"], "QA": ["b"], "C": ["c"]}
    out_scores, out_gate, shown = chapter.fine_tune_targets("offline", groups, "QA", ["qa-1", "qa-2"], {}, None, None, [0, 1, 2], SCHEMES, glue=glue)
    assert calls == {"targets": {"QA": ["qa-1", "qa-2"]}, "seeds": [0, 1, 2], "schemes": SCHEMES}
    assert out_scores is scores and out_gate is gate
    assert list(shown.columns) == ["tasks", "train examples", "epochs", "cached", "total seconds"] and list(shown.index) == SCHEMES
    assert (glue["n_runs"], glue["pf_minutes"], glue["n_cached"]) == (str(len(scores)), f"{7 * 30 / 60:.1f}", "7 of 7")
    back = pd.read_json(io.StringIO(glue["scores"]), orient="table")
    pd.testing.assert_frame_equal(back, scores, check_dtype=False)
    assert json.loads(glue["design"])["data"][-1] == {"group": "QA", "task": "qa-2", "role": "target"}
    assert pd.read_json(io.StringIO(glue["gate"]), orient="table").target.tolist() == ["qa-1", "qa-2"]


def _parameters(**changes):
    """The target pages' parameters (their source's smoke defaults) with the QA group's targets, as a page's
    ``globals()`` holds them."""
    from mtllib.book import runner

    qa = {"target_group": "QA", "targets": ["bbc-quote", "bbc-headline-wh"]}
    return {**runner.default_parameters(runner.Project().source(SOURCE)), **qa, **changes}


@pytest.fixture
def unsized(monkeypatch):
    """The split sizes not read (building the silver tasks takes minutes; tests/book/test_params.py checks sizes)."""
    import mtllib.book.params as params

    monkeypatch.setattr(params, "split_sizes", lambda names: {})


def test_start_checks_every_parameter_and_the_design_before_preparing_data(monkeypatch, unsized):
    prepared = []
    monkeypatch.setattr(chapter, "prepare_data", lambda *a: prepared.append(a) or {})
    with pytest.raises(checks.BadInput, match="lr"):
        chapter.start(_parameters(lr=-1.0), SOURCE)
    groups = _parameters()["groups"]
    with pytest.raises(ValueError, match="bbc-topic"):  # a target that is also pre-finetuned on
        chapter.start(_parameters(targets=["bbc-topic"], target_group="C"), SOURCE)
    with pytest.raises(checks.BadInput, match="target_group must be one of the paper's groups SL, QA, C, got 'NER'"):
        chapter.start(_parameters(groups={**groups, "NER": ["bbc-mention"]}, target_group="NER", targets=["bbc-ner"]), SOURCE)
    assert prepared == [] and "bbc-topic" in groups["C"]


def test_start_builds_both_recipes_and_glues_the_opening(monkeypatch, capsys, unsized):
    monkeypatch.setattr(chapter, "prepare_data", lambda *a: {"args": a})
    glue = Glue()
    params = _parameters(seeds=[0, 1, 2], patience=2, epochs=3, pf_epochs=1)
    run = chapter.start(params, SOURCE, glue=glue)
    assert run.schemes == tr.all_schemes(params["groups"]) and str(run.device) == "cpu"
    assert (run.pf_config.epochs, run.ft_config.epochs) == (1, 3)
    assert run.pf_config.patience == run.ft_config.patience == 2 and run.ft_config.lr == params["lr"]
    assert run.data["args"][1:] == (params["groups"], params["targets"], params["max_length"], params["max_train"], params["max_eval"],
                                    params["pf_train"], params["pf_eval"])
    texts = {k: glue.pop(k).data for k in ("targets_note", "group_exercise", "group_solution")}  # markdown
    assert glue == {"target_group": "QA", "targets": "bbc-quote, bbc-headline-wh", "n_seeds": "3",
                    "n_schemes_pf": str(len(run.schemes) - 1), "max_train": str(params["max_train"]), "epochs": "3",
                    "group_name": "extractive-QA", "paper_finding": chapter.GROUP_TEXT["QA"]["paper"],
                    "pf_tasks": ", ".join(params["groups"]["QA"])}
    assert texts["targets_note"].splitlines() == [f"- **bbc-quote**: {chapter.TARGET_NOTES['bbc-quote']}",
                                                  f"- **bbc-headline-wh**: {chapter.TARGET_NOTES['bbc-headline-wh']}"]
    assert "tweet-entity-qa" in texts["group_exercise"] and texts["group_solution"] == chapter.GROUP_TEXT["QA"]["solution"]
    assert "device: cpu" in capsys.readouterr().out


def test_a_target_may_get_its_own_training_size(monkeypatch):
    """prepare_data hands every target its size (a named one or the default) and every pre-finetuning task
    pf_train, whatever the targets' sizes say."""
    import mtllib.data.features as features

    seen = {}
    monkeypatch.setattr(features, "load_tokenizer", lambda model: "tok")
    monkeypatch.setattr(features, "prepare", lambda names, tok, max_length, max_train, max_eval: seen.update(
        names=names, train={n: features.per_task(max_train, n) for n in names}, eval={n: features.per_task(max_eval, n) for n in names}))
    groups = {"SL": ["bbc-pos"], "C": ["bbc-topic"]}
    chapter.prepare_data("offline", groups, ["tweet-pos", "bbc-ner"], 64, {"default": 200, "bbc-ner": 800}, 100, 24, 16)
    assert seen["names"] == ["bbc-pos", "bbc-topic", "tweet-pos", "bbc-ner"]
    assert seen["train"] == {"bbc-pos": 24, "bbc-topic": 24, "tweet-pos": 200, "bbc-ner": 800}
    assert seen["eval"] == {"bbc-pos": 16, "bbc-topic": 16, "tweet-pos": 100, "bbc-ner": 100}
    chapter.prepare_data("offline", groups, ["tweet-pos"], 64, 300, None, 24, 16)
    assert seen["train"]["tweet-pos"] == 300 and seen["eval"]["tweet-pos"] is None and seen["train"]["bbc-pos"] == 24
    chapter.prepare_data("offline", groups, ["tweet-pos"], 64, 300, None, {"default": 24, "bbc-topic": 48}, 16)
    assert (seen["train"]["bbc-pos"], seen["train"]["bbc-topic"], seen["eval"]["bbc-topic"]) == (24, 48, 16)  # a pre-finetuning task's own size


@pytest.mark.parametrize("size, text", [(200, "200"), (None, "all"), ({"default": 200}, "200"),
                                        ({"default": 200, "bbc-ner": 800}, "200 (bbc-ner 800)"),
                                        ({"default": None, "bbc-ner": 800}, "all (bbc-ner 800)"),
                                        ({"tweet-pos": 200, "bbc-ner": 800}, "tweet-pos 200, bbc-ner 800")])
def test_the_opening_text_names_the_targets_whose_size_differs(size, text):
    assert chapter.sizes_text(size, ["tweet-pos", "bbc-ner"]) == text


def test_a_target_without_a_note_is_described_by_its_task():
    from mtllib.data.tasks import get_task

    assert chapter.targets_note(["boolq", "bbc-ner"]).splitlines() == [f"- **boolq**: {get_task('boolq').description}",
                                                                        f"- **bbc-ner**: {chapter.TARGET_NOTES['bbc-ner']}"]


@pytest.mark.parametrize("metric, rule, majority, threshold", [
    ("accuracy", "the majority class's score plus 15 points", 40.0, 55.0),
    ("squad_f1", "the larger of 50 and the majority class's score plus 15 points", 0.0, 50.0),
    ("entity_f1", "the larger of 50 and the majority class's score plus 15 points", 40.0, 55.0),
    ("mcc", "30, whatever the majority class scores", 0.0, 30.0),
    ("exact_match", "30, whatever the majority class scores", 20.0, 30.0),
])
def test_the_gate_rule_in_words_agrees_with_the_gate(metric, rule, majority, threshold):
    from mtllib.analysis import learnability

    assert chapter.gate_rule(metric) == rule
    assert learnability.threshold(metric, majority) == threshold


def test_every_group_of_the_paper_has_its_text_and_every_cpu_target_its_note():
    from mtllib.book import runner
    from mtllib.papers import task_transferability as paper

    assert set(chapter.GROUP_TEXT) == set(paper.GROUPS)
    assert all(set(text) == {"name", "paper", "exercise", "solution"} and all(text.values()) for text in chapter.GROUP_TEXT.values())
    project = runner.Project()
    cpu = project.profile("cpu")
    pages = [name for name in cpu if project.source_name(name) == SOURCE]
    assert sorted(pages) == ["09b_transfer_sl_targets", "09c2_transfer_qa_targets_part2", "09c_transfer_qa_targets",
                             "09d2_transfer_c_targets_part2", "09d_transfer_c_targets"]
    assert sorted(t for name in pages for t in cpu[name]["targets"]) == sorted(chapter.TARGET_NOTES)
