"""Multi-task training and evaluation: a small trainer whose every choice is visible.

Defaults follow Appendix A of "Interpreting and Exploiting Functional Specialization in Multi-Head Attention
under Multi-task Learning": AdamW with beta1 0.9, beta2 0.999, learning rate 2e-5, linear warm-up over the
first 10% of steps then linear decay, proportional task sampling; dev evaluation after each epoch with each
task's metric and the best model kept by the average of the tasks' main metrics.

- Model selection and early stopping: ``select_on="score"`` keeps the epoch with the best average dev score
  (the main paper); ``select_on="loss"`` the epoch with the lowest average over tasks of each task's mean dev
  loss, and ``patience`` stops when that value has not improved for so many epochs (Appendix B.2 of "Task
  Transferability in Large-Scale Multi-Task Learning": average validation loss, patience 3). The learning-rate
  schedule always spans ``epochs``, so a run that stops early ends before its rate has decayed to zero.

- Data: :func:`prepare` loads tasks, tokenises them (cached) and keeps the raw rows that evaluation needs.
- Batching: ``"homogeneous"`` (each batch from one task, chosen by a :class:`mtllib.training.samplers.TaskSampler`)
  or ``"heterogeneous"`` (one pool of all tasks' examples, every batch mixed, so the task mix of a batch
  follows the data). Batches of similar length are grouped to cut padding (``group_by_length``).
- Determinism: the task schedule and each task's batch order depend only on ``(seed, epoch)``; dropout on
  the torch RNG, which checkpoints save. Two runs with the same seed on the CPU give bit-identical metrics,
  and a run stopped mid-training resumes from its last checkpoint to the same end.
- IAT (:mod:`mtllib.training.iat`): when ``config.iat`` is set, the last ``delta`` of the steps trains only each
  task's important heads.
- On CUDA: bf16 autocast and fused AdamW; CPU (fp32) is the default, with bf16 autocast as an opt-in
  (``cpu_bf16``) on CPUs with native bf16.
- Data-parallel: started by a launcher on several processes (``torchrun --nproc_per_node N``), the same call
  trains one model with accelerate's DDP, each step's global batch split across the processes
  (:mod:`mtllib.training.distributed`); the schedule, the global batch and checkpoint/resume are a single
  process's.
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from mtllib import checks
from mtllib.fingerprint import dataset_digest, digest
from mtllib.data import metrics as metric_fns
from mtllib.data.kinds import ARGMAX_KINDS
from mtllib.data.features import TaskData, collate, decode_spans, example_length, references
from mtllib.training.iat import HeadUpdateMask, IATConfig
from mtllib.analysis.importance import head_importance, select_heads
from mtllib.runtime import autocast, pick_device, to_device
from mtllib.training import distributed
from mtllib.training.cache import train_and_score
from mtllib.training.samplers import SAMPLERS, TaskSampler
from mtllib.data.tasks import k_shot_indices

BATCHINGS = ("homogeneous", "heterogeneous")
SELECT_ON = ("score", "loss")


def batch_indices(lengths: np.ndarray, batch_size: int, rng: np.random.Generator, group_by_length: bool) -> list[np.ndarray]:
    """Shuffled batches of example indices. With ``group_by_length``, the shuffled examples are cut into
    chunks of 50 batches, each chunk sorted by length before it is cut into batches, and the batches shuffled:
    batches hold similar lengths (little padding) while their order stays random."""
    order = rng.permutation(len(lengths))
    if group_by_length:
        chunk = 50 * batch_size
        order = np.concatenate([c[np.argsort(lengths[c], kind="stable")] for c in np.array_split(order, max(1, math.ceil(len(order) / chunk)))])
    batches = [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
    return [batches[i] for i in rng.permutation(len(batches))]


def _lengths(input_ids) -> np.ndarray:
    """Tokens of each example (a multiple-choice example: its longest choice's), what batches are grouped by;
    ``input_ids``: a sequence of examples' inputs."""
    return np.fromiter((example_length(x) for x in input_ids), dtype=np.int64, count=len(input_ids))


# --- evaluation -----------------------------------------------------------------------------------------
def eval_batches(examples: list[dict], batch_size: int) -> list[np.ndarray]:
    """Evaluation batches of example positions, grouped by length (shortest first) so that little padding is
    computed; the callers put every output back at its example's position."""
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"eval batch_size must be an integer >= 1, got {batch_size!r}")
    order = np.argsort(_lengths([e["input_ids"] for e in examples]), kind="stable")
    return [order[i:i + batch_size] for i in range(0, len(order), batch_size)]


