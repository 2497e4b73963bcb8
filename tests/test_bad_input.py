"""Bad input, tried as a new user and a careless script would: every case gets one clear error — the right
exception type, a message that names the culprit — before any work, and nothing is written (no checkpoint,
no file in book/, no cache entry)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import torch
from transformers import BertConfig

from mtllib import checks
from mtllib.analysis.importance import select_heads
from mtllib.book import runner as book
from mtllib.book.params import check_parameters
from mtllib.data.assets import resolve_model
from mtllib.data.features import load_tokenizer, prepare
from mtllib.data.tasks import UnknownTask, cap, get_task, k_shot_indices
from mtllib.modeling.multitask import MultiTaskModel, load_checkpoint, save_checkpoint
from mtllib.training.iat import IATConfig
from mtllib.training.samplers import TaskSampler
from mtllib.training.trainer import TrainConfig, few_shot, train
from tiny import write_notebook

B = checks.BadInput

CONFIG_CASES = [
    ({"lr": -1}, "TrainConfig.lr"),
    ({"lr": "abc"}, "TrainConfig.lr"),
    ({"lr": float("nan")}, "TrainConfig.lr"),
    ({"epochs": "abc"}, "TrainConfig.epochs"),
    ({"epochs": 0}, "TrainConfig.epochs"),
    ({"epochs": 2.0}, "TrainConfig.epochs"),
    ({"batch_size": 0}, "TrainConfig.batch_size"),
    ({"eval_batch_size": 0}, "TrainConfig.eval_batch_size"),
    ({"max_grad_norm": -1.0}, "TrainConfig.max_grad_norm"),
    ({"weight_decay": -0.1}, "TrainConfig.weight_decay"),
    ({"warmup": 1.0}, "TrainConfig.warmup"),
    ({"betas": (0.9,)}, "TrainConfig.betas"),
    ({"betas": (0.9, 1.0)}, "TrainConfig.betas"),
    ({"adam_eps": 0}, "TrainConfig.adam_eps"),
    ({"sampler": "bogus"}, "TrainConfig.sampler"),
    ({"temperature": 0}, "TrainConfig.temperature"),
    ({"batching": "mixed"}, "TrainConfig.batching"),
    ({"seed": -1}, "TrainConfig.seed"),
    ({"seed": True}, "TrainConfig.seed"),
    ({"checkpoint_every": 0}, "TrainConfig.checkpoint_every"),
    ({"iat": "yes"}, "TrainConfig.iat"),
    ({"iat": IATConfig(), "batching": "heterogeneous"}, "TrainConfig.iat"),
    ({"cpu_bf16": "yes"}, "TrainConfig.cpu_bf16"),
]


@pytest.mark.parametrize("fields, culprit", CONFIG_CASES, ids=[c[1] + "=" + repr(list(c[0].values())[-1]) for c in CONFIG_CASES])
def test_train_config_refuses_bad_fields_when_made(fields, culprit):
    with pytest.raises(B, match=culprit.replace(".", r"\.")) as err:
        TrainConfig(**fields)
    assert "got" in str(err.value)  # the message shows the value given


def test_train_config_refuses_a_device_that_does_not_exist():
    with pytest.raises(ValueError, match="tpu"):
        TrainConfig(device="tpu")


@pytest.mark.parametrize("fields, culprit", [
    ({"alpha": 0}, "alpha"), ({"alpha": 1.5}, "alpha"), ({"delta": 2}, "IATConfig.delta"),
    ({"heads": "bottom"}, "IATConfig.heads"), ({"importance_batches": 0}, "IATConfig.importance_batches"),
])
def test_iat_config_refuses_bad_fields(fields, culprit):
    with pytest.raises(ValueError, match=culprit):
        IATConfig(**fields)


@pytest.mark.parametrize("sizes", [[1.5, 2], [0, 3], [], [True, 2]])
def test_sampler_sizes_must_be_whole_positive_batch_counts(sizes):
    with pytest.raises(ValueError, match="whole numbers of batches"):
        TaskSampler("proportional", sizes, 2)


def test_sampler_epochs_must_be_positive():
    with pytest.raises(ValueError, match="num_epochs"):
        TaskSampler("proportional", [2, 3], 0)


def test_nan_importance_is_never_selected_as_the_top_head():
    importance = torch.rand(2, 3)
    importance[1, 2] = float("nan")
    with pytest.raises(ValueError, match=r"NaN or infinite scores at \(layer, head\) \[\(1, 2\)\]"):
        select_heads(importance, 0.5)


def test_alpha_that_selects_no_head():
    with pytest.raises(ValueError, match="selects no head out of 72"):
        select_heads(torch.rand(6, 12), 0.001)


def test_unknown_task_names_the_registered_ones():
    with pytest.raises(UnknownTask, match="unknown task 'bbc-nope'.*bbc-topic"):
        get_task("bbc-nope")


def test_size_cap_below_one():
    import pandas as pd

    with pytest.raises(ValueError, match="size cap must be >= 1"):
        cap(pd.DataFrame({"a": [1, 2]}), 0, 0)


def test_k_shot_more_than_a_class_holds():
    import datasets

    ds = datasets.Dataset.from_dict({"label": [0, 0, 1]})
    with pytest.raises(ValueError, match="class 'capitalised'|class 'acceptable'|has only 1"):
        k_shot_indices(ds, get_task("bbc-acceptability"), 2, seed=0)


def test_a_local_model_folder_that_does_not_exist(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        resolve_model(str(tmp_path / "no-such-model"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="no config.json"):
        resolve_model(str(tmp_path / "empty"))


# --- checkpoints and training ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer("offline")


@pytest.fixture(scope="module")
def data(tokenizer):
    return prepare(["bbc-topic", "tweet-sentiment"], tokenizer, max_train=16, max_eval=8, max_length=32)


def _model(tokenizer, data):
    torch.manual_seed(0)
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=1, num_attention_heads=4, intermediate_size=37, max_position_embeddings=64)
    return MultiTaskModel.from_config(config, [data[n].task.spec() for n in data])


def _snapshot(folder: Path) -> dict:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()} if folder.exists() else {}


def test_missing_and_truncated_checkpoints_are_named(tmp_path, tokenizer, data):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_checkpoint(tmp_path / "nope.pt")
    path = tmp_path / "model.pt"
    save_checkpoint(_model(tokenizer, data), path)
    path.write_bytes(path.read_bytes()[:500])
    with pytest.raises(ValueError, match=f"checkpoint {path} cannot be read"):
        load_checkpoint(path)


def _stopped_run(tmp_path, tokenizer, data, config):
    class Stop(Exception):
        pass

    def stop(step):
        if step == 1:
            raise Stop

    with pytest.raises(Stop):
        train(_model(tokenizer, data), data, config, progress=False, on_step=stop)


def test_resuming_with_other_data_or_settings_is_refused(tmp_path, tokenizer, data):
    config = TrainConfig(epochs=1, batch_size=4, lr=1e-3, checkpoint_dir=str(tmp_path / "ckpt"), checkpoint_every=1)
    _stopped_run(tmp_path, tokenizer, data, config)
    before = _snapshot(tmp_path / "ckpt")
    assert "last.pt" in before
    other = prepare(["bbc-topic", "tweet-sentiment"], tokenizer, max_train=12, max_eval=8, max_length=32)
    with pytest.raises(ValueError, match="data differ.*bbc-topic"):
        train(_model(tokenizer, other), other, config, progress=False)
    with pytest.raises(ValueError, match=r"settings that differ: lr 0.001 -> 0.002"):
        train(_model(tokenizer, data), data, dataclasses.replace(config, lr=2e-3), progress=False)
    assert _snapshot(tmp_path / "ckpt") == before  # refused before anything was written


def test_a_truncated_resume_checkpoint_is_named(tmp_path, tokenizer, data):
    config = TrainConfig(epochs=1, batch_size=4, lr=1e-3, checkpoint_dir=str(tmp_path / "ckpt"), checkpoint_every=1)
    _stopped_run(tmp_path, tokenizer, data, config)
    last = tmp_path / "ckpt" / "last.pt"
    last.write_bytes(last.read_bytes()[:300])
    with pytest.raises(ValueError, match=f"checkpoint {last} cannot be read"):
        train(_model(tokenizer, data), data, config, progress=False)


@pytest.mark.parametrize("split, batching", [("validation", "homogeneous"), ("train", "heterogeneous")])
def test_an_empty_split_fails_before_any_step(tmp_path, tokenizer, data, split, batching):
    from mtllib.data.features import TaskData

    td = data["bbc-topic"]
    emptied = {**data, "bbc-topic": TaskData(td.task, {**td.features, split: td.features[split].select([])}, td.rows, td.pad_token_id)}
    config = TrainConfig(epochs=1, batch_size=4, batching=batching, checkpoint_dir=str(tmp_path / "ckpt"))
    with pytest.raises(ValueError, match=f"task 'bbc-topic' has no {split} examples"):
        train(_model(tokenizer, data), emptied, config, progress=False)
    assert not (tmp_path / "ckpt").exists()


def test_few_shot_checks_every_k_before_training_any(tokenizer, data):
    trained = []

    def make_model():
        trained.append(1)
        return _model(tokenizer, {"bbc-topic": data["bbc-topic"]})

    with pytest.raises(ValueError, match="k=50 per class"):
        few_shot(make_model, data["bbc-topic"], [1, 50], [0], config=TrainConfig(epochs=1, batch_size=4), progress=False)
    assert trained == []


# --- notebook parameters (the check every notebook makes in its first code cell) -------------------------
SMOKE_03 = dict(model="offline", tasks=["bbc-next", "bbc-pair"], alpha=0.3, seeds=[0], max_train=48, max_eval=32, max_length=64,
                epochs=1, batch_size=16, lr=1e-4, n_random=1, importance_batches=2, device="cpu")


@pytest.mark.parametrize("change, culprit", [
    ({"epochz": 3}, r"unknown parameter\(s\) \['epochz'\]"),
    ({"seeds": []}, "seeds must be a list of at least 1 item"),
    ({"seeds": "[0, 1]"}, "pass them with -y"),
    ({"importance_batches": 0}, "importance_batches must be an integer >= 1"),
    ({"epochs": "abc"}, "epochs must be an integer"),
    ({"alpha": 0.001}, "selects no head out of 72"),
    ({"alpha": 0}, "alpha must be a finite number > 0"),
    ({"max_train": 10**6}, r"max_train=1000000 is more than the train split"),
    ({"tasks": ["bbc-next", "bbc-nope"]}, "unknown task 'bbc-nope'"),
    ({"tasks": ["bbc-next", "bbc-next"]}, "without repeated items"),
    ({"device": "tpu"}, "device must be one of"),
    ({"lr": -1e-4}, "lr must be a finite number > 0"),
])
def test_notebook_parameters_are_checked_before_any_work(change, culprit):
    namespace = {**SMOKE_03, **change, "__name__": "__main__", "In": [], "np": json}  # a module is not a parameter
    with pytest.raises((B, UnknownTask), match=culprit):
        check_parameters(namespace, "03_multitask_iap")


def test_the_smoke_parameters_pass():
    assert check_parameters(dict(SMOKE_03), "03_multitask_iap")["alpha"] == 0.3


# --- the runner: profiles and failing notebooks --------------------------------------------------------
@pytest.fixture
def project(tmp_path):
    (tmp_path / "notebooks" / "params").mkdir(parents=True)
    write_notebook(tmp_path / "notebooks" / "alpha.ipynb", "x = 1", "y = x + 1", "raise RuntimeError('broken on purpose')")
    (tmp_path / "notebooks" / "params" / "cpu.yml").write_text("alpha:\n  x: 2\n")
    return book.Project(root=tmp_path)


@pytest.mark.parametrize("text, culprit", [
    ("alpha:\n  x: [1, 2\n", r"bad\.yml:\d+:\d+: not valid YAML"),
    ("alpha:\n  z: 1\n", r"notebook 'alpha' has no parameter\(s\) \['z'\]"),
    ("{}\n", r"no entry for notebook\(s\) \['alpha'\]"),
    ("alpha: {}\nbeta: {}\n", r"unknown notebook\(s\) \['beta'\]"),
    ("- alpha\n", "expected a mapping"),
])
def test_bad_profiles_name_the_file_and_the_problem(project, text, culprit):
    (project.params_dir / "bad.yml").write_text(text)
    with pytest.raises(book.RunnerError, match=culprit):
        book.run(project, "bad", [], log=lambda m: None)
    assert not project.book_dir.exists() or not any(project.book_dir.iterdir())


def test_unknown_profile_and_notebook(project):
    with pytest.raises(book.RunnerError, match="unknown profile 'gpu'; choose one of: cpu"):
        book.run(project, "gpu", [], log=lambda m: None)
    with pytest.raises(book.RunnerError, match=r"unknown notebook\(s\) \['gamma'\]"):
        book.run(project, "cpu", ["gamma"], log=lambda m: None)


def test_a_failing_notebook_is_reported_by_its_source_cell_and_kept_out_of_the_book(project):
    with pytest.raises(book.NotebookFailed) as err:
        book.run(project, "cpu", ["alpha"], log=lambda m: None)
    message = str(err.value)
    assert "cell 4 of the source notebook (code cell 3)" in message and "RuntimeError: broken on purpose" in message
    kept = project.root / book.FAILED_DIR / "alpha.cpu.ipynb"
    assert str(kept) in message and "broken on purpose" in kept.read_text()
    assert not any(project.book_dir.iterdir())  # nothing in book/, not even a partial file


def test_a_dead_kernel_is_reported_with_its_cell_and_a_memory_hint(project):
    write_notebook(project.source("alpha"), "x = 1", "y = x + 1", "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)")
    with pytest.raises(book.NotebookFailed, match=r"the kernel died while running (cell 4 of the source notebook \(code cell 3\)|an unknown cell) \(out of memory\?"):
        book.run(project, "cpu", ["alpha"], log=lambda m: None)
    assert (project.root / book.FAILED_DIR / "alpha.cpu.ipynb").exists()
    assert not any(project.book_dir.iterdir())
