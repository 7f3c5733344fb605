"""attnlab.analysis.residuals: the composite norm and res(X) (rank-collapse notes §2.2, §2.4)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.optimize import minimize

from attnlab.analysis.residuals import (
    KINDS,
    composite_norm,
    composite_shift,
    l1_norm,
    linf_norm,
    quasi_norm_constant,
    rank_one_approximation,
    relative_residual,
    residual,
    spectral_norm,
    two_norm_shift,
)
from attnlab.errors import ConfigError
from tolerances import FLOAT64, LP_SOLVE

F64 = dict(dtype=torch.float64)


def test_norms_by_hand():
    """X = [[1, -2, 0], [3, 0, 4]]: column sums 4, 2, 4 -> ||X||_1 = 4; row sums 3, 7 ->
    ||X||_inf = 7; composite sqrt(28)."""
    X = torch.tensor([[1.0, -2.0, 0.0], [3.0, 0.0, 4.0]], **F64)
    assert l1_norm(X).item() == 4.0 and linf_norm(X).item() == 7.0
    assert composite_norm(X).item() == pytest.approx(math.sqrt(28), abs=1e-15)
    assert composite_norm(X.T).item() == composite_norm(X).item()  # ||X^T||_1 = ||X||_inf


def test_triangle_inequality_fails_for_one_row():
    """A = [1, 0], B = [1, 1]/sqrt 2: ||A|| = ||B|| = 1, ||A + B|| = sqrt(max * sum) =
    sqrt((1 + 1/sqrt 2)(1 + sqrt 2)) = 2.0301..."""
    A = torch.tensor([[1.0, 0.0]], **F64)
    B = torch.tensor([[1.0, 1.0]], **F64) / math.sqrt(2)
    s = 1 / math.sqrt(2)
    assert composite_norm(A).item() == 1.0 and composite_norm(B).item() == pytest.approx(1.0, abs=1e-15)
    assert composite_norm(A + B).item() == pytest.approx(math.sqrt((1 + s) * (1 + 2 * s)), abs=1e-14)
    assert composite_norm(A + B).item() > 2.03


def test_mean_residual_by_hand():
    """X = [[0, 2], [2, 0], [1, 4]]: mean (1, 2); R = [[-1, 0], [1, -2], [0, 2]];
    ||R||_1 = max(2, 4) = 4, ||R||_inf = max(1, 3, 2) = 3 -> sqrt(12)."""
    X = torch.tensor([[0.0, 2.0], [2.0, 0.0], [1.0, 4.0]], **F64)
    r = residual(X, "mean")
    assert torch.equal(r.matrix, torch.tensor([[-1.0, 0.0], [1.0, -2.0], [0.0, 2.0]], **F64))
    assert r.norm.item() == pytest.approx(math.sqrt(12), abs=1e-15)


def test_composite_residual_by_hand():
    """One column X = (0, 0, 3)^T: a(x) = |x| + |x| + |3 - x|, b(x) = max(|x|, |3 - x|);
    on [0, 3/2] a = 3 + x, b = 3 - x and ab = 9 - x^2 (decreasing); on [3/2, 3] ab = (3 + x) x
    (increasing); outside [0, 3] both a, b exceed 3. So x* = 3/2 with norm sqrt(6.75), where
    the mean x = 1 gives a = 4, b = 2, norm sqrt 8."""
    X = torch.tensor([[0.0], [0.0], [3.0]], **F64)
    x = composite_shift(X)
    assert x.item() == pytest.approx(1.5, abs=1e-10)  # LP tolerance
    assert residual(X, "composite").norm.item() == pytest.approx(math.sqrt(6.75), abs=1e-10)
    assert residual(X, "mean").norm.item() == pytest.approx(math.sqrt(8), abs=1e-14)


def test_svd_residual_by_hand():
    """diag(3, 1) (2 x 2): the best rank-one approximation is diag(3, 0), the residual
    diag(0, 1) with composite norm 1; a rank-one matrix has residual 0 but X - mean != 0."""
    r = residual(torch.diag(torch.tensor([3.0, 1.0], **F64)), "svd")
    assert torch.allclose(r.matrix, torch.diag(torch.tensor([0.0, 1.0], **F64)), atol=1e-14)
    assert r.norm.item() == pytest.approx(1.0, abs=1e-14)
    uv = torch.outer(torch.tensor([1.0, 2.0, -1.0], **F64), torch.tensor([3.0, 1.0], **F64))
    assert residual(uv, "svd").norm.item() < 1e-14 < residual(uv, "mean").norm.item()


def test_constant_rows_have_zero_residual_under_every_kind():
    X = torch.ones(4, 1, **F64) @ torch.tensor([[1.5, -2.0, 0.25]], **F64)
    for kind in KINDS:
        assert residual(X, kind).norm.item() < FLOAT64, kind


def _brute_min(M: np.ndarray, rng: np.random.Generator) -> float:
    """min_x sqrt(a(x) b(x)) by a 201^d grid (d <= 2) and Nelder-Mead from 33 starts."""
    n, d = M.shape

    def f(x):
        E = np.abs(M - x[None, :])
        return math.sqrt(E.sum(0).max() * E.sum(1).max())

    lo, hi = M.min(0), M.max(0)  # the argmin lies in the box of the columns' ranges
    best = math.inf
    if d <= 2:
        grids = np.meshgrid(*[np.linspace(lo[j], hi[j], 201) for j in range(d)], indexing="ij")
        xs = np.stack([g.ravel() for g in grids], 1)  # (201^d, d)
        E = np.abs(M[None] - xs[:, None, :])  # (grid, n, d)
        best = float(np.sqrt(E.sum(1).max(1) * E.sum(2).max(1)).min())
        starts = [xs[np.argmin(E.sum(1).max(1) * E.sum(2).max(1))]]  # polish the grid's best
    else:
        starts = []
    starts += [M.mean(0), np.median(M, 0)] + [lo + (hi - lo) * rng.random(d) for _ in range(30)]
    for x0 in starts:
        r = minimize(f, x0, method="Nelder-Mead", options=dict(xatol=1e-12, fatol=1e-13, maxiter=4000))
        best = min(best, r.fun)
    return best


@pytest.mark.parametrize("n,d", [(2, 1), (3, 1), (5, 1), (2, 2), (3, 2), (4, 3), (5, 3), (5, 2)])
def test_exact_composite_residual_agrees_with_brute_force(n, d):
    """The LP answer is achieved (it is evaluated at its x) and no brute-force search beats
    it by more than 1e-9 relative; the brute force comes within 1e-4 relative of it."""
    rng = np.random.default_rng(100 * n + d)
    for _ in range(4):
        M = rng.standard_normal((n, d))
        exact = residual(torch.as_tensor(M), "composite").norm.item()
        brute = _brute_min(M, rng)
        assert exact <= brute * (1 + LP_SOLVE), (M, exact, brute)
        assert brute <= exact * (1 + 1e-4), (M, exact, brute)


def test_objective_is_not_convex_so_a_local_method_can_fail():
    """n = 1, d = 2, X = 0: the objective at x is the composite norm of the row -x;
    it is 1 at (1, 0) and (1, 1)/sqrt 2 and about 1.015 at their midpoint."""
    X = torch.zeros(1, 2, **F64)

    def obj(x):
        return composite_norm(X - x[None, :]).item()

    p, q = torch.tensor([1.0, 0.0], **F64), torch.tensor([1.0, 1.0], **F64) / math.sqrt(2)
    assert obj((p + q) / 2) > 1.01 > 1.0 + FLOAT64 >= (obj(p) + obj(q)) / 2


def test_composite_is_never_worse_than_the_mean_and_svd_never_worse_in_frobenius():
    g = torch.Generator().manual_seed(1)
    X = torch.randn(6, 5, 4, generator=g, **F64)
    mean, comp, svd = (residual(X, k) for k in ("mean", "composite", "svd"))
    assert (comp.norm <= mean.norm * (1 + LP_SOLVE)).all()
    assert (mean.norm <= 2 * (1 - 1 / 5) * comp.norm * (1 + LP_SOLVE)).all()  # (I - 11^T/n) has norm 2(1 - 1/n)
    # Eckart-Young: rank-one residual <= every shift's residual in the Frobenius norm
    assert (torch.linalg.matrix_norm(svd.matrix) <= torch.linalg.matrix_norm(mean.matrix) + FLOAT64).all()


def test_batches_keep_their_shapes_and_match_one_at_a_time():
    g = torch.Generator().manual_seed(2)
    X = torch.randn(2, 3, 5, 4, generator=g, **F64)
    for kind in KINDS:
        r = residual(X, kind)
        assert r.matrix.shape == X.shape and r.norm.shape == (2, 3) and r.matrix.dtype == torch.float64
        one = residual(X[1, 2], kind)
        assert torch.allclose(r.matrix[1, 2], one.matrix, atol=FLOAT64) and abs(r.norm[1, 2] - one.norm) < FLOAT64
    assert composite_shift(X).shape == (2, 3, 4) and rank_one_approximation(X).shape == X.shape
    assert relative_residual(X).shape == (2, 3)
    assert relative_residual(torch.zeros(3, 2, **F64)).item() == 0.0


def test_float32_input_keeps_its_dtype():
    X = torch.randn(4, 3, generator=torch.Generator().manual_seed(3))
    for kind in KINDS:
        assert residual(X, kind).matrix.dtype == torch.float32


@pytest.mark.parametrize("bad,match", [
    (torch.zeros(3, **F64), r"shape \(\.\.\., n, d\)"),
    (torch.zeros(0, 3, **F64), r"n, d >= 1"),
    (torch.zeros(2, 3, dtype=torch.int64), "floating-point"),
    ([[1.0, 2.0]], "torch.Tensor"),
])
def test_bad_input_is_a_config_error(bad, match):
    with pytest.raises(ConfigError, match=match):
        composite_norm(bad)
    with pytest.raises(ConfigError, match=match):
        residual(bad, "composite")


def test_non_finite_input_and_empty_batches():
    X = torch.ones(3, 2, **F64)
    X[1, 0] = float("nan")
    with pytest.raises(ConfigError, match="inf or nan"):
        residual(X, "composite")
    empty = torch.zeros(0, 3, 2, **F64)
    assert composite_shift(empty).shape == (0, 2) and residual(empty, "composite").norm.shape == (0,)


def test_unknown_kind_names_the_choices():
    with pytest.raises(ConfigError, match="unknown residual kind 'frobenius': choose one of mean, composite, svd"):
        residual(torch.ones(2, 2, **F64), "frobenius")


# ---- the notes' residual: x = argmin ||X - 1 x^T||_2 (operator 2-norm) --------------------------
def _brute_two_norm_min(M: np.ndarray, rng: np.random.Generator) -> float:
    """min_x ||M - 1 x^T||_2 by Nelder-Mead from 20 random starts (never from the mean)."""
    def f(x):
        return float(np.linalg.norm(M - x[None, :], 2))

    lo, hi = M.min(0) - 1, M.max(0) + 1
    return min(minimize(f, lo + (hi - lo) * rng.random(M.shape[1]), method="Nelder-Mead",
                        options=dict(xatol=1e-12, fatol=1e-14, maxiter=4000)).fun for _ in range(20))


@pytest.mark.parametrize("n,d", [(2, 1), (3, 2), (4, 3), (5, 2), (6, 4)])
def test_two_norm_residual_is_the_minimum_a_brute_force_finds(n, d):
    """The row mean attains min_x ||X - 1 x^T||_2: no search beats it, and the search reaches it."""
    rng = np.random.default_rng(10 * n + d)
    for _ in range(3):
        M = rng.standard_normal((n, d))
        X = torch.as_tensor(M)
        ours = spectral_norm(residual(X, "two").matrix).item()
        brute = _brute_two_norm_min(M, rng)
        assert ours <= brute * (1 + FLOAT64), (M, ours, brute)
        assert brute <= ours * (1 + 1e-6), (M, ours, brute)
        # random shifts never do better either
        for x in rng.standard_normal((50, d)):
            assert np.linalg.norm(M - x[None, :], 2) >= ours * (1 - FLOAT64)
    assert torch.equal(residual(X, "two").matrix, residual(X, "mean").matrix)


def test_two_norm_argmin_is_not_unique_and_the_composite_residual_depends_on_the_choice():
    """X = [[1, 0], [-1, 0]]: every x = (0, s), |s| <= 1, has ||X - 1 x^T||_2 = sqrt 2 (the
    minimum), and ||X - 1 x^T||_{1,inf} = sqrt(2 (1 + |s|)) runs from sqrt 2 to 2."""
    X = torch.tensor([[1.0, 0.0], [-1.0, 0.0]], **F64)
    assert torch.equal(two_norm_shift(X), torch.zeros(2, **F64))
    for s in (0.0, 0.5, 1.0):
        R = X - torch.tensor([0.0, s], **F64)
        assert spectral_norm(R).item() == pytest.approx(math.sqrt(2), abs=1e-14)
        assert composite_norm(R).item() == pytest.approx(math.sqrt(2 * (1 + s)), abs=1e-14)
    assert spectral_norm(X - torch.tensor([0.0, 1.1], **F64)).item() > math.sqrt(2) + 1e-3  # beyond the set


def test_quasi_norm_constant_is_valid_and_of_the_sharp_order():
    """K = sqrt((1 + sqrt(nd)) / 2) <= (nd)^{1/4}; the first column plus the first row of
    ones (n x n) reach (n + 1) / (2 sqrt n), the order sqrt n of K."""
    for n in (1, 2, 3, 5, 8):
        A = torch.zeros(n, n, **F64)
        A[:, 0] = 1
        B = A.T.clone()
        ratio = (composite_norm(A + B) / (composite_norm(A) + composite_norm(B))).item()
        assert ratio == pytest.approx((n + 1) / (2 * math.sqrt(n)), rel=1e-14)
        assert ratio <= quasi_norm_constant(n, n) <= (n * n) ** 0.25 + 1e-15
    assert quasi_norm_constant(1, 1) == 1.0
    g = torch.Generator().manual_seed(5)
    for _ in range(200):
        n, d = (int(v) for v in torch.randint(1, 6, (2,), generator=g))
        A, B = torch.randn(2, n, d, generator=g, **F64) * torch.rand(2, 1, 1, generator=g, **F64) ** 4
        assert composite_norm(A + B) <= quasi_norm_constant(n, d) * (composite_norm(A) + composite_norm(B)) + FLOAT64
