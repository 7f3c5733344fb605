"""Theorem 2.1 (rank-collapse notes §2.1): SAN(X) = sum over paths + 1 b^T."""

from __future__ import annotations

import math

import pytest
import torch

from tolerances import FLOAT64

from attnlab.analysis.path_decomposition import (
    SANLayer,
    accumulated_bias,
    path_count,
    path_sum,
    path_term,
    paths,
    random_san,
    san_forward,
)
from attnlab.errors import ConfigError

F64 = torch.float64


def _rel(a, b) -> float:
    return ((a - b).norm() / b.norm()).item()


@pytest.mark.parametrize("skip", [False, True])
@pytest.mark.parametrize("H", [1, 2, 3])
@pytest.mark.parametrize("L", [1, 2, 3])
def test_san_equals_path_sum(L, H, skip):
    g = torch.Generator().manual_seed(100 * L + 10 * H + skip)
    layers = random_san(L, H, d_model=5, d_head=3, d_v=2, g=g)
    X = torch.randn(2, 7, 5, generator=g, dtype=F64)  # batched: (B, n, d_model)
    out, P = san_forward(X, layers, skip=skip)
    assert out.shape == (2, 7, 5)
    assert len(P) == L and all(p.shape == (2, H, 7, 7) for p in P)
    assert _rel(path_sum(X, P, layers, skip=skip), out) <= FLOAT64


@pytest.mark.parametrize("skip", [False, True])
@pytest.mark.parametrize("H,L", [(1, 3), (2, 3), (3, 2), (5, 1)])
def test_path_count(H, L, skip):
    all_paths = list(paths(H, L, skip=skip))
    expected = (H + 1) ** L if skip else H**L
    assert path_count(H, L, skip=skip) == expected
    assert len(all_paths) == len(set(all_paths)) == expected
    assert all(len(p) == L and all(0 <= h <= H - (not skip) for h in p) for p in all_paths)


def test_hand_checked_one_layer_one_head():
    """X = I_2, W_Q = W_K = W_V = W_O = I, scale 1: logits X X^T = I, so
    P = [[e, 1], [1, e]] / (e + 1) and SAN(X) = P X W = P."""
    I = torch.eye(2, dtype=F64)
    layer = SANLayer(W_Q=I[None], W_K=I[None], W_V=I[None], W_O=I[None])
    out, (P,) = san_forward(I, [layer], scale="none")
    e = math.e
    expected = torch.tensor([[e, 1.0], [1.0, e]], dtype=F64) / (e + 1)
    assert torch.allclose(P[0], expected, rtol=0, atol=1e-15)
    assert torch.allclose(out, expected, rtol=0, atol=1e-15)
    assert torch.allclose(path_sum(I, [P], [layer]), expected, rtol=0, atol=1e-15)


def test_hand_checked_one_layer_two_heads_with_bias():
    """W_Q = 0 makes P = 1 1^T / 2 (uniform), so each row of SA(X) is
    mean(X) W_1 + mean(X) W_2 + b with mean(X) = [2, 3]:
    head 1: W_V = I, W_O = I         -> W_1 = I,        b_V,1 W_O,1 = [1, 0]
    head 2: W_V = swap, W_O = 2 I    -> W_2 = 2 swap,   b_V,2 W_O,2 = [0, 2]
    b_O = [0.5, -0.5]: row = [2, 3] + [6, 4] + [1.5, 1.5] = [9.5, 8.5]."""
    I = torch.eye(2, dtype=F64)
    swap = torch.tensor([[0.0, 1.0], [1.0, 0.0]], dtype=F64)
    layer = SANLayer(
        W_Q=torch.zeros(2, 2, 2, dtype=F64),
        W_K=torch.stack([I, I]),
        W_V=torch.stack([I, swap]),
        W_O=torch.stack([I, 2 * I]),
        b_V=torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=F64),
        b_O=torch.tensor([0.5, -0.5], dtype=F64),
    )
    X = torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=F64)
    out, (P,) = san_forward(X, [layer])
    expected = torch.tensor([[9.5, 8.5], [9.5, 8.5]], dtype=F64)
    assert torch.equal(P, torch.full((2, 2, 2), 0.5, dtype=F64))
    assert torch.equal(accumulated_bias([layer]), torch.tensor([1.5, 1.5], dtype=F64))
    assert torch.allclose(out, expected, rtol=0, atol=1e-14)
    assert torch.allclose(path_sum(X, [P], [layer]), expected, rtol=0, atol=1e-14)
    # the two path terms, by hand: mean(X) W_1 = [2, 3], mean(X) W_2 = [6, 4]
    assert torch.allclose(path_term(X, [P], [layer], (0,)), torch.tensor([[2.0, 3.0]] * 2, dtype=F64))
    assert torch.allclose(path_term(X, [P], [layer], (1,)), torch.tensor([[6.0, 4.0]] * 2, dtype=F64))


@pytest.mark.parametrize("skip", [False, True])
def test_dropping_the_bias_breaks_the_identity(skip):
    g = torch.Generator().manual_seed(7)
    layers = random_san(2, 2, d_model=5, d_head=3, d_v=2, g=g)
    X = torch.randn(7, 5, generator=g, dtype=F64)
    out, P = san_forward(X, layers, skip=skip)
    no_bias = path_sum(X, P, layers, skip=skip, include_bias=False)
    b = accumulated_bias(layers, skip=skip)
    assert _rel(no_bias, out) > 1e-2  # far from the identity
    assert _rel(no_bias + b, out) <= FLOAT64  # and the gap is exactly 1 b^T


