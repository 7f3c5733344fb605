"""The attention matrix A of the invertibility note, built for all N^L sequences at once.

Notation (the note's "Notations" and "Definitions"): N tokens with embeddings e(n) in
R^d (``e``: N x d), positions pos_j in R^d (``pos``: L x d), P single-head modules with
W_QK^p (d x d), a sequence t = (t_1, ..., t_L) and

    x(t, j)  = e(t_j) + pos_j
    a^p(t)_l = softmax_j( x(t, L)^T W_QK^p x(t, j) )_l          (query: the last token)
    A^p(t)   = sum_l a^p(t)_l x(t, l)                     in R^d
    A(t)     = [A^1(t) ... A^P(t)]                        in R^{Pd}

A stacks the rows A(t) over the N^L sequences in lexicographic order (t_1 slowest, as
``itertools.product``), 0-based tokens: A is N^L x Pd, column p d + k holds A^p(t)_k.

The proof takes W_QK^p = w_p E_11 (only the (1,1) entry), so that the score is
w_p x(t, L)_1 x(t, j)_1: it depends on t only through (t_L, t_j, j), and the N N L P
distinct exponentials are computed once. Three builders, one formula:

- :func:`attention_matrix`: float64 NumPy (any W_QK), max-subtracted softmax.
- :func:`attention_matrix_mp`: mpmath at ``dps`` digits (object arrays), W = w E_11.
- :func:`attention_matrix_arb`: an Arb ball enclosure (python-flint) at the current
  working precision, W = w E_11: the input of :mod:`attnlab.analysis.certified_rank`.
- :func:`attention_matrix_arb_qk`: the same enclosure for any W_QK (P, d, d) given as
  float64 values (taken as exact), e.g. Gaussian matrices instead of the proof's w E_11.

The last two write the rows as S M / S Z: S (N^L x L N^2) is the 0/1 matrix selecting
(l, t_L, t_l) for each row, M[(l, a, b), (p, k)] = exp(w_p x_1(a, L) x_1(b, l)) (e(b)_k +
pos_{l,k}) and Z[(l, a, b), p] = exp(w_p x_1(a, L) x_1(b, l)), with x_1(a, j) = e(a)_1 +
pos_{j,1}; A[t, (p, k)] = (S M)[t, (p, k)] / (S Z)[t, p].
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from typing import Any

import numpy as np

from attnlab.config import format_power, power_exceeds
from attnlab.errors import ConfigError

MAX_ROWS = 1 << 14  # N^L beyond this is refused: the matrix is dense


def sequences(N: int, L: int) -> np.ndarray:
    """All N^L sequences (N^L, L), 0-based, in the row order of A (lexicographic)."""
    if power_exceeds(N, L, MAX_ROWS):
        raise ConfigError(f"N^L = {N}^{L} = {format_power(N, L)} rows exceeds {MAX_ROWS}; lower N or L")
    return np.array(list(itertools.product(range(N), repeat=L)), dtype=np.int64).reshape(N ** L, L)


def qk_matrices(w, d: int) -> np.ndarray:
    """W_QK^p = w_p E_11 (P, d, d): the proof's matrices, zero but for the (1,1) entry."""
    w = np.asarray(w, dtype=np.float64).reshape(-1)
    W = np.zeros((w.size, d, d))
    W[:, 0, 0] = w
    return W


QK_KINDS = ("E11", "gaussian")


def qk_of_kind(kind: str, P: int, d: int, w: float, seed: int) -> np.ndarray:
    """W_QK (P, d, d) of one of :data:`QK_KINDS`: "E11", the proof's w_p E_11 with w_p = w p
    (:func:`qk_matrices` of :func:`default_w`); "gaussian", w G^p / d with G^p a d x d matrix of N(0, 1)
    entries drawn from ``seed``, so that the scores x^T W x have the size they have with E11
    (|x^T G y| ~ |x| |y| ~ d RMS^2).

    Raises:
        ConfigError: ``kind`` is not one of :data:`QK_KINDS`.
    """
    if kind == "E11":
        return qk_matrices(default_w(P, w), d)
    if kind == "gaussian":
        return w * np.random.default_rng(seed).standard_normal((P, d, d)) / d
    raise ConfigError(f"W_QK kind must be one of {', '.join(QK_KINDS)}, got {kind!r}")


