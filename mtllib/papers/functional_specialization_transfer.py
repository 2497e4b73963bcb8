"""Published numbers of few-shot transfer, Sec. 6.3 of "Interpreting and Exploiting Functional Specialization
in Multi-Head Attention under Multi-task Learning": Table 6 (BERT-base models initialised from multi-task
models on GLUE, fine-tuned on k samples of SciTail or IMDB, development sets, mean and sd over 30 seeds; a
star marks an improvement significant at the 5% level) and Table 8 (the 4-shot ablation).

(The three modules ``functional_specialization*`` hold one paper; they are to become one package the next
time chapters 02-08 are re-executed together, since moving them re-hashes every chapter.)
"""

from __future__ import annotations

import pandas as pd

KS = [4, 16, 32, 100]
MODELS = ["MT-DNN", "Ticket-Share", "BERT-base", "BERT-base + IAT"]

_TABLE6 = {  # (target, k): [(mean, sd) per model in MODELS]
    ("SciTail", 4): [(71.83, 6.5), (73.17, 6.1), (69.44, 8.9), (75.66, 4.0)],
    ("SciTail", 16): [(81.24, 3.8), (82.07, 4.0), (79.41, 4.7), (82.11, 3.2)],
    ("SciTail", 32): [(82.59, 2.3), (83.05, 2.4), (81.52, 3.0), (83.82, 1.9)],
    ("SciTail", 100): [(85.90, 2.0), (86.22, 1.5), (85.65, 1.6), (86.60, 1.3)],
    ("IMDB", 4): [(77.65, 4.7), (78.43, 4.0), (72.21, 6.2), (80.50, 2.6)],
    ("IMDB", 16): [(80.76, 3.1), (81.57, 1.6), (78.67, 3.5), (82.03, 1.9)],
    ("IMDB", 32): [(82.98, 0.9), (83.07, 0.6), (82.10, 1.0), (83.33, 0.5)],
    ("IMDB", 100): [(83.65, 0.6), (83.84, 0.5), (83.39, 0.5), (84.08, 0.3)],
}
#: IAT's improvements over BERT-base that the paper marks significant (5% level)
SIGNIFICANT = {("SciTail", 32), ("SciTail", 100), ("IMDB", 4), ("IMDB", 16), ("IMDB", 32), ("IMDB", 100)}

TABLE6 = pd.DataFrame(
    [{"target": t, "k": k, "model": m, "mean": v[0], "sd": v[1]} for (t, k), vals in _TABLE6.items() for m, v in zip(MODELS, vals)]
)

#: Table 8: 4-shot transfer (mean, sd over 30 seeds) from BERT-base multi-task models on GLUE
TABLE8 = pd.DataFrame(
    {"SciTail": [69.44, 72.61, 75.66], "SciTail sd": [8.94, 7.13, 4.02], "IMDB": [72.21, 77.81, 80.50], "IMDB sd": [6.17, 3.76, 2.63]},
    index=pd.Index(["BERT-base", "train random 30% heads", "train the most important 30% heads"], name="model"),
)


def table6_gain(target: str, k: int) -> float:
    """IAT minus BERT-base in Table 6 (points)."""
    rows = TABLE6[(TABLE6.target == target) & (TABLE6.k == k)].set_index("model")["mean"]
    if rows.empty:
        raise KeyError(f"Table 6 has no target {target!r} with k={k}; targets SciTail, IMDB; k in {KS}")
    return round(float(rows["BERT-base + IAT"] - rows["BERT-base"]), 2)


def table8_gain(target: str, over: str) -> float:
    """A Table 8 difference (points): IAT minus ``over`` ("BERT-base" or "train random 30% heads"), or random
    heads minus BERT-base when ``over`` is ``"random over BERT-base"``."""
    t = TABLE8[target]
    if over == "random over BERT-base":
        return round(float(t["train random 30% heads"] - t["BERT-base"]), 2)
    return round(float(t["train the most important 30% heads"] - t[over]), 2)
