"""Analysis layer: the papers' formulas as functions of trained models or of result tables — head importance
and pruning masks (Eq. 4), dissociation scores (Eq. 5-7), task similarity (DSE, CRA, AHP), the learnability
gate and the statistics that verdicts use. Nothing here trains a model.
"""
