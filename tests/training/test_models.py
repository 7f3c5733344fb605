"""The memorization paper's attention classifier (training/models.py), eqs. (1)-(6)."""

from __future__ import annotations

import pytest
import torch
from torch.func import vmap

from tolerances import assert_close

from attnlab.errors import ConfigError
from attnlab.training import (
    attention_classifier,
    init_attention_classifier,
    training_flops_per_step,
)

F64 = torch.float64
# distinct primes so an axis mix-up fails: M, d, n, H, d_h, d_v, classes, batch
M, d, n, H, d_h, d_v, C, B = 2, 7, 5, 3, 2, 11, 13, 4


def _literal(params, E, e):
    """Eqs. (1)-(6) written out for one example, head by head."""
    ps = []
    for h in range(H):
        alpha = E @ params["W_K"][h] @ params["W_Q"][h].T @ e  # (1)
        theta = torch.softmax(alpha, dim=0)  # (2)
        z = E.T @ theta  # (3)
        ps.append(params["W_V"][h].T @ z)  # (4)
    o = params["W_O"].T @ torch.cat(ps)  # (5)
    return params["W_D"].T @ o  # (6)


def test_matches_equations_1_to_6_float64():
    gen = torch.Generator().manual_seed(0)
    stacked = init_attention_classifier(M, d, n, H, d_h, C, gen, d_v=d_v, dtype=F64)
    assert stacked["W_O"].shape == (M, H * d_v, d) and stacked["W_D"].shape == (M, d, C)
    E = torch.rand(M, B, n, d, generator=gen, dtype=F64)
    e = torch.rand(M, B, d, generator=gen, dtype=F64)
    batched = vmap(attention_classifier)(stacked, E, e)  # (M, B, C)
    expected = torch.stack([
        torch.stack([_literal({k: p[m] for k, p in stacked.items()}, E[m, b], e[m, b])
                     for b in range(B)])
        for m in range(M)
    ])
    assert batched.shape == (M, B, C)
    assert_close(batched, expected)  # float64: 1e-12


def test_shared_context_matches_equations_1_to_6_float64():
    gen = torch.Generator().manual_seed(4)
    stacked = init_attention_classifier(M, d, n, H, d_h, C, gen, d_v=d_v, dtype=F64)
    E = torch.rand(M, n, d, generator=gen, dtype=F64)  # one context per model
    e = torch.rand(M, B, d, generator=gen, dtype=F64)
    batched = vmap(attention_classifier)(stacked, E, e)  # (M, B, C)
    expected = torch.stack([
        torch.stack([_literal({k: p[m] for k, p in stacked.items()}, E[m], e[m, b])
                     for b in range(B)])
        for m in range(M)
    ])
    assert_close(batched, expected)  # float64: 1e-12
    # extra leading query axes are kept
    one = {k: p[0] for k, p in stacked.items()}
    assert attention_classifier(one, E[0], e[0].view(2, 2, d)).shape == (2, 2, C)


def test_init_is_reproducible_and_scaled():
    a = init_attention_classifier(3, 64, 32, 4, 16, 100, torch.Generator().manual_seed(1))
    b = init_attention_classifier(3, 64, 32, 4, 16, 100, torch.Generator().manual_seed(1))
    assert all(torch.equal(a[k], b[k]) for k in a)
    # N(0, 1/fan_in): W_Q has fan_in d = 64 -> std 1/8 (12288 draws: 3% tolerance)
    assert a["W_Q"].std().item() == pytest.approx(1 / 8, rel=0.03)


def test_flop_count_by_hand():
    # d=64, n=32, H=4, d_h=d_v=16, 100 classes, batch 256.
    # shared context, per example: 8192 + 4096 + 4096 + 8192 + 12800 = 37376;
    #   per batch 2*32*64*4*32 = 524288
    assert training_flops_per_step(64, 32, 4, 16, 100, 256, shared_context=True) == \
        3 * (256 * 37376 + 524288)
    # per-example context, per example: 32768 + 32768 + 32768 + 12800 = 111104;
    #   per batch 2*4*64*64*32 = 1048576
    assert training_flops_per_step(64, 32, 4, 16, 100, 256, shared_context=False) == \
        3 * (256 * 111104 + 1048576)


def test_bad_sizes_raise_config_error():
    with pytest.raises(ConfigError, match="H must be"):
        init_attention_classifier(2, 8, 4, 0, 2, 3, torch.Generator())
