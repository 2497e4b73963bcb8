"""Numbers reported in "Interpreting and Exploiting Functional Specialization in Multi-Head Attention under
Multi-task Learning" (BERT-base, alpha = 30%), transcribed from its tables so that the book can show them
beside our measurements and the tests can check our formulas against them. Performance in percent.
"""

import numpy as np
import pandas as pd

TASKS = ["MNLI", "QQP", "QNLI", "AG", "SST-2"]
#: which offline task plays each paper task's role in our multi-task chapters (QQP's role: bbc-lede, a headline
#: and a first sentence that tell the same story in other words or not; bbc-pair is AG-Pair, chapter 05's
#: pair version of AG, and tweet-pair stays near chance at the cpu budget)
OFFLINE_ROLE = {"MNLI": "bbc-next", "QQP": "bbc-lede", "QNLI": "bbc-headline", "AG": "bbc-topic", "SST-2": "tweet-sentiment"}

#: Table 3: rows = task whose top-30% heads are pruned (plus Random and Base), columns = evaluated task
TABLE3 = pd.DataFrame(
    [[58.23, 71.52, 61.39, 91.99, 85.32],
     [62.54, 69.43, 60.80, 91.54, 85.13],
     [59.29, 70.96, 57.50, 91.88, 86.35],
     [65.88, 76.28, 69.35, 80.01, 85.09],
     [69.50, 77.40, 73.96, 86.51, 82.45],
     [80.68, 85.42, 85.05, 93.65, 91.23],
     [83.91, 87.64, 90.26, 94.50, 92.05]],
    index=pd.Index(TASKS + ["Random", "Base"], name="pruned"), columns=pd.Index(TASKS, name="evaluated"),
)
#: Table 3's D_i row as printed (its QNLI and AG entries are swapped: see mtllib.analysis.dissociation)
TABLE3_D = pd.Series([7.28, 5.26, 11.07, 9.84, 3.28], index=TASKS, name="D")

#: Table 10: D_A for evaluated task A (column) when task B's heads (row) are pruned
TABLE10 = pd.DataFrame(
    [[np.nan, 2.385, 4.321, 12.671, 3.115],
     [5.161, np.nan, 3.657, 12.198, 2.907],
     [1.275, 1.746, np.nan, 12.555, 4.236],
     [9.169, 7.819, 13.135, np.nan, 2.865],
     [13.496, 9.091, 18.246, 6.874, np.nan]],
    index=pd.Index(TASKS, name="pruned (B)"), columns=pd.Index(TASKS, name="evaluated (A)"),
)

#: Table 11: overlap (%) of the heads pruned for task A (column) with those of task B (row)
TABLE11 = pd.DataFrame(
    [[np.nan, 81.40, 83.70, 58.14, 68.99],
     [81.40, np.nan, 78.29, 63.57, 62.79],
     [83.70, 78.29, np.nan, 62.02, 62.02],
     [58.14, 63.57, 62.02, np.nan, 64.34],
     [68.99, 62.79, 62.02, 64.34, np.nan]],
    index=pd.Index(TASKS, name="B"), columns=pd.Index(TASKS, name="A"),
)

#: Table 4: A, B, base A, A-pruned on A, B-pruned on A, base B, A-pruned on B, B-pruned on B, D_A, D_B, D
TABLE4 = pd.DataFrame(
    [("AG", "QNLI", 94.13, 85.94, 92.44, 91.13, 65.04, 52.95, 6.905, 13.270, 10.088),
     ("AG-Pair", "QNLI", 94.46, 56.17, 64.52, 90.72, 64.85, 53.66, 8.842, 12.337, 10.590),
     ("AG", "SST-2", 94.29, 89.51, 92.32, 92.47, 89.76, 86.01, 2.982, 4.051, 3.517),
     ("AG-Pair", "SST-2", 94.68, 67.65, 71.80, 92.66, 89.33, 85.78, 4.387, 3.837, 4.112)],
    columns=["A", "B", "base_A", "A_pruned_on_A", "B_pruned_on_A", "base_B", "A_pruned_on_B", "B_pruned_on_B", "D_A", "D_B", "D"],
)

