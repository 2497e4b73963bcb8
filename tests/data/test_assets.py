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