def default_w(P: int, scale: float = 1.0) -> np.ndarray:
    """Distinct positive w_p = scale p, p = 1..P."""
    return scale * np.arange(1, P + 1, dtype=np.float64)


def attention_matrix(e, pos, W_QK, seqs: np.ndarray | None = None) -> np.ndarray:
    """A (N^L, P d) in float64 for any W_QK (P, d, d); rows in the order of ``seqs``
    (default :func:`sequences`). Scores x(t,L)^T W^p x(t,j), max-subtracted softmax."""
    e, pos, W = (np.asarray(a, dtype=np.float64) for a in (e, pos, W_QK))
    N, d = e.shape
    L = pos.shape[0]
    if pos.shape[1] != d or W.shape[1:] != (d, d):
        raise ConfigError(f"shapes disagree: e {e.shape}, pos {pos.shape}, W_QK {W.shape}; need (N,d), (L,d), (P,d,d)")
    seqs = sequences(N, L) if seqs is None else np.asarray(seqs)
    X = e[seqs] + pos[None]  # x(t, j): (T, L, d)
    s = np.einsum("td,pde,tje->ptj", X[:, -1], W, X)  # (P, T, L)
    a = np.exp(s - s.max(axis=-1, keepdims=True))
    a /= a.sum(axis=-1, keepdims=True)
    return np.einsum("ptj,tjd->tpd", a, X).reshape(len(seqs), W.shape[0] * d)


def _pieces(seqs: np.ndarray, N: int) -> np.ndarray:
    """Column index (l, t_L, t_l) -> l N^2 + t_L N + t_l of each row's L selections: (T, L)."""
    T, L = seqs.shape
    return np.arange(L)[None] * N * N + seqs[:, -1:] * N + seqs


def attention_matrix_mp(e, pos, w, dps: int = 50, seqs: np.ndarray | None = None) -> np.ndarray:
    """A (N^L, P d) as an object array of mpmath numbers at ``dps`` digits, W^p = w_p E_11.

    e, pos, w may hold floats (taken as exact) or mpmath numbers."""
    import mpmath

    with mpmath.workdps(dps):
        e = np.vectorize(mpmath.mpf, otypes=[object])(np.asarray(e, dtype=object))
        pos = np.vectorize(mpmath.mpf, otypes=[object])(np.asarray(pos, dtype=object))
        w = [mpmath.mpf(x) for x in np.asarray(w, dtype=object).reshape(-1)]
        N, d = e.shape
        L, P = pos.shape[0], len(w)
        seqs = sequences(N, L) if seqs is None else np.asarray(seqs)
        M = np.empty((L * N * N, P * d), dtype=object)
        Z = np.empty((L * N * N, P), dtype=object)
        for l, a, b in itertools.product(range(L), range(N), range(N)):
            row = l * N * N + a * N + b
            q, k1 = e[a, 0] + pos[L - 1, 0], e[b, 0] + pos[l, 0]
            y = e[b] + pos[l]
            for p in range(P):
                z = mpmath.exp(w[p] * q * k1)
                Z[row, p] = z
                M[row, p * d:(p + 1) * d] = [z * v for v in y]
        cols = _pieces(seqs, N)
        num = M[cols].sum(axis=1)  # (T, P d): sum over the row's L selections
        den = Z[cols].sum(axis=1)  # (T, P)
        return num / np.repeat(den, d, axis=1)


