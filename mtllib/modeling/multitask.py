"""A shared pretrained transformer with one output head per task (the multi-task model of Sec. 3-4 of
"Interpreting and Exploiting Functional Specialization in Multi-Head Attention under Multi-task Learning",
and the hard-parameter-sharing baseline of "BERT and PALs").

Batches are dictionaries of tensors. Inputs: ``input_ids``, ``attention_mask`` and, where the encoder has
them, ``token_type_ids``. The task is named by ``task`` (a string: every example belongs to it) or by
``task_ids`` (a ``[B]`` tensor of indices into ``model.task_names``: a *heterogeneous* batch whose examples
are routed one by one to their task's head). Labels, each used only by the tasks of its kind:

==========================  =======================  ==========================================
task kind                   label key                shape / dtype
==========================  =======================  ==========================================
``classification``          ``labels``               ``[B]`` class index (int, or float holding ints)
``regression``              ``labels``               ``[B]`` float
``sequence_labelling``      ``token_labels``         ``[B, T]`` int, ``-100`` = not scored
``span_qa``                 ``start_positions``,     ``[B]`` int token positions
                            ``end_positions``
``multiple_choice``         ``labels``               ``[B]`` index of the right choice
==========================  =======================  ==========================================

A multiple-choice batch has inputs of shape ``[B, C, T]`` (one sequence per choice) and names its one task
with ``task``; the encoder reads the ``B * C`` sequences, the head scores each choice's pooled token and the
task's logits are ``[B, C]`` (as ``AutoModelForMultipleChoice`` does; SWAG in Appendix B of "BERT and PALs").

The per-example loss is cross-entropy (mean over an example's scored tokens for token classification, the
mean of start and end for span QA, over the choices for multiple choice) or squared error (regression). The batch loss is the mean over
*examples*, so in a heterogeneous batch each example weighs the same whatever its task (not a mean of
per-task means).

Pooling for sequence-level heads: the first token ([CLS]) for encoders, the last non-padding token for
decoder-only models (GPT, GPT-2), whichever side the padding is on.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from mtllib.data.kinds import ARGMAX_KINDS, POOLED_KINDS, SCALAR_KINDS, TaskSpec
from mtllib.modeling.archs import num_layers_heads, spec_for
from mtllib.data.assets import resolve_model

#: how sequence-level heads read the encoder: the first token ("cls", BERT's choice and the default for
#: encoders), the last real token ("last", the default for causal models), or the mean of the real tokens
#: ("mean", how sentence-embedding encoders such as all-MiniLM-L6-v2 were trained)
POOLINGS = ("cls", "last", "mean")


class TaskHead(nn.Module):
    """Output layer of one task. Sequence-level kinds use a small MLP on the pooled token
    (dense-tanh-dense, as BERT's pooler + classifier; multiple choice: one score per choice's sequence);
    token-level kinds a linear layer per token."""

    def __init__(self, spec: TaskSpec, hidden_size: int, dropout: float):
        super().__init__()
        self.spec = spec
        self.dropout = nn.Dropout(dropout)
        if spec.kind in POOLED_KINDS:
            self.dense = nn.Linear(hidden_size, hidden_size)
        self.out = nn.Linear(hidden_size, spec.num_labels)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        if self.spec.kind in POOLED_KINDS:
            hidden = torch.tanh(self.dense(self.dropout(hidden)))
        logits = self.out(self.dropout(hidden))
        return logits.squeeze(-1) if self.spec.kind in SCALAR_KINDS else logits


@dataclass
class MultiTaskOutput:
    """``loss``: mean per-example loss (``None`` without labels); ``per_example_loss``: ``[B]``;
    ``logits[task]``: the outputs of that task's examples, whose batch rows are ``rows[task]``."""

    loss: torch.Tensor | None
    per_example_loss: torch.Tensor | None
    logits: dict[str, torch.Tensor] = field(default_factory=dict)
    rows: dict[str, torch.Tensor] = field(default_factory=dict)


