"""A local cache of trained models, so that chapters that train the same recipe share one training run and a
chapter whose recipe did not change re-executes in the time of its analysis.

The key is :func:`mtllib.fingerprint.digest` of everything that decides the trained weights:

- the freshly built model's weights and configuration (the pretrained encoder, the heads' seeded
  initialisation, pooling and dropout), hashed before training;
- every task's definition (name, kind, input paradigm, label names, metrics and the main metric, which picks
  the best epoch) and the content of its tokenised training and validation features;
- the :class:`~mtllib.training.trainer.TrainConfig` (all fields but where checkpoints go);
- the source of the training code and everything it imports (:func:`mtllib.fingerprint.source_digest`),
  except the modules that only build the data (:data:`DATA_BUILDERS`: their output is hashed by content
  above, so a change to a hub loader or a corpus reader retrains only the models whose data it changes).

An entry is a folder ``<cache>/models/<key>/`` holding the weights, the training result and an
``entry.json`` with the key and the SHA-256 of both files. It is written into a temporary folder and renamed
into place, so a reader never sees half an entry; an entry whose files do not match their digests (a crash,
a disk error, an edit) is reported, deleted and rebuilt, never used. The cache is a convenience: it lives
outside the repository (``$MTLLIB_CACHE``, default ``~/.cache/mtllib``), a new machine starts without it and
every result is the same with or without it. ``MTLLIB_MODEL_CACHE=0`` turns it off.

What a chapter computes *from* a trained model and takes minutes (head importance and pruned evaluations of
an IAP experiment) is kept too (:func:`cached_result`): ``<cache>/results/<key>.pt`` with a ``.json`` record
of its key and SHA-256, keyed by the model's key, the analysis settings, the content of the data it reads and
the source of the analysis code, so that re-executing a chapter whose recipe did not change costs minutes.

Runs whose model nobody needs after it is scored (few-shot repetitions, target fine-tuning: hundreds of runs
per chapter) keep their *scores* only (:func:`train_and_score`): ``<cache>/scores/<key>.json``, keyed by the
model's key and the content of the split scored, a few hundred bytes each instead of the weights.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import time
from pathlib import Path

import torch

from mtllib.fingerprint import dataset_digest, digest, file_sha256, source_digest, tensor_digest
from mtllib.runtime import cache_root, pick_device

#: the modules whose source decides what training computes (their imports are followed)
TRAINING_CODE = ("mtllib.training.trainer", "mtllib.modeling.multitask")
#: modules whose effect on training is the data and task definitions they build, which the key hashes by content
#: (the task registry through each task's fields, the pretrained encoder that ``assets`` resolves through the
#: built model's weights): a new task in the registry leaves every other model's key unchanged
DATA_BUILDERS = ("mtllib.data.tasks", "mtllib.data.hub", "mtllib.data.offline", "mtllib.data.silver", "mtllib.data.corpora", "mtllib.data.assets")
#: the fields of a :class:`mtllib.data.tasks.Task` that reach training (its description and suite do not)
TASK_FIELDS = ("name", "kind", "paradigm", "label_names", "metrics", "main_metric")


def cache_dir() -> Path:
    """The trained models' folder, ``models/`` under :func:`mtllib.runtime.cache_root`."""
    return cache_root() / "models"


def enabled() -> bool:
    return os.environ.get("MTLLIB_MODEL_CACHE", "1") not in ("0", "false", "no", "off")


def recipe_key(model, data: dict, config) -> str:
    """The cache key of training ``model`` (as built, untrained) on ``data`` with ``config``."""
    settings = {k: v for k, v in dataclasses.asdict(config).items() if k not in ("checkpoint_dir", "checkpoint_every")}
    tasks = [(name, [getattr(td.task, f) for f in TASK_FIELDS], dataset_digest(td.features["train"]), dataset_digest(td.features["validation"])) for name, td in data.items()]
    return digest("trained-model/1", model.config.to_dict(), getattr(model, "pooling", None), tensor_digest(model.state_dict()), tasks, settings, source_digest(TRAINING_CODE, exclude=DATA_BUILDERS))


def scores_dir() -> Path:
    """The fine-tuning scores' folder, ``scores/`` under :func:`mtllib.runtime.cache_root`."""
    return cache_root() / "scores"


def score_key(model, data: dict, config, split: str) -> str:
    """The key of training ``model`` on ``data`` with ``config`` (:func:`recipe_key`) and scoring ``split``."""
    scored = [(name, dataset_digest(td.features[split])) for name, td in data.items()]
    return digest("fine-tune-scores/1", recipe_key(model, data, config), split, scored)


class CorruptEntry(RuntimeError):
    """A cache entry whose files do not match its record."""


def load(key: str):
    """``(state_dict, result_fields, seconds)`` of the entry ``key``, ``None`` when there is none; raises
    :class:`CorruptEntry` (naming the folder) when the entry exists but does not check out."""
    folder = cache_dir() / key
    if not folder.exists():
        return None
    try:
        record = json.loads((folder / "entry.json").read_text())
        if record["key"] != key:
            raise CorruptEntry(f"{folder}: entry.json names another key")
        for name in ("model.pt", "result.pt"):
            if file_sha256(folder / name) != record["sha256"][name]:
                raise CorruptEntry(f"{folder / name}: contents do not match the digest in entry.json")
        state = torch.load(folder / "model.pt", map_location="cpu", weights_only=True)
        fields = torch.load(folder / "result.pt", map_location="cpu", weights_only=False)
    except CorruptEntry:
        raise
    except Exception as err:  # missing file, unreadable JSON, truncated pickle
        raise CorruptEntry(f"{folder}: {type(err).__name__}: {err}") from None
    return state, fields, float(record.get("train_seconds", 0.0))