def attention_matrix_arb(e, pos, w, seqs: np.ndarray | None = None) -> Any:
    """A (N^L, P d) as a flint.arb_mat enclosing the exact matrix, at flint's current
    working precision, W^p = w_p E_11. e, pos, w: float arrays (exact values) or nested
    lists of arb balls (e.g. :func:`attnlab.papers.invertibility.embeddings.explicit_balls`)."""
    import flint

    e, pos = _arb_rows(e), _arb_rows(pos)
    w = [x if isinstance(x, flint.arb) else flint.arb(float(x)) for x in np.asarray(w, dtype=object).reshape(-1)]
    N, d, L, P = len(e), len(e[0]), len(pos), len(w)
    seqs = sequences(N, L) if seqs is None else np.asarray(seqs)
    K = L * N * N
    M = flint.arb_mat(K, P * d + P)
    for l, a, b in itertools.product(range(L), range(N), range(N)):
        row = l * N * N + a * N + b
        qk = (e[a][0] + pos[L - 1][0]) * (e[b][0] + pos[l][0])
        y = [e[b][k] + pos[l][k] for k in range(d)]
        for p in range(P):
            z = (w[p] * qk).exp()
            M[row, P * d + p] = z
            for k in range(d):
                M[row, p * d + k] = z * y[k]
    return _normalise_pieces(M, seqs, N, P, d)


def attention_matrix_arb_qk(e, pos, W_QK, seqs: np.ndarray | None = None) -> Any:
    """A (N^L, P d) as a flint.arb_mat for any W_QK (P, d, d): the score of piece (l, a, b) is
    x(a, L)^T W^p x(b, l) with x(b, l) = e(b) + pos_l, evaluated in ball arithmetic from the
    float64 values of e, pos and W_QK (taken as exact), at flint's working precision."""
    import flint

    e, pos, W = (np.asarray(a, dtype=np.float64) for a in (e, pos, W_QK))
    N, d = e.shape
    L, P = pos.shape[0], W.shape[0]
    if pos.shape[1] != d or W.shape[1:] != (d, d):
        raise ConfigError(f"shapes disagree: e {e.shape}, pos {pos.shape}, W_QK {W.shape}; need (N,d), (L,d), (P,d,d)")
    seqs = sequences(N, L) if seqs is None else np.asarray(seqs)
    K = L * N * N
    Wa = [flint.arb_mat(d, d, [float(v) for v in W[p].ravel()]) for p in range(P)]
    X = {(b, l): [flint.arb(float(e[b, k])) + flint.arb(float(pos[l, k])) for k in range(d)]
         for b in range(N) for l in range(L)}
    M = flint.arb_mat(K, P * d + P)
    for a in range(N):
        q = flint.arb_mat(1, d, X[a, L - 1])
        qW = [q * Wa[p] for p in range(P)]  # (1, d) each
        for l, b in itertools.product(range(L), range(N)):
            row = l * N * N + a * N + b
            y = X[b, l]
            k_col = flint.arb_mat(d, 1, y)
            for p in range(P):
                z = (qW[p] * k_col)[0, 0].exp()
                M[row, P * d + p] = z
                for k in range(d):
                    M[row, p * d + k] = z * y[k]
    return _normalise_pieces(M, seqs, N, P, d)