def test_skip_paths_are_needed_with_skip_connections():
    """With skip connections, the H^L non-skip paths alone do not add up to SAN(X)."""
    g = torch.Generator().manual_seed(8)
    layers = random_san(2, 2, d_model=5, d_head=3, d_v=2, g=g)
    X = torch.randn(7, 5, generator=g, dtype=F64)
    out, P = san_forward(X, layers, skip=True)
    assert _rel(path_sum(X, P, layers, skip=False), out) > 1e-2


def test_text_order_of_P_is_wrong():
    """The text's L=2 term P_{h1} P_{h2} X W_{h1} W_{h2}, read with h1 in layer 1, puts
    layer 1's P on the left; that sum misses SAN(X), the corrected order hits it."""
    g = torch.Generator().manual_seed(9)
    layers = random_san(2, 2, d_model=5, d_head=3, d_v=2, g=g)
    X = torch.randn(7, 5, generator=g, dtype=F64)
    out, P = san_forward(X, layers)
    W1, W2 = layers[0].path_weights(), layers[1].path_weights()
    text_order = sum(
        P[0][h1] @ P[1][h2] @ X @ W1[h1] @ W2[h2] for h1 in range(2) for h2 in range(2)
    ) + accumulated_bias(layers)
    assert _rel(text_order, out) > 1e-3
    assert _rel(path_sum(X, P, layers), out) <= FLOAT64


def test_random_san_shapes_scales_and_biases():
    g = torch.Generator().manual_seed(5)
    layers = random_san(2, 3, d_model=7, d_head=5, d_v=2, g=g)
    assert len(layers) == 2 and all(layer.n_heads == 3 and layer.d_model == 7 for layer in layers)
    first = layers[0]
    assert first.W_Q.shape == first.W_K.shape == (3, 7, 5) and first.W_V.shape == (3, 7, 2)
    assert first.W_O.shape == (3, 2, 7) and first.b_O.shape == (7,)
    assert all(t.dtype == F64 for t in (first.W_Q, first.W_O, first.b_Q, first.b_V))
    assert (accumulated_bias(layers) != 0).all()  # the 1 b^T term is exercised
    again = random_san(2, 3, d_model=7, d_head=5, d_v=2, g=torch.Generator().manual_seed(5))
    assert torch.equal(again[1].W_O, layers[1].W_O)  # everything comes from the generator


def test_config_errors():
    g = torch.Generator().manual_seed(0)
    layers = random_san(2, 2, d_model=5, d_head=3, d_v=2, g=g)
    X = torch.randn(7, 5, generator=g, dtype=F64)
    _, P = san_forward(X, layers)
    with pytest.raises(ConfigError, match="at least one layer"):
        san_forward(X, [])
    with pytest.raises(ConfigError, match="1 attention matrices for 2 layers"):
        path_sum(X, P[:1], layers)
    other = random_san(1, 2, d_model=3, d_head=3, d_v=2, g=g)
    with pytest.raises(ConfigError, match="layer 1 maps d_model=3, layer 0 has 5"):
        san_forward(X, layers[:1] + other)
    three_heads = random_san(1, 3, d_model=5, d_head=3, d_v=2, g=g)
    _, P3 = san_forward(X, layers[:1] + three_heads)
    with pytest.raises(ConfigError, match="same number of heads"):
        path_sum(X, P3, layers[:1] + three_heads)
    with pytest.raises(ConfigError, match="W_K has shape"):
        SANLayer(W_Q=torch.zeros(2, 5, 3), W_K=torch.zeros(2, 5, 4), W_V=torch.zeros(2, 5, 2), W_O=torch.zeros(2, 2, 5))


@pytest.mark.parametrize("L, H", [(1, 2), (3, 2), (4, 3)])
def test_path_length_terms_match_enumeration_by_length(L, H):
    from attnlab.analysis.path_decomposition import (accumulated_bias, path_count, path_length_counts,
                                                     path_length_terms, path_term, paths)

    g = torch.Generator().manual_seed(L * 10 + H)
    layers = random_san(L, H, 6, 3, 4, g)
    X = torch.randn(2, 5, 6, generator=g, dtype=torch.float64)
    Y, P = san_forward(X, layers, skip=True)
    S = path_length_terms(X, P, [layer.path_weights() for layer in layers])  # (L+1, 2, 5, 6)
    by_length = torch.zeros_like(S)
    for p in paths(H, L, skip=True):
        by_length[sum(h != H for h in p)] += path_term(X, P, layers, p)
    assert (S - by_length).abs().max() <= FLOAT64 * Y.abs().max()
    assert (S.sum(0) + accumulated_bias(layers, skip=True) - Y).abs().max() <= FLOAT64 * Y.abs().max()
    counts = path_length_counts(H, L)
    assert sum(counts) == path_count(H, L, skip=True) and counts[0] == 1 and counts[-1] == H**L
    assert torch.equal(S[0], X)  # the all-skip path is X itself


def test_path_length_terms_rejects_mismatched_layers():
    from attnlab.analysis.path_decomposition import path_length_terms

    with pytest.raises(ConfigError, match="one P and one W per layer"):
        path_length_terms(torch.zeros(3, 2, dtype=torch.float64), [torch.zeros(1, 3, 3)], [])
