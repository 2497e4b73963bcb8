"""Analysis layer: the papers' formulas as functions of trained models or of result tables. Nothing here trains
a model.

- ``importance``: head importance and pruning masks (Eq. 4 of the main paper); ``dissociation``: Eq. 5-7;
  ``similarity``: DSE, CRA and AHP between tasks; ``distance``: how far two models' weights are apart;
- ``learnability``: the gate every verdict uses; ``stats``: intervals, claims and verdicts; ``significance``:
  the paired bootstrap test (Dror et al., 2018); ``curves``: a task's variation and late fall over training
  (Appendix A of "BERT and PALs").
"""
