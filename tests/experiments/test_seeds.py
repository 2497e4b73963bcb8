"""Every runner that fans out over seeds hands each seed to the trainer, and two seeds give two models: a
runner that trained every seed with seed 0 would make the book's seed spreads the spread of one seed.

The trainer is wrapped to record, for every training run, the seed its config carries and a digest of the
model's weights before and after training; each test starts from an empty model cache, so every run trains."""

import hashlib

import pytest
import torch

from mtllib.training import trainer
from mtllib.training.trainer import TrainConfig

PAIR_TASKS = ["bbc-topic", "bbc-pair"]  # the tasks of the tiny_pair fixture (conftest.py)

SEEDS = [1, 2]
CONFIG = TrainConfig(epochs=1, batch_size=8, lr=1e-3)


def _digest(model) -> str:
    h = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(tensor.detach().float().cpu().numpy().tobytes())
    return h.hexdigest()


@pytest.fixture
def runs(tmp_path, monkeypatch):
    """The list of ``(seed, weights before, weights after)`` of every training run from here on."""
    monkeypatch.setenv("MTLLIB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("MTLLIB_MODEL_CACHE", "1")
    real, seen = trainer.train, []

    def recording(model, data, config=None, *args, **kwargs):
        before = _digest(model)
        result = real(model, data, config, *args, **kwargs)
        seen.append((config.seed, before, _digest(model)))
        return result

    monkeypatch.setattr(trainer, "train", recording)
    return seen


def _each_seed_trained_its_own_model(seen, per_seed=1):
    assert sorted(s for s, _, _ in seen) == sorted(SEEDS * per_seed), "the seeds that reached the trainer"
    first = {s: (before, after) for s, before, after in reversed(seen)}  # each seed's first run
    assert first[1][0] != first[2][0], "both seeds started from the same weights"
    assert first[1][1] != first[2][1], "both seeds ended with the same weights"


def test_iap_run_experiment(tiny_pair, runs):
    from mtllib.experiments import iap

    folder, tokenizer, data = tiny_pair
    for seed in SEEDS:
        result = iap.run_experiment(folder, PAIR_TASKS, seed, alpha=0.25, train_config=CONFIG, n_random=1,
                                    importance_batches=1, data=data, tokenizer=tokenizer, progress=False)
        assert result.seed == seed
    _each_seed_trained_its_own_model(runs)


def test_dual_task_iap(tiny_pair, runs):
    from mtllib.experiments import iap

    folder, tokenizer, data = tiny_pair
    rows = iap.dual_task(folder, [tuple(PAIR_TASKS)], SEEDS, data, tokenizer, alpha=0.25, train_config=CONFIG,
                         importance_batches=1, progress=False)
    assert rows.seed.tolist() == SEEDS
    _each_seed_trained_its_own_model(runs)


def test_adapter_variants(tiny_pair, runs):
    from mtllib.experiments import adapters
    from mtllib.modeling.adapters import AdapterConfig

    folder, _, data = tiny_pair
    rows = adapters.run_variants(folder, PAIR_TASKS, {"pals": AdapterConfig(method="pals", size=12)}, SEEDS, data, CONFIG)
    assert sorted(set(rows.seed)) == SEEDS
    _each_seed_trained_its_own_model(runs)


def test_iat_baseline_and_branch(tiny_pair, runs):
    from mtllib.experiments import iat
    from mtllib.training.iat import IATConfig

    folder, _, data = tiny_pair
    result = iat.run(folder, PAIR_TASKS, SEEDS, {"IAT": IATConfig(alpha=0.5, delta=0.5, importance_batches=1)}, data, CONFIG,
                     dissociate=(), prune_alpha=None, importance_batches=1, progress=False)
    assert sorted(set(result.scores.seed)) == SEEDS
    assert {s for s, _, _ in runs} == set(SEEDS)
    # each seed's baseline (its first run) starts from that seed's weights, and no run carries another seed
    _each_seed_trained_its_own_model(runs, per_seed=len(runs) // 2)


def test_few_shot(tiny_pair, runs):
    from mtllib.modeling.multitask import MultiTaskModel

    folder, _, data = tiny_pair
    task = data["bbc-topic"]
    rows = trainer.few_shot(lambda: MultiTaskModel.from_pretrained(folder, [task.task.spec()]), task, [2], SEEDS,
                            config=CONFIG, progress=False)
    assert rows.seed.tolist() == SEEDS
    _each_seed_trained_its_own_model(runs)


def test_transferability_fine_tune(tiny_pair, runs):
    from mtllib.experiments import transferability
    from mtllib.modeling.multitask import MultiTaskModel

    folder, _, data = tiny_pair
    torch.manual_seed(0)
    source = MultiTaskModel.from_pretrained(folder, [data["bbc-pair"].task.spec()])
    rows = transferability.fine_tune(source, data["bbc-topic"], SEEDS, CONFIG)
    assert rows.seed.tolist() == SEEDS
    _each_seed_trained_its_own_model(runs)


def test_multitask_job(tiny_pair, runs, tmp_path):
    from mtllib.experiments import jobs
    from mtllib.store.results import Store

    folder, _, _ = tiny_pair
    store = Store(tmp_path / "results", "cpu")
    for seed in SEEDS:
        jobs.get(jobs.Job("multitask", model=str(folder), tasks=PAIR_TASKS, max_train=16, max_eval=8, epochs=1,
                          batch_size=8, max_length=32, seed=seed), store, progress=False)
    _each_seed_trained_its_own_model(runs)
