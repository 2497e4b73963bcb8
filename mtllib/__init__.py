"""mtllib: a small library for studying multi-task learning in transformers.

One module per concept of the papers this project reproduces:

- :mod:`mtllib.assets`     where the offline default model and corpora live (PyPI wheels, no network)
- :mod:`mtllib.corpora`    the raw offline corpora (BBC News topics, tweet sentiment) as tables
- :mod:`mtllib.runtime`    seeds, device selection and bf16 autocast
- :mod:`mtllib.book`       the notebook runner behind ``make book`` / ``make run``
"""

__version__ = "0.1.0"