@torch.no_grad()
def _forward_split(model, data: TaskData, split: str, batch_size: int, device, gates, cpu_bf16: bool, logits: bool, losses: bool):
    """One pass over a split in length-grouped batches: each example's logits (trimmed to its length for token
    tasks) and/or its loss, both in the split's order."""
    from mtllib.modeling.gates import HeadGates

    task = data.task
    device = device or next(model.parameters()).device
    was_training = model.training
    model.eval()
    examples = data.features[split].to_list()  # one conversion; indexing a Dataset row by row is slow
    outputs: list = [None] * len(examples)
    loss_values = np.empty(len(examples), dtype=np.float64)
    try:
        with HeadGates(model, gates):
            for positions in eval_batches(examples, batch_size):
                batch = to_device(collate([examples[i] for i in positions], data.pad_token_id, task=task.name), device)
                if not losses:
                    batch = {k: v for k, v in batch.items() if k not in ("labels", "token_labels", "start_positions", "end_positions")}
                with autocast(device, cpu_bf16=cpu_bf16):
                    out = model(**batch)
                if losses:
                    loss_values[positions] = out.per_example_loss.float().cpu().numpy()
                if logits:
                    values = out.logits[task.name].float().cpu()
                    for row, i in enumerate(positions):
                        outputs[i] = values[row, : len(examples[i]["input_ids"])] if task.kind in ("sequence_labelling", "span_qa") else values[row]
    finally:
        model.train(was_training)
    return outputs, loss_values


def predict(model, data: TaskData, split: str = "validation", batch_size: int = 64, device=None, gates=None, cpu_bf16: bool = False):
    """Predictions of one task on one split, in the form its metrics take (see :func:`evaluate`), in the
    split's order (batches are grouped by length, :func:`eval_batches`). ``cpu_bf16``: bf16 autocast on a CPU
    with native bf16 (:func:`mtllib.runtime.autocast`)."""
    outputs, _ = _forward_split(model, data, split, batch_size, device, gates, cpu_bf16, logits=True, losses=False)
    return _predictions(data, split, outputs)


def _predictions(data: TaskData, split: str, outputs: list):
    """Per-example logits -> predictions and references, in the form the task's metrics take."""
    task, feats, rows = data.task, data.features[split], data.rows[split]
    if task.kind in ARGMAX_KINDS:  # the class, or the choice, with the highest logit
        return torch.stack(outputs).argmax(-1).numpy(), references(data, split)
    if task.kind == "regression":
        return torch.stack(outputs).numpy(), references(data, split)
    if task.kind == "sequence_labelling":
        preds = []
        for logits, f in zip(outputs, feats):
            scored = np.asarray(f["token_labels"]) != -100
            preds.append(logits.argmax(-1).numpy()[scored])
        if "entity_f1" in task.metrics:
            preds = [[task.label_names[t] for t in p] for p in preds]
        return preds, references(data, split)
    answers = decode_spans([o[:, 0].numpy() for o in outputs], [o[:, 1].numpy() for o in outputs], feats["offsets"], rows["context"])
    return answers, references(data, split)


def example_losses(model, data: TaskData, split: str = "test", batch_size: int = 64, device=None) -> np.ndarray:
    """The loss of every example of one task on ``split`` (the task's training loss, per example), in the
    split's order: what AHP compares between transferred models (:mod:`mtllib.analysis.similarity`)."""
    return _forward_split(model, data, split, batch_size, device, None, False, logits=False, losses=True)[1]


