"""Each adaptation module against a hand-written reference of its formula ("BERT and PALs" Sec. 3.2-3.3),
with random weights and a padding mask: PALs' attention is softmax(Q K^T / sqrt(d_head)) V per head with padded
keys left out; low-rank is V_D V_E h; LHUC scales by 2 sigmoid(r); top PALs and the top layer stack these."""

import math

import pytest
import torch

from mtllib.modeling.adapters import lhuc, low_rank, pals, top

D_MODEL, SIZE, HEADS, T = 12, 8, 2, 5


def randomise(module, seed=3):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(0.5 * torch.randn(p.shape, generator=g))
    return module


def inputs(width, seed=4):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(2, T, width, generator=g)
    mask = torch.ones(2, T, dtype=torch.long)
    mask[1, -2:] = 0  # the second example's last two positions are padding
    return x, mask


def attention_by_hand(x, mask, wq, wk, wv, heads, scale=None):
    """Concatenated per-head softmax(x Wq^T (x Wk^T)^T / sqrt(d_head) + pad) x Wv^T, no output projection."""
    head_dim = x.shape[-1] // heads
    scale = 1 / math.sqrt(head_dim) if scale is None else scale
    outs = []
    for h in range(heads):
        cols = slice(h * head_dim, (h + 1) * head_dim)
        q, k, v = x @ wq[cols].T, x @ wk[cols].T, x @ wv[cols].T
        scores = q @ k.transpose(1, 2) * scale
        scores = scores.masked_fill(mask[:, None, :] == 0, float("-inf"))
        outs.append(torch.softmax(scores, dim=-1) @ v)
    return torch.cat(outs, dim=-1)


def test_projected_attention_is_per_head_scaled_dot_product_with_padded_keys_left_out():
    attn = randomise(pals.ProjectedAttention(SIZE, HEADS))
    x, mask = inputs(SIZE)
    with torch.no_grad():
        got = attn(x, mask)
        expected = attention_by_hand(x, mask, attn.query.weight, attn.key.weight, attn.value.weight, HEADS)
        unmasked = attention_by_hand(x, torch.ones_like(mask), attn.query.weight, attn.key.weight, attn.value.weight, HEADS)
    torch.testing.assert_close(got, expected)
    # the mask matters (example 1 has padding) and only there (example 0 has none)
    assert not torch.allclose(got[1], unmasked[1])
    torch.testing.assert_close(got[0], unmasked[0])
    # a scale of 1/sqrt(d_s) instead of 1/sqrt(d_head) would give other numbers
    wrong = attention_by_hand(x, mask, attn.query.weight, attn.key.weight, attn.value.weight, HEADS, scale=1 / math.sqrt(SIZE))
    assert not torch.allclose(expected, wrong)


def test_projected_attention_without_a_mask_attends_everywhere():
    attn = randomise(pals.ProjectedAttention(SIZE, HEADS))
    x, mask = inputs(SIZE)
    with torch.no_grad():
        torch.testing.assert_close(attn(x, None), attention_by_hand(x, torch.ones_like(mask), attn.query.weight,
                                                                    attn.key.weight, attn.value.weight, HEADS))


def test_a_pal_is_its_decoder_after_the_layers_attention_after_the_shared_encoder():
    """TS(h) = V_D · MH_l(V_E · h), V_E and V_D shared by the adapted layers, MH_l the layer's own."""
    pal = randomise(pals.PAL(D_MODEL, SIZE, HEADS, layers=[0, 2]))
    h, mask = inputs(D_MODEL)
    with torch.no_grad():
        for layer in (0, 2):
            a = pal.attention[str(layer)]
            z = h @ pal.encode.weight.T
            expected = attention_by_hand(z, mask, a.query.weight, a.key.weight, a.value.weight, HEADS) @ pal.decode.weight.T
            torch.testing.assert_close(pal(h, mask, layer), expected)
        assert not torch.allclose(pal(h, mask, 0), pal(h, mask, 2))
    assert not hasattr(pal, "output"), "PALs have no output projection after MH (Sec. 3.3)"


