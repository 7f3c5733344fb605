"""Per-head evidence: circuits and copying scores, value-weighted attention, direct logit attribution,
intervals over segments and the attention sink, each against a hand-built head, a brute-force loop or
an independent computation."""

from __future__ import annotations

import math

import pytest
import scipy.stats
import torch
from scipy.optimize import linear_sum_assignment
from tolerances import FLOAT64, FLOAT64_LONG, assert_close

from attnlab.analysis.heads import (
    attention_sink_share,
    copying_score,
    direct_logit_attribution,
    kv_head_index,
    mean_confidence_interval,
    norm_weighted_share,
    qk_ov_circuits,
    uniform_attention,
    value_weighted_attention,
)
from attnlab.errors import ConfigError
from attnlab.ops.multihead import ov_circuit, qk_circuit

F64 = torch.float64


def _gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _layer(H=6, H_kv=2, d=8, d_head=3, d_v=4, seed=0):
    g = _gen(seed)
    return (torch.randn(H, d, d_head, generator=g, dtype=F64), torch.randn(H_kv, d, d_head, generator=g, dtype=F64),
            torch.randn(H_kv, d, d_v, generator=g, dtype=F64), torch.randn(H, d_v, d, generator=g, dtype=F64))


def _maps(*shape, seed=0, causal=False):
    logits = torch.randn(*shape, generator=_gen(seed), dtype=F64)
    if causal:
        n = shape[-1]
        logits = logits.masked_fill(~torch.ones(n, n, dtype=torch.bool).tril(), float("-inf"))
    return logits.softmax(-1)


