"""The composite norm and the residual res(X) of the rank-collapse notes (§2.2, Definition 2.1).

For X in R^{n x d} (tokens as rows; any leading batch axes ``(..., n, d)``):

    ||X||_1          = max_j sum_i |X_ij|        (the largest column abs sum)
    ||X||_inf        = max_i sum_j |X_ij|        (the largest row abs sum) = ||X^T||_1
    ||X||_{1,inf}    = sqrt(||X||_1 ||X||_inf)   (the "composite norm", Definition 2.1)

    res(X) = X - 1 x^T  for a shift x in R^d,

and four ways of choosing x (:func:`residual`, ``kind=``):

``"mean"``       x = mean of the rows, X^T 1 / n: the argmin of the Frobenius distance
                 ||X - 1 x^T||_F. This is what Dong et al.'s plotting code measures,
                 and the only one that is linear in X.
``"two"``        x = argmin_x ||X - 1 x^T||_2 in the operator 2-norm, the notes'
                 definition (§2.2): a convex problem whose minimum the row mean attains
                 (:func:`two_norm_shift`, proof there), so the matrix is the "mean" one;
                 the minimiser is not unique for d >= 2 in general, and this kind takes
                 the row mean, the minimiser of least Frobenius residual.
``"composite"``  x = argmin_x ||X - 1 x^T||_{1,inf}, solved exactly
                 (:func:`composite_shift`; the proof is there).
``"svd"``        X - sigma_1 u_1 v_1^T: the distance to the nearest matrix of rank <= 1
                 (Eckart-Young, in the 2- and Frobenius norms). It is not of the form
                 X - 1 x^T: a rank-one matrix u v^T need not have equal rows, so
                 ||res_svd(X)|| can be smaller than every shift's residual.

The notes define x by the 2-norm and measure the residual in ||.||_{1,inf}; the
composite argmin is the shift that makes ||res X||_{1,inf} smallest, and Dong et al.'s
code uses the row mean. The "mean", "two" and "composite" residuals vanish exactly when
X = 1 x^T, the "svd" one whenever rank X <= 1. Since X - 1 mean^T = (I - 1 1^T / n)(X - 1 x*^T)
and the composite norm is submultiplicative, ||res_mean(X)|| <= 2 (1 - 1/n) ||res_composite(X)||.

The composite "norm" is not a norm (§2.4, problem 2): it is absolutely homogeneous,
definite, invariant under X -> -X and X -> X^T, and min(||X||_1, ||X||_inf) <=
||X||_{1,inf} <= max(||X||_1, ||X||_inf), but the triangle inequality fails already for
a 1 x 2 matrix, where ||x||_{1,inf} = sqrt(max_j |x_j| sum_j |x_j|):
A = [1, 0], B = [1, 1] / sqrt(2) have norm 1 each and ||A + B||_{1,inf} = 2.03. For n x d
matrices it is a quasi-norm: ||A + B|| <= K (||A|| + ||B||) with K = sqrt((1 + sqrt(nd)) / 2)
(<= (nd)^{1/4}), since ||X||_1 <= n ||X||_inf and ||X||_inf <= d ||X||_1
(:func:`quasi_norm_constant`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch
from torch import Tensor

from attnlab.errors import ConfigError

KINDS = ("mean", "composite", "svd", "two")


class Residual(NamedTuple):
    """matrix: res(X) (..., n, d), in X's dtype; norm: ||res(X)||_{1,inf} (...)."""

    matrix: Tensor
    norm: Tensor


def _check(X: Tensor) -> None:
    if not isinstance(X, Tensor):
        raise ConfigError(f"X must be a torch.Tensor of shape (..., n, d), got {type(X).__name__}")
    if X.ndim < 2 or X.shape[-1] == 0 or X.shape[-2] == 0:
        raise ConfigError(f"X must have shape (..., n, d) with n, d >= 1, got {tuple(X.shape)}")
    if not X.is_floating_point():
        raise ConfigError(f"X must be a floating-point tensor (float64 for verification), got {X.dtype}")