#: Fig. 4 / Appendix C: mean number of heads pruned per layer of BERT-base (12 layers, 43 heads per task)
FIG4_MEAN_HEADS_PER_LAYER = 3.6

#: Table 9 (Appendix B): dual-task D_A and D_B (alpha = 30%) per model (rows) and pair (columns: A, B, score);
#: "BERT-base*" is the frozen-encoder control
TABLE9_PAIRS = [("MNLI", "QQP"), ("MNLI", "QNLI"), ("MNLI", "AG"), ("MNLI", "SST-2"), ("QQP", "QNLI"),
                ("QQP", "AG"), ("QQP", "SST-2"), ("QNLI", "AG"), ("QNLI", "SST-2"), ("AG", "SST-2")]
TABLE9 = pd.DataFrame(
    [[0.28, 3.76, 2.10, 1.36, 16.75, 10.47, 16.49, 1.13, 1.36, 0.80, 18.19, 3.60, 25.19, 1.08, 28.74, 3.51, 31.34, 0.75, 2.51, 4.08],
     [4.76, 3.26, 3.09, 0.71, 15.44, 3.29, 17.69, 5.79, 12.64, 0.66, 19.24, 2.39, 50.19, 4.18, 18.62, 4.69, 16.49, 6.81, 3.60, 6.61],
     [2.04, 20.10, 3.82, 1.19, 35.66, 5.36, 31.85, 4.71, 14.42, 0.63, 8.70, 6.54, 24.39, 2.35, 14.87, 6.28, 35.59, 1.63, 1.08, 1.59],
     [2.78, 2.60, 2.34, 2.63, 11.36, 16.26, 13.81, 0.21, 1.92, 4.82, 28.97, 10.39, 11.34, 3.18, 13.27, 6.91, 32.87, 3.28, 2.98, 4.05],
     [-0.96, 0.35, -0.13, 1.21, 5.59, 4.53, 3.27, 1.20, 0.01, 0.15, 0.82, 3.94, -1.07, 6.95, 6.74, 0.90, 7.68, 2.14, 2.48, 3.90],
     [2.43, 0.83, 5.69, 3.55, 17.31, 6.16, 19.83, 9.81, 0.02, 5.90, 22.40, 2.88, 21.20, 6.52, 17.90, 9.56, 20.44, 8.73, 7.72, 7.23],
     [8.56, 10.86, 1.31, 4.32, 17.43, 38.23, 5.48, 8.40, 2.43, 0.54, 23.27, 22.73, 22.19, 5.59, 15.96, 47.73, 16.09, 5.01, 6.62, 6.16],
     [6.21, 4.64, 14.21, 0.02, 24.11, 8.47, 27.03, 2.65, 9.50, 0.02, 11.65, 9.50, 20.51, 13.33, 3.42, 16.92, 20.36, 2.33, 4.97, 17.78]],
    index=pd.Index(["GPT", "GPT-2", "TinyBERT", "BERT-base", "BERT-base*", "BERT-large", "RoBERTa-base", "DeBERTaV3-base"], name="model"),
    columns=pd.MultiIndex.from_tuples([(a, b, s) for a, b in TABLE9_PAIRS for s in ("D_A", "D_B")], names=["A", "B", "score"]),
)
#: Sec. 6.1 and 6.2 quote two averages of Table 9's BERT-base row: fine-tuning raises the ten pairs' mean D
#: by 6.32 points over the frozen encoder, and pairs of different input paradigms average 12.654% against
#: 3.016% for pairs of the same paradigm
TABLE9_FINETUNE_GAIN = 6.32
TABLE9_CROSS_PARADIGM, TABLE9_SAME_PARADIGM = 12.654, 3.016
PARADIGM = {"MNLI": "pair", "QQP": "pair", "QNLI": "pair", "AG": "single", "SST-2": "single"}


