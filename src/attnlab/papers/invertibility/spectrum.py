"""Singular values of the attention matrix A (N^L x Pd): float64 with the tolerance that
decides its rank, and the smallest one in high precision where float64 cannot see it.

float64 (:func:`float_spectrum`): sigma_1 >= ... >= sigma_m (m = min(N^L, Pd)) by LAPACK,
the numerical rank #{sigma_i > tol} with numpy's tolerance

    tol = max(N^L, Pd) * eps * sigma_1,        eps = 2^-52,

and ``resolved``: whether sigma_m / sigma_1 > max(N^L, Pd) eps, i.e. whether the float64
value of sigma_min is a number at all. Below that, LAPACK returns round-off (of size
~eps sigma_1) whatever the exact sigma_min is, and the value is reported as "below float
resolution", never as a number.

High precision (:func:`sigma_min_high_precision`): for A of full rank m, sigma_min^2 is the
smallest eigenvalue of the m x m Gram matrix G (A A^T when N^L <= Pd, else A^T A), so

    sigma_min = lambda_max(G^{-1})^{-1/2}.

G is formed in Arb ball arithmetic from an enclosure of A at ``prec`` bits
(:func:`attnlab.papers.invertibility.matrix.attention_matrix_arb` or ``_arb_qk``), G^{-1}
is computed by LU in ``prec``-bit floating point (arb's "approx" solve, no error bounds),
scaled by a power of two and rounded to float64, and lambda_max of that positive definite
float64 matrix is accurate to ~m eps relative (the largest eigenvalue of a symmetric matrix
is perturbed by at most the norm of the perturbation, here m eps lambda_max). The LU
step needs prec > log2 cond(G) = 2 log2(sigma_1 / sigma_min) bits; since no bound is
carried, precisions are doubled until two successive values of log10 sigma_min agree to
``agree`` (default 1e-3, i.e. 0.2%); the reported value is the last one and ``bits`` the
precision that gave it. If none agree up to the last precision, None is returned.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from attnlab.analysis.certified_rank import working_precision

EPS = float(np.finfo(np.float64).eps)
PRECISIONS = (128, 256, 512, 1024, 2048, 4096)


@dataclass(frozen=True)
class FloatSpectrum:
    """float64 singular values of A (m = min(rows, cols)) and the rank they give.

    sigma: (m,) descending; tol: max(rows, cols) eps sigma_1; rank: #{sigma_i > tol};
    resolved: sigma_m / sigma_1 > max(rows, cols) eps (the float64 sigma_min is meaningful)."""

    rows: int
    cols: int
    sigma: np.ndarray
    tol: float
    rank: int

    @property
    def resolution(self) -> float:
        """The smallest sigma_i / sigma_1 float64 can tell from zero here: max(rows, cols) eps."""
        return max(self.rows, self.cols) * EPS

    def log10_ratio(self, i: int | None = None) -> float:
        """log10 sigma_i / sigma_1 (1-based i; default m) as float64 computes it (an exact zero is
        clamped to the smallest positive float64, 5e-324, so the value stays finite)."""
        s = float(self.sigma[(len(self.sigma) if i is None else i) - 1])
        return math.log10(max(s, 5e-324)) - math.log10(self.sigma[0])

    def resolved(self, i: int | None = None) -> bool:
        """Whether sigma_i / sigma_1 (default i = m) lies above float64's resolution."""
        return self.log10_ratio(i) > math.log10(self.resolution)


def float_spectrum(A: np.ndarray) -> FloatSpectrum:
    """Singular values of A (float64, LAPACK gesdd) and numpy's matrix_rank tolerance."""
    A = np.asarray(A, dtype=np.float64)
    s = np.linalg.svd(A, compute_uv=False)
    tol = max(A.shape) * EPS * float(s[0])
    return FloatSpectrum(A.shape[0], A.shape[1], s, tol, int((s > tol).sum()))


@dataclass(frozen=True)
class HighPrecisionSigma:
    """log10 sigma_min of a full-rank A from the Gram inverse at ``bits`` bits (None: no two
    successive precisions agreed up to ``bits``), and the value at each precision tried
    (``history``). sigma_max needs no high precision: float64 resolves it to ~eps relative."""

    log10_sigma_min: float | None
    bits: int
    history: tuple[float | None, ...]


def _log10_lambda_max(Ginv: Any) -> float | None:
    """log10 of the largest eigenvalue of the (positive definite) arb matrix Ginv's midpoints."""
    import flint

    m = Ginv.nrows()
    diag = [Ginv[i, i] for i in range(m)]
    if any(not (x.mid() > 0) for x in diag):
        return None  # not positive definite at this precision: garbage from the LU
    k = max(math.floor(float((x.log() / flint.arb(2).log()).mid())) for x in diag)
    scale = flint.arb(2) ** (-k)
    M = np.array([[float((x * scale).mid()) for x in row] for row in Ginv.tolist()], dtype=np.float64)
    if not np.isfinite(M).all():
        return None
    lam = float(np.linalg.eigvalsh((M + M.T) / 2)[-1])
    if not lam > 0:
        return None
    return math.log10(lam) + k * math.log10(2)


def sigma_min_high_precision(build: Callable[[int], Any], precisions: Sequence[int] = PRECISIONS,
                             agree: float = 1e-3) -> HighPrecisionSigma:
    """log10 sigma_min of the exact matrix ``build(prec)`` encloses (an arb_mat, full rank
    assumed), by the Gram inverse at doubling precisions (module docstring)."""
    import flint

    history: list[float | None] = []
    prev = None
    for prec in precisions:
        with working_precision(prec):
            A = build(prec)
            m = min(A.nrows(), A.ncols())
            G = A * A.transpose() if A.nrows() <= A.ncols() else A.transpose() * A
            eye = flint.arb_mat(m, m, [1 if i == j else 0 for i in range(m) for j in range(m)])
            try:
                Ginv = G.solve(eye, algorithm="approx")
                lam = _log10_lambda_max(Ginv)
            except ZeroDivisionError:
                lam = None
        value = None if lam is None else -0.5 * lam
        history.append(value)
        if value is not None and prev is not None and abs(value - prev) <= agree:
            return HighPrecisionSigma(value, prec, tuple(history))
        prev = value
    return HighPrecisionSigma(None, int(precisions[-1]), tuple(history))


def log10_label(value: float | None, resolved: bool = True) -> str:
    """A log10 value as table text: the number, 'below float resolution', or 'not resolved'."""
    if value is None:
        return "not resolved"
    if not resolved:
        return "below float resolution"
    return f"{value:.2f}"


__all__ = ["EPS", "FloatSpectrum", "HighPrecisionSigma", "PRECISIONS", "float_spectrum", "log10_label",
           "sigma_min_high_precision"]
