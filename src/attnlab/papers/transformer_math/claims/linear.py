"""Claims about linear attention, math text §2.1.2 (eq. 13-15, the causal form, the
first-order Taylor example), and a sanity check of attnlab's FAVOR+ random features (Performer's,
not in the text)."""

from __future__ import annotations

from torch import Tensor

import math

import torch

from attnlab.ops.linear import (
    favor_features,
    gaussian_features,
    linear_attention,
    recurrent_linear_attention,
    taylor_as_printed,
    taylor_closed_form,
)
from attnlab.ops.pooling import attention_pooling
from attnlab.checks import Check, at_most
from attnlab.registry import claim


def _elu_kernel(q: Tensor, k: Tensor) -> Tensor:
    phi = lambda x: torch.nn.functional.elu(x) + 1.0  # noqa: E731
    return phi(q) @ phi(k).transpose(-2, -1)


@claim(
    "transformer-math.linear-forms-agree",
    where="§2.1.2, eq. (15) and its causal form",
    statement="phi(Q_i)^T sum_j phi(K_j)V_j^T / phi(Q_i)^T sum_j phi(K_j) equals the kernel form "
    "sum_j sim(Q_i,K_j)V_j / sum_j sim(Q_i,K_j), also causally (chunked, prefix-sum and recurrent)",
    paper_value="exact identity (associativity)",
    anchor="transformer-math.linear-associativity",
    falsifier="a factorised form more than 1e-12 away from the kernel form sum_j sim(Q_i,K_j)V_j / sum_j "
              "sim(Q_i,K_j) (float64), non-causal or causal",
)
def _forms_agree(seed: int) -> Check:
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(2, 3, 37, d, generator=g, dtype=torch.float64) for d in (11, 11, 13))
    naive = attention_pooling(q, k, v, _elu_kernel).output
    worst = {"noncausal": (linear_attention(q, k, v).output - naive).abs().max().item()}
    naive_c = attention_pooling(q, k, v, _elu_kernel, causal=True).output
    for form in ("chunked", "cumsum"):
        out = linear_attention(q, k, v, causal=True, form=form, chunk_size=8).output
        worst[form] = (out - naive_c).abs().max().item()
    worst["recurrent"] = (recurrent_linear_attention(q, k, v).output - naive_c).abs().max().item()
    detail = "max |form - naive O(n^2) kernel form|, elu+1, float64, (2,3,37,11/13), chunk 8: " + ", ".join(
        f"{name} {err:.1e}" for name, err in worst.items()
    )
    return at_most(max(worst.values()), 1e-12, detail,
                   values={"errors": worst, "shape_qk": [2, 3, 37, 11], "shape_v": [2, 3, 37, 13],
                           "chunk_size": 8, "feature_map": "elu+1"})


@claim(
    "transformer-math.linear-taylor-identity",
    where="§2.1.2, the first-order Taylor example",
    statement="with e^{q.k} ~ 1 + q^.k^ (l2-normalised q, k), eq. (12) becomes the printed "
    "sum_j (1 + q^_i^T sum_j k^_j) V_j / sum_j (1 + q^_i^T k^_j), i.e. the linear attention with "
    "phi(x) = [1, x/|x|]",
    paper_value="the first printed display (the second leaves q^_i^T k^_j V_j outside the sum over j)",
    anchor="transformer-math.taylor-display",
    falsifier="the printed display within 1e-12 of the Taylor feature-map form (phi(x) = [1, x/|x|]) at every row",
    erratum="transformer-math.taylor-display",
)
def _taylor_identity(seed: int) -> Check:
    """The text's first display against the Taylor feature-map form it should equal (float64, n = 29):
    the display weights every V_j by the same 1 + q^_i.sum_j k^_j, so it differs; the corrected closed
    form (sum_j V_j + q^_i^T sum_j k^_j V_j^T) / (n + q^_i^T sum_j k^_j) agrees to rounding (values)."""
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(3, 29, d, generator=g, dtype=torch.float64) for d in (7, 7, 5))
    feature_form = linear_attention(q, k, v, feature_map="taylor").output
    closed = taylor_closed_form(q, k, v)
    err = (closed - feature_form).abs().max().item()
    printed = (taylor_as_printed(q, k, v) - feature_form).abs().max().item()
    detail = (
        f"max |printed display - phi(x)=[1, x/|x|] form| = {printed:.2f} (float64, n=29): the display weights "
        f"every V_j by the same 1 + q^_i.sum_j k^_j; the corrected closed form (sum_j V_j + q^_i^T sum_j "
        f"k^_j V_j^T) / (n + q^_i^T sum_j k^_j) agrees to {err:.1e}"
    )
    return at_most(printed, 1e-12, detail, values={"printed_first_error": printed, "closed_form_error": err,
                                                   "n": 29, "d_k": 7, "d_v": 5})


@claim(
    "transformer-math.favor-unbiased",
    where="not in the text (§2.1.2 names no feature map): Performer's FAVOR+ (Choromanski et al. 2021)",
    statement="attnlab's FAVOR+ features: with phi(x) = exp(w^T x' - |x'|^2/2)/sqrt(m), x' = x d^(-1/4), w ~ N(0, I) "
    "(orthogonal blocks), phi(q).phi(k) is an unbiased estimate of exp(q.k/sqrt(d))",
    paper_value="E[phi(q).phi(k)] = exp(q.k/sqrt(d))",
)
def _favor_unbiased(seed: int) -> Check:
    """R independent draws of m orthogonal random features; for 3 pairs (q, k) the mean
    estimate is compared with exp(q.k/sqrt(d)). Tolerance 4 standard errors of the mean
    (SE = sample std / sqrt(R), from the same draws): a correct estimator fails with
    probability ~6e-5 per pair. Reported: the pair with the largest |error| / SE. The text
    names no feature map beyond phi; FAVOR+ and its unbiasedness are Performer's (a proven lemma), so
    the row tests attnlab's implementation of it: a sanity check."""
    g = torch.Generator().manual_seed(seed)
    d, m, R = 16, 32, 2000
    W = gaussian_features(d, m, generator=g, orthogonal=True, batch=(R,))  # (R, m, d)
    x = torch.randn(3, 2, d, generator=g, dtype=torch.float64) * 0.5  # 3 pairs (q, k)
    q, k = x[:, 0], x[:, 1]  # (3, d)
    exact = torch.exp((q * k).sum(-1) / math.sqrt(d))  # (3,)
    phi_q = favor_features(q[:, None, None, :], W)  # (3, R, 1, m)
    phi_k = favor_features(k[:, None, None, :], W)
    est = (phi_q * phi_k).sum(-1).squeeze(-1)  # (3, R)
    rel_err = (est.mean(-1) - exact).abs() / exact
    rel_se = est.std(-1) / math.sqrt(R) / exact
    i = int((rel_err / rel_se).argmax())
    detail = (
        f"d={d}, m={m}, R={R} draws; worst of 3 pairs: exact {exact[i].item():.4f}, mean estimate "
        f"{est[i].mean().item():.4f}, relative SE {rel_se[i].item():.2e}; tolerance = 4 SE; "
        f"single-draw relative std {est[i].std().item() / exact[i].item():.2f}"
    )
    values = {"d": d, "m": m, "draws": R, "worst_pair": i, "exact": exact[i].item(),
              "mean_estimate": est[i].mean().item(), "relative_se": rel_se[i].item(), "standard_errors": 4,
              "single_draw_relative_std": est[i].std().item() / exact[i].item(),
              "relative_errors": rel_err.tolist()}
    return at_most(rel_err[i].item(), 4 * rel_se[i].item(), detail, values, role="sanity")
