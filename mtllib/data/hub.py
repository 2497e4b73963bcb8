"""The papers' own datasets, through ``datasets.load_dataset`` (needs internet), mapped to the task interface.

Each entry names the hub dataset (and configuration), the original columns, and how they map to our
standard columns (``text``/``text_pair``/``label``; ``words``/``tags``; ``question``/``context``/``answer_*``).
The same mapping runs on local files in the dataset's own column layout (``data_files=``), which is how the
tests exercise this code without a network.

Splits: ``train`` and ``validation`` (MNLI also ``validation_mismatched``). GLUE and SuperGLUE test labels are
hidden, so their ``test`` split is the validation split, as in the papers' dev-set analyses; AG News and IMDB
have no validation split, so theirs is their test split.

The main paper's AG-Pair is built from AG News by the same code as ``bbc-pair``
(:func:`mtllib.data.offline.pairs_frame`).
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pandas as pd

from mtllib.data.offline import pairs_frame


@dataclass(frozen=True)
class HubSource:
    path: str
    config: str | None
    splits: dict[str, str]  #: our split name -> the dataset's split name
    to_frame: Callable[[pd.DataFrame], pd.DataFrame] = field(repr=False)


def _single(col):
    return lambda df: pd.DataFrame({"text": df[col], "label": df["label"]})


def _pair(col_a, col_b):
    return lambda df: pd.DataFrame({"text": df[col_a], "text_pair": df[col_b], "label": df["label"]})


def _scitail(df):
    labels = df["label"].map({"entails": 1, "neutral": 0}).fillna(df["label"])
    return pd.DataFrame({"text": df["premise"], "text_pair": df["hypothesis"], "label": labels})


def _copa(df):
    # Multiple choice mapped to pair classification: premise + question vs both choices; label = which choice.
    question = df["question"].map({"cause": "What was the cause?", "effect": "What happened as a result?"})
    return pd.DataFrame({"text": df["premise"] + " " + question, "text_pair": df["choice1"] + " OR " + df["choice2"], "label": df["label"]})


def _wic(df):
    return pd.DataFrame({"text": df["word"] + ": " + df["sentence1"], "text_pair": df["sentence2"], "label": df["label"]})


def _ner(df):
    return pd.DataFrame({"words": df["tokens"].map(list), "tags": df["ner_tags"].map(list)})


def _squad(df):
    answers = df["answers"]
    return pd.DataFrame(
        {
            "id": df["id"],
            "question": df["question"],
            "context": df["context"],
            "answer_text": answers.map(lambda a: a["text"][0]),
            "answer_start": answers.map(lambda a: int(a["answer_start"][0])),
            "answers": answers.map(lambda a: list(a["text"])),
        }
    )


def _ag_pair(df):
    rng = np.random.default_rng(0)
    return pairs_frame(np.arange(len(df)).astype(str), df["text"], df["label"], rng)


_GLUE = {"train": "train", "validation": "validation", "test": "validation"}
_NO_DEV = {"train": "train", "validation": "test", "test": "test"}

SOURCES: dict[str, HubSource] = {
    "cola": HubSource("nyu-mll/glue", "cola", _GLUE, _single("sentence")),
    "sst2": HubSource("nyu-mll/glue", "sst2", _GLUE, _single("sentence")),
    "mrpc": HubSource("nyu-mll/glue", "mrpc", _GLUE, _pair("sentence1", "sentence2")),
    "qqp": HubSource("nyu-mll/glue", "qqp", _GLUE, _pair("question1", "question2")),
    "stsb": HubSource("nyu-mll/glue", "stsb", _GLUE, _pair("sentence1", "sentence2")),
    "mnli": HubSource("nyu-mll/glue", "mnli", {"train": "train", "validation": "validation_matched", "validation_mismatched": "validation_mismatched", "test": "validation_matched"}, _pair("premise", "hypothesis")),
    "qnli": HubSource("nyu-mll/glue", "qnli", _GLUE, _pair("question", "sentence")),
    "rte": HubSource("nyu-mll/glue", "rte", _GLUE, _pair("sentence1", "sentence2")),
    "ag_news": HubSource("fancyzhx/ag_news", None, _NO_DEV, _single("text")),
    "ag_pair": HubSource("fancyzhx/ag_news", None, _NO_DEV, _ag_pair),
    "imdb": HubSource("stanfordnlp/imdb", None, _NO_DEV, _single("text")),
    "scitail": HubSource("allenai/scitail", "tsv_format", {"train": "train", "validation": "validation", "test": "test"}, _scitail),
    "boolq": HubSource("aps/super_glue", "boolq", _GLUE, _pair("question", "passage")),
    "cb": HubSource("aps/super_glue", "cb", _GLUE, _pair("premise", "hypothesis")),
    "copa": HubSource("aps/super_glue", "copa", _GLUE, _copa),
    "wic": HubSource("aps/super_glue", "wic", _GLUE, _wic),
    "conll2003": HubSource("eriktks/conll2003", None, {"train": "train", "validation": "validation", "test": "test"}, _ner),
    "wnut_17": HubSource("leondz/wnut_17", None, {"train": "train", "validation": "validation", "test": "test"}, _ner),
    "squad": HubSource("rajpurkar/squad", None, {"train": "train", "validation": "validation", "test": "validation"}, _squad),
}

CONLL_TAGS = ("O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC")
WNUT_TAGS = ("O", "B-corporation", "I-corporation", "B-creative-work", "I-creative-work", "B-group", "I-group",
             "B-location", "I-location", "B-person", "I-person", "B-product", "I-product")


class TaskUnavailable(RuntimeError):
    """A paper task whose dataset could not be loaded (typically: no internet)."""


def hub_reachable(timeout: float = 3.0) -> bool:
    """Whether a TCP connection to the Hugging Face hub (``$HF_ENDPOINT``) opens within ``timeout`` seconds."""
    import socket
    from urllib.parse import urlparse

    endpoint = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co"))
    try:
        socket.create_connection((endpoint.hostname, endpoint.port or 443), timeout=timeout).close()
        return True
    except OSError:
        return False


@contextlib.contextmanager
def _offline_mode():
    """Make ``datasets`` and ``huggingface_hub`` use their local caches only (as ``HF_HUB_OFFLINE=1`` would),
    so that an unreachable hub fails at once instead of after minutes of retries."""
    import datasets.config
    import huggingface_hub.constants

    saved = datasets.config.HF_HUB_OFFLINE, huggingface_hub.constants.HF_HUB_OFFLINE
    datasets.config.HF_HUB_OFFLINE = huggingface_hub.constants.HF_HUB_OFFLINE = True
    try:
        yield
    finally:
        datasets.config.HF_HUB_OFFLINE, huggingface_hub.constants.HF_HUB_OFFLINE = saved


def load_frames(name: str, data_files: dict[str, str] | None = None, offline_names: list[str] = ()) -> dict[str, pd.DataFrame]:
    """``{split: DataFrame}`` in the standard columns for paper task ``name``.

    Without ``data_files`` the data comes from the hub (``datasets.load_dataset(path, config)``), or from the
    local cache when the hub cannot be reached within a few seconds; with it, from local JSON-lines files in
    the dataset's own column layout, ``{their split name: path}``. Any failure to load becomes one
    :class:`TaskUnavailable` that names the dataset and the offline default.
    """
    import datasets

    source = SOURCES[name]
    try:
        if data_files is not None:
            raw = datasets.load_dataset("json", data_files=data_files)
        elif datasets.config.HF_HUB_OFFLINE or not hub_reachable():
            with _offline_mode():
                raw = datasets.load_dataset(source.path, source.config)
        else:
            raw = datasets.load_dataset(source.path, source.config)
    except Exception as err:  # ConnectionError, OfflineModeIsEnabled, DatasetNotFoundError, HTTP errors, ...
        where = f"{source.path}" + (f" (config {source.config!r})" if source.config else "")
        raise TaskUnavailable(
            f"paper task {name!r} needs the dataset {where} from the Hugging Face hub, which could not be loaded "
            f"({type(err).__name__}: {str(err)[:200]}). The offline suite is the default and needs no network: "
            f"{', '.join(offline_names)}."
        ) from None
    frames = {}
    for ours, theirs in source.splits.items():
        if theirs not in raw:
            raise TaskUnavailable(f"paper task {name!r}: the dataset has no split {theirs!r} (it has {list(raw)})")
        df = raw[theirs].to_pandas()
        frame = source.to_frame(df).reset_index(drop=True)
        if "id" not in frame:
            frame.insert(0, "id", [f"{theirs}-{i}" for i in range(len(frame))])
        frames[ours] = frame
    return frames
