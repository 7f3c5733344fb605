"""Multi-head attention (ops/multihead.py) against per-head reference attention."""

from __future__ import annotations

import pytest
import torch

from tolerances import FLOAT64, assert_close

from attnlab.errors import ConfigError
from attnlab.ops import (
    multi_head_attention,
    ov_circuit,
    qk_circuit,
    reference_attention,
    unnormalized_attention,
)

F64 = torch.float64
B, H, n_q, n_k, d_model, d_head, d_v = 2, 3, 5, 7, 11, 13, 17


def _weights(seed: int, dtype=F64):
    g = torch.Generator().manual_seed(seed)
    r = lambda *s: torch.randn(*s, generator=g, dtype=F64).to(dtype) / s[-2] ** 0.5  # noqa: E731
    W_Q, W_K = r(H, d_model, d_head), r(H, d_model, d_head)
    W_V, W_O = r(H, d_model, d_v), r(H, d_v, d_model)
    b_Q, b_K, b_V, b_O = r(H, 1, d_head)[:, 0], r(H, 1, d_head)[:, 0], r(H, 1, d_v)[:, 0], r(1, d_model)[0]
    return (W_Q, W_K, W_V, W_O), (b_Q, b_K, b_V, b_O)


def _inputs(seed: int, dtype=F64):
    g = torch.Generator().manual_seed(seed)
    x_q = torch.randn(B, n_q, d_model, generator=g, dtype=F64).to(dtype)
    x_kv = torch.randn(B, n_k, d_model, generator=g, dtype=F64).to(dtype)
    return x_q, x_kv


def _per_head_reference(x_q, x_kv, W, b, **kw):
    """sum_h Attention(x_q W_Q,h + b_Q,h, x_kv W_K,h + b_K,h, x_kv W_V,h + b_V,h) W_O,h + b_O."""
    x_q, x_kv = x_q.to(F64), x_kv.to(F64)
    W_Q, W_K, W_V, W_O = (w.to(F64) for w in W)
    b_Q, b_K, b_V, b_O = (t.to(F64) for t in b)
    out, weights = 0.0, []
    for h in range(H):
        r = reference_attention(
            x_q @ W_Q[h] + b_Q[h], x_kv @ W_K[h] + b_K[h], x_kv @ W_V[h] + b_V[h], **kw
        )
        out = out + r.output @ W_O[h]  # (B, n_q, d_model)
        weights.append(r.weights)
    return out + b_O, torch.stack(weights, dim=1)  # weights (B, H, n_q, n_k)


@pytest.mark.parametrize("causal", [None, "bottom_right"])
@pytest.mark.parametrize("return_weights", [False, True])
def test_matches_per_head_reference(return_weights, causal):
    W, b = _weights(0)
    x_q, x_kv = _inputs(1)
    res = multi_head_attention(x_q, x_kv, *W, *b, return_weights=return_weights, causal=causal)
    ref_out, ref_w = _per_head_reference(x_q, x_kv, W, b, causal=causal)
    assert res.output.shape == (B, n_q, d_model)
    assert_close(res.output, ref_out)
    if return_weights:
        assert res.weights.shape == (B, H, n_q, n_k)
        assert_close(res.weights, ref_w)
    else:
        assert res.weights is None


def test_float32_matches_reference():
    W, b = _weights(2, torch.float32)
    x_q, x_kv = _inputs(3, torch.float32)
    res = multi_head_attention(x_q, x_kv, *W, *b)
    assert res.output.dtype == torch.float32
    assert_close(res.output, _per_head_reference(x_q, x_kv, W, b)[0], torch.float32)


def test_concat_form_eq_7():
    """MultiHead = Concat(head_1..head_H) W_O with W_O the (H d_v, d_model) stack of W_O,h."""
    W, _ = _weights(4)
    x_q, x_kv = _inputs(5)
    W_Q, W_K, W_V, W_O = W
    heads = [
        reference_attention(x_q @ W_Q[h], x_kv @ W_K[h], x_kv @ W_V[h]).output for h in range(H)
    ]
    concat = torch.cat(heads, dim=-1)  # (B, n_q, H d_v)
    assert_close(multi_head_attention(x_q, x_kv, *W).output, concat @ W_O.reshape(H * d_v, d_model))


def test_qk_and_ov_circuits():
    """Logits are X W_QK,h Y^T / sqrt(d_head); head h writes P_h Y W_OV,h; both have rank <= d_head."""
    g = torch.Generator().manual_seed(6)
    small = 3  # d_head = 3 < d_model = 11, so the rank bound is visible
    W_Q, W_K = (torch.randn(H, d_model, small, generator=g, dtype=F64) for _ in range(2))
    W_V = torch.randn(H, d_model, small, generator=g, dtype=F64)
    W_O = torch.randn(H, small, d_model, generator=g, dtype=F64)
    x_q, x_kv = _inputs(7)
    W_QK, W_OV = qk_circuit(W_Q, W_K), ov_circuit(W_V, W_O)
    assert W_QK.shape == W_OV.shape == (H, d_model, d_model)
    assert torch.linalg.matrix_rank(W_QK).tolist() == [small] * H
    assert torch.linalg.matrix_rank(W_OV).tolist() == [small] * H
    res = multi_head_attention(x_q, x_kv, W_Q, W_K, W_V, W_O, return_weights=True)
    logits = torch.einsum("bnd,hde,bme->bhnm", x_q, W_QK, x_kv) / small**0.5  # (B, H, n_q, n_k)
    assert_close(res.weights, torch.softmax(logits, dim=-1))
    by_ov = torch.einsum("bhnm,bmd,hde->bne", res.weights, x_kv, W_OV)  # sum_h P_h Y W_OV,h
    assert_close(res.output, by_ov)


