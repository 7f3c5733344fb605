"""Embeddings with the two properties the proof of Theorem 1 asks for, made explicit.

The proof needs e (N x d) and pos (L x d) with
  (1) strictly positive coefficients, and
  (2) no nonzero polynomial with integer coefficients vanishing at the (N + L) d
      coefficients (the note restricts to degree d; any degree is what is used),
and says only that "such embeddings exist using transcendental numbers". An explicit
choice: number the coefficients i = 0 .. (N + L) d - 1 (e row by row, then pos row by
row), let p_i be the (i+1)-th prime and

    c_i = 2^(-m_i) exp(sqrt(p_i)),   m_i = floor(sqrt(p_i) / ln 2)   (so c_i in [1, 2)).

Proof of (1): exp > 0. Proof of (2):
  - sqrt(p_0), ..., sqrt(p_n) are linearly independent over Q (Besicovitch 1940: the
    square roots of distinct primes, indeed of distinct square-free integers > 1,
    are linearly independent over Q); they are algebraic.
  - Lindemann-Weierstrass (Baker's form): if a_0, ..., a_n are algebraic and linearly
    independent over Q, then exp(a_0), ..., exp(a_n) are algebraically independent over
    Q. So no nonzero Q[X] polynomial vanishes at (exp(sqrt(p_i)))_i.
  - If a nonzero F in Z[X] vanished at (c_i)_i, then G(X) = F((2^(-m_i) X_i)_i) is a
    nonzero polynomial with rational coefficients (the substitution X_i -> 2^(-m_i) X_i
    is invertible) vanishing at (exp(sqrt(p_i)))_i: a contradiction.
The scaling by 2^(-m_i) keeps the values in [1, 2); exp(sqrt(p)) alone grows like
e^{sqrt(p)} (about 1e41 at the 1100-th prime) and would saturate every softmax.

:func:`random_embeddings` draws U(0.5, 1.5) coefficients: property (2) holds almost
surely for real draws (a nonzero polynomial vanishes on a null set, and there are
countably many), but a float64 draw is a rational number, for which (2) fails (e.g.
2^52 c - k = 0). The certified ranks of such a matrix are ranks for those exact float64
values; they do not lean on (2).

:func:`embeddings_of_kind` names the kinds the experiments compare: these two and the trained
tables of all-MiniLM-L6-v2 (:mod:`attnlab.papers.invertibility.trained`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from attnlab.errors import ConfigError
from attnlab.papers.invertibility.trained import minilm_embeddings

KINDS = ("explicit", "random", "trained")


def primes(n: int) -> list[int]:
    """The first n primes."""
    if n <= 0:
        return []
    limit = max(16, int(n * (math.log(n + 1) + math.log(math.log(n + 2)) + 2)))
    sieve = np.ones(limit + 1, dtype=bool)
    sieve[:2] = False
    for k in range(2, int(limit ** 0.5) + 1):
        if sieve[k]:
            sieve[k * k::k] = False
    found = np.flatnonzero(sieve)
    assert len(found) >= n, "sieve bound too small"
    return [int(p) for p in found[:n]]


def explicit_exponents(N: int, L: int, d: int) -> tuple[list[int], list[int]]:
    """(p_i, m_i) for i = 0 .. (N + L) d - 1: c_i = 2^(-m_i) exp(sqrt(p_i))."""
    ps = primes((N + L) * d)
    return ps, [int(math.floor(math.sqrt(p) / math.log(2))) for p in ps]


def explicit_embeddings(N: int, L: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    """(e (N, d), pos (L, d)): c_i = 2^(-m_i) exp(sqrt(p_i)) rounded to float64 (via mpmath at 30 digits)."""
    import mpmath

    ps, ms = explicit_exponents(N, L, d)
    with mpmath.workdps(30):
        c = np.array([float(mpmath.ldexp(mpmath.exp(mpmath.sqrt(p)), -m)) for p, m in zip(ps, ms)])
    return c[:N * d].reshape(N, d), c[N * d:].reshape(L, d)


def explicit_balls(N: int, L: int, d: int) -> tuple[list[list[Any]], list[list[Any]]]:
    """The same coefficients as Arb balls at flint's working precision: enclosures of the
    exact transcendental values (not of their float64 roundings)."""
    import flint

    ps, ms = explicit_exponents(N, L, d)
    c = [flint.arb(p).sqrt().exp() * flint.arb(2) ** (-m) for p, m in zip(ps, ms)]
    e = [c[n * d:(n + 1) * d] for n in range(N)]
    pos = [c[N * d + l * d:N * d + (l + 1) * d] for l in range(L)]
    return e, pos


def random_embeddings(N: int, L: int, d: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(e (N, d), pos (L, d)) drawn U(0.5, 1.5) from ``seed``: strictly positive."""
    rng = np.random.default_rng(seed)
    return rng.uniform(0.5, 1.5, size=(N, d)), rng.uniform(0.5, 1.5, size=(L, d))


def embeddings_of_kind(kind: str, N: int, L: int, d: int, seed: int,
                       restrict: str = "projection") -> tuple[np.ndarray, np.ndarray]:
    """(e (N, d), pos (L, d)) of one of :data:`KINDS`: the explicit embeddings (their float64 values),
    U(0.5, 1.5) draws from ``seed``, or all-MiniLM-L6-v2's tables restricted to d coordinates by
    ``restrict`` (:func:`attnlab.papers.invertibility.trained.minilm_embeddings`).

    Raises:
        ConfigError: ``kind`` is not one of :data:`KINDS`.
    """
    if kind == "explicit":
        return explicit_embeddings(N, L, d)
    if kind == "random":
        return random_embeddings(N, L, d, seed)
    if kind == "trained":
        return minilm_embeddings(N, L, d, restrict)
    raise ConfigError(f"embedding must be one of {', '.join(KINDS)}, got {kind!r}")
