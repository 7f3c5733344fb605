"""The rank of a real matrix, decided by a certificate instead of a threshold.

A floating-point rank counts singular values above a tolerance; when sigma_min/sigma_max
is below ~1e-16 the count says nothing about the exact matrix. Here the rank of an exact
real matrix M (m x n) is bracketed by two proofs:

    lower  = r  when an r x r minor M[I, J] has det M[I, J] != 0, proved by ball
               arithmetic: every entry is enclosed in a ball [mid +- rad] (Arb,
               python-flint), the determinant is evaluated in ball arithmetic at a
               working precision of ``prec`` bits, and the resulting ball
               det = D_mid +- D_rad does not contain 0 (|D_mid| > D_rad).
               Since the exact M lies in the ball matrix, its minor is nonzero and
               rank M >= r.
    upper  = min(m - rank V_left, n - rank V_right)  for exhibited integer null
               vectors: rows v of V_left with v^T M = 0 and rows u of V_right with
               M u = 0 (a mathematical fact the caller supplies, e.g. two rows of M
               that are the same function). rank V is exact (over Q, fmpz_mat); each
               v^T M is evaluated in ball arithmetic and must contain 0, a check that
               the vectors are consistent with M (it cannot prove v^T M = 0).

The lower bound has a second proof, for large minors (``method="inverse"``; Rump's
verification of nonsingularity; Rump 1983, Neumaier 1990 "Interval methods for systems
of equations", ch. 4):

    lower  = r  when, for an exact r x r matrix R (an approximate inverse of the
               midpoint of B = M[I, J], computed at ``prec`` bits without error bounds),
               the ball matrix C = I - B R, evaluated in ball arithmetic at ``prec``
               bits, satisfies

                   delta := max_j sum_i |C_ij|  <  1        (each column sum's upper bound)

               Proof: for every exact B in the ball matrix, ||I - B R||_1 <= delta < 1,
               so the Neumann series sum_k (I - B R)^k converges to (B R)^{-1}; B R is
               invertible, hence so is B (det B det R = det B R != 0), and rank M >= r.
               Every eigenvalue of B R lies in the disc |z - 1| <= delta, so
               |det B R| >= (1 - delta)^r > 0.
               R is any matrix: a bad R can only make delta >= 1 (no certificate), never
               a false one. delta ~ cond(B) 2^-prec, so a failure at prec bits with a
               finite delta says how many bits to add (:func:`next_precision`:
               prec + log2(delta) + 16, rounded up to 64; 3 prec when delta looks
               saturated, 2 prec when it is not finite).

Why the right residual I - B R and not the left one I - R B: R is computed column by
column by solving B x_j = e_j with an LU factorisation, which is backward stable: the
computed x_j solves (B + dB_j) x_j = e_j with |dB_j| <= gamma |L| |U|, so B x_j - e_j =
-dB_j x_j is small for each column; nothing bounds R B - I the same way. Measured on the
invertibility matrix with N = 4, L = 5 (1024 rows), the same R at 512 bits:
||I - B R||_1 <= 5.5e-34 where ||I - R B||_inf <= 4.2e-9, i.e. log2 cond 402 against 484
(prec + log2 delta), and 416 bits certify with the right residual where the left one needs
512 (benchmarks/README.md; the table there holds the right residual of every case).

It costs an approximate LU and triangular solves for the r columns of R at ``prec`` bits
(arf, no radii) and one ball matrix product (flint's block multiplication over fmpz),
about what flint's preconditioned ball determinant costs at the same precision; what it
saves is attempts: a failed determinant ball only says "more bits", a failed residual
says how many. ``method="auto"`` takes the determinant up to ``DET_MAX`` = 256 rows (one
or two cheap attempts, and a determinant bound to report) and Rump's test above.

When lower == upper the rank is certified exactly. The certificate records the method,
the precision and the margin

    det:      margin = 1 - D_rad / |D_mid|   in (0, 1]   (how far the ball stays from 0),
              log10 |det| >= log10(|D_mid| - D_rad), and the determinant ball;
    inverse:  margin = 1 - delta  in (0, 1], residual = delta (an upper bound on
              ||I - B R||_1); no determinant is computed (log10_det = nan, det_mid = "").

and, for contrast, what a float64 SVD of the midpoint says (sigma_min/sigma_max and
numpy's default-tolerance rank), which is where a threshold rank lies.

The matrix is given as a ``build(prec) -> flint.arb_mat`` callable (an enclosure of the
exact matrix computed at ``prec`` bits; precision is raised through ``precisions``
until the minor is certified nonsingular), as an ``arb_mat``, or as a float array whose
float64 entries are taken as the exact values.
"""

