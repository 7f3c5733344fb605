"""Theorem 2.3 of the rank-collapse notes (§2.3, after Linformer's Theorem 1) on
all-MiniLM-L6-v2's real attention maps: P~ = P R^T R, R (k x n) with N(0, 1/k) entries.

What JL gives is a statement about vectors: ||P~ w - P w|| <= eps ||P w|| with high
probability, with eps ~ 1/sqrt(k) (so k = Theta(log n / eps^2) for all n rows at once).
Measured (:func:`attnlab.analysis.approximation.projection_action_errors`, w ~ N(1, 1),
12 heads, 16 draws each): the median relative error of P~ w against k = c ln n,
c in {2, 4, 8, 16}, and its log-log slope in k (JL: -1/2).

That rate is no test of the text: it holds for every matrix. For R with N(0, 1/k) entries,
R^T R = (1/k) sum_i r_i r_i^T with r_i ~ N(0, I_n), and for each row p_i of P

    E (p_i^T R^T R w - p_i^T w)^2 = (||p_i||^2 ||w||^2 + (p_i^T w)^2) / k,

so E ||P R^T R w - P w||^2 = (||P||_F^2 ||w||^2 + ||P w||^2) / k exactly, whatever P and w:
the error's scale is k^{-1/2} by construction, and the fitted slope misses -1/2 only by
the median's and the finite k's noise (the claim's +-0.2). So the claim is a sanity check
of attnlab's sketch (:func:`projection_action_errors`), not a reproduction; Theorem 2.3
itself (a relative error at rank Theta(log n)) is rank-collapse.low-rank-log-n.

What it does not give is a low-rank approximation of the matrix: P R^T R has rank k but
||P R^T R - P||_F / ||P||_F is about sqrt(n / k) (R^T R is far from I in the operator
sense), often above 1, i.e. worse than the zero matrix; the best rank-k matrix (SVD
truncation) is much closer. The text's "rank P~ = Theta(log n)" therefore is a rank of a
sketch that is accurate only for the vectors it is applied to.
"""

from __future__ import annotations

import math

import torch

from attnlab.analysis.approximation import projection_action_errors
from attnlab.papers.rank_collapse.minilm_text import minilm_attention
from attnlab.checks import Check, near
from attnlab.registry import claim

N = 256
C_VALUES = (2, 4, 8, 16)  # k = c ln n; below 2 ln n the error saturates near 1
HEADS = range(0, 72, 6)  # 12 of the 72 heads, every layer


@claim(
    "rank-collapse.minilm-projection",
    where="§2.3, Theorem 2.3 and its proof (the JL lemma)",
    statement="attnlab's sketch: on MiniLM's attention maps the error ||P R^T R w - P w|| / ||P w|| of the rank-k "
              "sketch shrinks like k^{-1/2}, as it does for every matrix (E ||P R^T R w - P w||^2 = "
              "(||P||_F^2 ||w||^2 + ||P w||^2) / k), for values w ~ N(1, 1)",
)
def _projection(seed: int) -> Check:
    """Sanity (true for any matrix, module docstring): the log-log slope of the median vector
    error against k = c ln n at n = 256, c in {2, 4, 8, 16}; sanity iff |slope + 0.5| <= 0.2. Values: the median errors per k,
    and at k = 16 ln n the median matrix errors ||P R^T R - P||_F / ||P||_F and
    ||P_k - P||_F / ||P||_F of the SVD truncation P_k."""
    g = torch.Generator().manual_seed(seed)
    P = minilm_attention(N, seed)  # (72, n, n)
    ks = [math.ceil(c * math.log(N)) for c in C_VALUES]
    errs = torch.stack([projection_action_errors(P[h], torch.randn(N, generator=g, dtype=torch.float64) + 1, ks,
                                                 draws=16, generator=g).median(-1).values for h in HEADS])
    med = errs.median(0).values  # (len(ks),)
    lk, le = torch.tensor(ks, dtype=torch.float64).log(), med.log()
    slope = (((lk - lk.mean()) @ (le - le.mean())) / ((lk - lk.mean()) @ (lk - lk.mean()))).item()
    k = ks[-1]
    R = torch.randn(k, N, generator=g, dtype=torch.float64) / math.sqrt(k)
    Ph = P[list(HEADS)]
    fro = ((Ph @ R.T @ R - Ph).norm(dim=(-2, -1)) / Ph.norm(dim=(-2, -1))).median().item()
    U, S, Vh = torch.linalg.svd(Ph)
    best = ((U[..., :k] * S[..., None, :k]) @ Vh[..., :k, :] - Ph).norm(dim=(-2, -1)) / Ph.norm(dim=(-2, -1))
    detail = (f"n={N}, 12 heads x 16 draws, w ~ N(1,1): median ||P~w - Pw||/||Pw|| "
              + ", ".join(f"k={kk}: {e:.2f}" for kk, e in zip(ks, med.tolist()))
              + f" (slope {slope:.2f}, JL -0.5); at k={k}: ||P R^T R - P||_F/||P||_F {fro:.2f} "
              f"(sqrt(n/k) = {math.sqrt(N / k):.2f}) vs SVD rank-{k} {best.median().item():.2g}")
    values = {"n": N, "k_values": ks, "median_vector_error": med.tolist(), "slope": slope,
              "matrix_error_sketch": fro, "matrix_error_svd": best.median().item(), "sqrt_n_over_k": math.sqrt(N / k)}
    return near(slope, -0.5, 0.2, detail, values=values, role="sanity")
