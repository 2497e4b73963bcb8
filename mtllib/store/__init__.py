"""The results store (:mod:`~mtllib.store.results`), the keys that decide when a stored result is out of date
(:mod:`~mtllib.store.keys`) and what a result records about the run that made it (:mod:`~mtllib.store.records`)."""
