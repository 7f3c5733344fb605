"""The composite "norm" ||X||_{1,inf} = sqrt(||X||_1 ||X||_inf) of the rank-collapse notes
(§2.2, Definition 2.1; Dong et al.'s term) and §2.4's problem 2: "if a norm does not
satisfy the triangle inequality, can it represent distance?"

What holds (checked on random matrices, float64, relative tolerance 1e-12):
absolute homogeneity ||cX|| = |c| ||X||; definiteness (||X|| = 0 iff X = 0, since both
factors are norms); symmetry ||-X|| = ||X|| and ||X^T|| = ||X|| (||X^T||_1 = ||X||_inf);
min(||X||_1, ||X||_inf) <= ||X||_{1,inf} <= max(||X||_1, ||X||_inf) (a geometric mean);
and the quasi-triangle inequality ||A + B|| <= K (||A|| + ||B||) with
K = sqrt((1 + sqrt(nd)) / 2) <= (nd)^{1/4} (:func:`attnlab.analysis.residuals.quasi_norm_constant`).
The order of K is sharp for square matrices: A = the first column of ones, B = the first
row of ones (n x n) have norm sqrt(n) each and ||A + B|| = n + 1, a ratio (n + 1) / (2 sqrt n).

What fails: the triangle inequality. On 1 x 1 matrices the composite norm is |x|, a
norm, so no counterexample exists there; on a 1 x 2 (or 2 x 1) matrix it is
sqrt(max_j |x_j| sum_j |x_j|), and A = [1, 0], B = [1, 1]/sqrt 2 give ||A + B|| = 2.0301 >
2 = ||A|| + ||B||. So 1 x 2 is the smallest size with a counterexample. Its distance
d(X, Y) = ||X - Y|| is symmetric and definite but not a metric. For one head, Dong et al.'s
bound controls one residual at a time (||.||_1 and ||.||_inf, both norms, of one matrix)
and never adds composite norms, so the answer to problem 2 is "a quasi-norm is enough for
that proof"; for H heads, adding the per-head bounds is a triangle inequality of the
composite norm, true only up to K.

Whose statement: the notes do not claim the triangle inequality. Definition 2.1 names the
function a "composite norm" (Dong et al.'s term) and §2.4 problem 2 asks whether a "norm"
that breaks the triangle inequality can represent distance. So its failure is attnlab's own
statement, the answer to that question (role own: holds), and no differs against the text.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from scipy.optimize import minimize

from attnlab.analysis.residuals import composite_norm, l1_norm, linf_norm, quasi_norm_constant
from attnlab.checks import Check, above, at_most
from attnlab.registry import claim

SIZES = ((1, 2), (2, 2), (3, 3))
PROPERTY_TOL = 1e-12  # relative, float64


def triangle_ratio(A: torch.Tensor, B: torch.Tensor) -> float:
    """||A + B||_{1,inf} / (||A||_{1,inf} + ||B||_{1,inf}): above 1 breaks the triangle inequality."""
    return (composite_norm(A + B) / (composite_norm(A) + composite_norm(B))).item()


def largest_triangle_ratio(n: int, d: int, rng: np.random.Generator, starts: int = 4) -> tuple[float, np.ndarray]:
    """Nelder-Mead ascent on the ratio over (A, B), n x d each, from ``starts`` random starts."""
    def norm(M):  # composite_norm in numpy: the ascent calls it ~10^4 times
        a = np.abs(M)
        return math.sqrt(a.sum(0).max() * a.sum(1).max())

    def neg(v):
        A, B = v[: n * d].reshape(n, d), v[n * d:].reshape(n, d)
        return -norm(A + B) / (norm(A) + norm(B))

    best, arg = 0.0, None
    for _ in range(starts):
        r = minimize(neg, rng.standard_normal(2 * n * d), method="Nelder-Mead",
                     options=dict(maxiter=1000, xatol=1e-10, fatol=1e-12))
        if -r.fun > best:
            best, arg = -r.fun, r.x
    A, B = (torch.from_numpy(arg[: n * d].reshape(n, d)), torch.from_numpy(arg[n * d:].reshape(n, d)))
    return triangle_ratio(A, B), arg  # re-measured with the library's composite_norm


@claim(
    "rank-collapse.composite-norm-triangle",
    where="§2.2 Definition 2.1 (Dong et al.'s term); §2.4 problem 2 (the notes' question)",
    statement="attnlab: the composite norm sqrt(||X||_1 ||X||_inf) violates the triangle inequality; "
              "A = [1, 0], B = [1, 1]/sqrt 2 give ||A + B|| > ||A|| + ||B||",
    paper_value="not claimed: §2.4 problem 2 asks whether a norm without the triangle inequality can represent "
                "distance",
)
def _triangle(seed: int) -> Check:
    """attnlab's own statement (the notes ask, §2.4 problem 2; they do not claim the
    inequality): ||A + B|| / (||A|| + ||B||) for the hand counterexample on 1 x 2
    (A = [1, 0], B = [1, 1]/sqrt 2: 2.0301 / 2 = 1.0151); holds iff the ratio is > 1.
    Values: the largest ratio a Nelder-Mead ascent finds per size and the 1 x 1 case
    (|x|, a norm: never above 1)."""
    rng = np.random.default_rng(seed)
    A = torch.tensor([[1.0, 0.0]], dtype=torch.float64)
    B = torch.tensor([[1.0, 1.0]], dtype=torch.float64) / math.sqrt(2)
    hand = triangle_ratio(A, B)
    found = {f"{n}x{d}": largest_triangle_ratio(n, d, rng)[0] for n, d in SIZES}
    one = max(triangle_ratio(torch.tensor([[a]], dtype=torch.float64), torch.tensor([[b]], dtype=torch.float64))
              for a in (-2.0, -0.5, 0.3, 1.0) for b in (-1.0, 0.7, 3.0))
    detail = (f"A=[1,0], B=[1,1]/sqrt2 (1 x 2, the smallest size with a counterexample): ||A+B||/(||A||+||B||) = "
              f"{hand:.5f}; largest ratio found by Nelder-Mead (4 starts) "
              + ", ".join(f"{k}: {v:.4f}" for k, v in found.items()) + f"; 1x1: {one:.3g} (|x| is a norm)")
    values = {"hand_ratio": hand, "largest_ratio": found, "one_by_one_max_ratio": one, "smallest_counterexample": "1x2"}
    return above(hand, 1.0, detail, values=values, role="own")


@claim(
    "rank-collapse.composite-quasi-norm",
    where="§2.2 Definition 2.1; §2.4 problem 2",
    statement="the composite norm is a quasi-norm: ||A + B|| <= K (||A|| + ||B||) for n x d matrices with "
              "K = sqrt((1 + sqrt(nd))/2) <= (nd)^{1/4}; the first column plus the first row of ones reach "
              "(n + 1)/(2 sqrt n), so the order sqrt(n) of K is sharp",
)
def _quasi(seed: int) -> Check:
    """Sanity (a proven inequality): the largest ratio ||A + B|| / (K (||A|| + ||B||)) over
    a Nelder-Mead ascent per size (1 x 2, 2 x 2, 3 x 3) and the column-plus-row matrices
    (n = 2..8), <= 1. Values: the ratios, K and (nd)^{1/4} per size."""
    rng = np.random.default_rng(seed)
    found = {f"{n}x{d}": largest_triangle_ratio(n, d, rng)[0] for n, d in SIZES}
    K = {f"{n}x{d}": quasi_norm_constant(n, d) for n, d in SIZES}
    rowcol = {}
    for n in range(2, 9):
        A = torch.zeros(n, n, dtype=torch.float64)
        A[:, 0] = 1
        rowcol[n] = triangle_ratio(A, A.T.clone())
    worst = max([found[k] / K[k] for k in found] + [r / quasi_norm_constant(n, n) for n, r in rowcol.items()])
    detail = ("largest ratio ||A+B||/(||A||+||B||) against K = sqrt((1+sqrt(nd))/2) and (nd)^{1/4}: "
              + ", ".join(f"{k}: {found[k]:.4f} (K {K[k]:.3f}, (nd)^1/4 {(n * d) ** .25:.3f})"
                          for (n, d), k in zip(SIZES, found))
              + "; first column + first row of ones, n x n: "
              + ", ".join(f"n={n}: {r:.3f} (K {quasi_norm_constant(n, n):.3f})" for n, r in rowcol.items()))
    values = {"largest_ratio": found, "K": K, "nd_quarter": {f"{n}x{d}": (n * d) ** 0.25 for n, d in SIZES},
              "column_plus_row_ratio": rowcol, "worst_ratio_over_K": worst}
    return at_most(worst, 1.0, detail, values=values, role="sanity")


@claim(
    "rank-collapse.composite-norm-properties",
    where="§2.2 Definition 2.1",
    statement="the composite norm is absolutely homogeneous, definite, invariant under X -> -X and X -> X^T, "
              "and lies between min and max of ||X||_1 and ||X||_inf (true of any geometric mean of two norms)",
)
def _properties(seed: int) -> Check:
    """Sanity (true by construction): the largest relative violation of each property over
    200 random matrices of sizes n, d in 1..6 (float64), <= 1e-12."""
    g = torch.Generator().manual_seed(seed)
    worst = {"homogeneity": 0.0, "negation": 0.0, "transpose": 0.0, "between_min_max": 0.0, "definite": 0.0}
    for k in range(200):
        n, d = 1 + k % 6, 1 + (k // 6) % 6
        X = torch.randn(n, d, generator=g, dtype=torch.float64) * 10 ** (k % 5 - 2)
        c = torch.randn((), generator=g, dtype=torch.float64).item() * 3
        nx = composite_norm(X).item()
        worst["homogeneity"] = max(worst["homogeneity"], abs(composite_norm(c * X).item() - abs(c) * nx) / nx)
        worst["negation"] = max(worst["negation"], abs(composite_norm(-X).item() - nx) / nx)
        worst["transpose"] = max(worst["transpose"], abs(composite_norm(X.T).item() - nx) / nx)
        lo, hi = sorted((l1_norm(X).item(), linf_norm(X).item()))
        worst["between_min_max"] = max(worst["between_min_max"], (lo - nx) / nx, (nx - hi) / nx)
    worst["definite"] = composite_norm(torch.zeros(3, 4, dtype=torch.float64)).item()  # = 0 exactly
    measured = max(worst.values())
    detail = ("largest relative violation over 200 random n x d (n, d in 1..6, scales 1e-2..1e2): "
              + ", ".join(f"{k} {v:.1e}" for k, v in worst.items()))
    return at_most(measured, PROPERTY_TOL, detail, values=worst, role="sanity")
