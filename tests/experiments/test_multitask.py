"""The multi-task experiment as a job: what it stores, that a seed reaches training, bad specs refused."""

import numpy as np
import pytest

from mtllib import checks
from mtllib.experiments import costs, jobs
from mtllib.store.results import Store

SMALL = dict(tasks=["bbc-topic", "tweet-sentiment"], max_train=16, max_eval=8, epochs=1, batch_size=8, max_length=32)


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("results"), "cpu")
    return store, {seed: jobs.get(jobs.Job("multitask", seed=seed, **SMALL), store, progress=False) for seed in (0, 1)}


def test_the_result_holds_scores_predictions_and_curves(stored):
    _, results = stored
    result = results[0]
    scores = result.tables["scores"]
    assert sorted(zip(scores.split, scores.task)) == sorted((s, t) for s in ("validation", "test") for t in SMALL["tasks"])
    assert scores.score.between(0, 100).all()
    predictions = result.tables["predictions"]
    assert len(predictions) == 2 * 2 * 8 and set(predictions.columns) == {"split", "task", "example", "prediction", "reference"}
    # the stored scores are the metric of the stored predictions (bbc-topic: accuracy)
    topic = predictions[(predictions.task == "bbc-topic") & (predictions.split == "test")]
    accuracy = 100 * (topic.prediction == topic.reference).mean()
    assert accuracy == pytest.approx(float(scores[(scores.task == "bbc-topic") & (scores.split == "test")].score.iloc[0]))
    assert set(result.tables["steps"].task) == set(SMALL["tasks"]) and len(result.tables["steps"]) == 4  # 16 + 16 examples / 8
    assert result.values["train_examples"] == {"bbc-topic": 16, "tweet-sentiment": 16}
    assert result.record["precision"] == "fp32"


def test_each_seed_trains_its_own_model(stored):
    store, results = stored
    assert results[0].digest != results[1].digest
    w0 = jobs._load_weights(results[0].key)
    w1 = jobs._load_weights(results[1].key)
    name = next(k for k in w0 if "heads" in k and k.endswith("weight"))
    assert not (w0[name] == w1[name]).all()


def test_the_same_spec_recomputed_gives_the_same_result(stored, tmp_path):
    _, results = stored
    again = jobs.get(jobs.Job("multitask", seed=0, **SMALL), Store(tmp_path, "cpu"), progress=False)
    assert again.digest == results[0].digest


@pytest.mark.parametrize("change, message", [
    (dict(tasks=["bbc-topc"]), "unknown task 'bbc-topc'"),
    (dict(tasks=[]), "tasks must be a list of at least 1"),
    (dict(max_train={"bbc-topic": 10}, tasks=["bbc-topic", "tweet-sentiment"]), "names no size for task 'tweet-sentiment'"),
    (dict(max_train=0), "max_train of bbc-topic must be an integer >= 1"),
    (dict(lr=-1.0), "TrainConfig.lr"),
    (dict(sampler="uniform-ish"), "TrainConfig.sampler"),
])
def test_bad_specs_are_refused_before_any_work(change, message):
    with pytest.raises(checks.BadInput, match=message):
        jobs.Job("multitask", **{**SMALL, "tasks": ["bbc-topic"], **change})


def test_surface_baselines_as_a_job(tmp_path):
    job = jobs.Job("surface-baselines", task="bbc-entailment", max_train=200, max_eval=100)
    result = jobs.get(job, Store(tmp_path, "cpu"), progress=False)
    table = result.tables["baselines"]
    assert set(table.baseline) == {"majority class", "overlap rule", "bag of words"} and set(table.split) == {"validation", "test"}
    assert result.values["examples"] == {"train": 200, "validation": 100, "test": 100}
    with pytest.raises(checks.BadInput, match="unknown task"):
        jobs.Job("surface-baselines", task="rte-ish")
    with pytest.raises(checks.BadInput, match="max_train must be an integer"):
        jobs.Job("surface-baselines", max_train=2.5)


def test_the_iap_analysis_reads_its_model_s_weights_and_fills_table_3(stored, tmp_path):
    from mtllib.analysis.dissociation import dissociation
    from mtllib.analysis.importance import num_pruned

    store, results = stored
    job = jobs.Job("iap", model=jobs.Job("multitask", seed=0, **SMALL).spec, alpha=0.25, n_random=2, importance_batches=1)
    assert job.needs()["model"].key == results[0].key
    result = jobs.get(job, store, progress=False)
    assert result.record["inputs"]["model"]["digest"] == results[0].digest
    perf = result.tables["perf"].pivot(index="pruned", columns="evaluated", values="score")
    assert set(perf.index) == {*SMALL["tasks"], "Random", "Base"} and set(perf.columns) == set(SMALL["tasks"])
    base = results[0].tables["scores"].query("split == 'test'").set_index("task").score
    assert perf.loc["Base"].to_dict() == pytest.approx(base.to_dict())  # the unpruned model is the trained one
    masks = result.tables["masks"]
    heads = len(masks) // 2
    assert heads == 72 and masks.groupby("task").pruned.sum().tolist() == [num_pruned(0.25, heads)] * 2  # 6 x 12 heads
    assert np.isfinite(dissociation(perf.loc[SMALL["tasks"]], perf.loc["Base"])).all()


def test_an_iap_spec_is_checked_before_any_work():
    with pytest.raises(checks.BadInput, match="at least two"):
        jobs.Job("iap", model={**SMALL, "tasks": ["bbc-topic"]})
    with pytest.raises(checks.BadInput, match="alpha must be"):
        jobs.Job("iap", model=SMALL, alpha=1.5)
    with pytest.raises(checks.BadInput, match="unknown task"):
        jobs.Job("iap", model={**SMALL, "tasks": ["bbc-topic", "nope"]})


def test_a_plan_says_when_a_cost_is_unknown(tmp_path):
    full = jobs.Job("multitask", tasks=["bbc-topic"], max_train=None)
    sized = jobs.Job("multitask", tasks=["bbc-topic"], max_train=350, epochs=2, max_length=64)
    steps = jobs.plan([full, sized], Store(tmp_path, "cpu"))
    assert steps[0].minutes is None and steps[1].minutes == pytest.approx(350 * 2 / costs.EXAMPLES_PER_SECOND / 60)
    assert "plus 1 of unknown cost" in jobs.describe(steps)


@pytest.mark.parametrize("name", ["multitask", "surface-baselines", "iap"])
def test_cost_estimates_and_the_job_machinery_are_outside_every_key(name):
    from mtllib.fingerprint import PACKAGE_DIR, module_closure

    exp = jobs.experiment(name)
    files = {p.relative_to(PACKAGE_DIR).as_posix() for p in module_closure(exp.code, exclude=exp.exclude)}
    assert "experiments/costs.py" not in files and "experiments/jobs.py" not in files and "store/results.py" not in files
    if name == "multitask":
        assert {"experiments/multitask.py", "training/trainer.py", "modeling/multitask.py", "data/offline.py"} <= files