from __future__ import annotations

from types import ModuleType

import contextlib
import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from attnlab.errors import ConfigError

PRECISIONS = (64, 128, 256, 512, 1024, 2048, 4096)  # bits tried in turn (det); first and cap (inverse)
DET_MAX = 256  # method="auto": a ball determinant up to this minor size, Rump's check above
METHODS = ("auto", "det", "inverse")


@dataclass(frozen=True)
class RankCertificate:
    """lower <= rank M <= upper, each proved (see the module docstring).

    shape: (m, n); rows, cols: the minor whose ball determinant certified ``lower``
    (empty when nothing was certified); prec: its working precision in bits (0: none);
    det_mid, det_rad: the determinant ball as text (arb's decimal midpoint and radius);
    margin: 1 - D_rad/|D_mid|; log10_det: a lower bound on log10 |det M[I, J]|;
    null_left, null_right: ranks of the exhibited null-vector sets; seconds: wall time;
    float_rank, float_ratio: numpy's matrix_rank and sigma_min/sigma_max of the midpoint;
    method: "det" or "inverse" (the proof used); residual: delta, the proved upper bound on
    ||I - M[I, J] R||_1 (inverse; nan for det); attempts: the precisions tried, in order.
    """

    shape: tuple[int, int]
    lower: int
    upper: int
    prec: int
    det_mid: str
    det_rad: str
    margin: float
    log10_det: float
    null_left: int
    null_right: int
    seconds: float
    float_rank: int
    float_ratio: float
    rows: tuple[int, ...] = field(default=(), repr=False)
    cols: tuple[int, ...] = field(default=(), repr=False)
    method: str = "det"
    residual: float = math.nan
    attempts: tuple[int, ...] = ()

    @property
    def exact(self) -> bool:
        """The rank is pinned: lower == upper."""
        return self.lower == self.upper

    @property
    def rank(self) -> int:
        """The certified rank; ValueError when only a bracket was proved."""
        if not self.exact:
            raise ValueError(f"rank only bracketed: {self.lower} <= rank <= {self.upper}")
        return self.lower

    def summary(self) -> dict[str, Any]:
        return dict(shape=list(self.shape), lower=self.lower, upper=self.upper, prec_bits=self.prec,
                    det_mid=self.det_mid, det_rad=self.det_rad, margin=self.margin, log10_det=self.log10_det,
                    null_left=self.null_left, null_right=self.null_right, seconds=self.seconds,
                    float_rank=self.float_rank, float_ratio=self.float_ratio, method=self.method,
                    residual=self.residual, attempts=list(self.attempts))


@contextlib.contextmanager
def working_precision(prec: int, threads: int | None = None):
    """flint's global precision (bits) and thread count for the block, restored afterwards."""
    flint = _flint()
    old_prec, old_threads = flint.ctx.prec, flint.ctx.threads
    flint.ctx.prec = int(prec)
    if threads is not None:
        flint.ctx.threads = int(threads)
    try:
        yield flint
    finally:
        flint.ctx.prec, flint.ctx.threads = old_prec, old_threads


