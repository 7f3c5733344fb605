"""Linear attention (attnlab.ops.linear): forms, feature maps, diagnostics, low precision,
memory, bad input. The conformance suite (conformance_linear.py) covers masks, gradients,
causality and large logits; this file covers what is particular to linear attention."""

from __future__ import annotations

import math
import re

import pytest
import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

from tolerances import FLOAT64, assert_close

from attnlab.errors import ConfigError
from attnlab.ops.linear import (
    FEATURE_MAPS,
    favor_features,
    feature_map,
    gaussian_features,
    linear_attention,
    recurrent_linear_attention,
    taylor_as_printed,
    taylor_closed_form,
)
from attnlab.ops.pooling import attention_pooling


def _qkv(*batch, n_q=5, n_k=7, d=11, d_v=13, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    return tuple(
        torch.randn(*batch, n, dd, generator=g, dtype=torch.float64).to(dtype)
        for n, dd in ((n_q, d), (n_k, d), (n_k, d_v))
    )


def _naive(q, k, v, phi, **masks):
    """sum_j phi(q_i).phi(k_j) v_j / sum_j phi(q_i).phi(k_j), eq. (15) computed naively."""
    return attention_pooling(q, k, v, lambda a, b: phi(a) @ phi(b).transpose(-2, -1), **masks).output


# --- the forms agree -------------------------------------------------------------------


@pytest.mark.parametrize("n_q,n_k", [(13, 13), (5, 11), (11, 5), (1, 7), (7, 1)])
@pytest.mark.parametrize("alignment", ["top_left", "bottom_right"])
@pytest.mark.parametrize("chunk_size", [1, 3, 64])
def test_causal_forms_agree_with_naive(n_q, n_k, alignment, chunk_size):
    q, k, v = _qkv(2, 3, n_q=n_q, n_k=n_k, d=5, d_v=3, seed=n_q * 31 + n_k)
    expected = _naive(q, k, v, feature_map("elu+1"), causal=alignment)
    for form in ("chunked", "cumsum", "recurrent", "quadratic"):
        out = linear_attention(q, k, v, causal=alignment, form=form, chunk_size=chunk_size).output
        assert_close(out, expected)  # float64: 1e-12 class


def test_noncausal_recurrent_reads_full_state():
    q, k, v = _qkv(3, seed=1)
    out = recurrent_linear_attention(q, k, v, causal=False).output
    assert_close(out, linear_attention(q, k, v).output)


@pytest.mark.parametrize("causal", [False, "bottom_right"])
def test_key_padding_on_the_linear_forms(causal):
    q, k, v = _qkv(2, 3, seed=2)
    kpm = torch.zeros(2, 7, dtype=torch.bool)
    kpm[0, 1] = kpm[1, 4:] = True
    out = linear_attention(q, k, v, causal=causal, key_padding_mask=kpm, chunk_size=2)
    assert_close(out.output, _naive(q, k, v, feature_map("elu+1"), causal=causal, key_padding_mask=kpm))
    assert out.diagnostics["eps_hits"] == 0


def test_weights_are_the_normalised_kernel_matrix():
    q, k, v = _qkv(2, seed=3)
    res = linear_attention(q, k, v, feature_map="taylor", causal="top_left", return_weights=True)
    phi = feature_map("taylor")
    K = (phi(q) @ phi(k).transpose(-2, -1)).tril()  # (2, 5, 7) causal top-left
    assert_close(res.weights, K / K.sum(-1, keepdim=True))
    assert_close(res.weights @ v, res.output)


# --- feature maps ----------------------------------------------------------------------


def test_taylor_feature_map_gives_one_plus_cosine():
    q, k, _ = _qkv(seed=4)
    phi = feature_map("taylor")
    cos = F.normalize(q, dim=-1) @ F.normalize(k, dim=-1).T  # (5, 7)
    assert phi(q).shape == (5, 12)
    assert_close(phi(q) @ phi(k).T, 1 + cos)


def test_taylor_closed_form_and_the_printed_formula():
    q, k, v = _qkv(2, n_q=6, n_k=9, d=4, d_v=3, seed=5)
    assert_close(taylor_closed_form(q, k, v), linear_attention(q, k, v, feature_map="taylor").output)
    # The printed version weights every V_j equally: every query's output is a multiple
    # of sum_j V_j, so all output rows are parallel (rank one per batch item).
    printed = taylor_as_printed(q, k, v)
    ratio = printed / v.sum(-2, keepdim=True)  # (2, 6, 3), constant along the last axis
    assert_close(ratio, ratio[..., :1].expand_as(ratio))
    assert (printed - taylor_closed_form(q, k, v)).abs().max() > 0.1


def test_orthogonal_features_are_orthogonal_within_a_block():
    W = gaussian_features(8, 20, generator=torch.Generator().manual_seed(6))  # blocks 8, 8, 4
    assert W.shape == (20, 8)
    for block in (W[:8], W[8:16], W[16:]):
        G = block @ block.T
        assert_close(G - torch.diag(torch.diagonal(G)), torch.zeros_like(G))


def test_favor_is_seeded_and_stabilisation_cancels():
    q, k, v = _qkv(2, 3, seed=7)
    make = lambda s: feature_map("favor+", d=11, num_features=23, generator=torch.Generator().manual_seed(s))  # noqa: E731
    phi_a, phi_b = make(8), make(8)
    assert torch.equal(phi_a.W, phi_b.W) and not torch.equal(phi_a.W, make(9).W)
    raw = lambda x: favor_features(x, phi_a.W)  # noqa: E731
    for causal in (False, "top_left"):
        out = linear_attention(q, k, v, feature_map=phi_a, causal=causal).output
        assert_close(out, _naive(q, k, v, raw, causal=causal))
    gen = torch.Generator().manual_seed(8)
    by_name = linear_attention(q, k, v, feature_map="favor+", num_features=23, generator=gen).output
    assert_close(by_name, linear_attention(q, k, v, feature_map=phi_a).output)


def test_favor_kernel_mean_matches_exp_kernel():
    """Mean over 3000 draws of phi(q).phi(k) vs exp(q.k/sqrt(d)): within 4 standard errors."""
    d, R = 8, 3000
    W = gaussian_features(d, 16, generator=torch.Generator().manual_seed(9), batch=(R,))
    q, k = torch.randn(2, d, generator=torch.Generator().manual_seed(10), dtype=torch.float64) * 0.6
    est = (favor_features(q[None, None], W) * favor_features(k[None, None], W)).sum(-1).flatten()
    exact = math.exp(q @ k / math.sqrt(d))
    assert abs(est.mean().item() - exact) <= 4 * est.std().item() / math.sqrt(R)


# --- diagnostics and low precision -----------------------------------------------------


def test_diagnostics_min_denominator_and_eps_hits():
    q, k, v = _qkv(2, seed=11)
    phi = feature_map("elu+1")
    D = phi(q) @ phi(k).sum(-2, keepdim=True).transpose(-2, -1)  # (2, 5, 1)
    diag = linear_attention(q, k, v).diagnostics
    assert diag["min_denominator"] == pytest.approx(D.min().item(), rel=FLOAT64)
    assert diag["eps_hits"] == 0 and diag["feature_underflow"] == 0.0
    kpm = torch.zeros(2, 7, dtype=torch.bool)
    kpm[1] = True  # batch item 1 sees no key: its 5 denominators are 0
    res = linear_attention(q, k, v, key_padding_mask=kpm, causal="top_left")
    assert res.diagnostics["eps_hits"] == 5 and res.diagnostics["min_denominator"] == 0.0
    assert (res.output[1] == 0).all()


def test_feature_underflow_fraction_is_counted():
    q, k, v = _qkv(seed=12)
    q[0, :3] = -800.0  # elu(-800) + 1 = exp(-800) = 0 in float64: 3 of 5*11 + 7*11 entries
    diag = linear_attention(q, k, v).diagnostics
    assert diag["feature_underflow"] == pytest.approx(3 / (5 * 11 + 7 * 11), rel=FLOAT64)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_low_precision_features_in_float32(dtype):
    """x = -9: elu(x) + 1 = 1.2e-4 rounds to 0 in bfloat16; computed in float32 it does not."""
    q, k, v = _qkv(2, n_q=6, n_k=9, d=4, d_v=3, seed=13, dtype=dtype)
    k = torch.full_like(k, -9.0)  # every key feature is elu(-9) + 1 = 1.23e-4
    if dtype == torch.bfloat16:
        assert (F.elu(k) + 1 == 0).all()  # the pitfall: computed in bfloat16 it is exactly 0
    res = linear_attention(q, k, v, causal="top_left")
    assert res.output.dtype == dtype and res.diagnostics["feature_underflow"] == 0.0
    assert res.diagnostics["eps_hits"] == 0 and res.diagnostics["min_denominator"] > 1e-6
    expected = _naive(*(t.to(torch.float64) for t in (q, k, v)), feature_map("elu+1"), causal="top_left")
    assert (res.output.to(torch.float64) - expected).abs().max() <= 1e-2  # the dtype's rounding


# --- memory: no n x n tensor on the O(n) forms -----------------------------------------


class _LargestOutput(TorchDispatchMode):
    """Records the largest number of elements any op produced."""

    def __init__(self):
        super().__init__()
        self.largest = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in out if isinstance(out, (tuple, list)) else (out,):
            if isinstance(t, torch.Tensor):
                self.largest = max(self.largest, t.numel())
        return out


@pytest.mark.parametrize("causal", [False, True])
def test_linear_forms_never_build_an_n_by_n_tensor(causal):
    n, d = 1024, 4
    q, k, v = _qkv(n_q=n, n_k=n, d=d, d_v=d, seed=14, dtype=torch.float32)
    with _LargestOutput() as probe:
        linear_attention(q, k, v, causal=causal, chunk_size=32)
    # Largest allowed: the n x C within-chunk blocks (n * 32) or n x (d_v + 1); n^2 is 32x more.
    assert probe.largest <= n * 32 < n * n // 8
    with _LargestOutput() as probe:
        linear_attention(q, k, v, causal=causal, return_weights=True)
    assert probe.largest >= n * n  # the weights are n x n, and only then


# --- bad input -------------------------------------------------------------------------


BAD = [
    (dict(feature_map="softplus"), "unknown feature map"),
    (dict(feature_map="favor+"), "generator="),
    (dict(feature_map="favor+", num_features=0, generator=torch.Generator()), "num_features must be"),
    (dict(feature_map="relu", num_features=8), "favor+ only"),
    (dict(chunk_size=0, causal=True), "chunk_size must be"),
    (dict(eps=0.0), "eps must be"),
    (dict(eps=float("nan")), "eps must be"),
    (dict(form="fast"), "unknown form"),
    (dict(form="chunked"), "causal form"),
    (dict(form="noncausal", causal=True), "drop causal"),
    (dict(form="chunked", causal=True, mask=torch.ones(7, 7, dtype=torch.bool)), "no O(n) form"),
    (dict(mask=torch.full((7, 7), 0.5)), "finite non-zero additive"),
    (dict(causal="left"), "causal must be"),
]


@pytest.mark.parametrize("kwargs,message", BAD, ids=[m for _, m in BAD])
def test_bad_input_raises_config_error(kwargs, message):
    q, k, v = _qkv(n_q=7, seed=15)
    with pytest.raises(ConfigError, match=re.escape(message)):
        linear_attention(q, k, v, **kwargs)


def test_favor_feature_map_for_the_wrong_d():
    phi = feature_map("favor+", d=4, generator=torch.Generator().manual_seed(0))
    q, k, v = _qkv(seed=16)
    with pytest.raises(ConfigError, match="build the feature map with d=11"):
        linear_attention(q, k, v, feature_map=phi)
    with pytest.raises(ConfigError, match="pass d="):
        feature_map("favor+", generator=torch.Generator())


def test_feature_map_names():
    assert FEATURE_MAPS == ("elu+1", "relu", "taylor", "favor+")
