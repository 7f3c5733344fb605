"""MultiHeadAttention module: paper notation, eq. (3)-(7) of the math text."""

import math

import pytest
import torch

from attnlab.errors import ConfigError, UnknownNameError
from attnlab.nn.attention import MultiHeadAttention, merge_heads, split_heads
from attnlab.ops.multihead import multi_head_attention
from attnlab.ops.reference import reference_attention
from tolerances import FLOAT64, FLOAT64_LONG

B, N_Q, N_K, D_MODEL, H, D_HEAD, D_V = 3, 5, 7, 11, 2, 13, 17  # distinct sizes


def _module(bias=True, seed=0, **kw):
    torch.manual_seed(seed)
    m = MultiHeadAttention(D_MODEL, H, d_head=D_HEAD, d_v=D_V, bias=bias, **kw).double()
    if bias:  # nonzero biases so a bias mix-up fails
        with torch.no_grad():
            for b in (m.b_Q, m.b_K, m.b_V, m.b_O):
                b.normal_()
    return m


def _inputs(seed=1):
    g = torch.Generator().manual_seed(seed)
    x_q = torch.randn(B, N_Q, D_MODEL, generator=g, dtype=torch.float64)
    x_kv = torch.randn(B, N_K, D_MODEL, generator=g, dtype=torch.float64)
    return x_q, x_kv


def _per_head_reference(m, x_q, x_kv, **kw):
    """sum_h head_h W_O,h + b_O with each head from the float64 oracle."""
    out = m.b_O.clone() if m.b_O is not None else 0.0
    heads = []
    for h in range(m.n_heads):
        q = x_q @ m.W_Q[h] + (m.b_Q[h] if m.b_Q is not None else 0)  # (B, n_q, d_head)
        k = x_kv @ m.W_K[h] + (m.b_K[h] if m.b_K is not None else 0)  # (B, n_k, d_head)
        v = x_kv @ m.W_V[h] + (m.b_V[h] if m.b_V is not None else 0)  # (B, n_k, d_v)
        ref = reference_attention(q, k, v, **kw)
        out = out + ref.output @ m.W_O[h]
        heads.append(ref.weights)
    return out, torch.stack(heads, dim=1)  # (B, n_q, d_model), (B, H, n_q, n_k)


def test_parameter_shapes_in_paper_notation():
    m = _module()
    shapes = {n: tuple(p.shape) for n, p in m.named_parameters()}
    assert shapes == {
        "W_Q": (H, D_MODEL, D_HEAD), "W_K": (H, D_MODEL, D_HEAD), "W_V": (H, D_MODEL, D_V),
        "W_O": (H, D_V, D_MODEL), "b_Q": (H, D_HEAD), "b_K": (H, D_HEAD), "b_V": (H, D_V),
        "b_O": (D_MODEL,),
    }
    assert MultiHeadAttention(15, 5).d_head == 3


def test_output_and_weight_shapes():
    m = _module()
    x_q, x_kv = _inputs()
    out = m(x_q, x_kv, return_weights=True)
    assert out.output.shape == (B, N_Q, D_MODEL)
    assert out.weights.shape == (B, H, N_Q, N_K)
    assert m(x_q).output.shape == (B, N_Q, D_MODEL)  # self-attention default


def test_matches_functional_op_exactly():
    m = _module()
    x_q, x_kv = _inputs()
    expected = multi_head_attention(
        x_q, x_kv, m.W_Q, m.W_K, m.W_V, m.W_O, m.b_Q, m.b_K, m.b_V, m.b_O
    ).output
    assert torch.equal(m(x_q, x_kv).output, expected)


@pytest.mark.parametrize("scale", ["1/sqrt(d)", "1/d", 0.3])
def test_matches_float64_reference_per_head(scale):
    m = _module(scale=scale)
    x_q, x_kv = _inputs()
    got = m(x_q, x_kv, return_weights=True)
    ref_out, ref_w = _per_head_reference(m, x_q, x_kv, scale=scale)
    assert (got.output - ref_out).abs().max() < FLOAT64
    assert (got.weights - ref_w).abs().max() < FLOAT64
    assert (m(x_q, x_kv).output - ref_out).abs().max() < FLOAT64  # fused path too


def test_masks_match_reference():
    m = _module()
    x_q, _ = _inputs()
    kpm = torch.zeros(B, N_Q, dtype=torch.bool)
    kpm[1, 3:] = True
    got = m(x_q, causal=True, key_padding_mask=kpm, return_weights=True)
    ref_out, ref_w = _per_head_reference(m, x_q, x_q, causal=True, key_padding_mask=kpm)
    assert (got.output - ref_out).abs().max() < FLOAT64
    assert (got.weights - ref_w).abs().max() < FLOAT64
    assert (got.weights[1, :, :, 3:] == 0).all()
    assert (torch.triu(got.weights[0], diagonal=1) == 0).all()