def to_arb_mat(M) -> Any:
    """A float array (entries taken as exact) or an arb_mat, as an arb_mat."""
    flint = _flint()
    if isinstance(M, flint.arb_mat):
        return M
    M = np.asarray(M, dtype=np.float64)
    if M.ndim != 2 or min(M.shape) < 1:
        raise ConfigError(f"the matrix must be a non-empty 2-D array, got shape {M.shape}")
    if not np.isfinite(M).all():
        raise ConfigError("the matrix has non-finite entries; give finite values")
    return flint.arb_mat(M.shape[0], M.shape[1], [flint.arb(float(x)) for x in M.ravel()])


def midpoint(M) -> np.ndarray:
    """The midpoints of an arb_mat as a float64 array (rounded to nearest)."""
    return np.array([[float(x) for x in row] for row in M.mid().tolist()], dtype=np.float64) \
        if hasattr(M, "mid") else np.asarray(M, dtype=np.float64)


def certified_rank(matrix: Callable[[int], Any] | Any, *, rows: Sequence[int] | None = None,
                   cols: Sequence[int] | None = None, size: int | None = None, left_null=None,
                   right_null=None, precisions: Sequence[int] = PRECISIONS, threads: int | None = None,
                   method: str = "auto") -> RankCertificate:
    """Bracket rank M with proofs: a nonsingular minor below, null vectors above.

    matrix: ``build(prec) -> arb_mat`` (rebuilt at each precision), an arb_mat, or a float
    array (exact entries). rows, cols: the r x r minor to certify (default: the leading
    min(m, n) rows and columns; with ``size`` and no rows/cols, the minor of that size
    :func:`select_minor` picks at each precision). left_null (k, m) / right_null (k, n): integer null
    vectors (v^T M = 0 / M u = 0) for the upper bound. method: "det" (ball determinant
    excludes 0; ``precisions`` tried in turn), "inverse" (||I - M[I, J] R||_1 < 1; starts
    at ``precisions[0]`` bits, adds what the failed residual asks for, never beyond
    ``max(precisions)``) or "auto" (det up to DET_MAX rows). lower = 0 if nothing certifies.
    threads: flint's thread count for the block (default: as set).
    """
    start = time.perf_counter()
    if method not in METHODS:
        raise ConfigError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    build = matrix if callable(matrix) else (lambda prec, M=matrix: to_arb_mat(M))
    precisions = [int(p) for p in precisions]
    if not precisions or min(precisions) < 16:
        raise ConfigError(f"precisions must be a non-empty list of bit counts >= 16, got {precisions!r}")
    M = None
    certified: tuple | None = None
    tried: list[int] = []
    queue, cap = list(precisions), max(precisions)
    kind = method
    while queue:
        prec = queue.pop(0)
        tried.append(prec)
        with working_precision(prec, threads) as flint:
            M = build(prec)
            m, n = M.nrows(), M.ncols()
            if size is not None and rows is None and cols is None:
                I, J = select_minor(M, int(size))
            else:
                I, J = _minor(m, n, rows, cols)
            if kind == "auto":
                kind = "det" if len(I) <= DET_MAX else "inverse"
            sub = M if (list(I) == list(range(m)) and list(J) == list(range(n))) else \
                flint.arb_mat(len(I), len(J), [M[i, j] for i in I for j in J])
            if kind == "det":
                det = sub.det()
                if not det.contains(0):
                    certified = (prec, I, J, det)
                    break
                continue
            ok, delta, delta_f = inverse_check(sub)
            if ok:
                certified = (prec, I, J, delta)
                break
            nxt = next_precision(prec, delta_f)
            queue = [nxt] if nxt <= cap else ([cap] if prec < cap else [])
    m, n = M.nrows(), M.ncols()
    nl = _null_rank(M, left_null, m, "left_null", transpose=True)
    nr = _null_rank(M, right_null, n, "right_null", transpose=False)
    upper = min(m - nl, n - nr)
    mid = midpoint(M)
    s = np.linalg.svd(mid, compute_uv=False)
    f_ratio = float(s[-1] / s[0]) if s[0] > 0 else 0.0
    f_rank = int(np.count_nonzero(s > s[0] * max(m, n) * np.finfo(np.float64).eps))  # numpy's matrix_rank
    if certified is None:
        return RankCertificate((m, n), 0, upper, 0, "", "", 0.0, -math.inf, nl, nr,
                               time.perf_counter() - start, f_rank, f_ratio, method=kind, attempts=tuple(tried))
    prec, I, J, proof = certified
    lower = len(I)
    if lower > upper:
        raise ArithmeticError(f"certified lower bound {lower} exceeds the null-vector upper bound {upper}: "
                              "the exhibited null vectors are not null vectors of M")
    if kind == "inverse":
        with working_precision(prec):
            margin = float((1 - proof).lower())  # a lower bound on 1 - delta
        return RankCertificate((m, n), lower, upper, prec, "", "", margin, math.nan, nl, nr,
                               time.perf_counter() - start, f_rank, f_ratio, tuple(I), tuple(J),
                               method="inverse", residual=float(proof), attempts=tuple(tried))
    det = proof
    with working_precision(prec):
        d_mid, d_rad = abs(det.mid()), det.rad()
        margin = float(1 - d_rad / d_mid)
        low = d_mid - d_rad
        log10_det = float((low.log() / _flint().arb(10).log()).mid())
        mid_s, rad_s = det.mid().str(10, radius=False), det.rad().str(3, radius=False)
    return RankCertificate((m, n), lower, upper, prec, mid_s, rad_s, margin, log10_det, nl, nr,
                           time.perf_counter() - start, f_rank, f_ratio, tuple(I), tuple(J),
                           method="det", attempts=tuple(tried))


