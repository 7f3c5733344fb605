"""Recovering the sequence t from its row A(t) of the attention matrix, with and without noise.

A (N^L x Pd) holds one row A(t) in R^{Pd} per sequence t. Given y = A(t) + n:

- nearest row:    t_hat = argmin_s ||y - A(s)||_2 (needs only distinct rows: injectivity);
- least squares:  c = argmin_c ||A^T c - y||_2 (numpy lstsq, rcond = max(N^L, Pd) eps, so
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


CHUNK_ENTRIES = 1 << 24  # float64 entries of one block of differences (128 MB)


def _squared_distances(Y: np.ndarray, A: np.ndarray):
    """Yield (start, D) with D[i, s] = ||Y[start + i] - A[s]||^2, from the differences themselves
    (the expansion |y|^2 + |a|^2 - 2 y.a loses rows closer than ~1e-8 ||a||)."""
    step = max(1, CHUNK_ENTRIES // max(1, A.size))
    for start in range(0, len(Y), step):
        diff = Y[start:start + step, None, :] - A[None, :, :]
        yield start, np.einsum("ksj,ksj->ks", diff, diff)


def row_separation(A: np.ndarray) -> np.ndarray:
    """delta_t = min_{s != t} ||A(s) - A(t)||_2 for every row t: (N^L,)."""
    A = np.asarray(A, dtype=np.float64)
    out = np.empty(len(A))
    for start, D in _squared_distances(A, A):
        D[np.arange(len(D)), start + np.arange(len(D))] = np.inf
        out[start:start + len(D)] = np.sqrt(D.min(axis=1))
    return out


def decode_nearest(A: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """argmin_s ||y - A(s)|| for each row y of Y (k, Pd): (k,) row indices of A."""
    A, Y = np.asarray(A, dtype=np.float64), np.asarray(Y, dtype=np.float64)
    out = np.empty(len(Y), dtype=np.int64)
    for start, D in _squared_distances(Y, A):
        out[start:start + len(D)] = np.argmin(D, axis=1)
    return out


def decode_least_squares(A: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """argmax_s c_s with c = argmin ||A^T c - y|| (lstsq, rcond max(N^L, Pd) eps), per row y of Y."""
    C = np.linalg.lstsq(A.T, Y.T, rcond=max(A.shape) * EPS)[0]  # (N^L, k)
    return np.argmax(C, axis=0)


def noisy_rows(A: np.ndarray, level: float, rng: np.random.Generator) -> np.ndarray:
    """A + noise with ||n_t|| = level ||A(t)|| in a uniformly random direction, per row."""
    g = rng.standard_normal(A.shape)
    g /= np.linalg.norm(g, axis=1, keepdims=True)
    return A + level * np.linalg.norm(A, axis=1, keepdims=True) * g


def error_rates(A: np.ndarray, levels, draws: int, rng: np.random.Generator) -> dict[str, list[float]]:
    """Share of wrongly decoded rows, by decoder and noise level (every row, ``draws`` noises each)."""
    A = np.asarray(A, dtype=np.float64)
    truth = np.arange(len(A))
    out: dict[str, list[float]] = {"nearest": [], "least_squares": []}
    for level in levels:
        wrong_n = wrong_l = 0
        for _ in range(draws):
            Y = noisy_rows(A, float(level), rng) if level > 0 else A.copy()
            wrong_n += int((decode_nearest(A, Y) != truth).sum())
            wrong_l += int((decode_least_squares(A, Y) != truth).sum())
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


__all__ = ["crossing_level", "decode_least_squares", "decode_nearest", "error_rates", "noisy_rows",
           "row_separation"]