def test_qk_and_ov_circuits():
    m = _module(bias=False)
    x_q, x_kv = _inputs()
    W_QK, W_OV = m.qk_circuit(), m.ov_circuit()
    assert W_QK.shape == W_OV.shape == (H, D_MODEL, D_MODEL)
    logits = torch.einsum("bnd,hde,bme->bhnm", x_q, W_QK, x_kv) / math.sqrt(D_HEAD)  # X W_QK Y^T * c
    got = m(x_q, x_kv, return_weights=True)
    assert (torch.softmax(logits, dim=-1) - got.weights).abs().max() < FLOAT64
    out = torch.einsum("bhnm,bmd,hde->bne", got.weights, x_kv, W_OV)  # sum_h P_h Y W_OV,h
    assert (out - got.output).abs().max() < FLOAT64
    assert torch.linalg.matrix_rank(W_QK[0]).item() == min(D_MODEL, D_HEAD)


def test_unnormalized_attention():
    m = _module(bias=False, attention="unnormalized", scale="none")
    x_q, x_kv = _inputs()
    expected = sum(
        ((x_q @ m.W_Q[h]) @ (x_kv @ m.W_K[h]).transpose(-2, -1)) @ (x_kv @ m.W_V[h]) @ m.W_O[h]
        for h in range(H)
    )
    assert (m(x_q, x_kv).output - expected).abs().max() < FLOAT64_LONG


def test_eq3_slicing_round_trip_and_concat_form():
    g = torch.Generator().manual_seed(2)
    d, n_heads, k = 12, 3, 4  # H k = d as in the text
    W_q, W_k, W_v, W_c = (torch.randn(d, d, generator=g, dtype=torch.float64) for _ in range(4))
    m = MultiHeadAttention.from_full(W_q, W_k, W_v, W_c, n_heads)
    assert (m.d_head, m.d_v, m.b_O) == (k, k, None)
    assert all(torch.equal(a, b) for a, b in zip(m.to_full(), (W_q, W_k, W_v, W_c)))
    assert torch.equal(m.W_V[2], W_v[:, 8:12])  # the value block comes from W_v (text: W_k, a typo)
    assert torch.equal(m.W_O[1], W_c[4:8, :])
    X = torch.randn(B, N_Q, d, generator=g, dtype=torch.float64)
    heads = [
        torch.softmax((X @ W_q[:, s]) @ (X @ W_k[:, s]).transpose(-2, -1) / math.sqrt(k), -1) @ (X @ W_v[:, s])
        for s in (slice(h * k, (h + 1) * k) for h in range(n_heads))
    ]
    expected = torch.cat(heads, dim=-1) @ W_c  # Concat(head_1, ..., head_H) W_c, eq. (7)
    assert (m(X).output - expected).abs().max() < FLOAT64


def test_split_merge_inverse():
    W_Q, W_K = torch.randn(2, 5, 3, dtype=torch.float64), torch.randn(2, 5, 3, dtype=torch.float64)
    W_V, W_O = torch.randn(2, 5, 7, dtype=torch.float64), torch.randn(2, 7, 5, dtype=torch.float64)
    full = merge_heads(W_Q, W_K, W_V, W_O)
    assert [tuple(W.shape) for W in full] == [(5, 6), (5, 6), (5, 14), (14, 5)]
    assert all(torch.equal(a, b) for a, b in zip(split_heads(*full, n_heads=2), (W_Q, W_K, W_V, W_O)))


def test_fully_padded_rows_finite_gradients():
    m = _module()
    x_q, x_kv = _inputs()
    x_q.requires_grad_(True)
    kpm = torch.zeros(B, N_K, dtype=torch.bool)
    kpm[0] = True  # every key of sequence 0 is padding
    out = m(x_q, x_kv, key_padding_mask=kpm).output
    assert torch.equal(out[0], m.b_O.expand(N_Q, D_MODEL))  # heads are 0: only b_O remains
    out.pow(2).sum().backward()
    assert torch.isfinite(x_q.grad).all()
    assert all(torch.isfinite(p.grad).all() for p in m.parameters())


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: MultiHeadAttention(10, 3), ConfigError, "not divisible by n_heads=3"),
        (lambda: MultiHeadAttention(0, 3), ConfigError, "must be positive"),
        (lambda: MultiHeadAttention(6, 2, attention="linear"), UnknownNameError, "unknown attention 'linear'"),
        (lambda: MultiHeadAttention(6, 2, scale="1/k"), ConfigError, "unknown scale"),
        (lambda: MultiHeadAttention(6, 2, scale=-1.0), ConfigError, "positive finite"),
        (lambda: split_heads(*(torch.zeros(6, 6),) * 4, n_heads=4), ConfigError, "must divide"),
        (lambda: split_heads(torch.zeros(6, 6), torch.zeros(6, 3), torch.zeros(6, 6), torch.zeros(6, 6), n_heads=3),
         ConfigError, "expected W_k"),
        (lambda: split_heads(torch.zeros(6), *(torch.zeros(6, 6),) * 3, n_heads=3), ConfigError, "2-D"),
        (lambda: MultiHeadAttention(6, 2)(torch.zeros(2, 3, 5)), ConfigError, "d_model=5"),
    ],
)
def test_bad_input_messages(call, error, message):
    with pytest.raises(error, match=message):
        call()
