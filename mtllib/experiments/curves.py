"""Adaptation modules trained for longer ("BERT and PALs", Appendix A): each variant's dev score on every task
after every epoch, and whether the trained adapter still changes what the model computes.

:func:`run_curves` trains one model per variant and seed exactly as
:func:`mtllib.experiments.adapters.run_variants` does (same rows, same model cache), and also returns each
model's training history and an *ablation*: the test score of the trained model with its adapter detached.
An adapter that training left inert (the multi-task model scores the same with and without it) shows as a
zero difference; the chapters that train for two epochs found PALs at a small d_s and LHUC inert.
"""

from __future__ import annotations

import pandas as pd

from mtllib.experiments.adapters import RUN_COLUMNS, check_variants, trained_runs
from mtllib.modeling.adapters import AdapterConfig

#: the columns of :func:`run_curves`'s history (one row per variant, seed, epoch and task)
HISTORY_COLUMNS = ["variant", "seed", "epoch", "task", "score"]
#: the columns of its ablation (one row per variant, seed and task; baselines have none)
ABLATION_COLUMNS = ["variant", "seed", "task", "score", "without adapter", "adapter's effect"]


def run_curves(model_name: str, task_names: list[str], variants: dict[str, AdapterConfig], seeds: list[int], data: dict,
               train_config, progress: bool = False) -> dict[str, pd.DataFrame]:
    """``{"rows": run_variants's rows, "history": dev score per epoch, "ablation": test score with and without
    the trained adapter}``. Every configuration is checked before any training; ``separate`` (one model per
    task, no multi-task history to compare) is refused."""
    from transformers import AutoConfig

    from mtllib.data.assets import resolve_model
    from mtllib.training.trainer import evaluate

    if any(a.method == "separate" for a in variants.values()):
        raise ValueError("run_curves follows one multi-task model per variant and seed; 'separate' trains one model per task")
    check_variants(variants, AutoConfig.from_pretrained(resolve_model(model_name)))
    rows, history, ablation = [], [], []
    for run in trained_runs(model_name, task_names, variants, seeds, data, train_config, progress):
        rows += run["rows"]
        h = run["result"].history
        history.append(h[["epoch", "task", "score"]].assign(variant=run["variant"], seed=run["seed"]))
        if run["attached"] is not None:
            run["attached"].detach()
            without = evaluate(run["model"], {t: data[t] for t in task_names}, "test", batch_size=train_config.eval_batch_size)
            for t in task_names:
                with_, bare = float(run["test"].loc[t, "score"]), float(without.loc[t, "score"])
                ablation.append({"variant": run["variant"], "seed": run["seed"], "task": t, "score": with_,
                                 "without adapter": bare, "adapter's effect": with_ - bare})
    history = pd.concat(history, ignore_index=True)[HISTORY_COLUMNS] if history else pd.DataFrame(columns=HISTORY_COLUMNS)
    return {"rows": pd.DataFrame(rows, columns=RUN_COLUMNS), "history": history, "ablation": pd.DataFrame(ablation, columns=ABLATION_COLUMNS)}