class MultiTaskModel(nn.Module):
    """A shared encoder (any architecture in :data:`mtllib.modeling.archs.ARCHS`) with one :class:`TaskHead` per task."""

    def __init__(self, encoder: nn.Module, tasks: list[TaskSpec], dropout: float | None = None, pooling: str | None = None):
        super().__init__()
        spec_for(encoder)  # unsupported architectures fail here, with the list of supported ones
        if not tasks:
            raise ValueError("a multi-task model needs at least one task")
        names = [t.name for t in tasks]
        if len(set(names)) != len(names):
            raise ValueError(f"task names must be unique, got {names}")
        self.encoder = encoder
        self.tasks = {t.name: t for t in tasks}
        config = encoder.config
        if dropout is None:
            dropout = next((getattr(config, k) for k in ("hidden_dropout_prob", "dropout", "resid_pdrop") if hasattr(config, k)), 0.1)
        self.heads = nn.ModuleDict({t.name: TaskHead(t, config.hidden_size, dropout) for t in tasks})
        self._decoder = spec_for(encoder).decoder
        if pooling is None:
            pooling = "last" if self._decoder else "cls"
        if pooling not in POOLINGS:
            raise ValueError(f"unknown pooling {pooling!r}; choose one of {', '.join(POOLINGS)}")
        self.pooling = pooling
        self._encoder_args = set(inspect.signature(encoder.forward).parameters)
        # positions of the multiple-choice tasks, for refusing them in a heterogeneous batch (a buffer, so it moves
        # with the model; not persistent, so checkpoints and state dicts are unchanged)
        choice_ids = [i for i, t in enumerate(tasks) if t.kind == "multiple_choice"]
        self.register_buffer("_choice_task_ids", torch.tensor(choice_ids, dtype=torch.long), persistent=False)

    # -- construction ------------------------------------------------------------------------------------
    @classmethod
    def from_pretrained(cls, name_or_path: str, tasks: list[TaskSpec], dropout: float | None = None, pooling: str | None = None, **kwargs) -> "MultiTaskModel":
        """Load the encoder with ``AutoModel`` from a local folder, a hub id, or ``"offline"`` (all-MiniLM-L6-v2)."""
        from transformers import AutoModel

        return cls(AutoModel.from_pretrained(resolve_model(name_or_path), **kwargs), tasks, dropout, pooling)

    @classmethod
    def from_config(cls, config, tasks: list[TaskSpec], dropout: float | None = None, pooling: str | None = None) -> "MultiTaskModel":
        """A randomly initialised encoder from a ``transformers`` config (tests use tiny ones)."""
        from transformers import AutoModel

        return cls(AutoModel.from_config(config), tasks, dropout, pooling)

    # -- properties --------------------------------------------------------------------------------------
    @property
    def base_model(self) -> nn.Module:
        return self.encoder

    @property
    def config(self):
        return self.encoder.config

    @property
    def task_names(self) -> list[str]:
        return list(self.tasks)

    @property
    def num_layers_heads(self) -> tuple[int, int]:
        return num_layers_heads(self.encoder)

    def freeze_encoder(self, frozen: bool = True) -> None:
        """Train the task heads only (the frozen-encoder control, BERT* in Fig. 2 of the main paper)."""
        for p in self.encoder.parameters():
            p.requires_grad_(not frozen)

    # -- forward -----------------------------------------------------------------------------------------
    def _pool(self, hidden: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        if self.pooling == "cls":
            return hidden[:, 0]
        if self.pooling == "mean":
            if attention_mask is None:
                return hidden.mean(dim=1)
            mask = attention_mask.to(hidden.dtype).unsqueeze(-1)
            return (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1)
        if attention_mask is None:
            return hidden[:, -1]
        positions = torch.arange(hidden.shape[1], device=hidden.device)
        last = (attention_mask.long() * (positions + 1)).argmax(dim=1)  # last position whose mask is 1
        return hidden[torch.arange(hidden.shape[0], device=hidden.device), last]

    def sentence_representation(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None, token_type_ids: torch.Tensor | None = None, **_) -> torch.Tensor:
        """The pooled vector the sequence-level heads read, ``[B, hidden]`` (task similarity, Appendix D)."""
        kwargs = {"input_ids": input_ids, "attention_mask": attention_mask}
        if token_type_ids is not None and "token_type_ids" in self._encoder_args:
            kwargs["token_type_ids"] = token_type_ids
        return self._pool(self.encoder(**kwargs).last_hidden_state, attention_mask)

    def _task_rows(self, batch_size: int, device, task: str | None, task_ids: torch.Tensor | None) -> dict[str, torch.Tensor]:
        if (task is None) == (task_ids is None):
            raise ValueError("name the batch's task with exactly one of `task` (a name) or `task_ids` (a [B] tensor)")
        if task is not None:
            if task not in self.tasks:
                raise KeyError(f"unknown task {task!r}; this model's tasks are: {', '.join(self.tasks)}")
            return {task: torch.arange(batch_size, device=device)}
        task_ids = task_ids.to(device)
        if task_ids.shape != (batch_size,):
            raise ValueError(f"task_ids must have shape [{batch_size}], got {list(task_ids.shape)}")
        if task_ids.min() < 0 or task_ids.max() >= len(self.tasks):
            raise ValueError(f"task_ids must be in [0, {len(self.tasks)}), got values {task_ids.unique().tolist()}")
        return {name: rows for i, name in enumerate(self.tasks) if len(rows := (task_ids == i).nonzero(as_tuple=True)[0])}

    def _choices(self, input_ids: torch.Tensor, task: str | None, task_ids) -> int:
        """The number of choices of a multiple-choice batch (``[B, C, T]`` inputs), 0 for any other batch; a
        mismatch between the inputs' shape and the task's kind is an error."""
        multiple = task is not None and task in self.tasks and self.tasks[task].kind == "multiple_choice"
        if input_ids.dim() == 3:
            if not multiple:
                what = f"task {task!r} is {self.tasks[task].kind}" if task in self.tasks else "it must name one multiple-choice task with `task`"
                raise ValueError(f"inputs of shape [batch, choices, tokens] {list(input_ids.shape)} are for a multiple-choice task; {what}")
            return input_ids.shape[1]
        if multiple:
            raise ValueError(f"task {task!r} is multiple choice: its inputs must be [batch, choices, tokens], got {list(input_ids.shape)}")
        if task_ids is not None and len(self._choice_task_ids) and torch.isin(task_ids, self._choice_task_ids.to(task_ids.device)).any():
            raise ValueError("a heterogeneous batch (task_ids) cannot hold multiple-choice examples: give each its own batch (task=...)")
        return 0

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        task: str | None = None,
        task_ids: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        token_labels: torch.Tensor | None = None,
        start_positions: torch.Tensor | None = None,
        end_positions: torch.Tensor | None = None,
    ) -> MultiTaskOutput:
        choices = self._choices(input_ids, task, task_ids)
        if choices:  # [B, C, T] -> [B * C, T]: the encoder reads every choice's sequence
            input_ids, attention_mask, token_type_ids = (None if x is None else x.flatten(0, 1) for x in (input_ids, attention_mask, token_type_ids))
        kwargs = {"input_ids": input_ids, "attention_mask": attention_mask}
        if token_type_ids is not None and "token_type_ids" in self._encoder_args:
            kwargs["token_type_ids"] = token_type_ids
        hidden = self.encoder(**kwargs).last_hidden_state
        batch_size = hidden.shape[0] // (choices or 1)
        rows_by_task = self._task_rows(batch_size, hidden.device, task, task_ids)
        per_example = None
        logits, have_labels = {}, []
        for name, rows in rows_by_task.items():
            spec = self.tasks[name]
            if spec.kind == "multiple_choice":
                out = self.heads[name](self._pool(hidden, attention_mask)).view(batch_size, choices)
            elif spec.kind in POOLED_KINDS:
                pooled = self._pool(hidden[rows], None if attention_mask is None else attention_mask[rows])
                out = self.heads[name](pooled)
            else:
                out = self.heads[name](hidden[rows])
            logits[name] = out
            loss = _per_example_loss(spec, out, rows, labels, token_labels, start_positions, end_positions)
            have_labels.append(loss is not None)
            if loss is not None:
                if per_example is None:
                    per_example = hidden.new_zeros(batch_size, dtype=torch.float32)
                per_example = per_example.index_put((rows,), loss.float())
        if any(have_labels) and not all(have_labels):
            missing = [n for n, h in zip(rows_by_task, have_labels) if not h]
            raise ValueError(f"the batch has labels for some tasks but none for {missing}")
        loss = per_example.mean() if per_example is not None else None
        return MultiTaskOutput(loss=loss, per_example_loss=per_example, logits=logits, rows=rows_by_task)