def table9_pairs(model: str = "BERT-base") -> pd.DataFrame:
    """One model's row of Table 9 as one row per pair: ``A, B, D_A, D_B, D`` (D = mean of the two)."""
    row = TABLE9.loc[model]
    out = pd.DataFrame([{"A": a, "B": b, "D_A": row[(a, b, "D_A")], "D_B": row[(a, b, "D_B")]} for a, b in TABLE9_PAIRS])
    out["D"] = (out.D_A + out.D_B) / 2
    return out

#: the paper's task names for the dataset names of the paper profile and for the offline stand-ins
PAPER_NAME = {"mnli": "MNLI", "qqp": "QQP", "qnli": "QNLI", "ag_news": "AG", "sst2": "SST-2",
              **{offline: paper for paper, offline in OFFLINE_ROLE.items()}}


def table9_pair(a: str, b: str, model: str = "BERT-base") -> tuple[float, float]:
    """Table 9's ``(D_A, D_B)`` for our tasks ``a`` and ``b`` (by the paper task each stands for, in either
    order); ``(nan, nan)`` when either task has no counterpart in the paper."""
    pa, pb = PAPER_NAME.get(a), PAPER_NAME.get(b)
    row = TABLE9.loc[model]
    if (pa, pb) in TABLE9_PAIRS:
        return float(row[(pa, pb, "D_A")]), float(row[(pa, pb, "D_B")])
    if (pb, pa) in TABLE9_PAIRS:
        return float(row[(pb, pa, "D_B")]), float(row[(pb, pa, "D_A")])
    return float("nan"), float("nan")


#: the paper's set-up (Appendix A.1; Sec. 5 for the data and models; 128 tokens is BERT's GLUE default, which
#: the paper does not state) against which each chapter lists its deviations
SETUP = {
    "model": "BERT-base (12 layers x 12 heads, hidden 768)",
    "learning rate": 2e-5,
    "epochs": 5,
    "warm-up": "linear, 10% of steps",
    "sampling": "proportional",
    "training examples per task": "full GLUE / AG News (tens to hundreds of thousands)",
    "test examples per task": "full dev sets",
    "max length (tokens)": "128 (not stated)",
    "pooling": "[CLS] (BERT's pooler)",
    "precision": "not stated",
    "seeds": 3,
    "alpha": 0.3,
}


def deviations(ours: dict) -> pd.DataFrame:
    """A tidy table of the set-up the paper reports (:data:`SETUP`) beside ``ours`` (same keys; missing keys
    show an em dash), with a ``differs`` column."""
    rows = []
    for key, theirs in SETUP.items():
        mine = ours.get(key, "\u2014")
        rows.append({"setting": key, "paper": str(theirs), "ours": str(mine), "differs": "yes" if str(mine) != str(theirs) else ""})
    return pd.DataFrame(rows).set_index("setting")


def our_setup(model: str, config, *, max_train, max_eval, max_length: int, seeds, alpha: float) -> dict:
    """This run's values for the keys of :data:`SETUP`, from a chapter's parameters and its
    :class:`~mtllib.training.trainer.TrainConfig` (``config``), for :func:`deviations`."""
    from mtllib.runtime import native_cpu_bf16, pick_device

    device = pick_device(config.device)
    if device.type == "cuda":
        precision = "bf16 autocast (CUDA)" if config.bf16 else "fp32 (CUDA)"
    else:
        precision = "bf16 autocast (CPU)" if config.cpu_bf16 and native_cpu_bf16() else "fp32 (CPU)"
    return {"model": f"{model} (6 layers x 12 heads, hidden 384)" if model == "offline" else model,
            "learning rate": config.lr, "epochs": config.epochs, "warm-up": f"linear, {config.warmup:.0%} of steps",
            "sampling": config.sampler, "training examples per task": _per_task(max_train),
            "test examples per task": _per_task(max_eval),
            "max length (tokens)": max_length, "pooling": "[CLS] (BERT's pooler)", "precision": precision,
            "seeds": len(seeds), "alpha": alpha}


def _per_task(size) -> str:
    """A size parameter as text: ``448``, ``all``, or ``tweet-sentiment 900, default 448`` for a per-task map."""
    if isinstance(size, dict):
        return ", ".join(f"{k} {'all' if v is None else v}" for k, v in size.items())
    return "all" if size is None else str(size)
