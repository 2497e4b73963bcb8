"""Adaptation modules of "BERT and PALs": attach/detach leave the encoder untouched, a zeroed contribution is
the identity, routing of mixed batches, parameter counts by hand, Table 1's budget, bad input."""

import pytest
import torch
from transformers import BertConfig

from mtllib.data.kinds import TaskSpec
from mtllib.modeling import adapters as ad
from mtllib.modeling.adapters.base import OUTPUT_NORM, blocks, output_norm
from mtllib.modeling.multitask import MultiTaskModel
from tiny import HIDDEN, LAYERS, random_batch, tiny_config, tiny_encoder

ENCODERS = list(OUTPUT_NORM)
SMALL = {"pals": dict(size=8, heads=4), "low_rank": dict(size=6), "lhuc": {}, "top_pals": dict(size=8, heads=4, top_layers=2),
         "top_layer": {}}
TASKS = [TaskSpec("a", "classification", 2), TaskSpec("b", "classification", 3)]


def hidden(model, batch, **route):
    with torch.no_grad():
        return model(**batch, **route).last_hidden_state


def randomise(module, seed=1):
    """Give every adapter parameter (zero-initialised decoders included) a non-trivial value."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(0.3 * torch.randn(p.shape, generator=g))


@pytest.mark.parametrize("model_type", ENCODERS)
@pytest.mark.parametrize("method", list(SMALL))
def test_attach_then_detach_leaves_the_encoder_bit_identical(model_type, method):
    enc, batch = tiny_encoder(model_type), random_batch(pad_last=2)
    before = hidden(enc, batch)
    attached = ad.attach(enc, ad.AdapterConfig(method, **SMALL[method]), tasks=["a", "b"])
    randomise(attached.module)
    with attached.route(task="a", attention_mask=batch["attention_mask"]):
        changed = hidden(enc, batch)
    assert not torch.equal(changed, before), "a randomised adapter must change the encoder's output"
    attached.detach()
    assert torch.equal(hidden(enc, batch), before)
    assert not hasattr(enc, "adapters") and not hasattr(enc.config, "mtllib_adapter")
    assert all(not m._forward_hooks and not m._forward_pre_hooks for m in enc.modules())


@pytest.mark.parametrize("model_type", ENCODERS)
@pytest.mark.parametrize("method", ["pals", "low_rank", "lhuc", "top_pals"])
def test_a_fresh_zero_initialised_adapter_is_the_identity(model_type, method):
    """With ``init="zero"`` V_D starts at zero (PALs, low-rank, top PALs); LHUC's scale starts at 1: attaching
    changes nothing yet."""
    enc, batch = tiny_encoder(model_type), random_batch(pad_last=2)
    before = hidden(enc, batch)
    zero = {} if method == "lhuc" else {"init": "zero"}
    attached = ad.attach(enc, ad.AdapterConfig(method, **SMALL[method], **zero), tasks=["a"])
    with attached.route(task="a", attention_mask=batch["attention_mask"]):
        assert torch.equal(hidden(enc, batch), before)


@pytest.mark.parametrize("connection", ["parallel", "serial"])
def test_low_rank_layer_adds_its_map_where_the_paper_puts_it(connection):
    """Parallel: LN_out(s + V_D V_E h) with h the block's input and s the residual sum the output LayerNorm
    receives; serial: y + V_D V_E y with y the block's output. Checked on the last block, by hand."""
    enc, batch = tiny_encoder("bert"), random_batch()
    last = blocks(enc)[-1]
    norm = output_norm(enc, last)
    seen = {}
    h1 = last.register_forward_pre_hook(lambda _, args, kwargs: seen.__setitem__("h", args[0] if args else kwargs["hidden_states"]), with_kwargs=True)
    h2 = norm.register_forward_pre_hook(lambda _, args: seen.__setitem__("s", args[0]))
    plain = hidden(enc, batch)
    h1.remove(), h2.remove()
    attached = ad.attach(enc, ad.AdapterConfig("low_rank", size=5, placement="top", connection=connection), tasks=["a"])
    randomise(attached.module)
    lr = attached.module["a"]
    i = str(LAYERS - 1)
    with attached.route(task="a"), torch.no_grad():
        got = enc(**batch).last_hidden_state
        if connection == "parallel":
            s = seen["s"] + lr.decode[i](lr.encode[i](seen["h"]))
            expected = torch.nn.functional.layer_norm(s, norm.normalized_shape, norm.weight, norm.bias, norm.eps)
        else:
            expected = plain + lr.decode[i](lr.encode[i](plain))
    torch.testing.assert_close(got, expected)