def _per_example_loss(spec: TaskSpec, out, rows, labels, token_labels, start_positions, end_positions):
    """Loss of each example of one task (``None`` when the batch carries no labels of that kind)."""
    if spec.kind in ARGMAX_KINDS:  # multiple choice: over the choices' scores [B, C]
        if labels is None:
            return None
        return F.cross_entropy(out.float(), labels[rows].long(), reduction="none")
    if spec.kind == "regression":
        if labels is None:
            return None
        return (out.float() - labels[rows].float()) ** 2
    if spec.kind == "sequence_labelling":
        if token_labels is None:
            return None
        target = token_labels[rows].long()
        token_loss = F.cross_entropy(out.float().transpose(1, 2), target, reduction="none", ignore_index=-100)
        scored = (target != -100).sum(dim=1)
        return token_loss.sum(dim=1) / scored.clamp(min=1)
    # span_qa
    if start_positions is None or end_positions is None:
        return None
    start_logits, end_logits = out.float().unbind(dim=-1)
    start = F.cross_entropy(start_logits, start_positions[rows].long(), reduction="none")
    end = F.cross_entropy(end_logits, end_positions[rows].long(), reduction="none")
    return (start + end) / 2


def save_checkpoint(model: MultiTaskModel, path) -> None:
    """Save a multi-task model (encoder config and weights, task heads) to one file, atomically."""
    import os
    from pathlib import Path

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "model_type": model.config.model_type,
        "config": model.config.to_dict(),
        "tasks": [(t.name, t.kind, t.num_labels) for t in model.tasks.values()],
        "pooling": model.pooling,
        "state_dict": model.state_dict(),
    }
    tmp = path.with_name(path.name + ".tmp")
    torch.save(payload, tmp)
    os.replace(tmp, path)