def l1_norm(X: Tensor) -> Tensor:
    """||X||_1 = max_j sum_i |X_ij| (max column abs sum), shape X.shape[:-2]."""
    _check(X)
    return X.abs().sum(-2).amax(-1)


def linf_norm(X: Tensor) -> Tensor:
    """||X||_inf = max_i sum_j |X_ij| (max row abs sum), shape X.shape[:-2]."""
    _check(X)
    return X.abs().sum(-1).amax(-1)


def composite_norm(X: Tensor) -> Tensor:
    """||X||_{1,inf} = sqrt(||X||_1 ||X||_inf) (notes Definition 2.1), shape X.shape[:-2]."""
    return (l1_norm(X) * linf_norm(X)).sqrt()


def residual(X: Tensor, kind: str = "mean") -> Residual:
    """res(X) and ||res(X)||_{1,inf} for ``kind`` in "mean", "composite", "svd", "two" (module docstring).

    X: (..., n, d), floating point. "mean", "two" and "svd" are computed in X's dtype on X's
    device; "composite" solves one linear program per matrix on the CPU in float64
    (cost: 2 + (frontier vertices) LPs with n d + d + 2 variables each).
    """
    _check(X)
    if kind == "mean":
        R = X - X.mean(dim=-2, keepdim=True)  # X - 1 x^T with x the row mean
    elif kind == "composite":
        R = X - composite_shift(X).unsqueeze(-2)
    elif kind == "svd":
        R = X - rank_one_approximation(X)
    elif kind == "two":
        R = X - two_norm_shift(X).unsqueeze(-2)
    else:
        raise ConfigError(f"unknown residual kind {kind!r}: choose one of {', '.join(KINDS)}")
    return Residual(R, composite_norm(R))


def rank_one_approximation(X: Tensor) -> Tensor:
    """sigma_1 u_1 v_1^T, the best rank-<=1 approximation of X (..., n, d) (Eckart-Young)."""
    _check(X)
    U, S, Vh = torch.linalg.svd(X, full_matrices=False)
    return S[..., :1, None] * U[..., :, :1] @ Vh[..., :1, :]  # (..., n, 1) @ (..., 1, d)


def spectral_norm(X: Tensor) -> Tensor:
    """||X||_2, the largest singular value of X (..., n, d), shape X.shape[:-2]."""
    _check(X)
    return torch.linalg.matrix_norm(X, ord=2)


def two_norm_shift(X: Tensor) -> Tensor:
    """A minimiser x of ||X - 1 x^T||_2 (operator 2-norm; the notes' §2.2), (..., d): the row mean.

    Proof. Write X = 1 m^T + C with m = X^T 1 / n the row mean, so 1^T C = 0, and
    y = m - x. Then X - 1 x^T = C + 1 y^T and

        (C + 1 y^T)^T (C + 1 y^T) = C^T C + n y y^T  >=  C^T C   (Loewner order),

    so ||X - 1 x^T||_2^2 = lambda_max(C^T C + n y y^T) >= lambda_max(C^T C) = ||C||_2^2,
    with equality at y = 0: min_x ||X - 1 x^T||_2 = ||X - 1 m^T||_2, attained at x = m.

    The minimiser is not unique in general: with sigma_1 > sigma_2 the singular values of
    C and v_1 its top right singular vector, every y orthogonal to v_1 with
    n ||y||^2 <= sigma_1^2 - sigma_2^2 also attains it (v_1 stays an eigenvector with
    eigenvalue sigma_1^2; on its complement the eigenvalues are at most sigma_2^2 + n ||y||^2).
    It is unique exactly when C^T C = sigma^2 I (e.g. d = 1). X = [[1, 0], [-1, 0]]: every
    x = (0, s), |s| <= 1, gives ||X - 1 x^T||_2 = sqrt 2, and ||X - 1 x^T||_{1,inf} =
    sqrt(2 (1 + |s|)) runs from sqrt 2 to 2. Among the minimisers the row mean is the one of
    least Frobenius residual (the Frobenius argmin is unique), which is the one returned.
    """
    _check(X)
    return X.mean(dim=-2)


