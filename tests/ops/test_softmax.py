"""Softmax attention (ops/softmax.py) and unnormalized attention (ops/unnormalized.py):
hand-derived examples, scale options, ConfigError paths and hypothesis properties."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance import draw_qkv
from tolerances import assert_close, tolerance

from attnlab.errors import ConfigError
from attnlab.ops import (
    attention_logits,
    masked_softmax,
    resolve_scale,
    softmax_attention,
    unnormalized_attention,
)

F64 = torch.float64
PROPERTY = settings(max_examples=25, deadline=None)


# --- hand-derived examples -----------------------------------------------------------


@pytest.mark.parametrize("return_weights", [False, True], ids=["fused", "explicit"])
def test_two_by_two_by_hand(return_weights):
    """Q = I, K = [[ln 3, 0], [0, 0]], scale 1: logits Q K^T = K^T = [[ln 3, 0], [0, 0]],
    so P = [[3/4, 1/4], [1/2, 1/2]]; V = [[4, 0], [0, 8]] gives P V = [[3, 2], [2, 4]]."""
    q = torch.eye(2, dtype=F64)
    k = torch.tensor([[math.log(3.0), 0.0], [0.0, 0.0]], dtype=F64)
    v = torch.tensor([[4.0, 0.0], [0.0, 8.0]], dtype=F64)
    res = softmax_attention(q, k, v, scale="none", return_weights=return_weights)
    assert torch.allclose(res.output, torch.tensor([[3.0, 2.0], [2.0, 4.0]], dtype=F64), rtol=0, atol=1e-15)
    if return_weights:
        P = torch.tensor([[0.75, 0.25], [0.5, 0.5]], dtype=F64)
        assert torch.allclose(res.weights, P, rtol=0, atol=1e-16)


def test_two_by_two_causal_by_hand():
    """Same inputs, causal: row 0 sees only key 0 (weight 1), row 1 is unchanged."""
    q = torch.eye(2, dtype=F64)
    k = torch.tensor([[math.log(3.0), 0.0], [0.0, 0.0]], dtype=F64)
    v = torch.tensor([[4.0, 0.0], [0.0, 8.0]], dtype=F64)
    res = softmax_attention(q, k, v, scale="none", causal=True, return_weights=True)
    assert res.weights.tolist() == [[1.0, 0.0], [0.5, 0.5]]
    assert res.output.tolist() == [[4.0, 0.0], [2.0, 4.0]]


def test_unnormalized_two_by_two_by_hand():
    """(Q K^T) V with K = I: Q K^T = Q = [[1, 2], [0, 1]], V = [[1, 1], [2, -1]]:
    row 0 = 1 (1, 1) + 2 (2, -1) = (5, -1); row 1 = (2, -1). Rows of Q K^T sum to 3 and 1."""
    q = torch.tensor([[1.0, 2.0], [0.0, 1.0]], dtype=F64)
    v = torch.tensor([[1.0, 1.0], [2.0, -1.0]], dtype=F64)
    res = unnormalized_attention(q, torch.eye(2, dtype=F64), v, return_weights=True)
    assert res.output.tolist() == [[5.0, -1.0], [2.0, -1.0]]
    assert res.weights.tolist() == [[1.0, 2.0], [0.0, 1.0]]
    masked = unnormalized_attention(q, torch.eye(2, dtype=F64), v, causal=True)
    assert masked.output.tolist() == [[1.0, 1.0], [2.0, -1.0]]  # weight 2 on key 1 removed


def test_logic_text_transposed_form_eq_2_2():
    """Logic text eq. (2.1)-(2.2), tokens as columns of X (dim x n): Q = X^t q^t, K = X^t k^t,
    V = X^t v^t and ATTENTION_*(Q, K, V)^t = v X K Q^t. (The text's softmax weight
    w_ji = z exp(...) with z the row sum is a typo for exp(...) / z.)"""
    g = torch.Generator().manual_seed(0)
    dim, n, d_k = 7, 5, 3
    X = torch.randn(dim, n, generator=g, dtype=F64)
    q_, k_, v_ = (torch.randn(d_k, dim, generator=g, dtype=F64) for _ in range(3))
    Q, K, V = X.T @ q_.T, X.T @ k_.T, X.T @ v_.T  # (n, d_k) each
    out = unnormalized_attention(Q, K, V).output  # (n, d_k)
    assert_close(out.T, v_ @ X @ K @ Q.T)


def test_saturated_logits_give_exact_one_hot():
    """Gap * scale = 1000 > ~745: float64 softmax is an exact one-hot (FIELD-NOTES)."""
    q = torch.tensor([[1.0]], dtype=F64)
    k = torch.tensor([[1000.0], [0.0], [-5.0]], dtype=F64)
    v = torch.tensor([[2.0], [3.0], [5.0]], dtype=F64)
    res = softmax_attention(q, k, v, scale="none", return_weights=True)
    assert res.weights.tolist() == [[1.0, 0.0, 0.0]]
    assert softmax_attention(q, k, v, scale="none").output.tolist() == [[2.0]]


@pytest.mark.parametrize("return_weights", [False, True], ids=["fused", "explicit"])
@pytest.mark.parametrize("causal", [None, "bottom_right"])
def test_scale_1e4_float32_no_nan(return_weights, causal):
    """Logits ~1e4 in float32 (far past exp's overflow at ~88): rows stay convex, no NaN."""
    q, k, v = draw_qkv((2, 3, 5, 7, 11, 13), torch.float32, seed=4)
    q.requires_grad_()
    res = softmax_attention(q, k, v, scale=1e4, causal=causal, return_weights=return_weights)
    assert torch.isfinite(res.output).all()
    assert (res.output.abs() <= v.abs().amax(dim=-2, keepdim=True) * (1 + 1e-6)).all()
    (g,) = torch.autograd.grad(res.output.sum(), (q,))
    assert torch.isfinite(g).all()
    if return_weights:
        assert ((res.weights.sum(-1) - 1).abs() <= tolerance(torch.float32).atol).all()


def test_masked_softmax_empty_row():
    logits = torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=F64, requires_grad=True)
    allowed = torch.tensor([[True, False], [False, False]])
    w = masked_softmax(logits, allowed)
    assert w.tolist() == [[1.0, 0.0], [0.0, 0.0]]
    (g,) = torch.autograd.grad((w * torch.tensor([[2.0, 3.0], [5.0, 7.0]])).sum(), (logits,))
    assert g.tolist() == [[0.0, 0.0], [0.0, 0.0]]  # a one-entry row and an empty row: no gradient


