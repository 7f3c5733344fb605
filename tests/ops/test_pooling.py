"""Attention pooling, math text eq. (18): o_j = (1/C_j) sum_i f(q_j, k_i) g(v_i)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance import draw_qkv
from tolerances import ROW_SUM_TOL_FLOAT64, assert_close

from attnlab.errors import UnknownNameError
from attnlab.ops import SIMILARITIES, attention_pooling, softmax_attention, unnormalized_attention

F64 = torch.float64


def test_dot_similarity_normalized_by_hand():
    """q = (1, 1), k_1 = (1, 0), k_2 = (0, 2): f = (1, 2), C = 3; v = 3 I gives o = (1, 2)."""
    q = torch.tensor([[1.0, 1.0]], dtype=F64)
    k = torch.tensor([[1.0, 0.0], [0.0, 2.0]], dtype=F64)
    v = torch.tensor([[3.0, 0.0], [0.0, 3.0]], dtype=F64)
    res = attention_pooling(q, k, v, "dot", return_weights=True)
    assert res.output.tolist() == [[1.0, 2.0]]
    assert torch.allclose(res.weights, torch.tensor([[1 / 3, 2 / 3]], dtype=F64), rtol=0, atol=1e-16)
    # C_j = 1 (normalize=False): o = 1 v_1 + 2 v_2 = (3, 6)
    assert attention_pooling(q, k, v, "dot", normalize=False).output.tolist() == [[3.0, 6.0]]


def test_exp_similarity_by_hand():
    """d = 4, q·k = (2 ln 3, 0) -> f ∝ (3, 1) after 1/sqrt(4): weights (3/4, 1/4)."""
    ln3 = torch.log(torch.tensor(3.0, dtype=F64)).item()
    q = torch.tensor([[2 * ln3, 0.0, 0.0, 0.0]], dtype=F64)
    k = torch.tensor([[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0]], dtype=F64)
    v = torch.tensor([[4.0], [8.0]], dtype=F64)
    res = attention_pooling(q, k, v, "exp", return_weights=True)
    assert torch.allclose(res.weights, torch.tensor([[0.75, 0.25]], dtype=F64), rtol=0, atol=1e-15)
    assert torch.allclose(res.output, torch.tensor([[5.0]], dtype=F64), rtol=0, atol=1e-14)


def test_g_is_applied_to_values():
    """g(v) = v W_v^T (a linear map, as in the text): pooling then W_v equals pooling of g(v)."""
    q, k, v = draw_qkv((3, 5, 7, 11, 13), F64, seed=1)
    W_v = torch.randn(2, 13, generator=torch.Generator().manual_seed(2), dtype=F64)
    with_g = attention_pooling(q, k, v, "exp", g=lambda x: x @ W_v.T).output
    assert with_g.shape == (3, 5, 2)
    assert_close(with_g, attention_pooling(q, k, v, "exp").output @ W_v.T)


@pytest.mark.parametrize("name", ["exp", "elu+1", "taylor"])
def test_non_negative_similarities_give_convex_weights(name):
    q, k, v = draw_qkv((3, 5, 7, 11, 13), F64, seed=3)
    w = attention_pooling(q, k, v, name, return_weights=True).weights
    assert (w >= 0).all()
    assert (w.sum(-1) - 1).abs().max().item() <= ROW_SUM_TOL_FLOAT64


def test_taylor_similarity_range_and_value():
    """f = 1 + cos(q, k): 2 for parallel, 1 for orthogonal, 0 for opposite."""
    q = torch.tensor([[2.0, 0.0]], dtype=F64)
    k = torch.tensor([[5.0, 0.0], [0.0, 3.0], [-1.0, 0.0]], dtype=F64)
    assert SIMILARITIES["taylor"](q, k).tolist() == [[2.0, 1.0, 0.0]]


def test_elu_feature_similarity_by_hand():
    """phi(x) = elu(x) + 1: phi(1) = 2, phi(0) = 1; f((1, 0), (0, 1)) = 2*1 + 1*2 = 4."""
    q = torch.tensor([[1.0, 0.0]], dtype=F64)
    k = torch.tensor([[0.0, 1.0]], dtype=F64)
    assert SIMILARITIES["elu+1"](q, k).tolist() == [[4.0]]


def test_zero_normaliser_gives_zero_row_with_finite_gradients():
    """f = q·k can sum to 0: q = (1, -1) against k = I gives f = (1, -1), C = 0 -> o = 0."""
    q = torch.tensor([[1.0, -1.0], [1.0, 1.0]], dtype=F64, requires_grad=True)
    k = torch.eye(2, dtype=F64)
    v = torch.tensor([[3.0], [5.0]], dtype=F64)
    out = attention_pooling(q, k, v, "dot").output
    assert out.tolist() == [[0.0], [4.0]]
    (g,) = torch.autograd.grad(out.sum(), (q,))
    assert torch.isfinite(g).all()


def test_unknown_similarity_name():
    q, k, v = draw_qkv((5, 7, 11, 13), F64, seed=4)
    with pytest.raises(UnknownNameError, match="unknown similarity 'cosine': choose one of exp, dot, elu\\+1, taylor"):
        attention_pooling(q, k, v, "cosine")


# --- known defects (ops/pooling.py) --------------------------------------------------


def test_exp_pooling_with_a_dominant_masked_key():
    q = torch.tensor([[1.0]], dtype=F64)  # d = 1, so logits are q·k
    k = torch.tensor([[0.0], [1000.0]], dtype=F64)
    v = torch.tensor([[2.0], [3.0]], dtype=F64)
    mask = torch.tensor([[True, False]])  # the huge key is masked
    assert softmax_attention(q, k, v, mask=mask).output.tolist() == [[2.0]]  # correct answer
    assert attention_pooling(q, k, v, "exp", mask=mask).output.tolist() == [[2.0]]


def test_exp_pooling_honours_a_finite_additive_mask():
    q, k, v = draw_qkv((3, 5, 7, 11, 13), F64, seed=5)
    m = torch.randn(5, 7, generator=torch.Generator().manual_seed(6), dtype=F64)
    expected = softmax_attention(q, k, v, mask=m).output
    assert_close(attention_pooling(q, k, v, "exp", mask=m).output, expected)


# --- hypothesis properties -----------------------------------------------------------

PROPERTY = settings(max_examples=25, deadline=None)
sizes = st.tuples(st.integers(1, 6), st.integers(1, 7), st.integers(1, 5), st.integers(1, 4))
seeds = st.integers(0, 2**31 - 1)


@PROPERTY
@given(sizes, seeds, st.sampled_from(sorted(SIMILARITIES)))
def test_pooling_key_value_permutation_equivariance(size, seed, name):
    q, k, v = draw_qkv((2, *size), F64, seed)
    perm = torch.randperm(size[1], generator=torch.Generator().manual_seed(seed))
    a = attention_pooling(q, k[:, perm], v[:, perm], name, normalize=name != "dot").output
    assert_close(a, attention_pooling(q, k, v, name, normalize=name != "dot").output)


@PROPERTY
@given(sizes, seeds, st.floats(-100, 100, allow_nan=False))
def test_pooling_scales_with_v(size, seed, alpha):
    q, k, v = draw_qkv((2, *size), F64, seed)
    assert_close(attention_pooling(q, k, alpha * v, "exp").output, alpha * attention_pooling(q, k, v, "exp").output)


@PROPERTY
@given(sizes, seeds)
def test_pooling_specialises_to_softmax_and_unnormalized(size, seed):
    """f = exp(q·k/sqrt(d)) is softmax attention; f = q·k with C_j = 1 is (QK^T)V (logic eq. 2.2)."""
    q, k, v = draw_qkv((2, *size), F64, seed)
    assert_close(attention_pooling(q, k, v, "exp").output, softmax_attention(q, k, v).output)
    assert_close(
        attention_pooling(q, k, v, "dot", normalize=False).output, unnormalized_attention(q, k, v).output
    )
