"""Inputs and targets of the logic text (§1, §2.3): X = (X_C; X_P) and Y_i = q_true(X_{i-1}, X_i).

A text is a sequence of categories X_1..X_M in {1..N} (stored 0-based: ``tokens`` is an
(S, M) integer array with entries 0..N-1, S sequences). Its matrix X is (N + M) x M: column
i is the one-hot category X_i stacked on the one-hot position i,

    X = ( X_C )   X_C: N x M, X_C[a, i] = 1 iff X_i = a;   X_P = I_M  (the text's X_P, §2.3).
        ( X_P )

Targets (§1, §2.1): Y_i = q_true(X_{i-1}, X_i) for i = 2..M with q_true any real N x N
table (the text's A_2 of eq. 2.16/2.22), and Y_1 = 0 (§2.1: "Y = (0, Y_2, ..., Y_M)").
Everything is float64 and batched over sequences: X is (S, N + M, M), Y is (S, M).
"""

from __future__ import annotations

import numpy as np

from attnlab.errors import ConfigError


def encode(tokens: np.ndarray, N: int) -> np.ndarray:
    """X for every sequence: tokens (S, M) ints in 0..N-1 -> (S, N + M, M) float64."""
    tokens = np.asarray(tokens)
    if tokens.ndim != 2:
        raise ConfigError(f"tokens must be (S, M), got shape {tokens.shape}")
    if tokens.size and (tokens.min() < 0 or tokens.max() >= N):
        raise ConfigError(f"tokens must lie in 0..{N - 1} (0-based categories)")
    S, M = tokens.shape
    X = np.zeros((S, N + M, M))
    cols = np.arange(M)
    X[np.arange(S)[:, None], tokens, cols[None, :]] = 1.0
    X[:, N + cols, cols] = 1.0
    return X


def targets(tokens: np.ndarray, q_true: np.ndarray) -> np.ndarray:
    """Y (S, M): Y[:, 0] = 0 and Y[:, i] = q_true[X_{i-1}, X_i] (0-based columns)."""
    tokens = np.asarray(tokens)
    Y = np.zeros(tokens.shape)
    Y[:, 1:] = np.asarray(q_true, np.float64)[tokens[:, :-1], tokens[:, 1:]]
    return Y


def all_sequences(N: int, M: int) -> np.ndarray:
    """Every one of the N^M sequences, (N^M, M), in lexicographic order."""
    return np.stack(np.unravel_index(np.arange(N ** M), (N,) * M), axis=1)


def random_sequences(N: int, M: int, S: int, rng: np.random.Generator) -> np.ndarray:
    """S sequences with i.i.d. uniform categories (the text's §4 data), (S, M)."""
    return rng.integers(0, N, size=(S, M))


def shift_matrix(M: int) -> np.ndarray:
    """D_{-1} (eq. 2.6), M x M: D[i, j] = 1 iff i = j - 1, so X_C D has column i equal to
    column i - 1 of X_C (column 1 zero). Its transpose is the text's S of §2.2."""
    return np.eye(M, k=1)
