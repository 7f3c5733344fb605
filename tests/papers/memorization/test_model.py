"""The memorization paper's model (papers/memorization/model.py), eqs. (1)-(8): the batched torch
forward against the equations written out, the float64 NumPy helpers against independent references."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from numpy_reference import literal_forward
from numpy_reference import numpy_forward as reference_forward
from tolerances import FLOAT64, assert_close
from torch.func import vmap

from attnlab.errors import ConfigError
from attnlab.papers.memorization.data import draw_dataset
from attnlab.papers.memorization.model import (
    attention_classifier,
    attention_features,
    attention_features_torch,
    init_attention_classifier,
    memorization_forward,
    numpy_forward,
    theorem1_bound,
    training_flops_per_step,
)

F64 = torch.float64
# distinct primes so an axis mix-up fails: M, d, n, H, d_h, d_v, classes, batch
M, d, n, H, d_h, d_v, C, B = 2, 7, 5, 3, 2, 11, 13, 4


def test_matches_equations_1_to_6_float64():
    gen = torch.Generator().manual_seed(0)
    stacked = init_attention_classifier(M, d, n, H, d_h, C, gen, d_v=d_v, dtype=F64)
    assert stacked["W_O"].shape == (M, H * d_v, d) and stacked["W_D"].shape == (M, d, C)
    E = torch.rand(M, B, n, d, generator=gen, dtype=F64)
    e = torch.rand(M, B, d, generator=gen, dtype=F64)
    batched = vmap(attention_classifier)(stacked, E, e)  # (M, B, C)
    expected = torch.stack([
        torch.stack([literal_forward({k: p[m] for k, p in stacked.items()}, E[m, b], e[m, b])
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
        torch.stack([literal_forward({k: p[m] for k, p in stacked.items()}, E[m], e[m, b])
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


def test_theorem1_bound_matches_the_paper_numbers():
    # FIELD-NOTES: d=64, n=32, d_h=64 -> 125 (H=4), 249 (H=8); r = min(n, d_h)
    assert theorem1_bound(4, 32, 64) == 125 and theorem1_bound(8, 32, 64) == 249
    assert theorem1_bound(1, 32, 64) == 32
    assert theorem1_bound(3, 32, 5) == 3 * 4 + 1  # d_h < n: r = d_h


def test_forward_matches_independent_numpy_on_random_weights():
    rng = np.random.default_rng(5)
    E, e = rng.standard_normal((7, 5, 13)), rng.standard_normal((7, 13))
    W = dict(W_Q=rng.standard_normal((3, 13, 2)), W_K=rng.standard_normal((3, 13, 2)),
             W_V=rng.standard_normal((3, 13, 11)), W_O=rng.standard_normal((33, 13)),
             W_D=rng.standard_normal((13, 4)))
    np.testing.assert_allclose(memorization_forward(E, e, **W), reference_forward(E, e, **W),
                               atol=FLOAT64, rtol=FLOAT64)
    Z = attention_features(E, e, W["W_Q"], W["W_K"])
    assert Z.shape == (7, 3 * 13)  # eq. (7): T x H d


def test_numpy_forward_matches_the_model_forward():
    rng = np.random.default_rng(0)
    for shared in (True, False):
        E, e, _ = draw_dataset(7, 5, 9, 1, shared=shared, seed=1)
        w = dict(W_Q=rng.normal(size=(3, 9, 4)), W_K=rng.normal(size=(3, 9, 4)), W_V=rng.normal(size=(3, 9, 2)),
                 W_O=rng.normal(size=(6, 9)), W_D=rng.normal(size=(9, 3)))
        np.testing.assert_allclose(numpy_forward(E, e, **w), memorization_forward(E, e, **w),
                                   rtol=FLOAT64, atol=FLOAT64)


@pytest.mark.parametrize("shared", [True, False])
def test_features_in_torch_equal_the_numpy_features(shared):
    # eq. (7) twice: NumPy (constructions) and torch (differentiable rank search), float64
    rng = np.random.default_rng(6)
    E = rng.uniform(size=(5, 11) if shared else (7, 5, 11))
    e, W_Q, W_K = rng.uniform(size=(7, 11)), rng.standard_normal((3, 11, 2)), rng.standard_normal((3, 11, 2))
    Z = attention_features_torch(*(torch.from_numpy(a) for a in (E, e, W_Q, W_K))).numpy()
    assert Z.shape == (7, 3 * 11)
    np.testing.assert_allclose(Z, attention_features(E, e, W_Q, W_K), rtol=FLOAT64, atol=FLOAT64)


def test_memorization_forward_rejects_mismatched_shapes():
    rng = np.random.default_rng(7)
    W = dict(W_Q=rng.standard_normal((2, 5, 3)), W_K=rng.standard_normal((2, 5, 3)),
             W_V=rng.standard_normal((2, 5, 1)), W_O=rng.standard_normal((2, 5)), W_D=rng.standard_normal((5, 1)))
    with pytest.raises(ConfigError, match="does not fit e"):
        memorization_forward(rng.uniform(size=(3, 4, 5)), rng.uniform(size=(6, 5)), **W)
    with pytest.raises(ConfigError, match=r"W_O must be \(2, 5\)"):
        memorization_forward(rng.uniform(size=(4, 5)), rng.uniform(size=(6, 5)), **{**W, "W_O": np.eye(5)})
