"""The one vocabulary of task kinds, shared by the data (how a task's examples look) and the models (which
output head and loss a task gets), as in jiant's task types.

==========================  ==================================================  =========================
kind                        examples (columns, :mod:`mtllib.data.tasks`)         head and loss
==========================  ==================================================  =========================
``classification``          ``text`` [, ``text_pair``], ``label`` (class id)     pooled MLP, cross-entropy
``regression``              ``text`` [, ``text_pair``], ``label`` (float)        pooled MLP, squared error
``sequence_labelling``      ``words``, ``tags`` (``-100`` = not scored)          per token, cross-entropy
``span_qa``                 ``question``, ``context``, ``answer_text``,          start/end logits per token
                            ``answer_start``
``multiple_choice``         ``text``, ``choices`` (a list, the same length in    pooled MLP giving one
                            every example), ``label`` (the right choice's        score per choice,
                            index)                                               cross-entropy over the
                                                                                 choices (SWAG's format)
==========================  ==================================================  =========================

A multiple-choice example is encoded as one sequence per choice (``text`` paired with that choice), so its
inputs are ``[choices, tokens]`` and a batch's ``[batch, choices, tokens]``; such batches hold one task.
"""

from __future__ import annotations

from dataclasses import dataclass

TASK_KINDS = ("classification", "regression", "sequence_labelling", "span_qa", "multiple_choice")
PARADIGMS = ("single", "pair")
#: kinds predicted by the highest of their outputs (a class, or a choice) and trained by cross-entropy over them
ARGMAX_KINDS = ("classification", "multiple_choice")
#: kinds whose head gives one number per sequence (a value, or a choice's score)
SCALAR_KINDS = ("regression", "multiple_choice")
#: kinds whose head reads one pooled vector per sequence (a multiple-choice example has one per choice)
POOLED_KINDS = ("classification", "regression", "multiple_choice")


@dataclass(frozen=True)
class TaskSpec:
    """What a task head needs to know: its name, kind (one of :data:`TASK_KINDS`) and number of outputs
    (regression and multiple choice: 1, a value or a choice's score; span QA: 2, start and end)."""

    name: str
    kind: str
    num_labels: int = 2

    def __post_init__(self):
        if self.kind not in TASK_KINDS:
            raise ValueError(f"task {self.name!r}: unknown kind {self.kind!r}; choose one of {', '.join(TASK_KINDS)}")
        if self.kind in SCALAR_KINDS and self.num_labels != 1:
            object.__setattr__(self, "num_labels", 1)
        if self.kind == "span_qa" and self.num_labels != 2:
            object.__setattr__(self, "num_labels", 2)  # start and end logits
        if self.num_labels < 1:
            raise ValueError(f"task {self.name!r}: num_labels must be >= 1")
