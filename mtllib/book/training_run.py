"""What the opening step of every chapter family that trains returns underneath its own fields: the checked
parameters, the device, the chapter's tasks prepared (:meth:`TrainingRun.prepare`) and its training recipe
(:meth:`TrainingRun.recipe`), with the clock of :class:`~mtllib.book.chapter_run.ChapterRun`. Kept apart from
that clock so a chapter that trains nothing (the data chapter) does not depend on the training code."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from mtllib.book.chapter_run import ChapterRun


@dataclass(kw_only=True)
class TrainingRun(ChapterRun):
    """One training chapter's run: its checked ``params`` (the notebook's) and its ``device``. ``tokenizer`` and
    ``data`` are ``None`` until :meth:`prepare` (a family that prepares its data otherwise sets ``data`` itself),
    ``config`` until the family builds its recipe (:meth:`recipe`)."""

    params: dict = field(default_factory=dict)
    device: object = None
    tokenizer: object = None
    data: dict | None = None
    #: the training recipe (:class:`~mtllib.training.trainer.TrainConfig`)
    config: object = None

    def prepare(self, tasks: list[str] | None = None) -> dict:
        """The chapter's tasks (``tasks``, else the parameter ``tasks``) prepared with ``model``'s tokenizer (split
        seed 0; ``max_train``, ``max_eval``, ``max_length``) as ``self.data``, the tokenizer as ``self.tokenizer``;
        returns the data. Call it after the chapter's own checks: this is the first step that works."""
        from mtllib.data.features import load_tokenizer, prepare

        p = self.params
        self.tokenizer = load_tokenizer(p["model"])
        self.data = prepare(p["tasks"] if tasks is None else tasks, self.tokenizer, seed=0, max_train=p["max_train"],
                            max_eval=p["max_eval"], max_length=p["max_length"])
        return self.data

    def recipe(self, **fields):
        """The chapter's training recipe (:class:`~mtllib.training.trainer.TrainConfig`) from every field of it
        that the parameters name (``epochs``, ``batch_size``, ``lr``, ``device``, and ``sampler``, ``keep_best``,
        ``patience`` where the chapter has them), ``fields`` overriding them; the rest keep their defaults."""
        from mtllib.training.trainer import TrainConfig

        names = {f.name for f in dataclasses.fields(TrainConfig)}
        return TrainConfig(**{k: v for k, v in self.params.items() if k in names} | fields)
