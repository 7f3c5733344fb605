"""Recovering the sequence t from its row A(t) of the attention matrix, with and without noise.

A (N^L x Pd) holds one row A(t) in R^{Pd} per sequence t. Given y = A(t) + n:

- nearest row:    t_hat = argmin_s ||y - A(s)||_2 (needs only distinct rows: injectivity);
- least squares:  c = argmin_c ||A^T c - y||_2 (minimum norm, by the SVD of A with singular values
                  below max(N^L, Pd) eps sigma_1 dropped, as numpy's lstsq with that rcond, so
                  directions below float64's resolution are dropped), t_hat = argmax_s c_s
                  (needs A of full row rank: invertibility; c = e_t when n = 0).

Noise (:func:`noisy_rows`): n = level ||A(t)|| g / ||g||, g ~ N(0, I_{Pd}), so the relative
noise ||n|| / ||A(t)|| equals ``level`` exactly.

Guarantees (what the measured error rates are compared with):

- nearest row is right whenever ||n|| < delta_t / 2, delta_t = min_{s != t} ||A(s) - A(t)||
  (the triangle inequality); a random n only moves y by about ||n|| / sqrt(Pd) along the
  direction A(s) - A(t), so failures typically start near ||n|| ~ sqrt(Pd) delta_t / 2;
- least squares is right whenever ||n|| < sigma_min / 2: c - e_t = (A^T)^+ n has
  ||c - e_t||_inf <= ||n|| / sigma_min < 1/2, so c_t > 1/2 > c_s.
"""

from __future__ import annotations

import numpy as np

from attnlab.papers.invertibility.spectrum import EPS


CANDIDATES = 8  # nearest rows by the fast expansion, then compared exactly
CHUNK_ROWS = 512


