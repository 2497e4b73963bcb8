"""Modeling layer: where each architecture keeps its attention (``archs``), head gates on W_O (``gates``,
Eq. 3 of the main paper) and the multi-task model with its heads and checkpoints (``multitask``).

Imports only :mod:`mtllib.runtime`, :mod:`mtllib.fingerprint` and the data layer.
"""