def evaluate(model, data: dict[str, TaskData], split: str = "validation", batch_size: int = 64, device=None, gates=None, cpu_bf16: bool = False,
             with_loss: bool = False) -> pd.DataFrame:
    """Every task's metrics (percent) on ``split``, one row per task, with the main metric in ``score``.
    ``gates``: optional head-gate values (e.g. a pruning mask from :mod:`mtllib.analysis.importance`).
    ``with_loss``: also each task's mean loss per example (``loss``), from the same forward pass."""
    rows = []
    for name, td in data.items():
        outputs, losses = _forward_split(model, td, split, batch_size, device, gates, cpu_bf16, logits=True, losses=with_loss)
        preds, golds = _predictions(td, split, outputs)
        values = metric_fns.compute(td.task.metrics, preds, golds)
        rows.append({"task": name, **values, "score": values[td.task.main_metric], **({"loss": float(losses.mean())} if with_loss else {})})
    return pd.DataFrame(rows).set_index("task")


# --- training -------------------------------------------------------------------------------------------
@dataclass
class TrainConfig:
    """Everything that shapes a training run; defaults follow the main paper's Appendix A."""

    epochs: int = 3
    batch_size: int = 32
    lr: float = 2e-5
    weight_decay: float = 0.01
    betas: tuple = (0.9, 0.999)
    adam_eps: float = 1e-8
    warmup: float = 0.1
    max_grad_norm: float | None = 1.0
    sampler: str = "proportional"
    temperature: float = 2.0
    batching: str = "homogeneous"
    group_by_length: bool = True
    seed: int = 0
    device: str = "cpu"
    bf16: bool = True  #: bf16 autocast on CUDA
    cpu_bf16: bool = False  #: bf16 autocast on a CPU with native bf16 (an explicit opt-in; fp32 elsewhere)
    eval_batch_size: int = 64
    freeze_encoder: bool = False
    iat: IATConfig | None = None
    checkpoint_dir: str | None = None
    checkpoint_every: int | None = None  #: steps between checkpoints (default: once per epoch)
    keep_best: bool = True
    select_on: str = "score"  #: what picks the best epoch: average dev score (higher is better) or average dev loss
    patience: int | None = None  #: stop after this many epochs without a better ``select_on`` value (None: never)

    def __post_init__(self):
        self.validate()

    def validate(self) -> None:
        """Check every field (types, ranges, combinations); raises :class:`mtllib.checks.BadInput` naming the
        field, its value and what is allowed. Called when the config is made and again before training."""
        c = checks
        c.integer("TrainConfig.epochs", self.epochs, 1)
        c.integer("TrainConfig.batch_size", self.batch_size, 1)
        c.integer("TrainConfig.eval_batch_size", self.eval_batch_size, 1)
        c.number("TrainConfig.lr", self.lr, 0, low_open=True)
        c.number("TrainConfig.weight_decay", self.weight_decay, 0)
        if isinstance(self.betas, (str, bytes)) or not isinstance(self.betas, (list, tuple)) or len(self.betas) != 2:
            raise checks.BadInput(f"TrainConfig.betas must be two numbers in [0, 1), got {self.betas!r}")
        for i, beta in enumerate(self.betas):
            c.number(f"TrainConfig.betas[{i}]", beta, 0, 1, high_open=True)
        c.number("TrainConfig.adam_eps", self.adam_eps, 0, low_open=True)
        c.number("TrainConfig.warmup", self.warmup, 0, 1, high_open=True)
        if self.max_grad_norm is not None:  # a negative norm would turn clipping into gradient ascent
            c.number("TrainConfig.max_grad_norm", self.max_grad_norm, 0, low_open=True)
        c.choice("TrainConfig.sampler", self.sampler, SAMPLERS)
        c.number("TrainConfig.temperature", self.temperature, 0, low_open=True)
        c.choice("TrainConfig.batching", self.batching, BATCHINGS)
        c.choice("TrainConfig.select_on", self.select_on, SELECT_ON)
        if self.patience is not None:
            c.integer("TrainConfig.patience", self.patience, 1)
        c.integer("TrainConfig.seed", self.seed, 0)
        for flag in ("group_by_length", "bf16", "cpu_bf16", "freeze_encoder", "keep_best"):
            c.boolean(f"TrainConfig.{flag}", getattr(self, flag))
        if self.iat is not None and not isinstance(self.iat, IATConfig):
            raise checks.BadInput(f"TrainConfig.iat must be an IATConfig or None, got {self.iat!r}")
        if self.iat is not None and self.batching == "heterogeneous":
            raise checks.BadInput(f"TrainConfig.iat needs single-task batches (each batch trains one task's heads), got batching={self.batching!r}: use batching='homogeneous'")
        if self.checkpoint_every is not None:
            c.integer("TrainConfig.checkpoint_every", self.checkpoint_every, 1)
        if self.checkpoint_dir is not None and not isinstance(self.checkpoint_dir, (str, os.PathLike)):
            raise checks.BadInput(f"TrainConfig.checkpoint_dir must be a path or None, got {self.checkpoint_dir!r}")
        if not isinstance(self.device, (str, torch.device)):
            raise checks.BadInput(f"TrainConfig.device must be a string such as 'cpu', 'cuda' or 'auto', got {self.device!r}")
        pick_device(self.device)