def test_low_rank_is_the_layers_decoder_after_its_encoder():
    lr = randomise(low_rank.LowRank(D_MODEL, SIZE, layers=[1, 3]))
    h, mask = inputs(D_MODEL)
    with torch.no_grad():
        for layer in ("1", "3"):
            torch.testing.assert_close(lr(h, mask, int(layer)), h @ lr.encode[layer].weight.T @ lr.decode[layer].weight.T)
    assert sum(p.numel() for p in lr.parameters()) == 2 * 2 * D_MODEL * SIZE


def test_lhuc_scales_each_hidden_unit_by_twice_the_sigmoid_of_its_parameter():
    m = randomise(lhuc.LHUC(D_MODEL, layers=[0]))
    y, mask = inputs(D_MODEL)
    r = m.r["0"].detach()
    with torch.no_grad():
        torch.testing.assert_close(m(y, mask, 0), y * 2 / (1 + torch.exp(-r)))
    assert torch.equal(lhuc.LHUC(D_MODEL, layers=[0])(y, mask, 0), y), "r starts at 0: scale 1"


def test_top_pals_stack_normed_residual_attention_then_add_the_decoded_result():
    """z_0 = V_E h; z_{i+1} = LN_i(z_i + MH_i(z_i)); h' = h + V_D z_k."""
    m = randomise(top.TopPALs(D_MODEL, SIZE, HEADS, depth=2))
    h, mask = inputs(D_MODEL)
    with torch.no_grad():
        z = h @ m.encode.weight.T
        for a, norm in zip(m.attention, m.norms):
            s = z + attention_by_hand(z, mask, a.query.weight, a.key.weight, a.value.weight, HEADS)
            z = torch.nn.functional.layer_norm(s, (SIZE,), norm.weight, norm.bias, norm.eps)
        torch.testing.assert_close(m(h, mask), h + z @ m.decode.weight.T)


@pytest.mark.parametrize("pad", [False, True])
def test_the_top_layer_is_a_post_ln_transformer_layer_over_unpadded_keys(pad):
    """LN_2(a + W_2 GELU(W_1 a)), a = LN_1(h + MHA(h)), the encoder's heads; padded keys left out."""
    m = top.TopLayer(D_MODEL, heads=HEADS, ffn=16, dropout=0.1).eval()
    randomise(m, seed=5)
    h, mask = inputs(D_MODEL)
    if not pad:
        mask = torch.ones_like(mask)
    layer = m.layer
    w_in, b_in = layer.self_attn.in_proj_weight, layer.self_attn.in_proj_bias
    wq, wk, wv = w_in.chunk(3)
    bq, bk, bv = b_in.chunk(3)
    with torch.no_grad():
        head_dim = D_MODEL // HEADS
        outs = []
        for i in range(HEADS):
            cols = slice(i * head_dim, (i + 1) * head_dim)
            q, k, v = h @ wq[cols].T + bq[cols], h @ wk[cols].T + bk[cols], h @ wv[cols].T + bv[cols]
            scores = (q @ k.transpose(1, 2) / math.sqrt(head_dim)).masked_fill(mask[:, None, :] == 0, float("-inf"))
            outs.append(torch.softmax(scores, -1) @ v)
        mha = layer.self_attn.out_proj(torch.cat(outs, -1))
        a = layer.norm1(h + mha)
        expected = layer.norm2(a + layer.linear2(torch.nn.functional.gelu(layer.linear1(a))))
        got = m(h, mask)
    # PyTorch's fast path may leave padded *query* rows at zero; the unpadded positions are what the heads read
    keep = mask.bool()
    torch.testing.assert_close(got[keep], expected[keep], atol=1e-5, rtol=1e-5)
