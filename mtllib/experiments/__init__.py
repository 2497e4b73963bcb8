"""Experiments layer: the code that trains and evaluates what a chapter needs, built from the layers below.

- ``iap``: important attention-head pruning runs (main paper Sec. 6.1-6.2); ``similarity``: task models for the
  similarity measures; ``iat``: IAT and its ablations (Sec. 6.3); ``transfer``: few-shot transfer (Tables 6, 8);
- ``adapters``: models with the adaptation methods of "BERT and PALs"; ``sampling``: one model per sampling
  schedule; ``curves``: each adapted model's dev score per epoch;
- ``transferability``: pre-finetuning on combinations of task groups, then unseen targets;
- ``sweep``: independent runs fanned out over devices or a Ray cluster.
"""
