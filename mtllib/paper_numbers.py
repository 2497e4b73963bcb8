"""Numbers reported in "Interpreting and Exploiting Functional Specialization in Multi-Head Attention under
Multi-task Learning" (BERT-base, alpha = 30%), transcribed from its tables so that the book can show them
beside our measurements and the tests can check our formulas against them. Performance in percent.
"""

import numpy as np
import pandas as pd

TASKS = ["MNLI", "QQP", "QNLI", "AG", "SST-2"]
#: which offline task plays each paper task's role in our multi-task chapters (QQP's role goes to bbc-pair,
#: a pair task the offline model learns at the cpu budget; tweet-pair stays near chance there)
OFFLINE_ROLE = {"MNLI": "bbc-next", "QQP": "bbc-pair", "QNLI": "bbc-headline", "AG": "bbc-topic", "SST-2": "tweet-sentiment"}

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
#: Table 3's D_i row as printed (its QNLI and AG entries are swapped: see mtllib.iap)
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