def _normalise_pieces(M: Any, seqs: np.ndarray, N: int, P: int, d: int) -> Any:
    """Rows of A from the piece table M (L N^2, P d + P): for each sequence t, sum its L pieces'
    numerators exp(s) y and denominators exp(s) (one product S M with the 0/1 selection S), then
    divide each head's d numerators by that head's denominator."""
    import flint

    T, K = len(seqs), M.nrows()
    S = flint.arb_mat(T, K)
    for t, cols in enumerate(_pieces(seqs, N)):
        for c in cols:
            S[t, int(c)] = S[t, int(c)] + 1
    R = S * M  # (T, P d + P): numerators, then denominators
    A = flint.arb_mat(T, P * d)
    for t in range(T):
        inv = [1 / R[t, P * d + p] for p in range(P)]
        for j in range(P * d):
            A[t, j] = R[t, j] * inv[j // d]
    return A


def _arb_rows(X: Any) -> list[list[Any]]:
    import flint

    if isinstance(X, np.ndarray) and X.dtype != object:
        return [[flint.arb(float(v)) for v in row] for row in X]
    return [[v if isinstance(v, flint.arb) else flint.arb(float(v)) for v in row] for row in X]


def permutation_classes(seqs: np.ndarray) -> list[list[int]]:
    """Rows grouped by (multiset of t_1..t_{L-1}, t_L): without positions (pos = 0) the rows
    of one group are the same function of (e, W), since A^p(t) only sees that multiset
    and the query token t_L. Groups in order of their first row."""
    groups: dict[tuple, list[int]] = defaultdict(list)
    for i, t in enumerate(np.asarray(seqs)):
        groups[(tuple(sorted(t[:-1].tolist())), int(t[-1]))].append(i)
    return sorted(groups.values(), key=lambda g: g[0])


def class_count(N: int, L: int) -> int:
    """N C(N + L - 2, L - 1): multisets of size L-1 from N tokens, times N last tokens."""
    return N * math.comb(N + L - 2, L - 1)


def duplicate_row_null_vectors(classes: list[list[int]], T: int) -> np.ndarray:
    """Integer left null vectors e_i - e_j (i the first row of its class, j another): T - #classes
    independent vectors, so rank A <= #classes."""
    V = [np.eye(1, T, g[0], dtype=np.int64)[0] - np.eye(1, T, j, dtype=np.int64)[0] for g in classes for j in g[1:]]
    return np.array(V, dtype=np.int64).reshape(-1, T)


def rank_cap(N: int, L: int, d: int, P: int, positions: bool = True) -> int:
    """The rank A cannot exceed, by structure alone (each a proof, see the errata):

    - Pd columns and N^L rows;
    - each block A^p = C^p [E; Pos] with C^p (N^L x (N+L)) the attention coefficients,
      whose token part and position part each sum to 1 per row: C^p [1_N; -1_L] = 0 and
      C^p [1_N; 0_L] = 1 (the all-ones column). So col A^p lies in span{1} + a space of
      dimension N + L - 2 that depends on p, and rank A <= 1 + P (N + L - 2); when
      d <= N + L - 2 the bound Pd is the smaller one. In one formula:
      rank A <= min(N^L, Pd if d <= N + L - 2 else 1 + P (N + L - 2));
    - without positions: rows are equal within :func:`permutation_classes` (<= N C(N+L-2,
      L-1) distinct rows), each block is C^p E with C^p 1_N = 1, so every column lies in
      span{1, C^p_n : n < N, p}: rank A <= 1 + (N - 1) P; rank A^p <= min(d, N);
    - without positions, the N constant sequences (n, ..., n) give the row [e(n) ... e(n)]
      whatever W: column (p, k) minus column (1, k) vanishes on those N rows, so the
      columns lie in span{column (1, k) : k} + {v : v = 0 on the constant rows}:
      rank A <= min(d, N) + #classes - N.
    """
    if positions:
        return min(N ** L, P * d if d <= N + L - 2 else 1 + P * (N + L - 2))
    c = class_count(N, L)
    return min(c, P * d, P * min(d, N), 1 + (N - 1) * P, min(d, N) + c - N)


def minimal_heads(N: int, L: int, d: int, positions: bool = True) -> int:
    """The smallest P whose :func:`rank_cap` reaches the full row rank N^L (with positions),
    or the class count (without): with positions P = max(ceil(N^L / d), ceil((N^L - 1) / (N + L - 2))),
    which is ceil(N^L / d) when d <= N + L - 2.

    Fewer heads cannot reach that rank (the cap is a proof): this P is necessary. That it also
    suffices, i.e. that the construction reaches its cap, is a conjecture, certified in the
    cases of the claims (invertibility.minimal-heads, theorem1-full-rank, no-positions-cap)."""
    target = N ** L if positions else class_count(N, L)
    for P in range(1, target + 2):
        if rank_cap(N, L, d, P, positions) >= target:
            return P
    raise ConfigError(f"no number of heads reaches rank {target} with N={N}, L={L}, d={d}")
