"""Data layer: the offline assets and corpora, the task registry (one vocabulary of task kinds), how each
task is built (offline from BBC News and tweets, or from the hub), tokenised features and metrics.

Imports nothing from the layers above (modeling, analysis, training, papers, experiments, book).
"""
