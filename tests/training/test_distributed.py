"""Data-parallel training (mtllib.training.distributed): two CPU processes on gloo under torchrun train what one
process trains on the same global batch, and resume from a checkpoint as one process does.

Select these with ``pytest -k "ddp or distributed"``."""

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch

from mtllib import checks
from mtllib.training import distributed
from mtllib.training.trainer import train
from tiny import ddp_config, ddp_data, ddp_model

WORKER = Path(__file__).with_name("ddp_worker.py")
# after 12 AdamW steps at lr 5e-3, fp32 sums taken in another order (two half-batches and an all-reduce) moved
# weights by at most 2.3e-5 here (AdamW divides by small second moments); half the global batch moved them by
# 0.075 (checked below, so the tolerance can fail)
ATOL = 2e-4


@pytest.fixture(scope="module")
def case():
    return ddp_data()  # fills the feature cache the workers then read (they inherit MTLLIB_CACHE)


def _torchrun(mode: str, out: Path, nproc: int = 2) -> dict:
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(nproc), str(WORKER), mode, str(out)]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env)
    assert done.returncode == 0, f"torchrun {mode} failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    return torch.load(out / f"{mode}.pt", weights_only=False)


def _single(case, **changes):
    tokenizer, data = case
    model = ddp_model(tokenizer, data)
    result = train(model, data, ddp_config(**changes), progress=False)
    return model.state_dict(), result


def _max_diff(a: dict, b: dict) -> float:
    assert a.keys() == b.keys()
    return max(float((a[k].float() - b[k].float()).abs().max()) for k in a)


@pytest.fixture(scope="module")
def ddp_runs(case, tmp_path_factory):
    return _torchrun("train", tmp_path_factory.mktemp("ddp"))


@pytest.mark.parametrize("batching", ["homogeneous", "heterogeneous"])
def test_ddp_on_two_processes_trains_what_one_process_trains_on_the_same_global_batch(case, ddp_runs, batching):
    assert ddp_runs["world_size"] == 2 and ddp_runs["rank"] == 0
    state, result = _single(case, batching=batching)
    ddp = ddp_runs[batching]
    assert _max_diff(state, ddp["state"]) < ATOL
    # the same steps, tasks and learning rates; the logged loss is the whole batch's mean on both
    pd.testing.assert_frame_equal(result.log.drop(columns="loss"), ddp["log"].drop(columns="loss"))
    assert (result.log["loss"] - ddp["log"]["loss"]).abs().max() < 1e-4
    pd.testing.assert_frame_equal(result.history, ddp["history"], atol=1e-3)  # dev scores: a flipped prediction would show
    assert result.best_epoch == ddp["best_epoch"]


def test_ddp_tolerance_separates_another_global_batch(case, ddp_runs):
    """The comparison above can fail: half the batch (what one process alone sees) ends far outside ATOL."""
    state, _ = _single(case, batch_size=4, epochs=1)
    assert _max_diff(state, ddp_runs["homogeneous"]["state"]) > 100 * ATOL


def test_ddp_resume_after_a_kill_ends_like_an_uninterrupted_run(case, ddp_runs, tmp_path):
    killed = _torchrun("kill", tmp_path)
    assert killed["killed"] == "killed at step 7"
    saved = torch.load(tmp_path / "run" / "last.pt", weights_only=False)
    assert saved["world_size"] == 2 and len(saved["torch_rng_ranks"]) == 2 and saved["state"]["global_step"] == 6
    resumed = _torchrun("resume", tmp_path)["resumed"]
    full = ddp_runs["homogeneous"]
    assert _max_diff(resumed["state"], full["state"]) < ATOL
    pd.testing.assert_frame_equal(resumed["log"], full["log"], atol=1e-4)


def test_distributed_checkpoint_is_refused_by_a_single_process(case, ddp_runs, tmp_path):
    killed = _torchrun("kill", tmp_path)
    assert killed["killed"] == "killed at step 7"
    tokenizer, data = case
    with pytest.raises(ValueError, match="2 process"):
        train(ddp_model(tokenizer, data), data, ddp_config(checkpoint_dir=str(tmp_path / "run"), checkpoint_every=3), progress=False)


def test_distributed_context_without_a_launcher_is_one_process(monkeypatch):
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    dp = distributed.context(torch.device("cpu"))
    assert (dp.world_size, dp.rank, dp.is_main, dp.accelerator) == (1, 0, True, None)
    assert dp.shard([1, 2, 3]) == ([1, 2, 3], 1.0)


def test_distributed_shards_split_the_global_batch_and_weigh_uneven_parts():
    ranks = [distributed.Context(accelerator=object(), rank=r, world_size=2) for r in range(2)]
    parts = [dp.shard(list(range(7))) for dp in ranks]
    assert parts == [([0, 2, 4, 6], 4 * 2 / 7), ([1, 3, 5], 3 * 2 / 7)]
    # the mean of the two scaled part-means is the mean over all 7 examples
    losses = torch.arange(7.0)
    scaled = [factor * losses[part].mean() for part, factor in parts]
    assert torch.isclose(sum(scaled) / 2, losses.mean())
    # a batch smaller than the world: the idle process runs one example with weight 0
    assert ranks[1].shard([5]) == ([5], 0.0)


@pytest.mark.parametrize("value", ["two", "0", "-1"])
def test_distributed_bad_world_size_is_refused(monkeypatch, value):
    monkeypatch.setenv("WORLD_SIZE", value)
    with pytest.raises(checks.BadInput, match="WORLD_SIZE"):
        distributed.launched_world_size()


def test_distributed_more_processes_than_gpus_is_refused_before_training(monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "4")
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    with pytest.raises(checks.BadInput, match="4 processes .* 2 CUDA device"):
        distributed.context(torch.device("cuda"))
