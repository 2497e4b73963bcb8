import pytest

from mtllib.data import assets


def test_offline_model_folder_is_loadable_config():
    path = assets.offline_model_path()
    assert (path / "config.json").is_file() and (path / "model.safetensors").is_file()


@pytest.mark.parametrize("alias", assets.OFFLINE_MODEL_ALIASES)
def test_resolve_model_maps_aliases_to_bundled_folder(alias):
    assert assets.resolve_model(alias) == str(assets.offline_model_path())


def test_resolve_model_passes_hub_ids_through():
    assert assets.resolve_model("bert-base-uncased") == "bert-base-uncased"


def test_missing_package_gives_install_hint():
    with pytest.raises(FileNotFoundError, match="not installed.*make install"):
        assets._package_dir("no_such_package_xyz", "no-such-package")
