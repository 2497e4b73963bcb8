"""The models behind task similarity (Sec. 6.2, Appendix D of "Interpreting and Exploiting Functional
Specialization in Multi-Head Attention under Multi-task Learning"): probe sentences, the sentence vectors a
model gives them, one model per task, and transferred models' per-example losses. The similarity measures
themselves (DSE, CRA, AHP) are pure functions in :mod:`mtllib.analysis.similarity`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch


# --- probe sentences and representations ----------------------------------------------------------------
def probe_sentences(n: int = 1000, seed: int = 0, min_words: int = 5, max_words: int = 40) -> list[str]:
    """``n`` sentences that no task trains on, standing in for the paper's random Wikipedia sentences: half
    from the bodies of the BBC test-split articles, half test-split tweets, drawn with ``seed``."""
    from mtllib.data.offline import bbc_articles, tweets

    if n < 4:
        raise ValueError(f"n must be >= 4 (an RDM needs several sentences), got {n}")
    rng = np.random.default_rng(seed)
    arts = bbc_articles(0)
    pool = [s for sents in arts[arts.split == "test"].sentences for s in sents if min_words <= len(s.split()) <= max_words]
    tw = tweets(0)
    tw_pool = [t for t in tw[tw.split == "test"].text if min_words <= len(t.split()) <= max_words]
    n_bbc = n - n // 2
    if n_bbc > len(pool) or n // 2 > len(tw_pool):
        raise ValueError(f"n = {n} is more than the held-out sentences allow ({2 * min(len(pool), len(tw_pool))})")
    picked = [pool[i] for i in rng.choice(len(pool), n_bbc, replace=False)]
    picked += [tw_pool[i] for i in rng.choice(len(tw_pool), n // 2, replace=False)]
    return picked


@torch.no_grad()
def representations(model, tokenizer, texts: list[str], batch_size: int = 64, max_length: int = 64, device=None) -> np.ndarray:
    """The pooled sentence vector each text gets from ``model`` (a :class:`~mtllib.modeling.multitask.MultiTaskModel`),
    ``[len(texts), hidden]`` as float64. The model is put in eval mode and restored afterwards."""
    from mtllib.runtime import autocast, to_device

    device = device or next(model.parameters()).device
    was_training = model.training
    model.eval()
    out = []
    try:
        for start in range(0, len(texts), batch_size):
            enc = tokenizer(list(texts[start:start + batch_size]), truncation=True, max_length=max_length, padding=True, return_tensors="pt")
            with autocast(device):
                out.append(model.sentence_representation(**to_device(dict(enc), device)).float().cpu())
    finally:
        model.train(was_training)
    return torch.cat(out).double().numpy()


# --- the models the metrics compare ---------------------------------------------------------------------
def task_models(model_name: str, data: dict, config=None, pooling: str | None = None, progress: bool = True) -> dict:
    """One single-task model per task of ``data`` (tokenised tasks from :func:`mtllib.training.trainer.prepare`),
    fine-tuned from ``model_name`` with ``config``: the "models fine-tuned on the corresponding task" that
    DSE, CRA and AHP compare. Each starts from ``config.seed``."""
    from tqdm.auto import tqdm

    from mtllib.modeling.multitask import MultiTaskModel
    from mtllib.runtime import seed_everything
    from mtllib.training.cache import train_cached
    from mtllib.training.trainer import TrainConfig

    config = config or TrainConfig()
    config.validate()
    models = {}
    for name in tqdm(list(data), desc="single-task models", disable=not progress):
        seed_everything(config.seed)
        model = MultiTaskModel.from_pretrained(model_name, [data[name].task.spec()], pooling=pooling)
        train_cached(model, {name: data[name]}, config, progress=False)
        models[name] = model
    return models


def transfer_losses(sources: dict, data: dict, config=None, max_train: int | None = None, split: str = "test", pretrained: str | None = None, progress: bool = True) -> dict[str, pd.DataFrame]:
    """The transfer results AHP ranks: for every target task of ``data`` and every source model in ``sources``
    except the target's own, a copy of the source's encoder gets a fresh head for the target and is fine-tuned
    on the first ``max_train`` of the target's training examples (through the model cache); the per-example losses on ``split`` form
    the target's table (rows: examples, columns: sources). With ``pretrained`` (a model name), the encoder
    without any source task also competes, as the column ``"pretrained"``."""
    import copy
    import dataclasses

    from tqdm.auto import tqdm

    from mtllib.modeling.multitask import MultiTaskModel
    from mtllib.runtime import seed_everything
    from mtllib.data.features import TaskData
    from mtllib.training.cache import train_cached
    from mtllib.training.trainer import TrainConfig, example_losses

    config = config or TrainConfig()
    config.validate()
    missing = [t for t in sources if t not in data]
    if missing:
        raise ValueError(f"no prepared data for source tasks {missing}")
    jobs = [(t, s) for t in data for s in [*sources, *(["pretrained"] if pretrained else [])] if s != t]
    out: dict[str, dict] = {t: {} for t in data}
    for target, source in tqdm(jobs, desc="transfer (AHP)", disable=not progress):
        td = data[target]
        if max_train is not None:
            td = TaskData(td.task, {**td.features, "train": td.features["train"].select(range(min(max_train, len(td.features["train"]))))}, td.rows, td.pad_token_id)
        seed_everything(config.seed)
        if source == "pretrained":
            model = MultiTaskModel.from_pretrained(pretrained, [td.task.spec()], pooling=next(iter(sources.values())).pooling if sources else None)
        else:
            model = MultiTaskModel(copy.deepcopy(sources[source].encoder), [td.task.spec()], pooling=sources[source].pooling)
        train_cached(model, {target: td}, dataclasses.replace(config, keep_best=False), progress=False)
        out[target][source] = example_losses(model, td, split, config.eval_batch_size)
    return {t: pd.DataFrame(cols) for t, cols in out.items()}
