"""Tiny random-initialised models of every supported architecture, built from configs (no download)."""

import torch
from transformers import AutoConfig, AutoModel

from mtllib.modeling.archs import ARCHS

VOCAB = 99
LAYERS, HEADS, HIDDEN = 2, 4, 32

_COMMON = dict(vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
               intermediate_size=37, max_position_embeddings=64)
_KWARGS = {
    "bert": dict(_COMMON, type_vocab_size=2),
    "roberta": dict(_COMMON, type_vocab_size=1, pad_token_id=1),
    "xlm-roberta": dict(_COMMON, type_vocab_size=1, pad_token_id=1),
    "deberta-v2": dict(_COMMON, type_vocab_size=0, relative_attention=True, pos_att_type=["p2c", "c2p"], position_buckets=8, max_relative_positions=16),
    "distilbert": dict(vocab_size=VOCAB, dim=HIDDEN, n_layers=LAYERS, n_heads=HEADS, hidden_dim=37, max_position_embeddings=64),
    "mpnet": dict(_COMMON),
    "openai-gpt": dict(vocab_size=VOCAB, n_embd=HIDDEN, n_layer=LAYERS, n_head=HEADS, n_positions=64),
    "gpt2": dict(vocab_size=VOCAB, n_embd=HIDDEN, n_layer=LAYERS, n_head=HEADS, n_positions=64, bos_token_id=0, eos_token_id=0),
}
MODEL_TYPES = list(ARCHS)
assert set(_KWARGS) == set(MODEL_TYPES), "add a tiny config for every supported architecture"


def tiny_config(model_type: str, **overrides):
    return AutoConfig.for_model(model_type, **{**_KWARGS[model_type], **overrides})


def tiny_encoder(model_type: str, attn_implementation: str = "eager", seed: int = 0):
    torch.manual_seed(seed)
    return AutoModel.from_config(tiny_config(model_type), attn_implementation=attn_implementation).eval()


def supports_sdpa(model_type: str) -> bool:
    try:
        tiny_encoder(model_type, "sdpa")
        return True
    except (ValueError, ImportError):
        return False


def random_batch(batch_size: int = 3, seq_len: int = 7, seed: int = 0, pad_last: int = 0):
    g = torch.Generator().manual_seed(seed)
    input_ids = torch.randint(3, VOCAB, (batch_size, seq_len), generator=g)
    attention_mask = torch.ones(batch_size, seq_len, dtype=torch.long)
    if pad_last:
        attention_mask[-1, seq_len - pad_last:] = 0
        input_ids[-1, seq_len - pad_last:] = 1
    return {"input_ids": input_ids, "attention_mask": attention_mask}


def save_tiny_bert(folder, vocab_size: int, seed: int = 0) -> str:
    """A tiny random BERT encoder saved as a local model folder (for code that loads a model by name)."""
    from transformers import BertConfig, BertModel

    torch.manual_seed(seed)
    BertModel(BertConfig(vocab_size=vocab_size, hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                         intermediate_size=37, max_position_embeddings=64)).save_pretrained(folder)
    return str(folder)


def write_notebook(path, params_src: str, *body_srcs: str) -> None:
    """A small notebook: a title, a cell tagged ``parameters`` and one code cell per body (runner tests)."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells.append(nbformat.v4.new_markdown_cell("# Title"))
    cell = nbformat.v4.new_code_cell(params_src)
    cell.metadata["tags"] = ["parameters"]
    nb.cells.append(cell)
    nb.cells.extend(nbformat.v4.new_code_cell(body) for body in body_srcs)
    nbformat.write(nb, path)