@dataclass
class TrainResult:
    history: pd.DataFrame  #: one row per epoch and task: dev metrics, plus the epoch's average score (and dev losses with select_on="loss")
    log: pd.DataFrame  #: one row per step: epoch, step, task, loss, lr
    best_epoch: int
    best_score: float
    trainable_heads: dict = field(default_factory=dict)  #: IAT masks M_i (task -> bool [L, H]), if any
    importance: dict = field(default_factory=dict)  #: the head importance IAT used (task -> [L, H])
    stopped_epoch: int | None = None  #: the epoch after which ``patience`` stopped training (None: it ran every epoch)


class _Plan:
    """The batches of one epoch: which task (or mix) each step trains, and on which examples."""

    def __init__(self, data: dict[str, TaskData], config: TrainConfig):
        self.names = list(data)
        self.examples = {n: td.features["train"].to_list() for n, td in data.items()}  # fast row access
        self.lengths = {n: _lengths([e["input_ids"] for e in self.examples[n]]) for n in self.names}
        self.config = config
        per_task = [math.ceil(len(self.lengths[n]) / config.batch_size) for n in self.names]
        if config.batching == "heterogeneous":
            self.sampler = None
            self.steps_per_epoch = math.ceil(sum(len(v) for v in self.lengths.values()) / config.batch_size)
        else:
            self.sampler = TaskSampler(config.sampler, per_task, config.epochs, config.temperature, config.seed)
            self.steps_per_epoch = self.sampler.steps_per_epoch

    def epoch(self, epoch: int) -> list[tuple[str | None, list]]:
        """``[(task or None for a mixed batch, [(task, example index), ...]), ...]`` for every step."""
        c = self.config
        if self.sampler is None:
            pool_task = np.concatenate([np.full(len(self.lengths[n]), i) for i, n in enumerate(self.names)])
            pool_index = np.concatenate([np.arange(len(self.lengths[n])) for n in self.names])
            lengths = np.concatenate([self.lengths[n] for n in self.names])
            rng = np.random.default_rng([c.seed, epoch, 1])
            return [(None, [(self.names[pool_task[j]], int(pool_index[j])) for j in b]) for b in batch_indices(lengths, c.batch_size, rng, c.group_by_length)]
        batches = {}
        for i, n in enumerate(self.names):
            rng = np.random.default_rng([c.seed, epoch, 2, i])
            batches[n] = batch_indices(self.lengths[n], c.batch_size, rng, c.group_by_length)
        used = dict.fromkeys(self.names, 0)
        steps = []
        for task_index in self.sampler.schedule(epoch):
            n = self.names[task_index]
            b = batches[n][used[n] % len(batches[n])]  # a task sampled more often than it has batches starts over
            used[n] += 1
            steps.append((n, [(n, int(j)) for j in b]))
        return steps