def test_pluggable_unnormalized_attention():
    W, _ = _weights(8)
    x_q, x_kv = _inputs(9)
    res = multi_head_attention(x_q, x_kv, *W, attention=unnormalized_attention, causal="top_left")
    ref, _ = _per_head_reference(
        x_q, x_kv, W, (torch.zeros(H, d_head, dtype=F64), torch.zeros(H, d_head, dtype=F64),
                       torch.zeros(H, d_v, dtype=F64), torch.zeros(d_model, dtype=F64)),
        normalize=False, scale="none", causal="top_left",
    )
    assert_close(res.output, ref)


def test_key_padding_reaches_every_head():
    W, b = _weights(10)
    x_q, x_kv = _inputs(11)
    kpm = torch.zeros(B, n_k, dtype=torch.bool)
    kpm[1, 2:] = True
    res = multi_head_attention(x_q, x_kv, *W, *b, key_padding_mask=kpm, return_weights=True)
    assert (res.weights[1, :, :, 2:] == 0).all() and (res.weights[0] > 0).all()
    assert_close(res.output, _per_head_reference(x_q, x_kv, W, b, key_padding_mask=kpm)[0])


# --- ConfigError paths ---------------------------------------------------------------


def test_weight_shape_errors():
    (W_Q, W_K, W_V, W_O), _ = _weights(12)
    x_q, x_kv = _inputs(13)
    with pytest.raises(ConfigError, match=r"per-head weights must be 3-D"):
        multi_head_attention(x_q, x_kv, W_Q[0], W_K, W_V, W_O)
    with pytest.raises(ConfigError, match=r"W_K has shape \(3, 11, 5\), expected \(H_kv, 11, 13\) with H_kv dividing"):
        multi_head_attention(x_q, x_kv, W_Q, W_K[..., :5], W_V, W_O)
    with pytest.raises(ConfigError, match=r"W_V has shape \(2, 11, 17\), expected \(3, 11, d_v\)"):
        multi_head_attention(x_q, x_kv, W_Q, W_K, W_V[:2], W_O)
    with pytest.raises(ConfigError, match=r"W_O has shape \(3, 7, 11\), expected \(3, 17, 11\)"):
        multi_head_attention(x_q, x_kv, W_Q, W_K, W_V, W_O[:, :7])


def test_input_d_model_error():
    W, _ = _weights(14)
    x_q, x_kv = _inputs(15)
    with pytest.raises(ConfigError, match="inputs have d_model=7 and 11, weights expect 11"):
        multi_head_attention(x_q[..., :7], x_kv, *W)


def test_attention_errors_pass_through():
    W, _ = _weights(16)
    x_q, x_kv = _inputs(17)
    with pytest.raises(ConfigError, match="causal=True is ambiguous with 5 queries and 7 keys"):
        multi_head_attention(x_q, x_kv, *W, causal=True)
    with pytest.raises(ConfigError, match="unknown scale"):
        multi_head_attention(x_q, x_kv, *W, scale="1/k")


def test_grouped_query_attention_equals_repeated_key_value_heads():
    """H = 6 query heads sharing H_kv = 2 key/value heads: every path (fused, weights, masks, the
    unnormalized operator) equals multi-head attention with each K/V head repeated for its group."""
    from attnlab.ops.rotary import rotary
    from attnlab.ops.softmax import softmax_attention
    from attnlab.ops.unnormalized import unnormalized_attention

    g = torch.Generator().manual_seed(3)
    H, H_kv, d, dh, n = 6, 2, 16, 8, 9
    W_Q, W_O = torch.randn(H, d, dh, generator=g, dtype=torch.float64), torch.randn(H, dh, d, generator=g, dtype=torch.float64)
    W_K, W_V = (torch.randn(H_kv, d, dh, generator=g, dtype=torch.float64) for _ in range(2))
    x = torch.randn(2, n, d, generator=g, dtype=torch.float64)
    pad = torch.zeros(2, n, dtype=torch.bool)
    pad[1, :3] = True
    rot = rotary(torch.arange(n)[None], dh, 1e4)
    rep = [W.repeat_interleave(3, 0) for W in (W_K, W_V)]
    for causal in (None, True):
        for kpm in (None, pad):
            for weights in (False, True):
                for op in (softmax_attention, unnormalized_attention):
                    kw = dict(causal=causal, key_padding_mask=kpm, return_weights=weights, attention=op,
                              qkv_transform=rot)
                    a = multi_head_attention(x, x, W_Q, W_K, W_V, W_O, **kw)
                    b = multi_head_attention(x, x, W_Q, rep[0], rep[1], W_O, **kw)
                    assert (a.output - b.output).abs().max().item() <= 1e-13 * b.output.abs().max().item()
                    if weights:
                        assert a.weights.shape == (2, H, n, n)
                        assert (a.weights - b.weights).abs().max().item() <= FLOAT64