# --- scale ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "scale,expected", [("1/sqrt(d)", 1 / 3), (None, 1 / 3), ("1/d", 1 / 9), ("none", 1.0), (0.25, 0.25)]
)
def test_resolve_scale(scale, expected):
    assert resolve_scale(scale, 9) == expected


def test_attention_logits_scale():
    q = torch.tensor([[1.0, 2.0, 0.0, 1.0]], dtype=F64)
    k = torch.tensor([[3.0, 1.0, 7.0, 1.0], [0.0, 0.0, 1.0, 0.0]], dtype=F64)
    # q·k = (6, 0); d = 4
    assert attention_logits(q, k).tolist() == [[3.0, 0.0]]
    assert attention_logits(q, k, "1/d").tolist() == [[1.5, 0.0]]
    assert attention_logits(q, k, "none").tolist() == [[6.0, 0.0]]


def test_scale_float_equals_scaled_queries():
    q, k, v = draw_qkv((3, 5, 7, 11, 13), F64, seed=1)
    a = softmax_attention(q, k, v, scale=0.7).output
    assert_close(a, softmax_attention(q * 0.7, k, v, scale="none").output)


def test_unknown_scale_name():
    with pytest.raises(ConfigError, match=r"unknown scale '1/sqrt\(k\)': use one of 1/sqrt\(d\), 1/d, none"):
        resolve_scale("1/sqrt(k)", 4)
    q, k, v = draw_qkv((5, 7, 11, 13), F64, seed=2)
    with pytest.raises(ConfigError, match="unknown scale 'sqrt'"):
        softmax_attention(q, k, v, scale="sqrt")
    with pytest.raises(ConfigError, match="unknown scale 'sqrt'"):
        unnormalized_attention(q, k, v, scale="sqrt")