def quasi_norm_constant(n: int, d: int) -> float:
    """K = sqrt((1 + sqrt(nd)) / 2): ||A + B||_{1,inf} <= K (||A||_{1,inf} + ||B||_{1,inf}) for n x d.

    With a_i = ||A_i||_1, b_i = ||A_i||_inf, c_i = sqrt(a_i b_i) and a_i <= n b_i, b_i <= d a_i
    (so a_1 b_2 + a_2 b_1 <= 2 sqrt(nd) c_1 c_2):
    (a_1 + a_2)(b_1 + b_2) <= c_1^2 + c_2^2 + 2 sqrt(nd) c_1 c_2 = (c_1 + c_2)^2 + 2 (sqrt(nd) - 1) c_1 c_2
    <= (c_1 + c_2)^2 (1 + sqrt(nd)) / 2, using c_1 c_2 <= (c_1 + c_2)^2 / 4. The cruder
    bound a_1 b_2 + a_2 b_1 <= ... <= sqrt(nd) (c_1 + c_2)^2 gives (nd)^{1/4} >= K. The
    order sqrt(n) for n = d is sharp: A = the first column of ones, B = the first row of
    ones (n x n) have norm sqrt(n) each and ||A + B|| = n + 1, a ratio (n + 1) / (2 sqrt n).
    """
    return ((1 + (n * d) ** 0.5) / 2) ** 0.5


def composite_shift(X: Tensor, *, rtol: float = 1e-9) -> Tensor:
    """x* = argmin_{x in R^d} ||X - 1 x^T||_{1,inf}, exactly (up to the LP solver's tolerance).

    X: (..., n, d); returns x* (..., d) in X's dtype and device (solved on the CPU in
    float64, one matrix at a time).

    Write R(x) = X - 1 x^T, a(x) = ||R(x)||_1, b(x) = ||R(x)||_inf; the objective is
    sqrt(a(x) b(x)). It is not convex in x: a and b are convex and piecewise linear,
    but the geometric mean of two convex functions need not be convex. Example, n = 1,
    d = 2, X = 0: sqrt(ab) is the composite norm of the row -x, and at x = (1, 0),
    (1, 1)/sqrt(2) it is 1 while at their midpoint it is 1.015. A local descent can
    therefore stop short; this routine does not.

    Exact solution. Let S = {(alpha, beta) : a(x) <= alpha, b(x) <= beta for some x}. S is
    a polyhedron in R^2 (the projection of the LP feasible set below) and convex (a, b are
    convex). ab is increasing in each argument on the positive quadrant, so the minimum
    of ab over S lies on the Pareto frontier of S, a convex decreasing piecewise-linear
    curve between the lexicographic minimisers (a_min, b|a_min) and (a|b_min, b_min).
    Along one of its edges, (alpha, beta) = (alpha_0 + s u, beta_0 - s v), s in [0, 1],
    u, v > 0, and ab = (alpha_0 + s u)(beta_0 - s v) has second derivative -2uv < 0: it
    is concave, so its minimum over the edge is at an end. Hence min ab is attained at a
    vertex of the frontier, and it suffices to enumerate those vertices.

    Enumeration (the dichotomic / NISE method for bi-objective LPs): find both
    lexicographic ends by two-stage LPs; for two frontier points p, q with p_a < q_a,
    minimise w_a a + w_b b with the normal w = (p_b - q_b, q_a - p_a) > 0 of the segment
    pq. If the minimum lies below w.p (by more than ``rtol`` times w.p) the minimiser r is
    a new frontier point and both pq halves are searched; otherwise pq is an edge. A
    piece pq is skipped (branch and bound) when the frontier between p and q cannot beat
    the best product found: it lies in the triangle of p, q and the crossing T of their
    supporting lines, and ab, quasi-concave on the positive quadrant, is smallest over a
    triangle at a corner. Each LP (HiGHS) is, over z = (x in R^d, E in R^{n x d}, alpha, beta):

        min w_a alpha + w_b beta   s.t.  E_ij >= X_ij - x_j,  E_ij >= x_j - X_ij,
                                         sum_i E_ij <= alpha (each j), sum_j E_ij <= beta (each i).

    Every candidate (the LP vertices, plus the row mean and the column medians) is scored
    by evaluating a(x), b(x) at its x directly, so the value returned is always achieved
    and never worse than the token-mean residual's; vertices closer than ``rtol`` to a found edge are skipped,
    which changes the minimum by O(rtol) only, and HiGHS's own tolerances put the result
    within about 1e-9 relative of the true minimum (tests: brute force on n <= 5, d <= 3).
    Cost: at least 4 LPs; a 30 x 384 matrix takes about 10 s on one core.
    """
    _check(X)
    if not bool(torch.isfinite(X).all()):
        raise ConfigError("X has inf or nan entries: the composite residual needs finite values")
    Xn = X.detach().to(device="cpu", dtype=torch.float64).numpy()
    flat = Xn.reshape(-1, *Xn.shape[-2:])
    xs = np.stack([_composite_shift_one(M, rtol) for M in flat]) if len(flat) else np.zeros((0, Xn.shape[-1]))
    return torch.as_tensor(xs.reshape(*Xn.shape[:-2], Xn.shape[-1]), dtype=X.dtype, device=X.device)


