"""The attention matrix A: three builders agree, row order and classes, the structural caps."""

from __future__ import annotations

import itertools
import math

import flint
import mpmath
import numpy as np
import pytest

from attnlab.analysis.certified_rank import midpoint, working_precision
from attnlab.errors import ConfigError
from attnlab.papers.invertibility.embeddings import explicit_embeddings, primes, random_embeddings
from attnlab.papers.invertibility.matrix import (
    attention_matrix,
    attention_matrix_arb,
    attention_matrix_mp,
    class_count,
    default_w,
    duplicate_row_null_vectors,
    minimal_heads,
    permutation_classes,
    qk_matrices,
    rank_cap,
    sequences,
)


def _loop_reference(e, pos, W):
    """A by the definition, one sequence and one head at a time."""
    N, L = len(e), len(pos)
    rows = []
    for t in itertools.product(range(N), repeat=L):
        x = np.array([e[t[j]] + pos[j] for j in range(L)])
        row = []
        for Wp in W:
            s = np.array([x[-1] @ Wp @ x[j] for j in range(L)])
            a = np.exp(s - s.max()) / np.exp(s - s.max()).sum()
            row.extend(a @ x)
        rows.append(row)
    return np.array(rows)


def test_sequences_are_lexicographic_and_complete():
    s = sequences(3, 2)
    assert s.shape == (9, 2) and s[1].tolist() == [0, 1] and s[3].tolist() == [1, 0] and s[-1].tolist() == [2, 2]
    with pytest.raises(ConfigError, match="exceeds"):
        sequences(2, 15)


@pytest.mark.parametrize("N, L, d, P", [(2, 3, 2, 4), (3, 2, 3, 3)])
def test_float64_matches_the_definition_for_a_general_W(N, L, d, P):
    rng = np.random.default_rng(1)
    e, pos = random_embeddings(N, L, d, 1)
    W = rng.standard_normal((P, d, d))
    assert np.abs(attention_matrix(e, pos, W) - _loop_reference(e, pos, W)).max() < 1e-14


def test_mpmath_and_arb_agree_with_float64():
    N, L, d = 2, 3, 2
    e, pos = explicit_embeddings(N, L, d)
    w = default_w(4, 0.5)
    A = attention_matrix(e, pos, qk_matrices(w, d))
    A_mp = attention_matrix_mp(e, pos, w, dps=40)
    assert np.abs(A_mp.astype(float) - A).max() < 1e-14
    with working_precision(200):
        B = attention_matrix_arb(e, pos, w)
        rad = max(float(x.rad()) for row in B.tolist() for x in row)
        # the ball and the 40-digit value agree to 1e-35
        gap = max(abs(float((B[i, j] - flint.arb(mpmath.nstr(A_mp[i, j], 45))).mid())) for i in range(8) for j in range(8))
    assert np.abs(midpoint(B) - A).max() < 1e-14 and rad < 1e-50 and gap < 1e-35


def test_explicit_embeddings_are_in_one_two_and_from_the_primes():
    assert primes(6) == [2, 3, 5, 7, 11, 13]
    e, pos = explicit_embeddings(3, 2, 4)
    c = np.concatenate([e.ravel(), pos.ravel()])
    assert c.min() >= 1 and c.max() < 2 and len(set(c)) == 20
    assert abs(c[0] - math.exp(math.sqrt(2)) / 4) < 1e-15  # p = 2: 2^-2 e^{sqrt 2}


def test_permutation_classes_count_and_null_vectors():
    for N, L in [(2, 3), (3, 3), (2, 5), (4, 2)]:
        classes = permutation_classes(sequences(N, L))
        assert len(classes) == class_count(N, L) == N * math.comb(N + L - 2, L - 1)
        V = duplicate_row_null_vectors(classes, N ** L)
        assert V.shape == (N ** L - len(classes), N ** L) and np.linalg.matrix_rank(V) == V.shape[0]
    e, _ = random_embeddings(3, 3, 3, 0)
    A = attention_matrix(e, np.zeros((3, 3)), qk_matrices(default_w(4), 3))
    V = duplicate_row_null_vectors(permutation_classes(sequences(3, 3)), 27)
    assert np.abs(V @ A).max() < 1e-15  # rows of one class coincide (up to summation order)


def test_rank_caps_and_minimal_heads():
    assert rank_cap(2, 3, 2, 4) == 8 and rank_cap(3, 3, 5, 6) == 25 and rank_cap(2, 3, 8, 1) == 4
    assert rank_cap(2, 3, 1, 8, positions=False) == 5 and rank_cap(3, 3, 3, 8, positions=False) == 17
    assert minimal_heads(2, 4, 4) == 4 and minimal_heads(3, 3, 5) == 7 and minimal_heads(32, 2, 32) == 32
