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


# --- hub datasets in their own layouts ----------------------------------------------------------------------
def hub_rows(name):
    """A few rows of paper task ``name``'s dataset in its own column layout, as the hub serves it (the local
    fixtures of the loaders; ``tests/data/test_check_sources.py`` pins their columns to the source table)."""
    squad_answers = {"text": ["Denver Broncos", "Broncos"], "answer_start": [4, 11]}
    glue_pair = lambda a, b, label: {a: "The cat sat.", b: "A cat was sitting.", "label": label, "idx": 0}  # noqa: E731
    return {
        "cola": [{"sentence": "The book was read.", "label": 1, "idx": 0}, {"sentence": "Book the read was.", "label": 0, "idx": 1}],
        "sst2": [{"sentence": "a gorgeous film", "label": 1, "idx": 0}, {"sentence": "dull", "label": 0, "idx": 1}],
        "mrpc": [glue_pair("sentence1", "sentence2", 1), glue_pair("sentence1", "sentence2", 0)],
        "qqp": [glue_pair("question1", "question2", 1), glue_pair("question1", "question2", 0)],
        "stsb": [glue_pair("sentence1", "sentence2", 4.2), glue_pair("sentence1", "sentence2", 0.5)],
        "mnli": [glue_pair("premise", "hypothesis", 0), glue_pair("premise", "hypothesis", 2)],
        "qnli": [glue_pair("question", "sentence", 0), glue_pair("question", "sentence", 1)],
        "rte": [glue_pair("sentence1", "sentence2", 0), glue_pair("sentence1", "sentence2", 1)],
        "ag_news": [{"text": f"news {i}", "label": i % 4} for i in range(8)],
        "ag_pair": [{"text": f"news {i}", "label": i % 4} for i in range(40)],
        "imdb": [{"text": "great", "label": 1}, {"text": "awful", "label": 0}],
        "scitail": [{"premise": "Cells divide.", "hypothesis": "Cells split.", "label": "entails"}, {"premise": "Cells divide.", "hypothesis": "Rocks melt.", "label": "neutral"}],
        "boolq": [{"question": "is it", "passage": "It is.", "idx": 0, "label": 1}, {"question": "is it", "passage": "No.", "idx": 1, "label": 0}],
        "cb": [{"premise": "p", "hypothesis": "h", "idx": 0, "label": 2}, {"premise": "p", "hypothesis": "h", "idx": 1, "label": 0}],
        "copa": [{"premise": "The man fell.", "choice1": "He slipped.", "choice2": "He sang.", "question": "cause", "idx": 0, "label": 0}],
        "wic": [{"word": "bank", "sentence1": "a river bank", "sentence2": "a bank loan", "start1": 8, "start2": 2, "end1": 12, "end2": 6, "idx": 0, "label": 0}],
        "conll2003": [{"id": "0", "tokens": ["EU", "rejects", "German", "call"], "pos_tags": [22, 42, 16, 21], "chunk_tags": [11, 21, 11, 12], "ner_tags": [3, 0, 7, 0]}],
        "wnut_17": [{"id": "0", "tokens": ["@paul", "in", "London"], "ner_tags": [0, 0, 7]}],
        "squad": [{"id": "q1", "title": "SB50", "context": "The Denver Broncos won.", "question": "Who won?", "answers": squad_answers}],
        "swag": [{"video-id": "anetv_jkn6uvmqwh4", "fold-ind": "3416", "startphrase": "Members of the procession walk down the street holding small horn brass instruments. A drum line",
                  "sent1": "Members of the procession walk down the street holding small horn brass instruments.", "sent2": "A drum line",
                  "gold-source": "gold", "ending0": "passes by walking down the street playing their instruments.", "ending1": "has heard approaching them.",
                  "ending2": "arrives and they're outside dancing and asleep.", "ending3": "turns the lead singer watches the performance.", "label": 0}],
    }[name]


# --- a small multi-task run (the data-parallel tests and their torchrun worker) -----------------------------
DDP_TASKS = ["bbc-topic", "tweet-sentiment"]  # classification: a per-example mean loss splits exactly across processes


def ddp_data():
    from mtllib.data.features import load_tokenizer, prepare

    tokenizer = load_tokenizer("offline")
    return tokenizer, prepare(DDP_TASKS, tokenizer, max_train=48, max_eval=24, max_length=48)


def ddp_model(tokenizer, data, seed: int = 0):
    """A tiny random-init BERT multi-task model without dropout (so processes and a single run can agree)."""
    from transformers import BertConfig

    from mtllib.modeling.multitask import MultiTaskModel

    torch.manual_seed(seed)
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                        intermediate_size=37, max_position_embeddings=64, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    return MultiTaskModel.from_config(config, [data[n].task.spec() for n in data])


def ddp_config(**changes):
    from mtllib.training.trainer import TrainConfig

    return TrainConfig(**{"epochs": 2, "batch_size": 8, "lr": 5e-3, **changes})


def executed_copy(tmp_path, name, glued: dict, record: dict | None) -> None:
    """An executed copy ``tmp_path/book/<name>.ipynb`` whose outputs are what ``myst_nb.glue`` writes when
    :func:`mtllib.book.results.glue_frame` glues each of ``glued`` (``{name: frame}``), with ``record`` as its
    run record (none when ``None``)."""
    from mtllib.book import results

    values = []
    for key, frame in glued.items():
        results.glue_frame(key, frame, glue=lambda k, v, display=False: values.append((k, v)))
    glued_copy(tmp_path, name, values, record)


def glued_copy(tmp_path, name, values: list, record: dict | None) -> None:
    """An executed copy ``tmp_path/book/<name>.ipynb`` whose outputs are what ``myst_nb.glue(key, value,
    display=False)`` records for each string of ``values`` (``[(key, value), ...]``), with ``record`` as its run
    record (none when ``None``)."""
    import nbformat

    outputs = [nbformat.v4.new_output("display_data", data={"application/papermill.record/text/plain": repr(value)},
                                      metadata={"scrapbook": {"mime_prefix": "application/papermill.record/", "name": key}})
               for key, value in values]
    cell = nbformat.v4.new_code_cell("glue(...)", outputs=outputs)
    nb = nbformat.v4.new_notebook(cells=[cell], metadata={"mtllib": record} if record else {})
    (tmp_path / "book").mkdir(exist_ok=True)
    nbformat.write(nb, tmp_path / "book" / f"{name}.ipynb")


class PreparedSizes:
    """A prepared task (:class:`mtllib.data.features.TaskData`) where only its split sizes matter: ``features``
    holds lists of ``train``, ``validation`` and ``test`` items."""

    def __init__(self, train: int, validation: int = 3, test: int = 3):
        self.features = {"train": [0] * train, "validation": [0] * validation, "test": [0] * test}


def write_files(root, files: dict):
    """``files`` (``{relative path: text}``) written under ``root`` (a throw-away package, say); returns ``root``."""
    from pathlib import Path

    root = Path(root)
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root
