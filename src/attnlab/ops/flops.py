"""Analytic forward FLOPs of the attention variants of :mod:`attnlab.ops.catalogue`.

One multiply-add counts as 2 FLOPs; only the matrix products are counted (the
softmax's exp/sum/divide, O(n_q n_k) elementwise, and feature maps' elementwise
work are left out, as is customary). B batch, H heads, n tokens, d = d_head,
d_v = d (values have the head width).

    full softmax (eq. 1, math text §1.2.2):   F = B H (2 n^2 d + 2 n^2 d)  = 4 B H n^2 d
        Q K^T is n x d times d x n (2 n^2 d), P V is n x n times n x d (2 n^2 d).
    causal softmax (useful work only):        F = 4 B H d n(n+1)/2
        a fused causal kernel skips the blocks above the diagonal.
    sparse (eq. 11, §2.1.1):                  F = 4 B H d |E|
        |E| = number of (query, key) pairs allowed by the attention graph.
    sliding window of width w, i - w/2 <= j <= i + w/2 (§2.1.1):
        |E| = sum_i (min(i + w/2, n-1) - max(i - w/2, 0) + 1)
            = n (w + 1) - (w/2)(w/2 + 1)                      for n > w/2 (w even)
        causal (j in [i - w/2, i]): |E| = n (w/2 + 1) - (w/2)(w/2 + 1)/2.
    linear / kernel attention with r features (§2.1.2), non-causal:
        phi(K)^T V (2 n r d) + phi(Q) [phi(K)^T V] (2 n r d)
        + normaliser phi(K)^T 1 (n r) and phi(Q) z (2 n r):   F = B H (4 n r d + 3 n r)
    causal, chunked with chunk C (the intra-chunk part dense and masked):
        states as above (4 n r d + 3 n r) plus per chunk phi(Q_c) phi(K_c)^T (2 C^2 r),
        its product with V_c (2 C^2 d) and row sums (C^2):
        F = B H (4 n r d + 3 n r + (n / C)(2 C^2 r + 2 C^2 d + C^2))
    FAVOR+ with m random features: the linear formula with r = m, plus the
        projections of Q and K onto the m features (2 n d m each): + B H 4 n d m.
    Linformer with k' projected keys (eq. 17, §2.1.3):
        E K and F V (2 k' n d each), Q (E K)^T (2 n k' d), P (F V) (2 n k' d):
        F = 8 B H n k' d
    matmul ceiling: an N x N by N x N product is 2 N^3.

For elu+1 the feature dimension is r = d.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Shape:
    """B batch, H heads, n tokens (queries = keys), d head width."""

    B: int
    H: int
    n: int
    d: int


def full_softmax_flops(s: Shape) -> float:
    """4 B H n^2 d."""
    return 4.0 * s.B * s.H * s.n * s.n * s.d


def causal_softmax_flops(s: Shape) -> float:
    """4 B H d n(n+1)/2: only the pairs j <= i."""
    return 4.0 * s.B * s.H * s.d * s.n * (s.n + 1) / 2


def dense_flops(s: Shape, causal: bool = False) -> float:
    """Full (4 B H n^2 d) or causal (4 B H d n(n+1)/2) softmax attention."""
    return causal_softmax_flops(s) if causal else full_softmax_flops(s)


def sparse_flops(s: Shape, pairs: int) -> float:
    """4 B H d |E| for |E| allowed (query, key) pairs per head."""
    return 4.0 * s.B * s.H * s.d * pairs


def window_pairs(n: int, w: int, *, causal: bool = False) -> int:
    """|E| of the sliding window i - w/2 <= j <= i + w/2 (causal: i - w/2 <= j <= i)."""
    h = w // 2
    if causal:
        return sum(i - max(i - h, 0) + 1 for i in range(n))
    return sum(min(i + h, n - 1) - max(i - h, 0) + 1 for i in range(n))


def linear_flops(s: Shape, r: int) -> float:
    """B H (4 n r d + 3 n r): non-causal kernel attention with r features."""
    return float(s.B * s.H * (4 * s.n * r * s.d + 3 * s.n * r))


def chunked_causal_linear_flops(s: Shape, r: int, C: int) -> float:
    """linear_flops + B H (n / C)(2 C^2 r + 2 C^2 d + C^2)."""
    chunks = -(-s.n // C)
    intra = chunks * (2 * C * C * r + 2 * C * C * s.d + C * C)
    return linear_flops(s, r) + float(s.B * s.H * intra)


def favor_flops(s: Shape, m: int) -> float:
    """linear_flops with r = m plus 4 B H n d m for the random projections of Q and K."""
    return linear_flops(s, m) + 4.0 * s.B * s.H * s.n * s.d * m


def linformer_flops(s: Shape, k_proj: int) -> float:
    """8 B H n k' d."""
    return 8.0 * s.B * s.H * s.n * k_proj * s.d


def matmul_flops(N: int) -> float:
    """2 N^3 for an N x N by N x N product."""
    return 2.0 * N**3