@pytest.mark.parametrize("bad", [0, -1.0, float("inf"), float("nan")])
def test_non_positive_scale(bad):
    with pytest.raises(ConfigError, match="scale must be a positive finite number"):
        resolve_scale(bad, 4)


# --- shape ConfigErrors --------------------------------------------------------------


@pytest.mark.parametrize("op", [softmax_attention, unnormalized_attention], ids=["softmax", "unnormalized"])
def test_shape_errors(op):
    q, k, v = draw_qkv((3, 5, 7, 11, 13), F64, seed=3)
    with pytest.raises(ConfigError, match="q has d_k=11, k has d_k=7"):
        op(q, k[..., :7], v)
    with pytest.raises(ConfigError, match="k has n_k=7, v has 5"):
        op(q, k, v[:, :5])
    with pytest.raises(ConfigError, match="at least two axes"):
        op(q[0, 0], k, v)
    with pytest.raises(ConfigError, match="dtypes differ"):
        op(q.float(), k, v)


# --- hypothesis properties -----------------------------------------------------------

sizes = st.tuples(st.integers(1, 6), st.integers(1, 7), st.integers(1, 5), st.integers(1, 4))
seeds = st.integers(0, 2**31 - 1)


def _draw(n_q, n_k, d_k, d_v, seed):
    return draw_qkv((2, n_q, n_k, d_k, d_v), F64, seed)


@PROPERTY
@given(sizes, seeds)
def test_shift_invariance_via_additive_mask(size, seed):
    """softmax(A + c 1^T) = softmax(A): a per-row constant added through the mask changes nothing."""
    n_q, n_k, d_k, d_v = size
    q, k, v = _draw(*size, seed)
    c = torch.randn(2, n_q, 1, generator=torch.Generator().manual_seed(seed), dtype=F64) * 50
    shifted = c.expand(2, n_q, n_k)  # (B, n_q, n_k): constant along each row
    a = softmax_attention(q, k, v, return_weights=True)
    b = softmax_attention(q, k, v, mask=shifted, return_weights=True)
    assert_close(b.weights, a.weights)
    assert_close(softmax_attention(q, k, v, mask=shifted).output, a.output)


@PROPERTY
@given(sizes, seeds)
def test_key_value_permutation_equivariance(size, seed):
    """Permuting keys and values together leaves softmax and unnormalized outputs unchanged."""
    q, k, v = _draw(*size, seed)
    perm = torch.randperm(k.shape[-2], generator=torch.Generator().manual_seed(seed))
    for op in (softmax_attention, unnormalized_attention):
        assert_close(op(q, k[:, perm], v[:, perm]).output, op(q, k, v).output)


@PROPERTY
@given(sizes, seeds)
def test_query_permutation_permutes_rows(size, seed):
    q, k, v = _draw(*size, seed)
    perm = torch.randperm(q.shape[-2], generator=torch.Generator().manual_seed(seed + 1))
    assert_close(softmax_attention(q[:, perm], k, v).output, softmax_attention(q, k, v).output[:, perm])


@PROPERTY
@given(sizes, seeds, st.floats(-100, 100, allow_nan=False))
def test_output_is_linear_in_v(size, seed, alpha):
    """Attention(Q, K, alpha V) = alpha Attention(Q, K, V), and additive in V."""
    q, k, v = _draw(*size, seed)
    for op in (softmax_attention, unnormalized_attention):
        assert_close(op(q, k, alpha * v).output, alpha * op(q, k, v).output)
        assert_close(op(q, k, v + v.flip(-1)).output, op(q, k, v).output + op(q, k, v.flip(-1)).output)


@PROPERTY
@given(sizes, seeds)
def test_constant_values_pass_through_softmax(size, seed):
    """P 1 = 1: if every value row is the same vector u, every output row is u."""
    q, k, _ = _draw(*size, seed)
    u = torch.randn(size[3], generator=torch.Generator().manual_seed(seed), dtype=F64)
    v = u.expand(2, size[1], size[3])
    assert_close(softmax_attention(q, k, v).output, u.expand(2, size[0], size[3]))
