"""attnlab.ops.lowrank and attnlab.nn.linformer: hand-derived cases, ConfigErrors."""

from __future__ import annotations

import math

import pytest
import torch

from tolerances import assert_close

from attnlab.errors import ConfigError
from attnlab.nn.linformer import LinformerSelfAttention
from attnlab.ops import softmax_attention
from attnlab.ops.lowrank import (
    best_rank_k,
    best_rank_ks,
    gaussian_projection,
    linformer_attention,
    linformer_projections,
    random_projection_weights,
)


def _qkv(n=7, d_k=5, d_v=3, seed=0, batch=()):
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(*batch, n, d, generator=g, dtype=torch.float64) for d in (d_k, d_k, d_v))


def _P(n=11, seed=0):
    q, k, _ = _qkv(n, 5, 3, seed)
    return torch.softmax(q @ k.T / math.sqrt(5), dim=-1)


def test_linformer_with_identity_or_permutation_projections_is_softmax_attention():
    """E = F = I (k' = n) or one permutation Pi for both: softmax over permuted keys with
    identically permuted values is the same attention; the effective weights are P itself."""
    q, k, v = _qkv(7, 5, 3, batch=(2,))
    exact = softmax_attention(q, k, v, return_weights=True)
    perm = torch.eye(7, dtype=torch.float64)[torch.tensor([3, 0, 6, 1, 5, 2, 4])]
    for E in (torch.eye(7, dtype=torch.float64), perm):
        res = linformer_attention(q, k, v, E, E, return_weights=True)
        assert_close(res.output, exact.output)
        assert_close(res.weights, exact.weights)


def test_linformer_weights_are_P_bar_F_and_have_rank_k():
    q, k, v = _qkv(11, 5, 3)
    E, F = linformer_projections(3, 11, generator=torch.Generator().manual_seed(1))
    assert E.shape == F.shape == (3, 11) and not torch.equal(E, F)
    res = linformer_attention(q, k, v, E, F, return_weights=True)
    P_bar = torch.softmax(q @ (E @ k).T / math.sqrt(5), dim=-1)  # (11, 3)
    assert_close(res.weights, P_bar @ F)
    assert_close(res.output, res.weights @ v)
    assert torch.linalg.matrix_rank(res.weights).item() == 3
    assert res.output.shape == (11, 3) and linformer_attention(q, k, v, E, F).weights is None


def test_gaussian_projection_moments():
    """Entries N(0, 1/k'): 200 x 13 x 17 samples, mean within 4 SE of 0, k' var within 3% of 1."""
    R = gaussian_projection(13, 17, generator=torch.Generator().manual_seed(2), batch_shape=(200,))
    assert R.shape == (200, 13, 17) and R.dtype == torch.float64
    se = 1 / math.sqrt(13 * R.numel())
    assert abs(R.mean().item()) <= 4 * se
    assert abs(R.var().item() * 13 - 1) <= 0.03


def test_random_projection_rank_and_unbiasedness():
    P = _P(11)
    g = torch.Generator().manual_seed(3)
    P_t = random_projection_weights(P.expand(4000, 11, 11), 4, g)  # independent R per copy
    assert all(torch.linalg.matrix_rank(P_t[i]).item() == 4 for i in range(5))
    # E[P R^T R] = P: entries have sd about ||p_i|| / sqrt(k') <= 0.5; mean of 4000 within 0.05
    assert (P_t.mean(0) - P).abs().max().item() <= 0.05


def test_best_rank_k_is_eckart_young():
    P = _P(13)
    s = torch.linalg.svdvals(P)
    for k, P_k in zip((1, 4, 12), best_rank_ks(P, (1, 4, 12))):
        D = P - P_k
        assert torch.linalg.matrix_rank(P_k).item() == k
        assert torch.linalg.matrix_norm(D, 2).item() == pytest.approx(s[k].item(), abs=1e-13)
        assert torch.linalg.matrix_norm(D).item() ** 2 == pytest.approx((s[k:] ** 2).sum().item(), abs=1e-13)
    assert_close(best_rank_k(P, 13), P)
    Pb = torch.stack([P, P.T])  # batched
    assert_close(best_rank_k(Pb, 4)[1], best_rank_k(P.T, 4))


@pytest.mark.parametrize("call,fragment", [
    (lambda: random_projection_weights(_P(5), 6, torch.Generator()), "k'=6 exceeds n=5"),
    (lambda: random_projection_weights(_P(5), 0, torch.Generator()), "positive integer"),
    (lambda: random_projection_weights(torch.ones(5), 2, torch.Generator()), "two axes"),
    (lambda: best_rank_k(_P(5), 9), "k=9 exceeds n=5"),
    (lambda: linformer_projections(8, 7, generator=torch.Generator()), "k'=8 exceeds n=7"),
    (lambda: linformer_attention(*_qkv(7), torch.ones(3, 6, dtype=torch.float64),
                                 torch.ones(3, 6, dtype=torch.float64)), "n_k=7 columns"),
    (lambda: linformer_attention(*_qkv(7), torch.ones(3, 7, dtype=torch.float64),
                                 torch.ones(2, 7, dtype=torch.float64)), "same k'"),
    (lambda: linformer_attention(*_qkv(7), torch.ones(3, 7), torch.ones(3, 7)), "dtypes"),
    (lambda: linformer_attention(*_qkv(7), torch.ones(3, 7, dtype=torch.float64),
                                 torch.ones(3, 7, dtype=torch.float64), scale="1/k"), "unknown scale"),
])
def test_config_errors(call, fragment):
    with pytest.raises(ConfigError, match=None) as e:
        call()
    assert fragment in str(e.value) and "\n" not in str(e.value)


def test_linformer_module_learns_projections():
    m = LinformerSelfAttention(12, 3, n=9, k_proj=4, generator=torch.Generator().manual_seed(4))
    x = torch.randn(2, 9, 12, generator=torch.Generator().manual_seed(5))
    res = m(x, return_weights=True)
    assert res.output.shape == (2, 9, 12) and res.weights.shape == (2, 3, 9, 9)
    res.output.square().sum().backward()
    assert m.E.grad is not None and m.E.grad.abs().sum() > 0 and m.F.grad.abs().sum() > 0
    fixed = LinformerSelfAttention(12, 3, n=9, k_proj=4, learn_projections=False, share_kv=True)
    assert "E" not in dict(fixed.named_parameters()) and torch.equal(fixed.E, fixed.F)
    with pytest.raises(ConfigError, match="n=9"):
        m(torch.randn(2, 8, 12))
    with pytest.raises(ConfigError, match="exceeds n=9"):
        LinformerSelfAttention(12, 3, n=9, k_proj=10)
