"""Book layer: the notebook runner behind ``make book`` / ``make run`` (:mod:`mtllib.book.runner`)."""