@pytest.mark.parametrize("model_type", ENCODERS)
@pytest.mark.parametrize("method", list(SMALL))
def test_a_mixed_batch_routes_each_example_to_its_tasks_adapter(model_type, method):
    enc = tiny_encoder(model_type)
    model = MultiTaskModel(enc, TASKS).eval()
    attached = ad.attach(model, ad.AdapterConfig(method, **SMALL[method]))
    randomise(attached.module)
    batch = random_batch(batch_size=4, pad_last=2)
    ids = torch.tensor([1, 0, 1, 0])
    with torch.no_grad():
        mixed = model(**batch, task_ids=ids)
        for name, rows in mixed.rows.items():
            alone = model(**{k: v[rows] for k, v in batch.items()}, task=name)
            torch.testing.assert_close(mixed.logits[name], alone.logits[name], atol=1e-5, rtol=1e-5)
        a = model(**batch, task="a").logits["a"]
        b_as_a = model.heads["a"](model._pool(hidden_with(model, batch, "b"), batch["attention_mask"]))
    assert not torch.allclose(a, b_as_a), "the two tasks' adapters must differ"


def hidden_with(model, batch, task):
    """The (adapted) encoder's final hidden states when ``model`` runs ``batch`` as ``task``."""
    out = {}
    handle = model.encoder.register_forward_hook(lambda _, __, o: out.__setitem__("h", o.last_hidden_state))
    with torch.no_grad():
        model(**batch, task=task)
    handle.remove()
    return out["h"]


def test_only_the_batch_tasks_adapter_gets_gradients():
    model = MultiTaskModel(tiny_encoder("bert"), TASKS)
    attached = ad.attach(model, ad.AdapterConfig("pals", size=8, heads=4))
    randomise(attached.module)
    batch = random_batch(batch_size=3)
    model(**batch, task="a", labels=torch.tensor([0, 1, 0])).loss.backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in attached.module["a"].parameters())
    assert all(p.grad is None for p in attached.module["b"].parameters())
    assert any(n.startswith("adapters.a.") for n, _ in model.named_parameters())


def test_hand_counts_for_a_tiny_config():
    cfg = tiny_config("bert")
    d, f, L = HIDDEN, 37, LAYERS
    count = lambda method, **kw: ad.added_parameters(cfg, ad.AdapterConfig(method, **kw))  # noqa: E731
    assert count("pals", size=8, heads=4) == 2 * d * 8 + L * 3 * 8 * 8
    assert count("pals", size=8, heads=4, placement="final_half") == 2 * d * 8 + (L // 2) * 3 * 8 * 8
    assert count("low_rank", size=6) == L * 2 * d * 6
    assert count("lhuc") == L * d
    assert count("top_pals", size=8, heads=4, top_layers=3) == 2 * d * 8 + 3 * (3 * 8 * 8 + 2 * 8)
    assert count("top_layer") == (4 * d * d + 4 * d) + (2 * d * f + f + d) + 2 * 2 * d
    assert count("shared") == 0
    assert count("separate") == sum(p.numel() for p in tiny_encoder("bert").parameters())


def test_table_1_budget_for_bert_base_with_eight_tasks():
    """PALs at d_s = 204 and low-rank layers at d_s = 100 both give 1.13x BERT-base's parameters."""
    cfg = BertConfig()
    assert round(ad.parameter_multiplier(cfg, "pals", 8), 2) == 1.13
    assert round(ad.parameter_multiplier(cfg, "low_rank", 8), 2) == 1.13
    assert ad.parameter_multiplier(cfg, "shared", 8) == 1.0
    assert ad.parameter_multiplier(cfg, "separate", 8) == 8.0


@pytest.mark.parametrize("kwargs, match", [
    (dict(method="adapterfusion"), "unknown adaptation method"),
    (dict(method="pals", size=10, heads=4), "multiple of heads"),
    (dict(method="pals", size=2, heads=4), "multiple of heads"),
    (dict(method="low_rank", size=0), "positive integer"),
    (dict(method="low_rank", size=4, placement=[0, LAYERS]), r"distinct layers in \[0, 2\)"),
    (dict(method="low_rank", size=4, placement="middle"), "unknown placement"),
    (dict(method="lhuc", connection="serial"), "serial connection applies"),
    (dict(method="shared"), "baseline"),
    (dict(method="pals", size=8, heads=4, init="xavier"), "unknown init"),
])
def test_bad_adapter_configs_fail_before_the_model_is_touched(kwargs, match):
    enc = tiny_encoder("bert")
    with pytest.raises(ad.AdapterError, match=match):
        ad.attach(enc, ad.AdapterConfig(**kwargs), tasks=["a"])
    assert not hasattr(enc, "adapters") and all(not m._forward_pre_hooks for m in enc.modules())


def test_tasks_must_be_the_models_and_attaching_twice_is_refused():
    model = MultiTaskModel(tiny_encoder("bert"), TASKS)
    with pytest.raises(ad.AdapterError, match=r"no task\(s\) \['c'\]"):
        ad.attach(model, ad.AdapterConfig("lhuc"), tasks=["a", "c"])
    with pytest.raises(ad.AdapterError, match="a bare encoder has no task list"):
        ad.attach(tiny_encoder("bert"), ad.AdapterConfig("lhuc"))
    ad.attach(model, ad.AdapterConfig("lhuc"))
    with pytest.raises(ad.AdapterError, match="already has adapters"):
        ad.attach(model, ad.AdapterConfig("lhuc"))


def test_within_layer_adapters_refuse_a_pre_ln_decoder_and_an_unrouted_call():
    with pytest.raises(ad.AdapterError, match="post-LN"):
        ad.attach(tiny_encoder("gpt2"), ad.AdapterConfig("lhuc"), tasks=["a"])
    enc = tiny_encoder("bert")
    ad.attach(enc, ad.AdapterConfig("lhuc"), tasks=["a"])
    with pytest.raises(ad.AdapterError, match="without a task"):
        enc(**random_batch())


@pytest.mark.parametrize("batching", ["homogeneous", "heterogeneous"])
def test_the_trainer_trains_attached_adapters_and_a_frozen_encoder_stays_put(batching, tmp_path, monkeypatch):
    """PALs attached to a multi-task model train through :func:`mtllib.training.trainer.train` (one batch one
    task, or mixed batches), on a sequence-level, a token-level and a span task; with the encoder frozen,
    only the adapters and heads move (the adapter-only regime of Houlsby et al., cited in Sec. 2.2)."""
    from mtllib.data.features import load_tokenizer, prepare
    from mtllib.training.trainer import TrainConfig, train

    monkeypatch.setenv("MTLLIB_CACHE", str(tmp_path))
    tokenizer = load_tokenizer("offline")
    data = prepare(["bbc-topic", "bbc-punct", "bbc-cloze"], tokenizer, max_train=24, max_eval=8, max_length=48)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=37, max_position_embeddings=64)
    model = MultiTaskModel.from_config(config, [d.task.spec() for d in data.values()])
    attached = ad.attach(model, ad.AdapterConfig("pals", size=8, heads=4))
    encoder_before = {k: v.clone() for k, v in model.encoder.state_dict().items()}
    adapters_before = {k: v.clone() for k, v in attached.module.state_dict().items()}
    train(model, data, TrainConfig(epochs=1, batch_size=8, lr=5e-3, batching=batching, freeze_encoder=True), progress=False)
    assert all(torch.equal(v, model.encoder.state_dict()[k]) for k, v in encoder_before.items())
    moved = {k.split(".")[0] for k, v in attached.module.state_dict().items() if not torch.equal(v, adapters_before[k])}
    assert moved == set(data), f"every task's adapter trains; moved: {moved}"


