"""From task rows to model inputs and back: tokenisation, dynamic padding, span decoding.

- :func:`load_tokenizer`: a tokenizer for any supported model (byte-level BPE tokenizers get
  ``add_prefix_space`` so pre-split words work; GPT tokenizers get their end-of-text token as padding).
- :func:`encode`: a task split (``datasets.Dataset`` in the standard columns of :mod:`mtllib.data.tasks`) to
  features, *unpadded*: ``input_ids``, ``attention_mask`` (and ``token_type_ids`` when the tokenizer makes
  them) plus the label columns the model expects (``labels``; ``token_labels`` with the tag on a word's first
  sub-token and -100 elsewhere; ``start_positions``/``end_positions`` with ``offsets`` to map spans back).
  A multiple-choice example holds one sequence per choice (``text`` paired with the choice), so its inputs
  are lists of ``C`` token lists.
  Results are cached on disk by content hash (``$MTLLIB_CACHE``, default ``~/.cache/mtllib``), so a notebook
  re-run does not tokenise again.
- :func:`collate`: pads a list of features to the longest in the batch (never to a fixed length);
  multiple-choice features to ``[batch, choices, tokens]``.
- :func:`decode_spans`: best valid answer span per question, as text of the context.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from mtllib.runtime import cache_root
from mtllib.data.assets import resolve_model
from mtllib.data.kinds import ARGMAX_KINDS
from mtllib.data.tasks import Task, get_task, load_task

MODEL_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
LABEL_KEYS = ("labels", "token_labels", "start_positions", "end_positions")


def load_tokenizer(name_or_path: str):
    """``AutoTokenizer`` for a model name, folder or ``"offline"``, made ready for every task format."""
    from transformers import AutoConfig, AutoTokenizer

    path = resolve_model(name_or_path)
    model_type = AutoConfig.from_pretrained(path).model_type
    kwargs = {"add_prefix_space": True} if model_type in ("roberta", "xlm-roberta", "gpt2") else {}
    tokenizer = AutoTokenizer.from_pretrained(path, **kwargs)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
    return tokenizer


def cache_dir() -> Path:
    return cache_root() / "features"


def _fingerprint(task, dataset, tokenizer, max_length: int) -> str:
    h = hashlib.sha256()
    h.update(json.dumps([task.name, task.kind, task.paradigm, max_length, type(tokenizer).__name__, tokenizer.name_or_path, len(tokenizer)]).encode())
    h.update(json.dumps(tokenizer("Fingerprint, check: 1 2 3 ünïcode")["input_ids"]).encode())
    h.update(dataset._fingerprint.encode() if getattr(dataset, "_fingerprint", None) else b"")
    h.update(Path(__file__).read_bytes())
    return h.hexdigest()[:24]


def encode(task, dataset, tokenizer, max_length: int = 128, cache: bool = True):
    """Features of one split (see the module docstring); ``task`` is a :class:`mtllib.data.tasks.Task`."""
    import datasets

    if max_length < 8:
        raise ValueError(f"max_length must be at least 8 tokens, got {max_length}")
    path = cache_dir() / _fingerprint(task, dataset, tokenizer, max_length) if cache else None
    if path is not None and (path / "dataset_info.json").exists():
        return datasets.load_from_disk(str(path))
    fn = {"classification": _encode_sequences, "regression": _encode_sequences, "sequence_labelling": _encode_words, "span_qa": _encode_spans,
          "multiple_choice": _encode_choices}[task.kind]
    features = dataset.map(lambda rows: fn(task, rows, tokenizer, max_length), batched=True, remove_columns=dataset.column_names, load_from_cache_file=False, desc=f"tokenising {task.name}")
    if path is not None:
        tmp = path.with_name(path.name + f".tmp{os.getpid()}")
        features.save_to_disk(str(tmp))
        try:
            os.replace(tmp, path)  # atomic: a reader never sees half a cache entry
        except OSError:  # another process wrote the same entry first
            shutil.rmtree(tmp, ignore_errors=True)
        features = datasets.load_from_disk(str(path))
    return features


def _encode_sequences(task, rows, tokenizer, max_length):
    args = (rows["text"], rows["text_pair"]) if task.paradigm == "pair" else (rows["text"],)
    enc = tokenizer(*args, truncation=True, max_length=max_length)
    out = {k: enc[k] for k in MODEL_INPUTS if k in enc}
    out["labels"] = [float(v) for v in rows["label"]] if task.kind == "regression" else [int(v) for v in rows["label"]]
    return out


def _encode_choices(task, rows, tokenizer, max_length):
    """One sequence per choice, ``text`` paired with the choice (the choice cut first when too long, then the
    text), regrouped into ``C`` sequences per example."""
    counts = [len(c) for c in rows["choices"]]
    firsts = [t for t, n in zip(rows["text"], counts) for _ in range(n)]
    seconds = [c for choices in rows["choices"] for c in choices]
    enc = tokenizer(firsts, seconds, truncation="longest_first", max_length=max_length)
    out = {}
    for k in MODEL_INPUTS:
        if k in enc:
            flat, grouped, start = enc[k], [], 0
            for n in counts:
                grouped.append(flat[start:start + n])
                start += n
            out[k] = grouped
    out["labels"] = [int(v) for v in rows["label"]]
    return out


def _has_choices(input_ids) -> bool:
    return len(input_ids) > 0 and isinstance(input_ids[0], (list, tuple, np.ndarray))


def example_length(input_ids) -> int:
    """Tokens of one example's input: its length, or its longest choice's for a multiple-choice example."""
    return max(len(x) for x in input_ids) if _has_choices(input_ids) else len(input_ids)


def _encode_words(task, rows, tokenizer, max_length):
    enc = tokenizer(rows["words"], is_split_into_words=True, truncation=True, max_length=max_length)
    out = {k: enc[k] for k in MODEL_INPUTS if k in enc}
    token_labels = []
    for i, tags in enumerate(rows["tags"]):
        previous, labels = None, []
        for word in enc.word_ids(i):
            labels.append(tags[word] if word is not None and word != previous else -100)
            previous = word
        token_labels.append(labels)
    out["token_labels"] = token_labels
    return out


def _fit_questions(questions: list[str], tokenizer, max_length: int) -> list[str]:
    """The questions, each cut to its first ``max_length // 2`` tokens where it leaves no token of
    ``max_length`` for the context (then truncating only the context cannot work and the tokenizer raises);
    every other question is returned unchanged."""
    specials = tokenizer.num_special_tokens_to_add(pair=True)
    enc = tokenizer(questions, add_special_tokens=False, return_offsets_mapping=True)
    keep = max_length // 2
    return [q if len(ids) + specials < max_length else q[: offsets[keep - 1][1]]
            for q, ids, offsets in zip(questions, enc["input_ids"], enc["offset_mapping"], strict=True)]


def _encode_spans(task, rows, tokenizer, max_length):
    questions = _fit_questions(rows["question"], tokenizer, max_length)
    enc = tokenizer(questions, rows["context"], truncation="only_second", max_length=max_length, return_offsets_mapping=True)
    out = {k: enc[k] for k in MODEL_INPUTS if k in enc}
    starts, ends, offsets = [], [], []
    for i, (answer_start, answer_text) in enumerate(zip(rows["answer_start"], rows["answer_text"])):
        sequence_ids = enc.sequence_ids(i)
        context_offsets = [list(o) if s == 1 else [-1, -1] for o, s in zip(enc["offset_mapping"][i], sequence_ids)]
        answer_end = answer_start + len(answer_text)
        start = next((t for t, (a, b) in enumerate(context_offsets) if a <= answer_start < b), None)
        end = next((t for t, (a, b) in enumerate(context_offsets) if a < answer_end <= b), None)
        if start is None or end is None:  # the answer was truncated away: point at the first token, as SQuAD does
            start = end = 0
        starts.append(start)
        ends.append(end)
        offsets.append(context_offsets)
    out.update(start_positions=starts, end_positions=ends, offsets=offsets)
    return out


def collate(features: list[dict], pad_token_id: int = 0, task: str | None = None) -> dict:
    """Pad a list of features to the longest sequence in the batch; returns tensors the model accepts.

    ``task`` names a single-task batch; features that carry a ``task_id`` make a heterogeneous batch
    (``task_ids``). Columns other than model inputs and labels (``offsets``, ...) are left out.
    """
    if not features:
        raise ValueError("cannot collate an empty batch")
    if _has_choices(features[0]["input_ids"]):
        return _collate_choices(features, pad_token_id, task)
    longest = max(len(f["input_ids"]) for f in features)
    batch = {}
    for key, fill in (("input_ids", pad_token_id), ("attention_mask", 0), ("token_type_ids", 0), ("token_labels", -100)):
        if key in features[0]:
            batch[key] = torch.tensor([list(f[key]) + [fill] * (longest - len(f[key])) for f in features], dtype=torch.long)
    if "labels" in features[0]:
        dtype = torch.float32 if isinstance(features[0]["labels"], float) else torch.long
        batch["labels"] = torch.tensor([f["labels"] for f in features], dtype=dtype)
    for key in ("start_positions", "end_positions"):
        if key in features[0]:
            batch[key] = torch.tensor([f[key] for f in features], dtype=torch.long)
    if "task_id" in features[0]:
        batch["task_ids"] = torch.tensor([f["task_id"] for f in features], dtype=torch.long)
    elif task is not None:
        batch["task"] = task
    return batch


def _collate_choices(features: list[dict], pad_token_id: int, task: str | None) -> dict:
    """Multiple-choice features to ``[batch, choices, tokens]`` tensors (every example with as many choices)."""
    if "task_id" in features[0] or task is None:
        raise ValueError("multiple-choice features make single-task batches only: pass task=... and no task_id")
    counts = {len(f["input_ids"]) for f in features}
    if len(counts) != 1:
        raise ValueError(f"the examples of a multiple-choice batch must have the same number of choices, got {sorted(counts)}")
    longest = max(example_length(f["input_ids"]) for f in features)
    batch = {}
    for key, fill in (("input_ids", pad_token_id), ("attention_mask", 0), ("token_type_ids", 0)):
        if key in features[0]:
            batch[key] = torch.tensor([[list(x) + [fill] * (longest - len(x)) for x in f[key]] for f in features], dtype=torch.long)
    if "labels" in features[0]:
        batch["labels"] = torch.tensor([f["labels"] for f in features], dtype=torch.long)
    batch["task"] = task
    return batch


def decode_spans(start_logits, end_logits, offsets, contexts, max_answer_tokens: int = 30) -> list[str]:
    """For each question the context text of the span ``s <= e < s + max_answer_tokens`` inside the context
    that maximises ``start_logits[s] + end_logits[e]``."""
    answers = []
    for start, end, offs, context in zip(start_logits, end_logits, offsets, contexts, strict=True):
        start, end = np.asarray(start, dtype=np.float64), np.asarray(end, dtype=np.float64)
        offs = np.asarray(offs)[: len(start)]
        valid = offs[:, 0] >= 0
        n = len(offs)
        score = start[:n, None] + end[None, :n]
        s_idx, e_idx = np.indices((n, n))
        allowed = valid[:, None] & valid[None, :] & (e_idx >= s_idx) & (e_idx < s_idx + max_answer_tokens)
        if not allowed.any():
            answers.append("")
            continue
        score = np.where(allowed, score, -np.inf)
        s, e = np.unravel_index(int(np.argmax(score)), score.shape)
        answers.append(context[offs[s][0]:offs[e][1]])
    return answers


# --- prepared tasks -----------------------------------------------------------------------------------------------
@dataclass
class TaskData:
    """A task with its tokenised splits (``features``) and raw rows (``rows``, for decoding and metrics)."""

    task: Task
    features: dict  #: split -> datasets.Dataset of model features
    rows: dict  #: split -> datasets.Dataset in the task's standard columns
    pad_token_id: int = 0


def per_task(value, name: str, what: str = "max_train"):
    """``value`` for task ``name``: a size for every task, or a mapping ``{task: size}`` (``"default"``: the rest)."""
    if isinstance(value, dict):
        if name in value:
            return value[name]
        if "default" in value:
            return value["default"]
        raise ValueError(f"{what} names no size for task {name!r} and has no 'default': {value}")
    return value


def prepare(names: list[str], tokenizer, seed: int = 0, max_train: int | dict | None = None, max_eval: int | dict | None = None, max_length: int = 128, data_files: dict | None = None) -> dict[str, TaskData]:
    """Load and tokenise tasks: ``{name: TaskData}`` (``data_files``: ``{name: files}`` for paper tasks).
    ``max_train``/``max_eval`` cap every task alike, or per task as ``{task: size, "default": size}``."""
    if not names:
        raise ValueError("name at least one task")
    out = {}
    for name in names:
        task = get_task(name)
        rows = load_task(name, seed=seed, max_train=per_task(max_train, name), max_eval=per_task(max_eval, name, "max_eval"), data_files=(data_files or {}).get(name))
        empty = [split for split in ("train", "validation", "test") if split in rows and len(rows[split]) == 0]
        if empty:
            raise ValueError(f"task {name!r} has empty split(s) {empty}")
        feats = {split: encode(task, ds, tokenizer, max_length=max_length) for split, ds in rows.items()}
        out[name] = TaskData(task, feats, dict(rows), tokenizer.pad_token_id)
    return out


def references(data: TaskData, split: str):
    """The gold answers of one task on one split, in the form its metrics take (what
    :func:`mtllib.training.trainer.predict` returns beside its predictions); no model needed (e.g. for the
    majority baseline of :mod:`mtllib.analysis.learnability`)."""
    task, rows = data.task, data.rows[split]
    if task.kind in ARGMAX_KINDS:
        return np.asarray(rows["label"])
    if task.kind == "regression":
        return np.asarray(rows["label"], dtype=np.float64)
    if task.kind == "sequence_labelling":
        golds = []
        for f in data.features[split]:
            labels = np.asarray(f["token_labels"])
            golds.append(labels[labels != -100])
        if "entity_f1" in task.metrics:
            golds = [[task.label_names[t] for t in g] for g in golds]
        return golds
    return list(rows["answers"] if "answers" in rows.column_names else rows["answer_text"])


def train_labels(data: TaskData):
    """The training labels of one task as its majority baseline reads them: tag sequences for sequence
    labelling, the ``label`` column otherwise (span QA has none: ``None``)."""
    rows = data.rows["train"]
    if data.task.kind == "sequence_labelling":
        return rows["tags"]
    return rows["label"] if "label" in rows.column_names else None