# ---- circuits ---------------------------------------------------------------------------------
def test_gqa_circuits_equal_the_circuits_of_repeated_key_value_heads():
    W_Q, W_K, W_V, W_O = _layer(H=6, H_kv=2)
    W_QK, W_OV = qk_ov_circuits(W_Q, W_K, W_V, W_O)
    assert W_QK.shape == W_OV.shape == (6, 8, 8) and W_QK.dtype == W_OV.dtype == F64
    assert_close(W_QK, qk_circuit(W_Q, W_K.repeat_interleave(3, dim=0)))
    assert_close(W_OV, ov_circuit(W_V.repeat_interleave(3, dim=0), W_O))
    for h in range(6):  # query head h reads key/value head h // 3
        assert_close(W_QK[h], W_Q[h] @ W_K[h // 3].T)
        assert_close(W_OV[h], W_V[h // 3] @ W_O[h])
    assert kv_head_index(6, 2).tolist() == [0, 0, 0, 1, 1, 1]


def test_circuits_with_leading_layer_axes_and_multi_query_attention():
    layers = [_layer(H=4, H_kv=1, seed=s) for s in range(3)]
    W_QK, W_OV = qk_ov_circuits(*(torch.stack(w) for w in zip(*layers)))
    assert W_QK.shape == (3, 4, 8, 8)
    for L, (W_Q, W_K, W_V, W_O) in enumerate(layers):
        assert_close(W_QK[L], qk_circuit(W_Q, W_K.expand(4, -1, -1)))
        assert_close(W_OV[L], ov_circuit(W_V.expand(4, -1, -1), W_O))


@pytest.mark.parametrize("which, bad, match", [
    ("W_K", torch.zeros(4, 8, 3), "W_K has 4 heads, which does not divide the 6 query heads"),
    ("W_K", torch.zeros(2, 8, 5), r"W_K must have shape \(H_kv, d=8, d_head=3\)"),
    ("W_V", torch.zeros(3, 8, 4), r"W_V must have shape \(H_kv=2, d=8, d_v\)"),
    ("W_O", torch.zeros(6, 5, 8), r"W_O must have shape \(H=6, d_v=4, d=8\)"),
    ("W_Q", torch.zeros(8, 3), "W_Q must have at least 3 axes"),
])
def test_bad_layer_weights_are_refused(which, bad, match):
    w = dict(zip(("W_Q", "W_K", "W_V", "W_O"), _layer()))
    w[which] = bad
    with pytest.raises(ConfigError, match=match):
        qk_ov_circuits(**w)


# ---- copying score ------------------------------------------------------------------------------
def _embedding(V=11, d=5, seed=1):
    W_E = torch.randn(V, d, generator=_gen(seed), dtype=F64)
    return W_E, torch.linalg.pinv(W_E)  # W_U = W_E^+: W_U W_E = I_d


def test_a_copying_head_scores_one_and_a_negating_head_minus_one():
    W_E, W_U = _embedding()
    I = torch.eye(5, dtype=F64)
    s = copying_score(torch.stack([I, -I, 2.5 * I]), W_E, W_U)
    assert s.elhage_score.tolist() == pytest.approx([1.0, -1.0, 1.0], abs=FLOAT64)
    assert s.positive_share.tolist() == pytest.approx([1.0, 0.0, 1.0], abs=FLOAT64)
    assert s.positive_fraction.tolist() == [1.0, 0.0, 1.0] and s.n_nonzero.tolist() == [5, 5, 5]
    assert s.eigenvalues.dtype == torch.complex128 and s.eigenvalues.shape == (3, 5)


def test_a_low_rank_copier_a_rotation_and_a_mixed_head():
    W_E, W_U = _embedding()
    P = torch.diag(torch.tensor([1.0, 1.0, 0.0, 0.0, 0.0], dtype=F64))  # copies a 2-dim subspace
    R = torch.zeros(5, 5, dtype=F64)
    R[0, 1], R[1, 0] = 1.0, -1.0  # a quarter turn: eigenvalues +-i, no copying
    M = torch.diag(torch.tensor([3.0, 1.0, -1.0, 0.0, 0.0], dtype=F64))
    s = copying_score(torch.stack([P, R, M]), W_E, W_U)
    assert s.n_nonzero.tolist() == [2, 2, 3]
    assert s.elhage_score.tolist() == pytest.approx([1.0, 0.0, 3 / 5], abs=FLOAT64)  # (3 + 1 - 1) / 5
    assert s.positive_share.tolist() == pytest.approx([1.0, 0.0, 4 / 5], abs=FLOAT64)
    assert s.positive_fraction.tolist() == pytest.approx([1.0, 0.0, 2 / 3], abs=FLOAT64)
    zero = copying_score(torch.zeros(5, 5, dtype=F64), W_E, W_U)
    assert math.isnan(zero.elhage_score.item()) and zero.n_nonzero.item() == 0


def test_the_small_matrix_has_the_nonzero_eigenvalues_of_the_full_vocabulary_circuit():
    V, d, d_v = 13, 6, 4
    g = _gen(3)
    W_E, W_U = torch.randn(V, d, generator=g, dtype=F64), torch.randn(d, V, generator=g, dtype=F64)
    W_OV = torch.randn(d, d_v, generator=g, dtype=F64) @ torch.randn(d_v, d, generator=g, dtype=F64)
    full = torch.linalg.eigvals(W_E @ W_OV @ W_U)  # (V,): d_v nonzero, V - d_v zeros
    s = copying_score(W_OV, W_E, W_U)
    assert s.n_nonzero.item() == d_v
    small = s.eigenvalues[:d_v]
    cost = (small[:, None] - full[None, :]).abs().numpy()
    rows, cols = linear_sum_assignment(cost)
    assert cost[rows, cols].max() < FLOAT64_LONG
    rest = torch.ones(V, dtype=torch.bool)
    rest[torch.as_tensor(cols)] = False
    assert full[rest].abs().max() < FLOAT64_LONG  # the rest of the full spectrum is zero
    expected = full.real.sum() / full.abs()[~rest].sum()
    assert abs(s.elhage_score.item() - expected.item()) < FLOAT64_LONG


def test_the_norm_gain_is_folded_before_the_value_projection():
    W_E, W_U = _embedding()
    W_OV = torch.randn(2, 5, 5, generator=_gen(4), dtype=F64)
    gamma = torch.linspace(0.5, 2.0, 5, dtype=F64)
    a = copying_score(W_OV, W_E, W_U, norm_scale=gamma)
    b = copying_score(torch.diag(gamma) @ W_OV, W_E, W_U)
    assert_close(a.elhage_score, b.elhage_score)
    assert_close(a.eigenvalues.real, b.eigenvalues.real)


@pytest.mark.parametrize("args, kwargs, match", [
    ((torch.zeros(5, 4), torch.zeros(11, 5), torch.zeros(5, 11)), {}, r"W_OV must be square circuits"),
    ((torch.zeros(5, 5), torch.zeros(11, 4), torch.zeros(5, 11)), {}, r"W_E must be the token embedding \(V, d=5\)"),
    ((torch.zeros(5, 5), torch.zeros(11, 5), torch.zeros(11, 5)), {}, r"W_U must be the unembedding \(d=5, V=11\)"),
    ((torch.zeros(5, 5), torch.zeros(11, 5), torch.zeros(5, 11)), {"norm_scale": torch.ones(4)},
     r"norm_scale must be the norm's gain gamma of shape \(d=5,\)"),
])
def test_bad_copying_inputs_are_refused(args, kwargs, match):
    with pytest.raises(ConfigError, match=match):
        copying_score(*args, **kwargs)


# ---- value-weighted attention ---------------------------------------------------------------------
def test_value_weighted_norms_equal_a_brute_force_loop_with_grouped_value_heads():
    B, H, H_kv, n, d_v, d = 2, 4, 2, 5, 3, 7
    g = _gen(5)
    A = _maps(B, H, n, n, seed=6)
    V = torch.randn(B, H_kv, n, d_v, generator=g, dtype=F64)
    W_O = torch.randn(H, d_v, d, generator=g, dtype=F64)
    N = value_weighted_attention(A, V, W_O)
    N_plain = value_weighted_attention(A, V)
    expected = torch.empty(B, H, n, n, dtype=F64)
    plain = torch.empty(B, H, n, n, dtype=F64)
    for b in range(B):
        for h in range(H):
            for i in range(n):
                for j in range(n):
                    v = V[b, h // 2, j]
                    expected[b, h, i, j] = torch.linalg.vector_norm(A[b, h, i, j] * (v @ W_O[h]))
                    plain[b, h, i, j] = torch.linalg.vector_norm(A[b, h, i, j] * v)
    assert_close(N, expected)
    assert_close(N_plain, plain)
    # d < d_v: the triangular factor is (d, d_v), the norms are still exact
    W_small = torch.randn(H, d_v, 2, generator=g, dtype=F64)
    f = torch.linalg.vector_norm(V.repeat_interleave(2, dim=1) @ W_small[None], dim=-1)
    assert_close(value_weighted_attention(A, V, W_small), A * f[..., None, :])


def test_a_head_on_a_low_norm_first_token_has_a_small_norm_share():
    n = 6
    A = torch.full((1, n, n), 0.1 / (n - 1), dtype=F64)
    A[..., 0] = 0.9  # 90% of every row on the first token
    V = torch.ones(1, n, 2, dtype=F64)
    V[0, 0] = 0.01  # whose value vector nearly vanishes
    N = value_weighted_attention(A, V)
    s = norm_weighted_share(A, N, [0])
    assert s.attention.item() == pytest.approx(0.9, abs=FLOAT64)
    expected = 0.9 * 0.01 / (0.9 * 0.01 + 0.1)  # ||0.9 v_0|| over the row's total norm (||v_j|| = sqrt 2 cancels)
    assert s.norm.item() == pytest.approx(expected, abs=FLOAT64)
    # a key-padding mask leaves the padded rows out; a boolean key mask selects the same keys
    pad = torch.zeros(n, dtype=torch.bool)
    pad[-1] = True
    first = torch.zeros(n, dtype=torch.bool)
    first[0] = True
    m = norm_weighted_share(A, N, first, key_padding_mask=pad)
    total_real = 0.9 * 0.01 + 0.1 / (n - 1) * (n - 2)  # the padded key's norm is left out
    assert m.norm.item() == pytest.approx(0.9 * 0.01 / total_real, abs=FLOAT64)


@pytest.mark.parametrize("V, W_O, match", [
    (torch.zeros(2, 3, 5, 3), None, "V has 3 heads, which does not divide the 4 query heads"),
    (torch.zeros(2, 2, 4, 3), None, r"V must have shape \(\.\.\., H_kv, n=5, d_v\)"),
    (torch.zeros(2, 2, 5, 3), torch.zeros(4, 2, 7), r"W_O must have shape \(\.\.\., H=4, d_v=3, d\)"),
    (torch.zeros(3, 2, 5, 3), None, r"V must have shape .* broadcast to the maps' \(2,\)"),
])
def test_bad_value_inputs_are_refused(V, W_O, match):
    with pytest.raises(ConfigError, match=match):
        value_weighted_attention(_maps(2, 4, 5, 5), V, W_O)


# ---- direct logit attribution ---------------------------------------------------------------------
@pytest.mark.parametrize("norm", ["rms", "layer"])
def test_head_contributions_plus_the_rest_equal_the_logit(norm):
    B, H, n, d, V = 2, 3, 5, 6, 9
    g = _gen(7)
    o = torch.randn(B, H, n, d, generator=g, dtype=F64)
    rest = torch.randn(B, n, d, generator=g, dtype=F64)
    gamma, beta = torch.rand(d, generator=g, dtype=F64) + 0.5, torch.randn(d, generator=g, dtype=F64)
    W_U, b_U = torch.randn(d, V, generator=g, dtype=F64), torch.randn(V, generator=g, dtype=F64)
    x = o.sum(1) + rest
    if norm == "rms":
        scale = 1 / (x.square().mean(-1, keepdim=True) + 1e-6).sqrt()
        logits = (gamma * x * scale) @ W_U + b_U
    else:
        scale = 1 / (x.var(-1, unbiased=False, keepdim=True) + 1e-5).sqrt()
        logits = (gamma * (x - x.mean(-1, keepdim=True)) * scale + beta) @ W_U + b_U
    y = torch.randint(0, V, (B, n), generator=g)
    y[0, 2] = -1
    s = gamma * scale  # (B, n, d)
    center = norm == "layer"
    dla = direct_logit_attribution(o, s, W_U, y, center=center)
    rest_c = direct_logit_attribution(rest[:, None], s, W_U, y, center=center).contributions[:, 0]
    constant = (b_U + (beta @ W_U if center else 0))[y.clamp_min(0)]
    total = dla.contributions.sum(1) + rest_c + constant
    target = logits.gather(-1, y.clamp_min(0)[..., None])[..., 0]
    scored = y >= 0
    assert_close(total[scored], target[scored])
    assert bool(dla.contributions[0, :, 2].isnan().all())
    assert dla.n_scored.tolist() == [n - 1, n]
    assert_close(dla.mean[0], dla.contributions[0][:, scored[0]].mean(-1))
    # (..., n, 1) with gamma folded into W_U gives the same numbers (RMSNorm)
    if norm == "rms":
        folded = direct_logit_attribution(o, scale, gamma[:, None] * W_U, y)
        assert_close(folded.contributions[scored[:, None].expand(-1, H, -1)],
                     dla.contributions[scored[:, None].expand(-1, H, -1)])


@pytest.mark.parametrize("center", [False, True])
def test_the_centred_unembedding_subtracts_the_projection_on_the_mean_direction(center):
    """center_unembed (TransformerLens' default): c'_h,i = c_h,i - (C o_h,i * s_i) . m, m_k = mean_v W_U[k, v],
    float64; and the per-position shift is the same for every target, so the logits' softmax is unchanged."""
    B, H, n, d, V = 2, 3, 5, 7, 11
    g = _gen(11)
    o = torch.randn(B, H, n, d, generator=g, dtype=F64)
    s = torch.rand(B, n, d, generator=g, dtype=F64) + 0.5
    W_U = torch.randn(d, V, generator=g, dtype=F64) + 0.7  # a mean direction well away from 0
    y = torch.randint(0, V, (B, n), generator=g)
    y[1, 0] = -1
    raw = direct_logit_attribution(o, s, W_U, y, center=center)
    centred = direct_logit_attribution(o, s, W_U, y, center=center, center_unembed=True)
    m = W_U.mean(-1)  # (d,)
    oc = o - o.mean(-1, keepdim=True) if center else o
    projection = (oc * s[:, None]) @ m  # (B, H, n)
    scored = (y >= 0)[:, None].expand(-1, H, -1)
    assert_close(centred.contributions[scored], (raw.contributions - projection)[scored])
    assert projection[scored].abs().min().item() > 1e-3  # the two differ: the test can fail
    assert bool(centred.contributions[~scored].isnan().all())
    with pytest.raises(ConfigError, match="center_unembed"):
        direct_logit_attribution(o, s, W_U, y, center_unembed="yes")


_Y = torch.zeros(2, 5, dtype=torch.long)


@pytest.mark.parametrize("scale, W_U, y, match", [
    (torch.ones(2, 4, 1), torch.ones(6, 9), _Y, r"final_scale must have shape \(2, 5\)"),
    (torch.ones(2, 5, 3), torch.ones(6, 9), _Y, r"final_scale must have shape"),
    (torch.ones(2, 5, 1), torch.ones(9, 6), _Y, r"W_U must be the unembedding \(d=6, V\)"),
    (torch.ones(2, 5, 1), torch.ones(6, 9), torch.zeros(2, 5), "targets must be integer token ids"),
    (torch.ones(2, 5, 1), torch.ones(6, 9), torch.zeros(5, dtype=torch.long), r"targets must have shape \(2, 5\)"),
    (torch.ones(2, 5, 1), torch.ones(6, 9), torch.full((2, 5), 9), r"targets must be token ids in \[0, 9\) or -1"),
])
def test_bad_attribution_inputs_are_refused(scale, W_U, y, match):
    with pytest.raises(ConfigError, match=match):
        direct_logit_attribution(torch.zeros(2, 3, 5, 6), scale, W_U, y)


# ---- intervals --------------------------------------------------------------------------------------
def test_the_interval_is_scipys_student_t_interval_and_ignores_nan_per_cell():
    x = torch.randn(7, 3, generator=_gen(8), dtype=F64)
    x[2, 1] = float("nan")
    x[:, 2] = float("nan")
    x[0, 2] = 1.5  # one value: a mean, no interval
    r = mean_confidence_interval(x, dim=0, level=0.9)
    assert r.n.tolist() == [7, 6, 1]
    for c in range(2):
        col = x[:, c][~x[:, c].isnan()].numpy()
        lo, hi = scipy.stats.t.interval(0.9, len(col) - 1, loc=col.mean(), scale=scipy.stats.sem(col))
        assert r.mean[c].item() == pytest.approx(col.mean(), abs=FLOAT64)
        assert r.low[c].item() == pytest.approx(lo, abs=FLOAT64) and r.high[c].item() == pytest.approx(hi, abs=FLOAT64)
    assert r.mean[2].item() == 1.5 and math.isnan(r.low[2].item()) and math.isnan(r.high[2].item())
    r1 = mean_confidence_interval(x.T, dim=1, level=0.9)
    assert_close(r1.low[:2], r.low[:2])
    empty = mean_confidence_interval(torch.full((3, 2), float("nan")))
    assert empty.n.tolist() == [0, 0] and bool(empty.mean.isnan().all())


@pytest.mark.parametrize("x, kwargs, match", [
    (torch.ones(3), {"level": 1.0}, r"level must be a finite number in \(0, 1\)"),
    (torch.ones(3), {"dim": 1}, "dim must be an integer"),
    (torch.tensor([1.0, float("inf")]), {}, "x holds an infinite value"),
])
def test_bad_interval_inputs_are_refused(x, kwargs, match):
    with pytest.raises(ConfigError, match=match):
        mean_confidence_interval(x, **kwargs)


# ---- attention sink ------------------------------------------------------------------------------
def test_the_sink_share_of_uniform_maps_is_the_analytic_chance_level():
    n = 7
    harmonic = sum(1 / k for k in range(1, n + 1))
    causal = attention_sink_share(uniform_attention(n, causal=True))
    assert causal.share.item() == pytest.approx(harmonic / n, abs=FLOAT64)
    assert causal.causal_chance.item() == pytest.approx(harmonic / n, abs=FLOAT64)
    assert causal.bidirectional_chance.item() == pytest.approx(1 / n, abs=FLOAT64)
    assert attention_sink_share(uniform_attention(n)).share.item() == pytest.approx(1 / n, abs=FLOAT64)
    A = _maps(2, 3, n, n, seed=9, causal=True)
    s = attention_sink_share(A)
    assert s.share.shape == s.causal_chance.shape == (2, 3)
    assert_close(s.share, A[..., 0].mean(-1))


def test_the_sink_is_the_first_real_token_under_left_padding():
    n, p = 6, 2  # two padding tokens on the left
    pad = torch.zeros(n, dtype=torch.bool)
    pad[:p] = True
    U = uniform_attention(n, causal=True, key_padding_mask=pad)
    s = attention_sink_share(U[None], key_padding_mask=pad)
    m = n - p
    harmonic = sum(1 / k for k in range(1, m + 1))
    assert s.share.item() == pytest.approx(harmonic / m, abs=FLOAT64)
    assert s.causal_chance.item() == pytest.approx(harmonic / m, abs=FLOAT64)
    assert s.bidirectional_chance.item() == pytest.approx(1 / m, abs=FLOAT64)