def next_precision(prec: int, delta: float) -> int:
    """The precision to try after Rump's test failed at ``prec`` bits with residual bound
    ``delta`` (>= 1): delta ~ cond(B) 2^-prec, so prec + log2(delta) + 16 bits leave a residual
    near 2^-16. When log2(delta) > 0.6 prec the residual may be saturated (R carries no
    correct digit and delta underestimates cond 2^-prec; measured on the invertibility
    matrices: log2(delta) = 48 at 64 bits for a condition number 2^134, while 105 at 192 bits
    and 93 at 256 bits were exact): then at least 3 prec. Not finite:
    2 prec. Rounded up to a multiple of 64 (a limb), and at least prec + 64."""
    if not math.isfinite(delta):
        want = 2 * prec
    else:
        want = prec + math.log2(max(delta, 1.0)) + 16
        if math.log2(max(delta, 1.0)) > 0.6 * prec:
            want = max(want, 3 * prec)
    return int(64 * math.ceil(max(want, prec + 64) / 64))


def inverse_check(B) -> tuple[bool, Any, float]:
    """Rump's test at flint's working precision: (ok, delta, float(delta)) with delta an arb
    upper bound on ||I - B R||_1 (the largest column sum) for R an approximate inverse of the
    midpoint of the square ball matrix B; ok is True when delta < 1, which proves every
    matrix in B nonsingular (module docstring). A numerically singular midpoint gives
    (False, inf, inf)."""
    flint = _flint()
    r = B.nrows()
    if B.ncols() != r:
        raise ConfigError(f"the matrix must be square, got {r} x {B.ncols()}")
    eye = flint.arb_mat(r, r)
    for i in range(r):
        eye[i, i] = 1
    try:
        R = B.mid().solve(eye, algorithm="approx").mid()  # exact entries: radius 0
    except ZeroDivisionError:
        return False, flint.arb("inf"), math.inf
    C = eye - B * R
    zero = flint.arb(0)
    sums = [sum((abs(x) for x in col), zero).upper() for col in C.transpose().tolist()]
    if not all(x.is_finite() for x in sums):
        return False, flint.arb("inf"), math.inf
    delta = sums[0]
    for x in sums[1:]:
        if x > delta:
            delta = x
    ok = bool(delta < 1)
    return ok, delta, float(delta)


