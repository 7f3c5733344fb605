"""Theorem 2.2's bound beside the measured residual: random single-head SANs and MiniLM's SAN.

Notes §2.2, Theorem 2.2 (Dong et al. 2021, single head, no skip): if every layer of a SAN has
beta_l = ||W_QK,l||_1 ||W_l||_{1,inf} <= beta (:func:`~attnlab.papers.rank_collapse.single_head_san.layer_beta`,
W_l = W_V,l W_O,l) then

    ||res(SAN(X))||_{1,inf} <= (4 beta / sqrt(d_qk))^{(3^L - 1)/2} ||res(X)||_{1,inf}^{3^L}.

:func:`san_residuals` draws one random single-head SAN (weights N(0, 1/fan_in) times a scale s) and an
input X = 1 x^T + r_0 R / ||R||_{1,inf} (R a mean-free Gaussian matrix, so ||res_mean X|| = r_0) and
runs it through :func:`~attnlab.papers.rank_collapse.single_head_san.single_head_layer`; :func:`bound_point`
sets its residuals beside the bound at every depth; :func:`minilm_san` measures pure attention in
all-MiniLM-L6-v2 (pretrained and BERT-init random) against the multi-head form of the bound (the
constant times H). Everything float64; logs base 10 (bounds reach 10^300).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from attnlab.analysis.path_decomposition import random_san
from attnlab.analysis.residuals import composite_norm, l1_norm, relative_residual, residual
from attnlab.ops.multihead import ov_circuit
from attnlab.papers.rank_collapse.doubly_exponential import FLOOR, DoublyExponentialFit, fit_doubly_exponential
from attnlab.papers.rank_collapse.single_head_san import layer_beta, log_theorem22_bound, single_head_layer
from attnlab.papers.rank_collapse.stacks import VARIANTS, build_model, long_texts, run_model, text_batch
from attnlab.stored import Stored


def log10_bound(L: int, beta: float, d_qk: int, res0: float, heads: int = 1) -> float:
    """log10 of (4 H beta / sqrt(d_qk))^{(3^L - 1)/2} res0^{3^L} (H = 1: Theorem 2.2;
    :func:`attnlab.papers.rank_collapse.single_head_san.log_theorem22_bound`)."""
    return log_theorem22_bound(4 * heads * beta / math.sqrt(d_qk), res0, L) / math.log(10)


@dataclass(frozen=True)
class SanResiduals:
    """One random single-head SAN of L layers on one input X = X_0."""

    beta: float  # max over l of ||W_QK,l||_1 ||W_l||_{1,inf}
    res0: float  # ||res X||_{1,inf}, the exact composite residual of the input
    res: list[float]  # (L,): ||res X_l||_{1,inf}, token-mean residual of layer l's output, l = 1..L
    resolved: list[bool]  # (L,): res_l above float64 rounding (> FLOOR ||X_l||_{1,inf})


@dataclass(frozen=True)
class BoundPoint(Stored):
    """Theorem 2.2 on one random SAN: its weight scale and input residual, the measurement and the bound."""

    scale: float  # s, the factor on W_Q, W_K, W_V, W_O
    r0: float  # r_0 = ||res_mean X||_{1,inf}, the input residual asked for
    beta: float  # max over l of ||W_QK,l||_1 ||W_l||_{1,inf}
    res0: float  # ||res X||_{1,inf}, the exact composite residual of the input
    res: list[float]  # (L,): token-mean residual ||res X_l||_{1,inf}, l = 1..L
    resolved: list[bool]  # (L,): res_l above float64 rounding
    kappa: float  # 4 beta ||res X||^2 / sqrt(d_qk); the bound shrinks with L only if kappa < 1
    log10_bound: list[float]  # (L,): log10 of (4 beta / sqrt(d_qk))^{(3^l - 1)/2} ||res X||^{3^l}
    log10_measured: list[float]  # (L,): log10 res_l (floored at 1e-300)
    fit: DoublyExponentialFit  # of res0, res_1, ..., res_L


@dataclass(frozen=True)
class MiniLMSan(Stored):
    """Pure attention (SAN) in all-MiniLM-L6-v2 against the multi-head form of Theorem 2.2."""

    relative: list[float]  # (L + 1,): ||res X_l|| / ||X_l|| (token mean, 1,inf), mean over texts, l = 0..L
    absolute: list[float]  # (L + 1,): ||res X_l||_{1,inf} (token mean), mean over texts
    beta: float  # max over layers and heads of ||W_QK||_1 ||W_OV||_{1,inf}
    H: int  # heads per layer
    d_qk: int  # query/key width of a head
    res0: float  # ||res X_0||_{1,inf} (token mean), max over texts
    log10_bound: list[float]  # (L,): log10 of (4 H beta / sqrt(d_qk))^{(3^l - 1)/2} res0^{3^l}, l = 1..L
    fit: DoublyExponentialFit  # of ``relative``


def san_residuals(layers: int, d: int, d_qk: int, n: int, s: float, r0: float, g: torch.Generator,
                  device: str = "cpu") -> SanResiduals:
    """One random single-head SAN of ``layers`` layers (width d, query/key width d_qk, weights
    :func:`~attnlab.analysis.path_decomposition.random_san` times s, biases left out: they only add
    terms constant along softmax rows or a shift 1 b^T, which the residual removes) on one input
    X = 1 x^T + r_0 R / ||R||_{1,inf} (n x d), all drawn from ``g``: beta (the max over layers of
    :func:`~attnlab.papers.rank_collapse.single_head_san.layer_beta` with W = W_V W_O), ||res X|| (the
    exact composite residual) and ||res X_l|| (the token mean) per layer."""
    san = random_san(layers, 1, d, d_qk, d, g)
    x = torch.randn(d, generator=g, dtype=torch.float64)
    R = torch.randn(n, d, generator=g, dtype=torch.float64)
    R = R - R.mean(0)
    X0 = (x + r0 * R / composite_norm(R)).to(device)  # (n, d)
    X, betas, res, full = X0, [], [], []
    for ly in san:
        W_Q, W_K, W_V, W_O = (t.to(device) * s for t in (ly.W_Q, ly.W_K, ly.W_V, ly.W_O))  # one head each
        W = ov_circuit(W_V, W_O)[0]  # (d, d), W_V W_O
        betas.append(float(layer_beta(W_Q, W_K, W)))  # the head axis kept: (1,)
        X = single_head_layer(X, W_Q[0], W_K[0], W)
        res.append(float(residual(X, "mean").norm))
        full.append(float(composite_norm(X)))
    return SanResiduals(beta=max(betas), res0=float(residual(X0, "composite").norm), res=res,
                        resolved=[r > FLOOR * f for r, f in zip(res, full)])


def bound_point(s: float, r0: float, o: SanResiduals, d_qk: int) -> BoundPoint:
    """One SAN's measurement ``o`` beside Theorem 2.2's bound at every depth L = 1..len(o.res)."""
    return BoundPoint(scale=s, r0=r0, beta=o.beta, res0=o.res0, res=o.res, resolved=o.resolved,
                      kappa=4 * o.beta * o.res0 ** 2 / math.sqrt(d_qk),
                      log10_bound=[log10_bound(L, o.beta, d_qk, o.res0) for L in range(1, len(o.res) + 1)],
                      log10_measured=[math.log10(max(r, 1e-300)) for r in o.res],
                      fit=fit_doubly_exponential([o.res0, *o.res]))


def nonvacuous(points: list[BoundPoint]) -> list[BoundPoint]:
    """The SANs whose bound at L=1 is below their input residual."""
    return [p for p in points if p.log10_bound[0] < math.log10(p.res0)]


def minilm_san(texts: int, tokens: int, seed: int, device: str = "cpu") -> dict[str, MiniLMSan]:
    """Network ("pretrained", "random") -> its SAN's residuals on ``texts`` help topics of ``tokens``
    tokens, beta (max over layers and heads of ||W_QK||_1 ||W_OV||_{1,inf}) and the multi-head bound
    from res0 = ||res X_0||_{1,inf} (token mean, max over texts)."""
    batch = text_batch(long_texts(texts, tokens, seed), tokens, device)
    out = {}
    for m in ("pretrained", "random"):
        model = build_model(m, seed, device)
        hidden = run_model(m, model, batch, VARIANTS["SAN"]).hidden_states
        rel = [float(relative_residual(h, "mean").mean()) for h in hidden]
        absolute = [float(residual(h, "mean").norm.mean()) for h in hidden]
        blocks = model.blocks
        with torch.no_grad():
            beta = max(float((l1_norm(b.attn.qk_circuit()) * composite_norm(b.attn.ov_circuit())).max())
                       for b in blocks)
        H, d_qk = blocks[0].attn.n_heads, blocks[0].attn.d_head
        # the token-mean residual is >= the exact composite one, which is also in the tens
        # (claim rank-collapse.input-residual; 10 s per 8 x 384 matrix, so not recomputed here)
        res0 = float(residual(hidden[0], "mean").norm.max())
        out[m] = MiniLMSan(relative=rel, absolute=absolute, beta=beta, H=H, d_qk=d_qk, res0=res0,
                           log10_bound=[log10_bound(L, beta, d_qk, res0, H) for L in range(1, len(blocks) + 1)],
                           fit=fit_doubly_exponential(rel))
    return out
