"""The opening of the pre-finetuning chapter (09a) of "Exploring the Role of Task Transferability in Large-Scale
Multi-Task Learning": the task groups and their unseen targets checked as a design (Sec. 3, Appendix A), the
pre-finetuning recipe (Appendix B.2: early stopping on the mean validation loss) and every pre-finetuning task
prepared. Its recipe and data are those of the target pages' (:mod:`mtllib.book.transfer_targets`), so their
encoders come from this chapter's runs through the model cache.

``glue``: :func:`myst_nb.glue` without display (the default) or a stand-in taking ``(key, value)``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from mtllib.book.tables import glue_function
from mtllib.book.training_run import TrainingRun
from mtllib.experiments import transferability as tr
from mtllib.papers import task_transferability as paper


@dataclass
class Start(TrainingRun):
    """What :func:`start` set up: every scheme (``"Baseline"`` first), the pre-finetuning tasks in group order,
    and, from :class:`~mtllib.book.training_run.TrainingRun`, the recipe (``config``), device, tokenizer and
    prepared data, with the chapter's clock (``minutes()``)."""

    schemes: list[str] = field(default_factory=list)
    pf_tasks: list[str] = field(default_factory=list)


def start(params: dict, notebook: str, glue=None) -> Start:
    """The chapter's opening, from its parameters (the notebook's ``globals()``): every parameter
    (:func:`mtllib.book.params.check_parameters`) and the design (``groups`` and ``targets``, every scheme,
    :func:`mtllib.experiments.transferability.check_design`) checked before any work; the device picked; the
    pre-finetuning recipe (at most ``pf_epochs`` epochs, ``patience``); every pre-finetuning task prepared at
    ``pf_train``/``pf_eval`` examples. Glues what the text reads of the design and the paper (``n_schemes_pf``,
    ``n_pf_tasks``, ``n_targets``, ``pf_train``, ``pf_eval``, ``pf_epochs``, ``patience``, ``batch_size``,
    ``paper_n_tasks``, ``paper_n_targets``, ``paper_n_seeds``, ``paper_epoch_all``, ``paper_epoch_sl``,
    ``paper_examples``) and prints a one-line summary."""
    from mtllib.book.params import check_parameters
    from mtllib.book.transfer_targets import sizes_text
    from mtllib.data.features import load_tokenizer, prepare
    from mtllib.runtime import pick_device, quiet_notebook

    started = time.perf_counter()
    quiet_notebook()
    glue = glue_function(glue)
    p = check_parameters(params, notebook)
    schemes = tr.all_schemes(p["groups"])
    tr.check_design(p["groups"], p["targets"], schemes)  # before any data is prepared
    run = Start(params=p, device=pick_device(p["device"]), started=started, schemes=schemes, pf_tasks=tr.grouped_tasks(p["groups"]))
    run.config = run.recipe(epochs=p["pf_epochs"], device=run.device)
    run.tokenizer = load_tokenizer(p["model"])
    run.data = prepare(run.pf_tasks, run.tokenizer, max_length=p["max_length"], max_train=p["pf_train"], max_eval=p["pf_eval"])
    values = {"n_schemes_pf": len(schemes) - 1, "n_pf_tasks": len(run.pf_tasks), "n_targets": sum(map(len, p["targets"].values())),
              "pf_train": sizes_text(p["pf_train"], run.pf_tasks), "pf_eval": p["pf_eval"], "pf_epochs": p["pf_epochs"],
              "patience": p["patience"], "batch_size": p["batch_size"],
              "paper_n_tasks": sum(map(len, paper.PREFINETUNING.values())), "paper_n_targets": sum(map(len, paper.TARGETS.values())),
              "paper_n_seeds": paper.SEEDS, "paper_epoch_all": f"{paper.EPOCH_SECONDS['SL+QA+C']:,}",
              "paper_epoch_sl": f"{paper.EPOCH_SECONDS['Only-SL']:,}",
              "paper_examples": ", ".join(f"{n // 1000:,}k {g}" for g, n in paper.TRAIN_EXAMPLES.items())}
    for key, value in values.items():
        glue(key, str(value))
    print("device:", run.device, "| schemes:", ", ".join(schemes[1:]), "| examples per task:", values["pf_train"])
    return run