def _nearest(Y: np.ndarray, A: np.ndarray, exclude_self: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(index, distance) of the row of A nearest to each row of Y.

    Candidates come from the expansion ||y||^2 - 2 y.a + ||a||^2 (one matrix product; its
    round-off, ~eps ||a||^2, hides gaps below ~1e-8 ||a|| in the squared distance), and the
    ``CANDIDATES`` best are compared by their exact differences ||y - a||, so the answer is
    exact unless more than ``CANDIDATES`` rows tie within that round-off. ``exclude_self``
    (Y is A): row t is never its own neighbour."""
    k = min(CANDIDATES, len(A) - (1 if exclude_self else 0))
    a2 = (A ** 2).sum(1)
    idx_out = np.empty(len(Y), dtype=np.int64)
    dist_out = np.empty(len(Y))
    for start in range(0, len(Y), CHUNK_ROWS):
        Yc = Y[start:start + CHUNK_ROWS]
        D = (Yc ** 2).sum(1)[:, None] - 2 * Yc @ A.T + a2[None, :]
        if exclude_self:
            D[np.arange(len(Yc)), start + np.arange(len(Yc))] = np.inf
        cand = np.argpartition(D, k - 1, axis=1)[:, :k]  # (c, k)
        diff = Yc[:, None, :] - A[cand]
        exact = np.sqrt(np.einsum("ckj,ckj->ck", diff, diff))
        best = np.argmin(exact, axis=1)
        rows = np.arange(len(Yc))
        idx_out[start:start + len(Yc)] = cand[rows, best]
        dist_out[start:start + len(Yc)] = exact[rows, best]
    return idx_out, dist_out


NEAREST_TRAFFIC = 80  # bytes moved per (row of Y, row of A) pair beside the product: D's passes, argpartition
NOISE_TRAFFIC = 100  # bytes per entry of one noisy_rows: the normal draws, the norms, the scaling and the sum


def nearest_estimate(R: int, T: int, c: int) -> tuple[float, float, float]:
    """(gemm flops, traffic bytes, bytes held) of :func:`_nearest` for R rows of Y against the T
    rows of A (c columns): the product 2 R c T; NEAREST_TRAFFIC R T bytes for D, its passes and
    argpartition, and 64 R k c for the k = CANDIDATES candidates' exact differences; per chunk of
    b = min(R, CHUNK_ROWS) rows D and a temporary (2 b T float64), argpartition's indices (b T int64)
    and the candidates' rows and differences (2 b k c float64): 8 (3 b T + 2 b k c)."""
    k, b = min(CANDIDATES, T), min(R, CHUNK_ROWS)
    return 2.0 * R * c * T, NEAREST_TRAFFIC * R * T + 64.0 * R * k * c, 8.0 * (3 * b * T + 2 * b * k * c)


def row_separation(A: np.ndarray) -> np.ndarray:
    """delta_t = min_{s != t} ||A(s) - A(t)||_2 for every row t: (N^L,)."""
    A = np.asarray(A, dtype=np.float64)
    return _nearest(A, A, exclude_self=True)[1]


def decode_nearest(A: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """argmin_s ||y - A(s)|| for each row y of Y (k, Pd): (k,) row indices of A."""
    return _nearest(np.asarray(Y, dtype=np.float64), np.asarray(A, dtype=np.float64))[0]


def least_squares_operator(A: np.ndarray) -> np.ndarray:
    """(A^T)^+ (N^L x Pd) by SVD, singular values <= max(N^L, Pd) eps sigma_1 dropped (lstsq's
    rcond): c = (A^T)^+ y is lstsq's minimum-norm solution of A^T c = y."""
    A = np.asarray(A, dtype=np.float64)
    return np.linalg.pinv(A.T, rcond=max(A.shape) * EPS)


def decode_least_squares(A: np.ndarray, Y: np.ndarray, operator: np.ndarray | None = None) -> np.ndarray:
    """argmax_s c_s with c = argmin ||A^T c - y|| (rcond max(N^L, Pd) eps), per row y of Y;
    ``operator``: :func:`least_squares_operator` of A, when already computed."""
    op = least_squares_operator(A) if operator is None else operator
    return np.argmax(op @ np.asarray(Y, dtype=np.float64).T, axis=0)


def noisy_rows(A: np.ndarray, level: float, rng: np.random.Generator) -> np.ndarray:
    """A + noise with ||n_t|| = level ||A(t)|| in a uniformly random direction, per row."""
    g = rng.standard_normal(A.shape)
    g /= np.linalg.norm(g, axis=1, keepdims=True)
    return A + level * np.linalg.norm(A, axis=1, keepdims=True) * g


def error_rates(A: np.ndarray, levels, draws: int, rng: np.random.Generator) -> dict[str, list[float]]:
    """Share of wrongly decoded rows, by decoder and noise level (every row, ``draws`` noises each)."""
    A = np.asarray(A, dtype=np.float64)
    truth = np.arange(len(A))
    op = least_squares_operator(A)
    out: dict[str, list[float]] = {"nearest": [], "least_squares": []}
    for level in levels:
        wrong_n = wrong_l = 0
        for _ in range(draws):
            Y = noisy_rows(A, float(level), rng) if level > 0 else A.copy()
            wrong_n += int((decode_nearest(A, Y) != truth).sum())
            wrong_l += int((decode_least_squares(A, Y, op) != truth).sum())
        out["nearest"].append(wrong_n / (draws * len(A)))
        out["least_squares"].append(wrong_l / (draws * len(A)))
    return out


def crossing_level(levels, rates, share: float = 0.5) -> float | None:
    """The noise level at which an error rate first reaches ``share`` (log-linear interpolation
    between grid points; None if it never does)."""
    levels, rates = list(levels), list(rates)
    for i, r in enumerate(rates):
        if r >= share:
            if i == 0 or levels[i - 1] <= 0:
                return float(levels[i])
            l0, l1, r0 = np.log10(levels[i - 1]), np.log10(levels[i]), rates[i - 1]
            return float(10 ** (l0 + (share - r0) / (r - r0) * (l1 - l0)))
    return None


__all__ = ["crossing_level", "decode_least_squares", "decode_nearest", "error_rates", "least_squares_operator",
           "nearest_estimate", "noisy_rows", "row_separation"]