def _make_batch(data: dict[str, TaskData], examples: dict[str, list], task: str | None, members: list) -> dict:
    names = list(data)
    if task is not None:
        return collate([examples[task][j] for _, j in members], data[task].pad_token_id, task=task)
    kinds = {data[n].task.kind for n, _ in members}
    if len(kinds & {"sequence_labelling", "span_qa"}) and len(kinds) > 1:
        # different label layouts in one batch: every example gets every label key, -100 / 0 where unused
        return _merge_mixed(data, examples, members)
    feats = [dict(examples[n][j], task_id=names.index(n)) for n, j in members]
    for f in feats:
        if isinstance(f.get("labels"), int):
            f["labels"] = float(f["labels"])  # classification ids and regression targets share one float tensor
    return collate(feats, data[members[0][0]].pad_token_id)


def _merge_mixed(data, examples, members) -> dict:
    names = list(data)
    feats = []
    for n, j in members:
        f = dict(examples[n][j], task_id=names.index(n))
        f.pop("offsets", None)
        feats.append(f)
    longest = max(len(f["input_ids"]) for f in feats)
    pad = data[members[0][0]].pad_token_id
    batch = collate([{k: f[k] for k in ("input_ids", "attention_mask", "token_type_ids", "task_id") if k in f} for f in feats], pad)
    size = len(feats)
    labels = torch.full((size,), -100.0)
    token_labels = torch.full((size, longest), -100, dtype=torch.long)
    starts, ends = torch.zeros(size, dtype=torch.long), torch.zeros(size, dtype=torch.long)
    for i, f in enumerate(feats):
        if "labels" in f:
            labels[i] = float(f["labels"])
        if "token_labels" in f:
            token_labels[i, : len(f["token_labels"])] = torch.tensor(f["token_labels"])
        if "start_positions" in f:
            starts[i], ends[i] = f["start_positions"], f["end_positions"]
    batch.update(labels=labels, token_labels=token_labels, start_positions=starts, end_positions=ends)
    return batch


