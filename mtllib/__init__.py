"""mtllib: a small library for studying multi-task learning in transformers.

One module per concept of the papers this project reproduces:

- :mod:`mtllib.assets`     where the offline default model and corpora live (PyPI wheels, no network)
- :mod:`mtllib.corpora`    the raw offline corpora (BBC News topics, tweet sentiment) as tables
- :mod:`mtllib.runtime`    seeds, device selection and bf16 autocast
- :mod:`mtllib.archs`      one table mapping each supported architecture to its attention modules
- :mod:`mtllib.gates`      head gates xi_h (Eq. 3 of the main paper), as hooks on W_O
- :mod:`mtllib.models`     a shared encoder with one output head per task; heterogeneous batches
- :mod:`mtllib.importance` head importance I_h (Eq. 4) and the pruning masks of IAP (Sec. 4.1)
- :mod:`mtllib.tasks`      the task interface and registry (offline suite and the papers' datasets)
- :mod:`mtllib.offline_suite` how each offline task is built from the corpora (incl. AG-Pair, App. E)
- :mod:`mtllib.paper_suite` the papers' datasets through ``datasets.load_dataset``
- :mod:`mtllib.features`   tokenisation to model features, dynamic padding, span decoding
- :mod:`mtllib.metrics`    task metrics (scikit-learn, scipy, seqeval; SQuAD EM/F1)
- :mod:`mtllib.samplers`   task samplers: proportional, temperature, annealed (Eq. 8), round-robin, ...
- :mod:`mtllib.iat`        Important Attention-head Training (Sec. 4.2), safe under AdamW
- :mod:`mtllib.train`      the multi-task trainer, evaluation and few-shot transfer
- :mod:`mtllib.iap`        Important Attention-head Pruning: dissociation scores (Eq. 5-7), experiments
- :mod:`mtllib.paper_numbers` the paper's reported tables, for comparison and for testing our formulas
- :mod:`mtllib.book`       the notebook runner behind ``make book`` / ``make run``
"""

__version__ = "0.1.0"