def store(key: str, state: dict, fields: dict, seconds: float) -> Path:
    """Write an entry atomically (a temporary folder renamed into place); return its folder."""
    root = cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    final = root / key
    tmp = root / f".{key}.tmp{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        torch.save({k: v.detach().cpu() for k, v in state.items()}, tmp / "model.pt")
        torch.save(fields, tmp / "result.pt")
        record = {"key": key, "sha256": {n: file_sha256(tmp / n) for n in ("model.pt", "result.pt")}, "train_seconds": seconds,
                  "written_at": time.strftime("%Y-%m-%d %H:%M:%S")}
        (tmp / "entry.json").write_text(json.dumps(record, indent=1))
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final


def train_cached(model, data: dict, config=None, progress: bool = True, log=print, key: str | None = None):
    """:func:`mtllib.training.trainer.train` through the cache: ``(result, seconds, hit)``. On a hit the
    model's weights are the cached ones and ``seconds`` is the training time of the run that made them.
    ``key``: this recipe's :func:`recipe_key` where the caller has computed it already (it is not recomputed)."""
    from mtllib.training.trainer import TrainConfig, TrainResult, train

    config = config or TrainConfig()
    config.validate()  # bad settings fail here, before any hashing or training
    if config.checkpoint_dir is not None or not enabled():
        start = time.perf_counter()
        result = train(model, data, config, progress=progress)
        return result, time.perf_counter() - start, False
    key = key or recipe_key(model, data, config)
    try:
        entry = load(key)
    except CorruptEntry as err:
        log(f"model cache: {err}; rebuilding it")
        shutil.rmtree(cache_dir() / key, ignore_errors=True)
        entry = None
    if entry is not None:
        state, fields, seconds = entry
        model.load_state_dict(state)
        model.to(pick_device(config.device))
        model.freeze_encoder(config.freeze_encoder)  # as train() leaves it
        return TrainResult(**fields), seconds, True
    start = time.perf_counter()
    result = train(model, data, config, progress=progress)
    seconds = time.perf_counter() - start
    store(key, model.state_dict(), {f.name: getattr(result, f.name) for f in dataclasses.fields(result)}, seconds)
    return result, seconds, False


def train_and_score(model, data: dict, config, split: str = "test", log=print):
    """Train ``model`` on ``data`` (:func:`mtllib.training.trainer.train`) and score ``split``
    (:func:`mtllib.training.trainer.evaluate`) through the scores cache: ``(scores, epochs, hit)``, with
    ``scores`` one row per task and ``epochs`` the last epoch trained (fewer than ``config.epochs`` when
    ``patience`` stopped the run). On a hit nothing trains and ``model`` is left as it was built: use this only
    where the trained model is not needed after its scores."""
    import pandas as pd

    from mtllib.training.trainer import evaluate, train

    config.validate()

    def run():
        result = train(model, data, config, progress=False)
        return evaluate(model, data, split, config.eval_batch_size, pick_device(config.device)), int(result.history.epoch.max())

    if config.checkpoint_dir is not None or not enabled():
        return (*run(), False)
    key = score_key(model, data, config, split)
    path = scores_dir() / f"{key}.json"
    if path.exists():
        try:
            record = json.loads(path.read_text())
            if record["key"] != key:
                raise ValueError("the entry names another key")
            table = record["scores"]
            scores = pd.DataFrame(table["data"], index=pd.Index(table["index"], name="task"), columns=table["columns"])
            return scores, int(record["epochs"]), True
        except Exception as err:  # truncated or edited: rebuilt, never used
            log(f"scores cache: {path}: {type(err).__name__}: {err}; rebuilding it")
    scores, epochs = run()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_text(json.dumps({"key": key, "scores": scores.to_dict(orient="split"), "epochs": epochs,
                               "written_at": time.strftime("%Y-%m-%d %H:%M:%S")}, default=float))
    os.replace(tmp, path)  # atomic: a reader never sees half an entry
    return scores, epochs, False


def results_dir() -> Path:
    """The analyses' folder, ``results/`` under :func:`mtllib.runtime.cache_root`."""
    return cache_root() / "results"


def cached_result(key: str | None, compute, log=print):
    """``(compute(), hit)`` through the results cache: the value stored under ``key`` when an entry exists
    and checks out (its record names ``key`` and its file matches the SHA-256 in the record), else
    ``compute()``, stored for the next call. ``key=None`` or a disabled cache (:func:`enabled`) computes
    without storing. The value is pickled (tensors, arrays, pandas frames): a local cache of this machine's
    own results, not a file to accept from elsewhere. An entry that does not check out is reported and rebuilt."""
    if key is None or not enabled():
        return compute(), False
    folder = results_dir()
    data, record = folder / f"{key}.pt", folder / f"{key}.json"
    if record.exists():
        try:
            meta = json.loads(record.read_text())
            if meta["key"] != key:
                raise ValueError("the record names another key")
            if file_sha256(data) != meta["sha256"]:
                raise ValueError("the file does not match the digest in its record")
            return torch.load(data, map_location="cpu", weights_only=False)["value"], True
        except Exception as err:  # missing or truncated file, unreadable record, an edit
            log(f"results cache: {data}: {type(err).__name__}: {err}; rebuilding it")
    value = compute()
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".{key}.tmp{os.getpid()}"
    torch.save({"key": key, "value": value}, tmp)
    meta = {"key": key, "sha256": file_sha256(tmp), "written_at": time.strftime("%Y-%m-%d %H:%M:%S")}
    os.replace(tmp, data)
    tmp.write_text(json.dumps(meta, indent=1))
    os.replace(tmp, record)  # the record last: a crash before it leaves an entry that is rebuilt, never used
    return value, False
