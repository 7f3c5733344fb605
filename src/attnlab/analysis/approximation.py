"""How far an approximate attention matrix P^ is from the exact softmax weights P.

math-behind-transformers §2.1 (sparse, linear and low-rank attention); the
notes' §2.3. Every function works in float64 and is batched over leading axes:
P, P^ (..., n_q, n_k), V (..., n_k, d_v); results have shape (...) (0-d for a
single matrix).

    frobenius         ||P - P^||_F
    spectral          ||P - P^||_2                      (largest singular value)
    max_row_tv        max_i 1/2 sum_j |P_ij - P^_ij|    (total variation per row when
                                                         both rows are distributions)
    rel_output_error  ||(P - P^) V||_F / ||P V||_F
    lost_mass         L_i = sum_{j not in N(i)} P_ij    (softmax mass a pattern drops)

For a sparse softmax, P^_i = P_i 1[N(i)] / (1 - L_i), so the row's L1 distance
is L_i + (1 - L_i)(1/(1 - L_i) - 1) = 2 L_i: the row TV equals the lost mass
exactly, and ||(P - P^)_i V|| <= 2 L_i max_j ||v_j|| (:func:`sparse_output_bound`).

    stable_rank(P)    = ||P||_F^2 / ||P||_2^2
    effective_rank(P) = exp(-sum_i p_i ln p_i),  p_i = s_i / sum_j s_j
                        (Roy & Vetterli's entropy of the normalised singular values)
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from attnlab.errors import ConfigError


def _f64(*ts: Tensor) -> list[Tensor]:
    return [t.detach().to(torch.float64) for t in ts]


def _check_pair(P: Tensor, P_hat: Tensor) -> None:
    if P.ndim < 2:
        raise ConfigError(f"P must have at least two axes (..., n_q, n_k), got shape {tuple(P.shape)}")
    if P.shape != P_hat.shape:
        raise ConfigError(f"P and P_hat must have the same shape, got {tuple(P.shape)} and {tuple(P_hat.shape)}")


def attention_errors(P: Tensor, P_hat: Tensor, V: Tensor) -> dict[str, Tensor]:
    """The four errors of P^ against P (module docstring), each of shape P.shape[:-2].

    V: (..., n_k, d_v) values, broadcast against P. ``rel_output_error`` is inf
    where P V = 0 and P^ V != 0, and 0 where both are 0.
    """
    _check_pair(P, P_hat)
    if V.ndim < 2 or V.shape[-2] != P.shape[-1]:
        raise ConfigError(f"V must have shape (..., n_k={P.shape[-1]}, d_v), got {tuple(V.shape)}")
    P, P_hat, V = _f64(P, P_hat, V)
    D = P - P_hat  # (..., n_q, n_k)
    num = torch.linalg.matrix_norm(D @ V)  # (...,)
    den = torch.linalg.matrix_norm(P @ V)
    rel = torch.where(den > 0, num / den.clamp_min(torch.finfo(torch.float64).tiny),
                      torch.where(num > 0, torch.inf, 0.0))
    return {
        "frobenius": torch.linalg.matrix_norm(D),
        "spectral": torch.linalg.matrix_norm(D, ord=2),
        "max_row_tv": 0.5 * D.abs().sum(-1).amax(-1),
        "rel_output_error": rel,
    }


def lost_mass(P: Tensor, allowed: Tensor) -> Tensor:
    """L (..., n_q): the mass of each row of P outside the pattern ``allowed`` (bool, broadcastable)."""
    if allowed.dtype != torch.bool:
        raise ConfigError(f"allowed must be a boolean mask (True = kept), got dtype {allowed.dtype}")
    (P,) = _f64(P)
    try:
        allowed = allowed.expand_as(P)
    except RuntimeError:
        raise ConfigError(
            f"allowed {tuple(allowed.shape)} does not broadcast to P {tuple(P.shape)}"
        ) from None
    return P.masked_fill(allowed, 0.0).sum(-1)


def sparse_output_bound(P: Tensor, allowed: Tensor, V: Tensor) -> Tensor:
    """Per-row bound (..., n_q) on ||(P - P^)_i V||_2 for the sparse softmax P^: 2 L_i max_j ||v_j||."""
    (V,) = _f64(V)
    return 2.0 * lost_mass(P, allowed) * V.norm(dim=-1).amax(-1, keepdim=True)


def stable_rank(P: Tensor) -> Tensor:
    """||P||_F^2 / ||P||_2^2 (..., ); 0 for a zero matrix. Between 1 and rank(P)."""
    (P,) = _f64(P)
    return _stable_rank(torch.linalg.svdvals(P))


def effective_rank(P: Tensor) -> Tensor:
    """exp(entropy of s / sum(s)) over the singular values s of P (..., ); 0 for a zero matrix."""
    (P,) = _f64(P)
    return _effective_rank(torch.linalg.svdvals(P))


def _stable_rank(s: Tensor) -> Tensor:
    spec2 = s[..., 0] ** 2  # svdvals are sorted, largest first
    return torch.where(spec2 > 0, (s**2).sum(-1) / spec2.clamp_min(torch.finfo(torch.float64).tiny), 0.0)


def _effective_rank(s: Tensor) -> Tensor:
    total = s.sum(-1, keepdim=True)
    p = s / total.clamp_min(torch.finfo(torch.float64).tiny)
    entropy = -torch.xlogy(p, p).sum(-1)
    return torch.where(total[..., 0] > 0, entropy.exp(), 0.0)


def rank_summary(P: Tensor) -> dict[str, float]:
    """Singular values (list), stable and effective rank of one matrix, from one SVD."""
    (P,) = _f64(P)
    s = torch.linalg.svdvals(P)
    return {"singular_values": s.tolist(), "stable_rank": float(_stable_rank(s)),
            "effective_rank": float(_effective_rank(s))}


def compare_to_exact(P: Tensor, P_hat: Tensor, V: Tensor, *, allowed: Tensor | None = None,
                     ranks_of_P: dict | None = None) -> dict[str, float]:
    """One row of the error-vs-exact table for a single (n_q, n_k) matrix pair, as floats.

    attention_errors, plus stable and effective rank of P and of P^; with a
    sparse pattern ``allowed`` also the largest and mean lost mass, the largest
    row output error ||(P - P^)_i V|| and its bound 2 L_i max ||v_j||: the largest
    ratio error / bound over rows with L_i > 0 (must be <= 1) and the largest
    excess error - bound over all rows (must be <= rounding). ``ranks_of_P``
    (a :func:`rank_summary` of P) saves recomputing P's SVD for every P^.
    """
    if P.ndim != 2:
        raise ConfigError(f"compare_to_exact takes one (n_q, n_k) matrix, got shape {tuple(P.shape)}")
    row = {k: float(x) for k, x in attention_errors(P, P_hat, V).items()}
    rP, rH = ranks_of_P or rank_summary(P), rank_summary(P_hat)
    row |= {"stable_rank_P": rP["stable_rank"], "effective_rank_P": rP["effective_rank"],
            "stable_rank_P_hat": rH["stable_rank"], "effective_rank_P_hat": rH["effective_rank"]}
    if allowed is not None:
        L = lost_mass(P, allowed)  # (n_q,)
        P64, Ph64, V64 = _f64(P, P_hat, V)
        row_err = ((P64 - Ph64) @ V64).norm(dim=-1)  # (n_q,)
        bound = sparse_output_bound(P, allowed, V)
        # rows that lose no mass (global tokens) have bound 0 and a rounding-level error
        ratio = torch.where(bound > 0, row_err / bound.clamp_min(1e-300), 0.0)
        row |= {"max_lost_mass": float(L.max()), "mean_lost_mass": float(L.mean()),
                "max_row_output_error": float(row_err.max()), "max_error_over_bound": float(ratio.max()),
                "max_excess_over_bound": float((row_err - bound).max()),
                "density": float(allowed.expand_as(P).to(torch.float64).mean())}
    return row


def projection_action_errors(P: Tensor, w: Tensor, k_values, *, draws: int,
                             generator: torch.Generator) -> Tensor:
    """||P~ w - P w|| / ||P w|| for P~ = P R^T R (Theorem 2.3), (len(k_values), draws).

    P (n_q, n), w (n,). P~ w = P (R^T (R w)) is computed without forming P~:
    O(draws k' n) for the projections and one (n_q, n) x (n, draws) product per k'.
    The draws are nested: one R_max (draws, k_max, n) with N(0, 1) entries, and
    R = R_max[:, :k'] / sqrt(k'), so every R has i.i.d. N(0, 1/k') entries while
    errors at different k' share randomness, which steadies a fitted slope.
    Cost for the notes' k' = Theta(log n): O(n_q n draws), no n x n product per draw.
    """
    k_values = [int(k) for k in k_values]
    if P.ndim != 2 or w.shape != (P.shape[-1],):
        raise ConfigError(f"need P (n_q, n) and w (n,), got {tuple(P.shape)} and {tuple(w.shape)}")
    if not isinstance(draws, int) or draws < 1:
        raise ConfigError(f"draws must be a positive integer, got {draws!r}")
    n = P.shape[-1]
    if not k_values or min(k_values) < 1 or max(k_values) > n:
        raise ConfigError(f"every k' must be in 1..n={n}, got {k_values}")
    P, w = _f64(P, w)
    # Drawn in float32 (3x faster here) and widened: R's entries are Gaussian samples
    # rounded to 24 bits; every product below is float64.
    R_max = torch.randn(draws, max(k_values), n, generator=generator, dtype=torch.float32,
                        device=P.device).to(torch.float64)
    Pw = P @ w  # (n_q,)
    Rw = R_max @ w  # (draws, k_max)
    rows = []
    for k in k_values:
        u = torch.einsum("dkn,dk->dn", R_max[:, :k], Rw[:, :k]) / k  # R^T R w per draw, (draws, n)
        rows.append((P @ u.T - Pw[:, None]).norm(dim=0) / Pw.norm())  # (draws,)
    return torch.stack(rows)


def random_attention_and_values(n: int, d: int, g: torch.Generator, n_q: int | None = None):
    """P (n_q, n) = softmax(Q K^T / sqrt(d)), Q, K ~ N(0, 1) (logits of unit variance); w ~ N(1, 1) (n,)."""
    Q = torch.randn(n if n_q is None else n_q, d, generator=g, dtype=torch.float64)
    K = torch.randn(n, d, generator=g, dtype=torch.float64)
    w = torch.randn(n, generator=g, dtype=torch.float64) + 1.0
    return torch.softmax(Q @ K.T / math.sqrt(d), dim=-1), w  # (n_q, n), (n,)
