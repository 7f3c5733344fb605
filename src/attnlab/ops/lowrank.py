"""Low-rank attention: Linformer, the random projection of Theorem 2.3, and the SVD optimum.

math-behind-transformers §2.1.3 (matrix factorization); rank-collapse notes §2.3.

Exact attention weights (the text writes P = exp(A) D_A^{-1}; the row
normalisation acts from the left, P = D_A^{-1} exp(A), D_A = diag(exp(A) 1)):

    P = softmax(c Q K^T)                                       (n, n_k)

1. Random projection (notes, Theorem 2.3; the Linformer paper's Theorem 1):

       P~ = P R^T R,   R in R^{k' x n_k},  R_ij ~ N(0, 1/k')    rank(P~) <= k'

   E[R^T R] = I, so P~ is unbiased; by the Johnson-Lindenstrauss lemma (the
   text's "JR lemma", Lemma 2.1: k' > 8 ln(m) / eps^2 for m points) the inner
   products <p_i, w> = (P w)_i are kept to eps ||p_i|| ||w||. Eq. (16) prints
   ``||P w^T - P w^T||``: the first P carries a lost tilde (P~ w^T - P w^T).
   The notes' proof writes exp(sqrt(d) A) for exp(A / sqrt(d)) and ends with
   "rank Theta(log n log n)" where the theorem states Theta(log n).

2. Linformer, eq. (17): keys and values are projected to k' rows first,

       head = softmax(c Q (E K)^T) (F V),   E, F in R^{k' x n_k}
            = P_bar F V,                     P_bar = softmax(c Q (E K)^T)   (n, k')

   so the matrix that multiplies V is P^ = P_bar F (n x n_k, rank <= k'); its
   rows need not sum to 1 and its entries may be negative. Eq. (17) divides the
   logits by k (the head dimension); the scaling motivated in §1.2.3 is
   1/sqrt(k), used here by default. Cost O(n k' d) instead of O(n^2 d).
   (The text's "softmax of an n x n matrix costs o(n^2)" means O(n^2).)

3. Best rank-k approximation: the truncated SVD P_k = sum_{i<=k} s_i u_i v_i^T,
   the optimum in Frobenius and spectral norm among all matrices of rank <= k
   (Eckart-Young-Mirsky): ||P - P_k||_2 = s_{k+1}, ||P - P_k||_F^2 = sum_{i>k} s_i^2.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from attnlab.errors import ConfigError
from attnlab.ops.memory import check_dense_fits
from attnlab.ops.softmax import AttentionOutput, Scale, check_qkv, resolve_scale


def _check_rank(k_proj: int, n: int, what: str = "k'") -> None:
    if isinstance(k_proj, bool) or not isinstance(k_proj, int) or k_proj < 1:
        raise ConfigError(f"{what} must be a positive integer, got {k_proj!r}")
    if k_proj > n:
        raise ConfigError(f"{what}={k_proj} exceeds n={n}: choose {what} <= {n} (a projection cannot add rank)")


def gaussian_projection(
    k_proj: int,
    n: int,
    *,
    generator: torch.Generator,
    batch_shape: tuple[int, ...] = (),
    dtype: torch.dtype = torch.float64,
    device: torch.device | str | None = None,
) -> Tensor:
    """R (*batch_shape, k', n) with i.i.d. N(0, 1/k') entries, so E[R^T R] = I_n.

    Drawn in float64 on the generator's device and then moved and cast, so the same
    generator state gives the same R (up to rounding) in every dtype and on every device.
    """
    _check_rank(k_proj, n)
    R = torch.randn(*batch_shape, k_proj, n, generator=generator, dtype=torch.float64, device=generator.device)
    return (R / math.sqrt(k_proj)).to(device=device or generator.device, dtype=dtype)


def random_projection_weights(P: Tensor, k_proj: int, generator: torch.Generator) -> Tensor:
    """P~ = P R^T R (Theorem 2.3), one independent R per leading index of P.

    P: (..., n_q, n) -> (..., n_q, n), rank <= k'. R: (..., k', n), N(0, 1/k').
    """
    if P.ndim < 2:
        raise ConfigError(f"P must have at least two axes (..., n_q, n), got shape {tuple(P.shape)}")
    n = P.shape[-1]
    R = gaussian_projection(k_proj, n, generator=generator, batch_shape=tuple(P.shape[:-2]),
                            dtype=P.dtype, device=P.device)
    return (P @ R.transpose(-2, -1)) @ R  # (..., n_q, k') @ (..., k', n)


def linformer_projections(
    k_proj: int,
    n: int,
    *,
    generator: torch.Generator,
    heads: int | None = None,
    dtype: torch.dtype = torch.float64,
    device: torch.device | str | None = None,
) -> tuple[Tensor, Tensor]:
    """Fixed Linformer projections E, F: independent N(0, 1/k') draws, (k', n) or (H, k', n)."""
    shape = () if heads is None else (heads,)
    E = gaussian_projection(k_proj, n, generator=generator, batch_shape=shape, dtype=dtype, device=device)
    F = gaussian_projection(k_proj, n, generator=generator, batch_shape=shape, dtype=dtype, device=device)
    return E, F


def _check_projections(E: Tensor, F: Tensor, n_k: int, dtype: torch.dtype, device: torch.device) -> None:
    if E.ndim < 2 or F.ndim < 2:
        raise ConfigError(f"E and F must have shape (..., k', n), got {tuple(E.shape)} and {tuple(F.shape)}")
    if E.shape[-1] != n_k or F.shape[-1] != n_k:
        raise ConfigError(
            f"E and F must have n_k={n_k} columns (one per key), got {E.shape[-1]} and {F.shape[-1]}"
        )
    if E.shape[-2] != F.shape[-2]:
        raise ConfigError(f"E and F must project to the same k', got {E.shape[-2]} and {F.shape[-2]}")
    _check_rank(E.shape[-2], n_k)
    if E.dtype != dtype or F.dtype != dtype:
        raise ConfigError(f"E, F dtypes ({E.dtype}, {F.dtype}) must match q, k, v ({dtype})")
    if E.device != device or F.device != device:
        raise ConfigError(f"E, F are on {E.device} and {F.device} but q, k, v on {device}: "
                          "build them with device= or move them with .to(q.device)")


def linformer_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    E: Tensor,
    F: Tensor,
    *,
    scale: Scale = "1/sqrt(d)",
    return_weights: bool = False,
) -> AttentionOutput:
    """Linformer head, eq. (17): softmax(c Q (E K)^T) (F V).

    q (..., n, d_k), k (..., n_k, d_k), v (..., n_k, d_v); E, F (..., k', n_k),
    broadcast over the leading axes. Output (..., n, d_v). With
    ``return_weights`` the weights are the effective n x n_k matrix
    P^ = P_bar F that multiplies V (rank <= k'; not row-stochastic), so they
    can be compared entry by entry with exact softmax weights.
    """
    check_qkv(q, k, v)
    if return_weights:
        check_dense_fits(q, k, v, copies=1, what="linformer_attention(return_weights=True): the weights")
    _check_projections(E, F, k.shape[-2], q.dtype, q.device)
    c = resolve_scale(scale, q.shape[-1])
    K_bar = E @ k  # (..., k', d_k)
    V_bar = F @ v  # (..., k', d_v)
    P_bar = torch.softmax((q @ K_bar.transpose(-2, -1)) * c, dim=-1)  # (..., n, k')
    out = P_bar @ V_bar  # (..., n, d_v)
    return AttentionOutput(out, P_bar @ F if return_weights else None)  # weights (..., n, n_k)


def best_rank_k(P: Tensor, k: int) -> Tensor:
    """The truncated SVD P_k = U_k diag(s_1..s_k) V_k^T of P (..., m, n), batched.

    The optimum of min_{rank(B) <= k} ||P - B|| in Frobenius and spectral norm
    (Eckart-Young-Mirsky).
    """
    return best_rank_ks(P, [k])[0]


def best_rank_ks(P: Tensor, ks) -> list[Tensor]:
    """[P_k for k in ks] from one SVD of P (..., m, n): :func:`best_rank_k` for several ranks."""
    if P.ndim < 2:
        raise ConfigError(f"P must have at least two axes (..., m, n), got shape {tuple(P.shape)}")
    for k in ks:
        _check_rank(k, min(P.shape[-2:]), what="k")
    U, s, Vh = torch.linalg.svd(P, full_matrices=False)  # (..., m, r), (..., r), (..., r, n)
    return [(U[..., :, :k] * s[..., None, :k]) @ Vh[..., :k, :] for k in ks]
