"""The models behind task similarity: held-out probe sentences, pooled representations, task models and
transferred models' losses (on a tiny BERT)."""

import numpy as np
import pandas as pd
import pytest
import torch

from mtllib.analysis import similarity as simfn
from mtllib.data.features import load_tokenizer, prepare
from mtllib.experiments import similarity as sim
from mtllib.modeling.multitask import MultiTaskModel
from mtllib.training.trainer import TrainConfig
from tiny import save_tiny_bert


def test_probe_sentences_are_held_out_and_seeded():
    from mtllib.data.offline import bbc_articles, tweets

    first = sim.probe_sentences(40, seed=3)
    assert first == sim.probe_sentences(40, seed=3) and first != sim.probe_sentences(40, seed=4)
    assert len(first) == len(set(first)) == 40
    arts = bbc_articles(0)
    train_sentences = {s for sents in arts[arts.split == "train"].sentences for s in sents}
    train_tweets = set(tweets(0).query("split == 'train'").text)
    assert not (set(first) & (train_sentences | train_tweets))


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    import os

    os.environ["MTLLIB_CACHE"] = str(tmp_path_factory.mktemp("cache"))
    tokenizer = load_tokenizer("offline")
    folder = save_tiny_bert(tmp_path_factory.mktemp("tiny-bert"), tokenizer.vocab_size)
    data = prepare(["bbc-topic", "tweet-sentiment"], tokenizer, max_train=32, max_eval=16, max_length=32)
    return str(folder), tokenizer, data


def test_representations_are_the_pooled_vectors_the_heads_read(tiny):
    folder, tokenizer, data = tiny
    model = MultiTaskModel.from_pretrained(folder, [data["bbc-topic"].task.spec()], pooling="mean").train()
    texts = ["A short one.", "A somewhat longer sentence than the first one is."]
    reps = sim.representations(model, tokenizer, texts, batch_size=1)
    together = sim.representations(model, tokenizer, texts, batch_size=2)  # padded batch: mean over real tokens
    assert reps.shape == (2, 32) and np.allclose(reps, together, atol=1e-5)
    assert model.training  # mode restored


def test_task_models_and_transfer_losses(tiny):
    folder, tokenizer, data = tiny
    config = TrainConfig(epochs=1, batch_size=8, lr=1e-3)
    models = sim.task_models(folder, data, config, progress=False)
    assert set(models) == {"bbc-topic", "tweet-sentiment"}
    assert not torch.equal(models["bbc-topic"].encoder.embeddings.word_embeddings.weight, models["tweet-sentiment"].encoder.embeddings.word_embeddings.weight)
    before = models["bbc-topic"].encoder.embeddings.word_embeddings.weight.clone()
    losses = sim.transfer_losses(models, data, config, max_train=16, pretrained=folder, progress=False)
    assert list(losses["bbc-topic"].columns) == ["tweet-sentiment", "pretrained"]
    assert losses["bbc-topic"].shape == (len(data["bbc-topic"].features["test"]), 2)
    assert (losses["tweet-sentiment"].to_numpy() > 0).all()
    assert torch.equal(before, models["bbc-topic"].encoder.embeddings.word_embeddings.weight)  # sources untouched
    calls = []
    import mtllib.training.trainer as trainer_module
    original = trainer_module.train
    trainer_module.train = lambda *a, **k: calls.append(1) or original(*a, **k)
    try:
        again = sim.transfer_losses(models, data, config, max_train=16, pretrained=folder, progress=False)
    finally:
        trainer_module.train = original
    assert calls == []  # every transferred model came from the cache
    for target in losses:
        pd.testing.assert_frame_equal(again[target], losses[target])
    table = simfn.ahp(losses)
    assert table.loc["tweet-sentiment", "bbc-topic"] == pytest.approx(simfn.ahp_affinity(losses["bbc-topic"])["tweet-sentiment"])
