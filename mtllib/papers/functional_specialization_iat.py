"""Published numbers of Important Attention-head Training, Sec. 6.3 and Appendix F of "Interpreting and
Exploiting Functional Specialization in Multi-Head Attention under Multi-task Learning" (the interpretation
half of the paper, Sec. 6.1-6.2, is :mod:`mtllib.papers.functional_specialization`).

Figures 8-10 give their values only as plots; the chapters show the shape they report in words.
"""

from __future__ import annotations

import pandas as pd

#: Table 7: BERT-base, GLUE dev, delta = 10%, average over 9 tasks (mean, sd over the paper's seeds) and the
#: number of the 9 tasks each variant improved over the multi-task baseline
TABLE7 = pd.DataFrame(
    {"average": [82.64, 82.23, 82.71, 83.41], "sd": [0.09, 0.46, 0.10, 0.20], "tasks improved": [None, 3, 6, 8]},
    index=pd.Index(["MTL", "prune the least important 30%", "train random 30%", "train the most important 30% (IAT)"], name="variant"),
)

#: Table 13, BERT-base rows: GLUE dev average (mean, sd) without and with IAT, by sampling method
TABLE13_BERT_BASE = pd.DataFrame(
    {"MTL": [81.6, 82.6], "MTL sd": [0.3, 0.1], "IAT": [82.4, 83.4], "IAT sd": [0.2, 0.2]},
    index=pd.Index(["proportional", "annealed"], name="sampling"),
)

#: Table 5 (GLUE test, annealed sampling) and Table 12 (proportional): average and CoLA of the five multi-task
#: models without and with IAT
MODELS = ["TinyBERT", "BERT-base", "BERT-large", "RoBERTa-base", "DeBERTaV3-base"]
TABLE5 = pd.DataFrame({"MTL average": [77.1, 79.8, 81.9, 82.7, 85.7], "IAT average": [77.9, 80.6, 82.6, 83.5, 86.4],
                       "MTL CoLA": [35.2, 49.8, 56.8, 55.3, 63.1], "IAT CoLA": [39.3, 51.6, 60.0, 59.9, 67.2]},
                      index=pd.Index(MODELS, name="model"))
TABLE12 = pd.DataFrame({"MTL average": [76.0, 78.3, 81.2, 82.1, 85.1], "IAT average": [77.0, 78.9, 81.7, 82.7, 85.8]},
                       index=pd.Index(MODELS, name="model"))

#: Sec. 6.3's quoted gains: the average over five models (Table 5), on CoLA, the smallest task (Table 5), and
#: Appendix F's with proportional sampling (Table 12); ``tests/papers`` checks them against the tables
AVERAGE_GAIN_TABLE5 = 0.76
COLA_GAIN = 3.6
AVERAGE_GAIN_TABLE12 = 0.68


def table7_effect(variant: str) -> float:
    """A Table 7 row's average minus the multi-task baseline's (points)."""
    if variant not in TABLE7.index:
        raise KeyError(f"Table 7 has no row {variant!r}; rows: {', '.join(TABLE7.index)}")
    return round(float(TABLE7.loc[variant, "average"] - TABLE7.loc["MTL", "average"]), 2)


#: the GLUE tasks' training-set sizes (GLUE benchmark paper, Wang et al. 2019, Table 1; WNLI left out), against
#: which the GLUE-like chapter states the span of its own sizes
GLUE_TRAIN_SIZES = {"cola": 8_500, "sst2": 67_000, "mrpc": 3_700, "stsb": 7_000, "qqp": 364_000, "mnli": 393_000,
                    "qnli": 105_000, "rte": 2_500}
#: Sec. 6.3: "the four small datasets" on which IAT gains "in most cases", CoLA the most
SMALL_GLUE = ("cola", "mrpc", "rte", "stsb")
#: the multi-task table of each sampling schedule: Table 5 (annealed, the paper's main setting) and Table 12
#: (proportional), with the average gain Sec. 6.3 and Appendix F quote for it
TABLES_BY_SAMPLER = {"annealed": ("Table 5", TABLE5, AVERAGE_GAIN_TABLE5), "proportional": ("Table 12", TABLE12, AVERAGE_GAIN_TABLE12)}