def load_checkpoint(path, tasks: list[TaskSpec] | None = None, dropout: float | None = None) -> MultiTaskModel:
    """A model saved by :func:`save_checkpoint`. With ``tasks``, the encoder is restored and the given
    tasks get *fresh* heads (few-shot transfer from a multi-task model, Table 6); heads of tasks with the same
    name and shape as a saved one are restored too."""
    from pathlib import Path

    from transformers import AutoConfig, AutoModel

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint {path} does not exist")
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)  # tensors and plain values only: no code runs
        payload["state_dict"], payload["config"], payload["tasks"]
    except Exception as err:
        raise ValueError(f"checkpoint {path} cannot be read ({type(err).__name__}: {err}); it is truncated, corrupt or not a mtllib checkpoint") from None
    config_dict = dict(payload["config"])
    config = AutoConfig.for_model(config_dict.pop("model_type", payload["model_type"]), **config_dict)
    saved_tasks = [TaskSpec(*t) for t in payload["tasks"]]
    model = MultiTaskModel(AutoModel.from_config(config), tasks or saved_tasks, dropout, payload.get("pooling"))
    state = payload["state_dict"]
    if tasks is None:
        model.load_state_dict(state)
        return model
    saved = {t.name: t for t in saved_tasks}
    same_heads = {n for n, t in model.tasks.items() if saved.get(n) == t}
    keep = {k: v for k, v in state.items() if k.startswith("encoder.") or (k.startswith("heads.") and k.split(".")[1] in same_heads)}
    missing, _ = model.load_state_dict(keep, strict=False)
    if any(k.startswith("encoder.") for k in missing):
        raise RuntimeError(f"checkpoint {path} lacks encoder weights: {[k for k in missing if k.startswith('encoder.')][:5]}")
    return model
