"""Base-layer helpers: the cache folder every cache lives under, and device choice."""

from pathlib import Path

import pytest
import torch

from mtllib import runtime
from mtllib.data import features, silver, split_wheels
from mtllib.training import cache


def test_cache_root_follows_the_environment_and_expands_the_home_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("MTLLIB_CACHE", str(tmp_path / "c"))
    assert runtime.cache_root() == tmp_path / "c"
    monkeypatch.setenv("MTLLIB_CACHE", "~/somewhere")
    assert runtime.cache_root() == Path.home() / "somewhere"
    monkeypatch.delenv("MTLLIB_CACHE")
    assert runtime.cache_root() == Path.home() / ".cache" / "mtllib"


def test_every_cache_lives_in_its_own_folder_under_the_one_root(monkeypatch, tmp_path):
    monkeypatch.setenv("MTLLIB_CACHE", str(tmp_path))
    folders = {"features": features.cache_dir(), "silver": silver.cache_dir(), "assets": split_wheels.asset_root(), "models": cache.cache_dir()}
    assert folders == {name: tmp_path / name for name in folders}


def test_pick_device_refuses_what_is_not_there():
    assert runtime.pick_device("cpu") == torch.device("cpu")
    with pytest.raises(ValueError, match="unknown device"):
        runtime.pick_device("tpu")
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="no CUDA GPU"):
            runtime.pick_device("cuda")