def select_minor(M, r: int) -> tuple[list[int], list[int]]:
    """Rows and columns of an r x r minor chosen by Gaussian elimination with complete
    pivoting on the midpoints of M, in flint's working precision (a heuristic choice: the
    certificate is the determinant of the minor, evaluated afterwards)."""
    flint = _flint()
    m, n = M.nrows(), M.ncols()
    if not 1 <= r <= min(m, n):
        raise ConfigError(f"the minor size must be in [1, {min(m, n)}], got {r}")
    W = [[flint.arb(x.mid()) for x in row] for row in M.tolist()]
    rows, cols = list(range(m)), list(range(n))
    for k in range(r):
        best, bi, bj = None, k, k
        for i in range(k, m):
            Wi = W[rows[i]]
            for j in range(k, n):
                v = abs(Wi[cols[j]])
                if best is None or v > best:
                    best, bi, bj = v, i, j
        rows[k], rows[bi] = rows[bi], rows[k]
        cols[k], cols[bj] = cols[bj], cols[k]
        piv = W[rows[k]][cols[k]]
        for i in range(k + 1, m):
            f = W[rows[i]][cols[k]] / piv
            Wi, Wk = W[rows[i]], W[rows[k]]
            for j in range(k + 1, n):
                Wi[cols[j]] = Wi[cols[j]] - f * Wk[cols[j]]
    return sorted(rows[:r]), sorted(cols[:r])


def _minor(m: int, n: int, rows: Sequence[int] | None, cols: Sequence[int] | None) -> tuple[list[int], list[int]]:
    r = min(m, n)
    I = list(range(r)) if rows is None else [int(i) for i in rows]
    J = list(range(len(I))) if cols is None else [int(j) for j in cols]
    if len(I) != len(J) or not I:
        raise ConfigError(f"the minor must be square and non-empty: {len(I)} rows, {len(J)} columns")
    if len(set(I)) != len(I) or len(set(J)) != len(J) or min(I + J) < 0 or max(I) >= m or max(J) >= n:
        raise ConfigError(f"minor indices must be distinct, rows in [0, {m}), columns in [0, {n})")
    return I, J


def _null_rank(M: Any, V: np.ndarray | None, size: int, name: str, *, transpose: bool) -> int:
    """rank over Q of the integer null vectors V (k, size), after checking each v^T M (or M v)
    contains 0 in ball arithmetic."""
    if V is None:
        return 0
    flint = _flint()
    V = np.asarray(V)
    if V.ndim != 2 or V.shape[1] != size or not np.issubdtype(V.dtype, np.integer):
        raise ConfigError(f"{name} must be an integer array (k, {size}), got {V.dtype} {V.shape}")
    if V.shape[0] == 0:
        return 0
    Vm = flint.arb_mat(V.shape[0], size, [flint.arb(int(x)) for x in V.ravel()])
    prod = Vm * M if transpose else Vm * M.transpose()
    bad = [i for i in range(prod.nrows()) for j in range(prod.ncols()) if not prod[i, j].contains(0)]
    if bad:
        raise ArithmeticError(f"{name}: vector {bad[0]} is not a null vector (a product ball excludes 0)")
    return int(flint.fmpz_mat(V.shape[0], size, [int(x) for x in V.ravel()]).rank())


def _flint() -> ModuleType:
    try:
        import flint
    except ImportError:  # pragma: no cover - a declared dependency
        raise ConfigError("certified ranks need python-flint (pip install python-flint)") from None
    return flint


__all__ = ["DET_MAX", "METHODS", "PRECISIONS", "RankCertificate", "certified_rank", "inverse_check", "midpoint",
           "next_precision", "select_minor", "to_arb_mat", "working_precision"]
