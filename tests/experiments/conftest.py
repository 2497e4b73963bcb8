"""A tiny random-init BERT and two offline tasks (single input, pair input), each test module with its own model
cache: what the adapter and sampling experiments train on."""

import pytest

PAIR_TASKS = ["bbc-topic", "bbc-pair"]


@pytest.fixture(scope="module")
def tiny_pair(tmp_path_factory):
    """``(model folder, tokenizer, prepared data of PAIR_TASKS)``."""
    import os

    from mtllib.data.features import load_tokenizer, prepare
    from tiny import save_tiny_bert

    os.environ["MTLLIB_CACHE"] = str(tmp_path_factory.mktemp("cache"))
    tokenizer = load_tokenizer("offline")
    folder = save_tiny_bert(tmp_path_factory.mktemp("tiny-bert"), tokenizer.vocab_size)
    return folder, tokenizer, prepare(PAIR_TASKS, tokenizer, max_train=24, max_eval=16, max_length=32)