def _linear_schedule(optimizer, warmup_steps: int, total_steps: int):
    def factor(step: int) -> float:
        if step < warmup_steps:
            return (step + 1) / warmup_steps
        return max(0.0, (total_steps - step) / max(1, total_steps - warmup_steps))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def _save(path: Path, payload: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    torch.save(payload, tmp)
    os.replace(tmp, path)


def _load(path: Path) -> dict:
    """A checkpoint file; a truncated or corrupt one is an error that names the file."""
    try:
        return torch.load(path, map_location="cpu", weights_only=False)
    except Exception as err:
        raise ValueError(f"checkpoint {path} cannot be read ({type(err).__name__}: {err}); it is truncated or corrupt: delete it to start over") from None


def _cpu_state(model) -> dict:
    return {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}


def train(model, data: dict[str, TaskData], config: TrainConfig | None = None, progress: bool = True, on_step=None) -> TrainResult:
    """Train ``model`` (a :class:`mtllib.modeling.multitask.MultiTaskModel`) on every task of ``data``; see the module
    docstring. Bad settings raise before any step runs and before anything is written. ``on_step(step)`` is
    called after every optimizer step (a hook for logging, or for tests that stop a run midway)."""
    config = config or TrainConfig()
    config.validate()
    if not data:
        raise ValueError("no tasks to train on")
    missing = [n for n in data if n not in model.tasks]
    if missing:
        raise ValueError(f"the model has no head for task(s) {missing}; its tasks are {model.task_names}")
    choices = [n for n, td in data.items() if td.task.kind == "multiple_choice"]
    if choices and config.batching == "heterogeneous":
        raise checks.BadInput(f"multiple-choice tasks ({', '.join(choices)}) need single-task batches: use batching='homogeneous'")
    for name, td in data.items():  # an empty split would end training after 0 steps, or fail after the first epoch
        for split in ("train", "validation"):
            if split not in td.features or len(td.features[split]) == 0:
                raise ValueError(f"task {name!r} has no {split} examples: training needs both splits non-empty")
    device = pick_device(config.device)
    dp = distributed.context(device)  # one process unless a launcher started several
    if dp.distributed:
        device = dp.accelerator.device
    plan = _Plan(data, config)
    total_steps = plan.steps_per_epoch * config.epochs
    warmup_steps = max(1, round(config.warmup * total_steps)) if config.warmup > 0 else 0

    torch.manual_seed(config.seed)
    model.to(device)
    model.freeze_encoder(config.freeze_encoder)
    params = [p for p in model.parameters() if p.requires_grad]
    decay = [p for p in params if p.dim() >= 2]
    no_decay = [p for p in params if p.dim() < 2]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": config.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=config.lr, betas=tuple(config.betas), eps=config.adam_eps, **({"fused": True} if device.type == "cuda" else {}),
    )
    scheduler = _linear_schedule(optimizer, warmup_steps, total_steps) if warmup_steps else torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: max(0.0, (total_steps - s) / total_steps))

    ckpt_dir = Path(config.checkpoint_dir) if config.checkpoint_dir else None
    every = config.checkpoint_every or plan.steps_per_epoch
    state = {"global_step": 0, "log": [], "history": [], "best_score": -math.inf, "best_value": -math.inf, "best_epoch": 0,
             "stopped_epoch": None, "masks": {}, "importance": {}}
    best_state = None
    last = ckpt_dir / "last.pt" if ckpt_dir else None
    # what this run trains on: a checkpoint made on other data, another model or other settings is refused
    recipe = None if ckpt_dir is None else {
        "config": _config_dict(config), "model": digest(model.config.to_dict(), sorted(model.tasks)),
        "data": {n: [dataset_digest(td.features["train"]), dataset_digest(td.features["validation"])] for n, td in data.items()}}
    if last is not None and last.exists():
        saved = _load(last)
        differs = [what for what in ("config", "model", "data") if saved.get("recipe", {}).get(what) != recipe[what]]
        if differs:
            detail = ""
            if "config" in differs:
                old = saved.get("recipe", {}).get("config", {})
                detail = "; settings that differ: " + ", ".join(f"{k} {old.get(k)!r} -> {v!r}" for k, v in recipe["config"].items() if old.get(k) != v)
            if "data" in differs:
                old = saved.get("recipe", {}).get("data", {})
                detail += "; tasks whose data differ: " + ", ".join(sorted(n for n in set(old) | set(recipe["data"]) if old.get(n) != recipe["data"].get(n)))
            raise ValueError(f"{last} was written by another run (its {' and '.join(differs)} differ{detail}); use another checkpoint_dir or delete it")
        if saved.get("world_size", 1) != dp.world_size:
            raise ValueError(f"{last} was written by a run on {saved.get('world_size', 1)} process(es); this one has {dp.world_size}: resume with as many, or use another checkpoint_dir")
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        scheduler.load_state_dict(saved["scheduler"])
        torch.set_rng_state(saved["torch_rng_ranks"][dp.rank] if dp.distributed else saved["torch_rng"])
        state = saved["state"]
        state.setdefault("best_value", state["best_score"])  # checkpoints written before select_on existed
        state.setdefault("stopped_epoch", None)
        if (ckpt_dir / "best.pt").exists():
            best_state = _load(ckpt_dir / "best.pt")

    iat_start = config.iat.start_step(total_steps) if config.iat else None
    update_mask = HeadUpdateMask(model, state["masks"]) if state["masks"] else None
    net = dp.accelerator.prepare_model(model) if dp.distributed else model  # DDP syncs gradients in backward

    def checkpoint():
        if ckpt_dir is None:
            return
        if dp.distributed:
            rng = dp.gather(torch.get_rng_state())  # every process's dropout stream
            if dp.is_main:
                _save(last, {"recipe": recipe, "model": model.state_dict(), "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
                             "torch_rng": rng[0], "torch_rng_ranks": rng, "world_size": dp.world_size, "state": state})
            dp.barrier()
        else:
            _save(last, {"recipe": recipe, "model": model.state_dict(), "optimizer": optimizer.state_dict(),
                         "scheduler": scheduler.state_dict(), "torch_rng": torch.get_rng_state(), "state": state})

    bar = tqdm(total=total_steps, initial=state["global_step"], desc="training", unit="step", disable=not progress or not dp.is_main)
    try:
        for epoch in range(1, config.epochs + 1):
            if state["stopped_epoch"] is not None:
                break  # a resumed run that had already stopped early
            epoch_start = (epoch - 1) * plan.steps_per_epoch
            if state["global_step"] >= epoch_start + plan.steps_per_epoch:
                continue  # finished before a resume
            steps = plan.epoch(epoch)
            model.train()
            for step_in_epoch, (task, members) in enumerate(steps):
                step = epoch_start + step_in_epoch
                if step < state["global_step"]:
                    continue
                if iat_start is not None and step == iat_start and not state["masks"] and config.iat.alpha < 1:
                    found = _iat_masks(model, data, config, device, progress) if dp.is_main else None
                    state["importance"], state["masks"] = dp.broadcast(found)  # one set of masks for every process
                    update_mask = HeadUpdateMask(model, state["masks"])
                members, factor = dp.shard(members)
                batch = to_device(_make_batch(data, plan.examples, task, members), device)
                with autocast(device, config.bf16, config.cpu_bf16):
                    loss = net(**batch).loss
                (loss * factor if dp.distributed else loss).backward()
                if update_mask is not None:
                    update_mask.zero_frozen_grads(task)
                if config.max_grad_norm:
                    torch.nn.utils.clip_grad_norm_(params, config.max_grad_norm)
                if update_mask is not None:
                    update_mask.step(task, optimizer)
                else:
                    optimizer.step()
                scheduler.step()
                optimizer.zero_grad(set_to_none=True)
                loss_value = dp.mean_loss(loss, factor)
                state["log"].append({"epoch": epoch, "step": step + 1, "task": task or "mixed", "loss": loss_value, "lr": scheduler.get_last_lr()[0]})
                state["global_step"] = step + 1
                bar.update(1)
                bar.set_postfix(task=task or "mixed", loss=f"{loss_value:.3f}")
                if state["global_step"] % every == 0 and state["global_step"] < epoch_start + plan.steps_per_epoch:
                    checkpoint()
                if on_step is not None:
                    on_step(state["global_step"])
            scores, losses = None, None
            if dp.is_main:  # the others take the main process's scores: every process keeps the same best epoch
                scores = evaluate(model, data, "validation", config.eval_batch_size, device, cpu_bf16=config.cpu_bf16, with_loss=config.select_on == "loss")
                losses = scores.pop("loss").to_dict() if config.select_on == "loss" else {}
            scores, losses = dp.broadcast((scores, losses))
            average = float(scores["score"].mean())
            average_loss = float(np.mean(list(losses.values()))) if losses else None
            for name, row in scores.iterrows():
                extra = {"loss": losses[name], "average_loss": average_loss} if losses else {}
                state["history"].append({"epoch": epoch, "task": name, **row.to_dict(), "average": average, **extra})
            value = average if config.select_on == "score" else -average_loss
            if value > state["best_value"]:
                state["best_value"], state["best_score"], state["best_epoch"] = value, average, epoch
                if config.keep_best:
                    best_state = _cpu_state(model)
                    if ckpt_dir is not None and dp.is_main:
                        _save(ckpt_dir / "best.pt", best_state)
            if config.patience is not None and epoch < config.epochs and epoch - state["best_epoch"] >= config.patience:
                state["stopped_epoch"] = epoch
            checkpoint()
    finally:
        bar.close()
    if config.keep_best and best_state is not None:
        model.load_state_dict(best_state)
    return TrainResult(
        history=pd.DataFrame(state["history"]),
        log=pd.DataFrame(state["log"]),
        best_epoch=state["best_epoch"],
        best_score=state["best_score"],
        trainable_heads=state["masks"],
        importance=state["importance"],
        stopped_epoch=state["stopped_epoch"],
    )


