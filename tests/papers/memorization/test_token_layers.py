"""The random embedding / attention / transformer layers of §5.1: formulas, seeds, and what they do to
the assumptions (shapes are distinct primes-ish so an axis mix-up fails)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnlab.errors import ConfigError
from attnlab.papers.memorization.assumptions import assumption1_test, assumption2_test
from attnlab.papers.memorization.token_layers import (
    RandomAttentionLayer,
    RandomEmbedding,
    RandomTransformerLayer,
    random_layer_outputs,
    sinusoidal_rank,
)
from tolerances import FLOAT64, RANK_RTOL

T, n, d, H, V = 37, 7, 22, 2, 50


def _ids(seed=0):
    ids = np.random.default_rng(seed).integers(3, V, size=(T, n))
    ids[:, 0] = 1  # the [CLS] token at position 0 of every example
    return ids


def _sinusoid(n_pos, dim):
    t = np.arange(n_pos)[:, None]
    w = 10000.0 ** (-np.arange(0, dim, 2) / dim)  # (dim/2,)
    P = np.zeros((n_pos, dim))
    P[:, 0::2], P[:, 1::2] = np.sin(t * w), np.cos(t * w)
    return P


def test_embedding_is_table_lookup_plus_sinusoid():
    emb = RandomEmbedding(V, d, seed=3)
    ids = torch.as_tensor(_ids())
    out = emb(ids).detach().numpy()  # (T, n, d)
    expected = emb.W_emb.detach().numpy()[ids.numpy()] + _sinusoid(n, d)[None]
    assert out.dtype == np.float64 and out.shape == (T, n, d)
    assert np.abs(out - expected).max() < FLOAT64
    assert abs(emb.W_emb.detach().std().item() - 1.0) < 0.05  # N(0, 1) table, 1100 entries


def test_layers_are_seeded_and_leave_the_global_generator_alone():
    state = torch.get_rng_state()
    a = random_layer_outputs(_ids(), "transformer", vocab_size=V, d=d, n_heads=H, seed=5)
    b = random_layer_outputs(_ids(), "transformer", vocab_size=V, d=d, n_heads=H, seed=5)
    c = random_layer_outputs(_ids(), "transformer", vocab_size=V, d=d, n_heads=H, seed=6)
    assert torch.equal(state, torch.get_rng_state())
    assert np.array_equal(a.E, b.E) and np.abs(a.E - c.E).max() > 0.1
    assert np.array_equal(a.e, a.E[:, 0])


def test_attention_layer_is_skip_plus_attention_of_the_normalised_input():
    layer = RandomAttentionLayer(d, H, seed=2)
    X = torch.randn(3, n, d, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    # by hand: LayerNorm (biased variance, eps 1e-5), softmax(Q K^T / sqrt(d_head)) V per head, then W_O
    Z = (X - X.mean(-1, keepdim=True)) / torch.sqrt(X.var(-1, unbiased=False, keepdim=True) + 1e-5)
    a = layer.attn
    Q = torch.einsum("bnd,hdk->bhnk", Z, a.W_Q) + a.b_Q[:, None]  # (3, H, n, d/H)
    K = torch.einsum("bnd,hdk->bhnk", Z, a.W_K) + a.b_K[:, None]
    Vv = torch.einsum("bnd,hdk->bhnk", Z, a.W_V) + a.b_V[:, None]
    P = torch.softmax(Q @ K.transpose(-1, -2) / (d // H) ** 0.5, dim=-1)  # (3, H, n, n)
    out = X + torch.einsum("bhnk,hkd->bnd", P @ Vv, a.W_O) + a.b_O
    with torch.no_grad():
        assert (layer(X) - out).abs().max().item() < FLOAT64


def test_transformer_layer_adds_the_feed_forward():
    X = torch.randn(2, n, d, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    block = RandomTransformerLayer(d, H, seed=2)
    attn = RandomAttentionLayer(d, H, seed=2)  # same seed: the same attention weights are drawn first
    with torch.no_grad():
        u = attn(X)
        b = block.block
        Z = torch.nn.functional.layer_norm(u, (d,), b.norm2.gamma, b.norm2.beta, 1e-5)
        ffn = torch.relu(Z @ b.ffn.W_1 + b.ffn.b_1) @ b.ffn.W_2 + b.ffn.b_2
        assert (block(X) - (u + ffn)).abs().max().item() < FLOAT64
    assert b.ffn.W_1.shape == (d, 4 * d)


def test_one_attention_layer_gives_assumption1():
    # Table 1: at the embedding every query is the same [CLS] vector (Kruskal rank 1); after one
    # random attention layer with skip the queries differ and n-subsets have rank n
    emb = random_layer_outputs(_ids(), "embedding", vocab_size=V, d=d, n_heads=H)
    att = random_layer_outputs(_ids(), "attention", vocab_size=V, d=d, n_heads=H)
    assert np.abs(emb.e - emb.e[0]).max() == 0.0
    assert assumption1_test(emb.e, n, trials=300).fraction_full_rank_ == 0.0
    a1 = assumption1_test(att.e, n, trials=300)
    assert a1.fraction_full_rank_ == 1.0 and a1.min_rel_sigma_ > 1e-4
    assert assumption2_test(emb.E).fraction_full_rank_ == 1.0  # n = 7 distinct positions, d = 22


def test_sinusoidal_rank_is_numerically_deficient_for_long_contexts():
    def numpy_rank(n_pos, dim):
        s = np.linalg.svd(_sinusoid(n_pos, dim), compute_uv=False)
        return int((s > RANK_RTOL * s[0]).sum())

    assert sinusoidal_rank(16, 384) == numpy_rank(16, 384) == 16
    r64 = sinusoidal_rank(64, 384)
    assert r64 == numpy_rank(64, 384) and r64 < 64  # "inherently full rank" (§4.4) fails numerically
    assert sinusoidal_rank(64, 384, rtol=1e-20) == 64


@pytest.mark.parametrize("kw, needle", [
    (dict(layer="mlp"), "unknown layer 'mlp'"),
    (dict(d=21), "d=21 must be divisible by n_heads=2"),
    (dict(seed=-1), r"seed must be an integer in \[0, 4294967295\], got -1"),
    (dict(ids=np.zeros(5, dtype=int)), r"\(T, n\) array"),
    (dict(ids=np.full((2, 3), V)), "token ids must be int64 in"),
])
def test_bad_input_raises(kw, needle):
    args = dict(ids=_ids(), layer="attention", vocab_size=V, d=d, n_heads=H, seed=0)
    args.update(kw)
    ids = args.pop("ids")
    with pytest.raises(ConfigError, match=needle):
        random_layer_outputs(ids, **args)