def _ab(M: np.ndarray, x: np.ndarray) -> tuple[float, float]:
    E = np.abs(M - x[None, :])
    return float(E.sum(0).max()), float(E.sum(1).max())


class _LP:
    """The LP of :func:`composite_shift` for one matrix M (n, d); solve(w_a, w_b, alpha_max)."""

    def __init__(self, M: np.ndarray):
        n, d = M.shape
        self.n, self.d = n, d
        nE = n * d
        iE = d + np.arange(nE)  # column of E_ij, row-major
        jcol = np.tile(np.arange(d), n)  # j of each E_ij
        icol = np.repeat(np.arange(n), d)  # i of each E_ij
        r = np.arange(nE)
        # rows 0..nE-1: -x_j - E_ij <= -X_ij ; rows nE..2nE-1: x_j - E_ij <= X_ij
        rows = [r, r, nE + r, nE + r]
        cols = [jcol, iE, jcol, iE]
        vals = [-np.ones(nE), -np.ones(nE), np.ones(nE), -np.ones(nE)]
        # column sums: sum_i E_ij - alpha <= 0 ; row sums: sum_j E_ij - beta <= 0
        ia, ib = d + nE, d + nE + 1
        rows += [2 * nE + jcol, 2 * nE + np.arange(d), 2 * nE + d + icol, 2 * nE + d + np.arange(n)]
        cols += [iE, np.full(d, ia), iE, np.full(n, ib)]
        vals += [np.ones(nE), -np.ones(d), np.ones(nE), -np.ones(n)]
        from scipy import sparse  # imported where used: scipy costs ~0.3 s to import

        self.A = sparse.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                                   shape=(2 * nE + d + n, d + nE + 2))
        self.b = np.concatenate([-M.reshape(-1), M.reshape(-1), np.zeros(d + n)])
        self.M = M
        # interior point (with crossover to a vertex) is several times faster than simplex once
        # n d is in the thousands; simplex is faster on small matrices
        self.method = "highs-ipm" if n * d > 2000 else "highs-ds"

    def solve(self, w_a: float, w_b: float, alpha_max: float | None = None,
              beta_max: float | None = None) -> np.ndarray:
        c = np.zeros(self.A.shape[1])
        c[-2], c[-1] = w_a, w_b
        bounds = [(None, None)] * self.d + [(0, None)] * (self.n * self.d) + [(0, alpha_max), (0, beta_max)]
        from scipy.optimize import linprog

        res = linprog(c, A_ub=self.A, b_ub=self.b, bounds=bounds, method=self.method)
        if res.status != 0:  # always feasible and bounded; a failure is the solver's
            raise RuntimeError(f"the composite residual LP failed: {res.message}")
        return res.x[: self.d]