def validation_losses(model, data: dict[str, TaskData], batch_size: int = 64, device=None) -> dict[str, float]:
    """Each task's mean loss over its validation examples: ``{task: loss}`` (what ``select_on="loss"`` averages)."""
    return {name: float(example_losses(model, td, "validation", batch_size, device).mean()) for name, td in data.items()}


def _config_dict(config: TrainConfig) -> dict:
    d = asdict(config)
    d.pop("checkpoint_dir")
    return d


def task_importance(model, data: dict[str, TaskData], batch_size: int, seed: int, max_batches: int | None = None, device=None, progress: bool = True) -> dict:
    """Eq. 4 for every task on (up to ``max_batches`` of) its training batches, drawn with ``seed``:
    ``{task: [L, H]}``. The paper computes importance on the training split."""
    loaders = {}
    for i, (name, td) in enumerate(data.items()):
        feats = td.features["train"]
        order = batch_indices(_lengths(feats["input_ids"]), batch_size, np.random.default_rng([seed, 99, i]), True)[:max_batches]
        loaders[name] = [collate([feats[int(j)] for j in b], td.pad_token_id, task=name) for b in order]
    return head_importance(model, loaders, device=device, progress=progress)


def _iat_masks(model, data, config, device, progress):
    """Eq. 4 on each task's training batches, then M_i = its top-alpha heads (or random ones)."""
    iat = config.iat
    importance = task_importance(model, data, config.batch_size, config.seed, iat.importance_batches, device, progress)
    if iat.heads == "top":
        masks = {n: select_heads(imp, iat.alpha, "top") for n, imp in importance.items()}
    else:
        masks = {n: select_heads(imp, iat.alpha, "random", seed=config.seed * 1000 + i) for i, (n, imp) in enumerate(importance.items())}
    return importance, masks


