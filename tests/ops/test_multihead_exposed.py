"""softmax_heads_exposed: the explicit path of every head with its scores and pattern passed through maps
(grouped-query heads, a dense mask and key padding; float64, distinct sizes)."""

import torch

from attnlab.ops.multihead import softmax_heads_exposed
from attnlab.ops.softmax import softmax_attention
from tolerances import FLOAT64

B, H, H_KV, N_Q, N_K, D, D_V = 2, 6, 3, 5, 7, 4, 11


def _qkv(seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(B, H, N_Q, D, generator=g, dtype=torch.float64)
    k = torch.randn(B, H_KV, N_K, D, generator=g, dtype=torch.float64)
    v = torch.randn(B, H_KV, N_K, D_V, generator=g, dtype=torch.float64)
    mask = torch.rand(N_Q, N_K, generator=g) < 0.7
    mask[:, 1] = True  # every row keeps a key
    pad = torch.zeros(B, N_K, dtype=torch.bool)
    pad[1, -2:] = True
    return q, k, v, dict(mask=mask, key_padding_mask=pad)


def test_without_maps_it_is_return_weights_to_the_last_bit():
    q, k, v, masks = _qkv()
    got = softmax_heads_exposed(q, k, v, **masks)
    ref = softmax_attention(q, k, v, return_weights=True, enable_gqa=True, **masks)
    assert torch.equal(got.output, ref.output) and torch.equal(got.weights, ref.weights)
    same = softmax_heads_exposed(q, k, v, scores_map=lambda s: s, pattern_map=lambda p: p, **masks)
    assert torch.equal(same.output, ref.output) and torch.equal(same.weights, ref.weights)


def test_the_maps_see_every_head_and_masked_pairs_as_minus_infinity():
    q, k, v, masks = _qkv(1)
    seen = {}

    def scores(s):
        seen["s"] = s
        s = s.clone()
        s[..., 2] = float("-inf")  # masking key 2 through the scores ...
        return s

    got = softmax_heads_exposed(q, k, v, scores_map=scores, pattern_map=lambda p: seen.setdefault("p", p), **masks)
    assert seen["s"].shape == seen["p"].shape == (B, H, N_Q, N_K)
    allowed = masks["mask"] & ~masks["key_padding_mask"][:, None, None, :]
    assert bool(torch.isneginf(seen["s"][~allowed.expand(B, H, N_Q, N_K)]).all())
    masks["mask"] = masks["mask"].clone()
    masks["mask"][:, 2] = False  # ... equals masking it
    ref = softmax_attention(q, k, v, return_weights=True, enable_gqa=True, **masks)
    assert (got.output - ref.output).abs().max().item() <= FLOAT64
    assert (got.weights - ref.weights).abs().max().item() <= FLOAT64