def _composite_shift_one(M: np.ndarray, rtol: float) -> np.ndarray:
    lp = _LP(M)
    scale = max(float(np.abs(M).sum()), 1e-300)
    slack = rtol * scale

    # the two lexicographic ends, each with a supporting normal w (w . z >= w . end on S)
    # (the second stage allows 1e-12 relative slack: a bound at exactly a_min can be
    # infeasible by rounding; it moves the ends by that much only)
    xa = lp.solve(1.0, 0.0)
    p = lp.solve(0.0, 1.0, alpha_max=_ab(M, xa)[0] + 1e-12 * scale)  # (a_min, b | a_min)
    xb = lp.solve(0.0, 1.0)
    q = lp.solve(1.0, 0.0, beta_max=_ab(M, xb)[1] + 1e-12 * scale)  # (a | b_min, b_min)
    points = {tuple(x): _ab(M, x) for x in (xa, xb, p, q)}
    # Closed-form feasible shifts scored as well (never branched on): the row mean and the
    # column medians (an exact minimiser of a). They keep the result at least as good as
    # the token-mean residual even where an interior-point LP stops ~1e-8 short of a vertex.
    candidates = {tuple(x): _ab(M, x) for x in (M.mean(axis=0), np.median(M, axis=0))}
    best = min([*points.values(), *candidates.values()], key=lambda z: z[0] * z[1])
    stack = [(p, (1.0, 0.0), q, (0.0, 1.0))]
    while stack:
        p, wp, q, wq = stack.pop()
        (pa, pb), (qa, qb) = points[tuple(p)], points[tuple(q)]
        w_a, w_b = pb - qb, qa - pa
        if w_a <= slack or w_b <= slack:  # the ends coincide (up to rtol): no edge between
            continue
        # Branch and bound: the frontier between p and q lies in the triangle of p, q and the
        # crossing T of their supporting lines; ab is quasi-concave on the positive quadrant,
        # so its minimum over the triangle is at a corner. Skip if no corner beats the best.
        T = _crossing(wp, p_ab=(pa, pb), wq=wq, q_ab=(qa, qb))
        if T[0] * T[1] >= best[0] * best[1] * (1 - rtol):
            continue
        norm = w_a + w_b
        w = (w_a / norm, w_b / norm)
        r = lp.solve(*w)
        ra, rb = _ab(M, r)
        points[tuple(r)] = (ra, rb)
        best = min(best, (ra, rb), key=lambda z: z[0] * z[1])
        if (w_a * ra + w_b * rb) < (w_a * pa + w_b * pb) - rtol * norm * scale:
            stack += [(p, wp, r, w), (r, w, q, wq)]
    points |= candidates
    return np.asarray(min(points, key=lambda x: points[x][0] * points[x][1]))


def _crossing(wp: float, p_ab: tuple[float, float], wq: float, q_ab: tuple[float, float]) -> tuple[float, float]:
    """The point where the lines w_p . z = w_p . p and w_q . z = w_q . q cross (2 x 2 solve)."""
    A = np.array([wp, wq], dtype=np.float64)
    rhs = np.array([wp[0] * p_ab[0] + wp[1] * p_ab[1], wq[0] * q_ab[0] + wq[1] * q_ab[1]])
    det = A[0, 0] * A[1, 1] - A[0, 1] * A[1, 0]
    if abs(det) < 1e-300:  # parallel supporting lines: the frontier is the segment pq itself
        return min(p_ab, q_ab, key=lambda z: z[0] * z[1])
    T = np.linalg.solve(A, rhs)
    return max(float(T[0]), 0.0), max(float(T[1]), 0.0)


def relative_residual(X: Tensor, kind: str = "mean") -> Tensor:
    """||res(X)||_{1,inf} / ||X||_{1,inf} (...), the ratio Dong et al. plot per layer; 0 where X = 0."""
    r = residual(X, kind).norm
    full = composite_norm(X)
    return torch.where(full > 0, r / full.clamp_min(torch.finfo(full.dtype).tiny), torch.zeros_like(r))


__all__ = ["KINDS", "Residual", "composite_norm", "composite_shift", "l1_norm", "linf_norm", "quasi_norm_constant",
           "rank_one_approximation", "relative_residual", "residual", "spectral_norm", "two_norm_shift"]