def test_size_for_budget_gives_back_the_papers_sizes_for_bert_base():
    """At BERT-base's 1.13x with 8 tasks (Table 1), the largest sizes are the paper's, up to rounding:
    PALs 204 (12 heads) and low-rank 100 both sit just under 1.135x."""
    cfg = BertConfig()
    pals = ad.size_for_budget(cfg, "pals", ad.parameter_multiplier(cfg, "pals", 8), 8)
    assert pals == 204
    assert ad.size_for_budget(cfg, "low_rank", ad.parameter_multiplier(cfg, "low_rank", 8), 8) == 100
    small = tiny_config("bert")
    s = ad.size_for_budget(small, "pals", 1.5, 2, heads=4)
    assert s % 4 == 0 and ad.parameter_multiplier(small, "pals", 2, size=s, heads=4) <= 1.5 < ad.parameter_multiplier(small, "pals", 2, size=s + 4, heads=4)
    with pytest.raises(ad.AdapterError, match="no size"):
        ad.size_for_budget(cfg, "lhuc", 1.1, 8)


def test_the_default_init_draws_every_matrix_from_berts_normal_and_acts_at_once():
    enc, batch = tiny_encoder("bert"), random_batch()
    before = hidden(enc, batch)
    attached = ad.attach(enc, ad.AdapterConfig("pals", size=64, heads=4), tasks=["a"])
    pal = attached.module["a"]
    for w in (pal.encode.weight, pal.decode.weight, pal.attention["0"].query.weight):
        assert abs(w.std().item() - 0.02) < 0.003 and abs(w.mean().item()) < 0.003
    with attached.route(task="a"):
        assert not torch.equal(hidden(enc, batch), before)


@pytest.mark.parametrize("method", ["pals", "low_rank", "top_pals"])
def test_a_multiple_choice_batch_reads_each_choice_with_its_own_padding_mask(method):
    """An adapted model flattens a [B, C, T] batch to B * C sequences, and so must the mask its attention
    adapters read: each choice's logit equals the same choice run alone, with only its own padding."""
    model = MultiTaskModel(tiny_encoder("bert"), [TaskSpec("a", "classification", 2), TaskSpec("mc", "multiple_choice")]).eval()
    randomise(ad.attach(model, ad.AdapterConfig(method, **SMALL[method])).module)
    batch = random_batch(batch_size=6, seq_len=7, pad_last=3)
    batch["attention_mask"][0, 5:] = 0
    choices = {k: v.view(2, 3, 7) for k, v in batch.items()}
    with torch.no_grad():
        logits = model(**choices, task="mc").logits["mc"]
        for b in range(2):
            for c in range(3):
                real = int(choices["attention_mask"][b, c].sum())
                alone = model(**{k: v[b, c, :real][None, None] for k, v in choices.items()}, task="mc").logits["mc"]
                torch.testing.assert_close(alone[0, 0], logits[b, c], atol=1e-5, rtol=1e-5)
