"""The papers' own datasets, through ``datasets.load_dataset`` (needs internet), mapped to the task interface.

Each entry of :data:`SOURCES` names a hub repository that ``datasets`` 4 and later load *without a loading
script* (those versions refuse scripts: "Dataset scripts are no longer supported"), either a script-free
repository or, for a repository that still ships only a script, the hub's automatic Parquet export of it
(``revision="refs/convert/parquet"``). Next to it: the columns, label names and split sizes the mapping
expects, and why this source was chosen. ``python -m mtllib.data.check_sources`` (``make check-sources``)
loads a few rows of every source and compares them with these expectations; tests pin the local fixtures to
the same column lists.

The mapping turns the original columns into our standard columns (``text``/``text_pair``/``label``;
``words``/``tags``; ``question``/``context``/``answer_*``). It runs unchanged on local files in the dataset's
own column layout (``data_files=``), which is how the tests exercise this code without a network.

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


#: the hub's automatic Parquet export of a repository (a branch every dataset the viewer converted has)
PARQUET_EXPORT = "refs/convert/parquet"

#: repositories known to ship only a loading script on their main branch: ``datasets`` >= 4 refuses them, so a
#: source may name one only through its Parquet export (a test checks every source against this list)
SCRIPT_ONLY = frozenset({"conll2003", "eriktks/conll2003", "wnut_17", "leondz/wnut_17", "tner/wnut2017", "tner/conll2003"})


@dataclass(frozen=True)
class HubSource:
    path: str
    config: str | None
    splits: dict[str, str]  #: our split name -> the dataset's split name
    to_frame: Callable[[pd.DataFrame], pd.DataFrame] = field(repr=False)
    columns: tuple[str, ...] = ()  #: the dataset's own columns that the mapping reads (it may have more)
    labels: tuple[str, ...] | None = None  #: names of its class labels (``label``, or ``ner_tags``), in id order
    sizes: dict[str, int] | None = field(default=None, repr=False)  #: rows per split of theirs, where known
    revision: str | None = None  #: a branch or commit (``PARQUET_EXPORT`` for a script-only repository)
    why: str = ""  #: why this source, in one line

    @property
    def label_column(self) -> str | None:
        return "ner_tags" if "ner_tags" in self.columns else ("label" if "label" in self.columns else None)


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


def _swag(df):
    # as transformers' run_swag example: the first sentence, then the second sentence's start with each ending
    endings = df[[f"ending{k}" for k in range(4)]].to_numpy()
    return pd.DataFrame({"text": df["sent1"], "choices": [[f"{s} {e}" for e in row] for s, row in zip(df["sent2"], endings)], "label": df["label"]})


def _ag_pair(df):
    rng = np.random.default_rng(0)
    return pairs_frame(np.arange(len(df)).astype(str), df["text"], df["label"], rng)


_GLUE = {"train": "train", "validation": "validation", "test": "validation"}
_NO_DEV = {"train": "train", "validation": "test", "test": "test"}
_THREE = {"train": "train", "validation": "validation", "test": "test"}

CONLL_TAGS = ("O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC")
WNUT_TAGS = ("O", "B-corporation", "I-corporation", "B-creative-work", "I-creative-work", "B-group", "I-group",
             "B-location", "I-location", "B-person", "I-person", "B-product", "I-product")


_WHY_GLUE = "nyu-mll/glue: the canonical GLUE repository, Parquet files on its main branch (no script)"
_WHY_SUPERGLUE = "aps/super_glue: the canonical SuperGLUE repository, converted from its script to Parquet on main"


def _glue(config, columns, labels, train, validation, **kw):
    return HubSource("nyu-mll/glue", config, kw.pop("splits", _GLUE), kw.pop("to_frame"), (*columns, "label"), labels,
                     {"train": train, **({"validation": validation} if validation else {}), **kw.pop("more", {})}, why=_WHY_GLUE)


def _superglue(config, columns, labels, train, validation, to_frame):
    return HubSource("aps/super_glue", config, _GLUE, to_frame, (*columns, "label"), labels, {"train": train, "validation": validation}, why=_WHY_SUPERGLUE)


_AG_LABELS = ("World", "Sports", "Business", "Sci/Tech")
_WHY_AG = "fancyzhx/ag_news: the canonical AG News repository, Parquet files on main"

SOURCES: dict[str, HubSource] = {
    "cola": _glue("cola", ("sentence",), ("unacceptable", "acceptable"), 8551, 1043, to_frame=_single("sentence")),
    "sst2": _glue("sst2", ("sentence",), ("negative", "positive"), 67349, 872, to_frame=_single("sentence")),
    "mrpc": _glue("mrpc", ("sentence1", "sentence2"), ("not_equivalent", "equivalent"), 3668, 408, to_frame=_pair("sentence1", "sentence2")),
    "qqp": _glue("qqp", ("question1", "question2"), ("not_duplicate", "duplicate"), 363846, 40430, to_frame=_pair("question1", "question2")),
    "stsb": _glue("stsb", ("sentence1", "sentence2"), None, 5749, 1500, to_frame=_pair("sentence1", "sentence2")),
    "mnli": _glue("mnli", ("premise", "hypothesis"), ("entailment", "neutral", "contradiction"), 392702, None,
                  splits={"train": "train", "validation": "validation_matched", "validation_mismatched": "validation_mismatched", "test": "validation_matched"},
                  more={"validation_matched": 9815, "validation_mismatched": 9832}, to_frame=_pair("premise", "hypothesis")),
    "qnli": _glue("qnli", ("question", "sentence"), ("entailment", "not_entailment"), 104743, 5463, to_frame=_pair("question", "sentence")),
    "rte": _glue("rte", ("sentence1", "sentence2"), ("entailment", "not_entailment"), 2490, 277, to_frame=_pair("sentence1", "sentence2")),
    "ag_news": HubSource("fancyzhx/ag_news", None, _NO_DEV, _single("text"), ("text", "label"), _AG_LABELS, {"train": 120000, "test": 7600}, why=_WHY_AG),
    "ag_pair": HubSource("fancyzhx/ag_news", None, _NO_DEV, _ag_pair, ("text", "label"), _AG_LABELS, {"train": 120000, "test": 7600}, why=_WHY_AG),
    "imdb": HubSource("stanfordnlp/imdb", None, _NO_DEV, _single("text"), ("text", "label"), ("neg", "pos"), {"train": 25000, "test": 25000},
                      why="stanfordnlp/imdb: the canonical IMDB repository, Parquet files on main"),
    "scitail": HubSource("allenai/scitail", "tsv_format", _THREE, _scitail, ("premise", "hypothesis", "label"), None, None,
                         why="allenai/scitail: the canonical SciTail repository, converted from its script to Parquet on main; "
                             "its tsv_format labels are the strings 'entails'/'neutral' (sizes not recorded here)"),
    "boolq": _superglue("boolq", ("question", "passage"), ("False", "True"), 9427, 3270, _pair("question", "passage")),
    "cb": _superglue("cb", ("premise", "hypothesis"), ("entailment", "contradiction", "neutral"), 250, 56, _pair("premise", "hypothesis")),
    "copa": _superglue("copa", ("premise", "choice1", "choice2", "question"), ("choice1", "choice2"), 400, 100, _copa),
    "wic": _superglue("wic", ("word", "sentence1", "sentence2"), ("False", "True"), 5428, 638, _wic),
    "conll2003": HubSource("lhoestq/conll2003", None, _THREE, _ner, ("tokens", "ner_tags"), CONLL_TAGS, {"train": 14041, "validation": 3250, "test": 3453},
                           why="the canonical eriktks/conll2003 ships only conll2003.py; lhoestq/conll2003 is a script-free "
                               "Parquet copy by a datasets maintainer (used in place of it by stanfordnlp/dspy since 2026-06)"),
    "wnut_17": HubSource("leondz/wnut_17", None, _THREE, _ner, ("tokens", "ner_tags"), WNUT_TAGS, {"train": 3394, "validation": 1009, "test": 1287},
                         revision=PARQUET_EXPORT,
                         why="the canonical leondz/wnut_17 ships only wnut_17.py; its Parquet export on the hub keeps the same data"),
    "squad": HubSource("rajpurkar/squad", None, {"train": "train", "validation": "validation", "test": "validation"}, _squad,
                       ("id", "question", "context", "answers"), None, {"train": 87599, "validation": 10570},
                       why="rajpurkar/squad: the canonical SQuAD v1.1 repository, Parquet files on main"),
    "swag": HubSource("allenai/swag", "regular", _GLUE, _swag, ("sent1", "sent2", "ending0", "ending1", "ending2", "ending3", "label"),
                      ("0", "1", "2", "3"), {"train": 73546, "validation": 20006}, revision=PARQUET_EXPORT,
                      why="allenai/swag: the canonical SWAG repository, read through its Parquet export (whether its main "
                          "branch is script-free was not checked from here; the export works either way); test labels are hidden"),
}


def source_name(source: HubSource) -> str:
    """``path (config 'c', revision 'r')`` as error messages and the source check print it."""
    extra = [f"config {source.config!r}"] * bool(source.config) + [f"revision {source.revision!r}"] * bool(source.revision)
    return source.path + (f" ({', '.join(extra)})" if extra else "")


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
                raw = datasets.load_dataset(source.path, source.config, revision=source.revision)
        else:
            raw = datasets.load_dataset(source.path, source.config, revision=source.revision)
    except Exception as err:  # ConnectionError, OfflineModeIsEnabled, DatasetNotFoundError, HTTP errors, ...
        where = source_name(source)
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