# --- few-shot transfer ----------------------------------------------------------------------------------
def few_shot(
    make_model,
    data: TaskData,
    ks: list[int],
    seeds: list[int],
    per_class: bool = True,
    config: TrainConfig | None = None,
    split: str = "validation",
    progress: bool = True,
) -> pd.DataFrame:
    """Few-shot transfer (Table 6): for each ``k`` and seed, fine-tune ``make_model()`` (e.g. a multi-task
    checkpoint's encoder with a fresh head for ``data.task``) on ``k`` examples per class (``per_class=True``)
    or ``k`` in total, and evaluate on ``split``. Returns one row per (k, seed) with the task's metrics.
    ``make_model`` is called after ``torch.manual_seed(seed)``, so a fresh head is the same with or without the
    scores cache (:func:`mtllib.training.cache.train_and_score`), which keeps each run's scores."""
    config = config or TrainConfig(epochs=10, batch_size=8, lr=2e-5, keep_best=False)
    config.validate()
    checks.items("ks", ks, lambda n, v: checks.integer(n, v, 1))
    checks.items("seeds", seeds, lambda n, v: checks.integer(n, v, 0))
    train_rows = data.rows["train"]
    # every (k, seed) subset is drawn first: an infeasible k fails before any model trains
    subsets = {(k, seed): k_shot_indices(train_rows, data.task, k, seed=seed, per_class=per_class) for k in ks for seed in seeds}
    rows = []
    for k in ks:
        for seed in tqdm(seeds, desc=f"few-shot k={k}", disable=not progress, leave=False):
            idx = subsets[(k, seed)]
            subset = TaskData(data.task, {**data.features, "train": data.features["train"].select(idx)}, {**data.rows, "train": train_rows.select(idx)}, data.pad_token_id)
            torch.manual_seed(seed)
            scores, _, _ = train_and_score(make_model(), {data.task.name: subset}, dataclasses.replace(config, seed=seed), split)
            rows.append({"k": k, "per_class": per_class, "seed": seed, **scores.iloc[0].to_dict()})
    return pd.DataFrame(rows)

