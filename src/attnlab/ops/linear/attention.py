"""Linear attention: the kernel form of attention, math text §2.1.2 eq. (13)-(15).

    V'_i = phi(Q_i)^T sum_{j in J(i)} phi(K_j) V_j^T  /  max(phi(Q_i)^T sum_{j in J(i)} phi(K_j), eps)

J(i) = all keys, or j <= i + offset when causal (top_left: offset 0; bottom_right:
offset n_k - n_q), minus padding keys. It is an exact operator of its own (not an
approximation of softmax, except FAVOR+ in expectation); its float64 oracle is the
naive O(n²) kernel form, eq. (18) with f(q, k) = phi(q)·phi(k).

Masks: ``causal`` and ``key_padding_mask`` keep the O(n) forms. A general ``mask``
(boolean, or float of 0 and -inf) has no O(n) form: it goes through the quadratic
form, which materialises the n_q x n_k kernel matrix. Finite additive mask values are
rejected: there are no logits to add them to.

A denominator below ``eps`` is clamped to ``eps``; a query that sees no key (all
masked) has numerator 0 and output 0. ``diagnostics`` (a
:class:`~attnlab.ops.diagnostics.Diagnostics`: computed on the inputs' device with the
output, read to the host only when accessed, so a forward pass never synchronises):
  min_denominator   smallest D_i before clamping (float; inf when there is no query)
  eps_hits          how many D_i were below eps and clamped (int)
  feature_underflow fraction of phi(Q), phi(K) entries that rounded to exactly 0
                    although non-zero in exact arithmetic (see features.py)

bfloat16/float16 inputs: the features and all sums are computed in float32 and the
output is cast back. In bfloat16, elu(x) + 1 is already exactly 0 for x below about
-6 (spacing of bfloat16 near 1 is 2^-8), so computing in the input dtype would collapse
denominators; float32 keeps elu(x) + 1 > 0 down to x of about -87.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from attnlab.errors import ConfigError
from attnlab.ops.diagnostics import Diagnostics
from attnlab.ops.memory import check_dense_fits
from attnlab.ops.linear.features import FeatureMap, feature_map as get_feature_map
from attnlab.ops.linear.forms import (
    causal_chunked_form,
    causal_cumsum_form,
    noncausal_form,
    quadratic_form,
    recurrent_form,
)
from attnlab.ops.masks import causal_mask, combine_masks, reject_finite_additive, resolve_causal
from attnlab.ops.softmax import AttentionOutput, batch_shape, check_qkv, empty_attention

FORMS = ("auto", "noncausal", "chunked", "cumsum", "recurrent", "quadratic")
_LOW_PRECISION = (torch.float16, torch.bfloat16)


def linear_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    feature_map: str | FeatureMap = "elu+1",
    causal: bool | str | None = False,
    mask: Tensor | None = None,
    key_padding_mask: Tensor | None = None,
    chunk_size: int = 64,
    eps: float = 1e-6,
    num_features: int | None = None,
    generator: torch.Generator | None = None,
    form: str = "auto",
    return_weights: bool = False,
) -> AttentionOutput:
    """Linear attention, eq. (15) and its causal form.

    q, k, v: (..., n_q, d_k), (..., n_k, d_k), (..., n_k, d_v) -> output (..., n_q, d_v).
    feature_map: "elu+1", "relu", "taylor", "favor+" or a FeatureMap (favor+ needs
        ``generator``; ``num_features`` = m, default d_k).
    form: "auto" (quadratic with a general mask, else chunked when causal, else
        noncausal) or one of FORMS to force it (forms.py).
    return_weights: also return Kmat_ij / max(D_i, eps) (n_q x n_k, computed apart).
    """
    return _run(q, k, v, feature_map, causal, mask, key_padding_mask, chunk_size, eps,
                num_features, generator, form, return_weights)


def recurrent_linear_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    feature_map: str | FeatureMap = "elu+1",
    causal: bool | str | None = True,
    key_padding_mask: Tensor | None = None,
    eps: float = 1e-6,
    num_features: int | None = None,
    generator: torch.Generator | None = None,
    return_weights: bool = False,
) -> AttentionOutput:
    """Linear attention as an RNN over the tokens (state S_i = S_{i-1} + phi(K_i) V_i^T,
    z_i = z_{i-1} + phi(K_i)); one step per query, a Python loop: for checking and
    for decoding, not for speed. causal=False starts every query from the full state."""
    return _run(q, k, v, feature_map, causal, None, key_padding_mask, 64, eps,
                num_features, generator, "recurrent", return_weights)


def _check_options(chunk_size: int | None, eps: float, form: str, mask: Tensor | None, alignment: str) -> None:
    if form not in FORMS:
        raise ConfigError(f"unknown form {form!r}: choose one of {', '.join(FORMS)}")
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise ConfigError(f"chunk_size must be a positive integer, got {chunk_size!r}")
    if not (isinstance(eps, (int, float)) and math.isfinite(eps) and eps > 0):
        raise ConfigError(f"eps must be a positive finite number, got {eps!r}")
    if mask is not None and form not in ("auto", "quadratic"):
        raise ConfigError(
            f"a general mask has no O(n) form: use form='auto' or 'quadratic', not {form!r}, "
            "or express it as causal= / key_padding_mask="
        )
    if alignment is None and form in ("chunked", "cumsum"):
        raise ConfigError(f"form={form!r} is a causal form: pass causal=True (or an alignment)")
    if alignment is not None and form == "noncausal":
        raise ConfigError("form='noncausal' ignores causality: drop causal= or use form='auto'")


def _run(q: Tensor, k: Tensor, v: Tensor, fmap: FeatureMap, causal: bool, mask: Tensor | None, key_padding_mask: Tensor | None, chunk_size: int | None, eps: float,
         num_features: int | None, generator: torch.Generator | None, form: str, return_weights: bool) -> AttentionOutput:
    check_qkv(q, k, v)
    if (empty := empty_attention(q, k, v, return_weights)) is not None:
        return empty
    if return_weights or form == "quadratic":
        check_dense_fits(q, k, v, copies=1, what=f"linear attention ({form} form, return_weights={return_weights}): "
                                                 "the kernel matrix", change="lower n, or use an O(n) form without "
                                                                             "return_weights")
    n_q, n_k = q.shape[-2], k.shape[-2]
    alignment = resolve_causal(causal, n_q, n_k)
    _check_options(chunk_size, eps, form, mask, alignment)
    phi = get_feature_map(fmap, d=q.shape[-1], num_features=num_features, generator=generator)
    batch = batch_shape(q, k, v)
    # Causality stays implicit (an offset) on the O(n) forms: the n_q x n_k causal mask
    # is only built for the quadratic form or the weights.
    allowed, additive = combine_masks(
        n_q, n_k, batch_shape=batch, mask=mask, key_padding_mask=key_padding_mask, device=q.device
    )
    reject_finite_additive(additive, "linear attention")
    if alignment is not None and (return_weights or mask is not None or form == "quadratic"):
        visible = causal_mask(n_q, n_k, alignment=alignment, device=q.device)  # (n_q, n_k)
        allowed = visible if allowed is None else allowed & visible
    dtype = q.dtype
    work = torch.float32 if dtype in _LOW_PRECISION else dtype
    q, k, v = (t.to(work).expand(*batch, *t.shape[-2:]) for t in (q, k, v))
    phi_q, phi_k = phi(q, "query"), phi(k, "key")  # (..., n_q, m), (..., n_k, m)
    with torch.no_grad():
        under = phi.underflow_count(q, phi_q) + phi.underflow_count(k, phi_k)  # 0-d tensor
        underflow = under.to(torch.float64) / max(1, phi_q.numel() + phi_k.numel())
    if key_padding_mask is not None:
        keep = ~key_padding_mask  # (B, n_k)
        keep = keep.reshape(keep.shape[0], *(1,) * (len(batch) - 1), n_k, 1)  # (B, 1.., n_k, 1)
        phi_k = phi_k * keep.to(work)
    U = torch.cat([v, torch.ones_like(v[..., :1])], dim=-1)  # [V, 1], (..., n_k, d_v + 1)
    offset = None if alignment is None else (0 if alignment == "top_left" else n_k - n_q)
    ND, Kmat = _numerator_denominator(phi_q, phi_k, U, allowed, offset, form, mask, chunk_size)
    N, D = ND[..., :-1], ND[..., -1:]  # (..., n_q, d_v), (..., n_q, 1)
    D_safe = D.clamp_min(eps)
    out = (N / D_safe).to(dtype)
    weights = None
    if return_weights:
        if Kmat is None:
            Kmat = quadratic_form(phi_q, phi_k, U[..., :0], allowed)[1]
        weights = (Kmat / Kmat.sum(-1, keepdim=True).clamp_min(eps)).to(dtype)
    with torch.no_grad():  # 0-d tensors on the device: no host synchronisation here
        diagnostics = Diagnostics(
            {"min_denominator": D.min() if D.numel() else math.inf,
             "eps_hits": (D < eps).sum(),
             "feature_underflow": underflow},
            kinds={"eps_hits": int},
        )
    return AttentionOutput(out, weights, diagnostics)


def _numerator_denominator(phi_q: Tensor, phi_k: Tensor, U: Tensor, allowed: Tensor | None, offset: int, form: str, mask: Tensor | None, chunk_size: int | None) -> tuple[Tensor, Tensor | None]:
    """([N, D] (..., n_q, d_v + 1), kernel matrix or None) by the chosen form."""
    if form == "auto":
        form = "quadratic" if mask is not None else ("noncausal" if offset is None else "chunked")
    if form == "quadratic":
        return quadratic_form(phi_q, phi_k, U, allowed)
    if form == "noncausal":
        return noncausal_form(phi_q, phi_k, U), None
    if offset is None:  # recurrent without causality: every query reads the full state
        offset = phi_k.shape[-2]
    if form == "chunked":
        return causal_chunked_form(phi_q, phi_k, U, offset, chunk_size), None
    if form == "cumsum":
        return causal_cumsum_form(phi_q, phi_k, U, offset), None
    return recurrent_form(phi_q, phi_k, U, offset), None
