"""What measuring a case of A costs, estimated before anything runs: peak memory and work (float64
LAPACK, Arb ball operations at their precision, interpreted Python operations) of
:func:`attnlab.papers.invertibility.measurement.measure_case` (:func:`case_estimate`) and
:func:`attnlab.papers.invertibility.measurement.measure_matrix` (:func:`matrix_estimate`), of their
high-precision sigma_min and certificate at the precisions a model of A's conditioning implies
(:func:`log10_condition`), of the explicit embeddings and the proof's w*, and of a sweep of 10^9
cases, summed by strata without listing them (:func:`sweep_estimates`).

The rates that turn the counts into time are :mod:`attnlab.estimates`'; the constants here were
measured on this construction.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, Sequence

from attnlab.analysis.certified_rank import DET_MAX
from attnlab.analysis.certified_rank import PRECISIONS as CERT_PRECISIONS
from attnlab.estimates import KINDS, Estimate, qr_flops, svd_flops, total
from attnlab.papers.invertibility.construction import (
    BASE_BYTES,
    InvertibilityParams,
    ball_bytes,
    certificate_plan,
    certificate_work,
)
from attnlab.papers.invertibility.construction import estimate as construction_estimate
from attnlab.papers.invertibility.matrix import rank_cap
from attnlab.papers.invertibility.spectrum import PRECISIONS as HP_PRECISIONS

EXPLICIT_OPS = 350  # one explicit coefficient 2^-m exp(sqrt(p)) in float64 (mpmath): ~350 interpreted ops, measured
BALL_OPS = 70  # the same coefficient as an Arb ball: ~70 interpreted ops, measured
HP_SOLVE_COST = 45  # the approximate solve G X = I (m x m, m right sides) at 256 bits: ~45 m^3 arb ops (measured 45-67)
SETUP = Estimate(BASE_BYTES, "flint's and mpmath's set-up", calls=600)
"""what a run pays once: flint's and mpmath's first use (the construction's count), as small calls"""
EXACT_CASES = 512  # a sweep of at most this many cases is estimated case by case
STRATUM = 1.05  # beyond, strata of the case index growing by this factor, each summed by Simpson's rule


def log10_condition(N: int, L: int, d: int, P: int, w: float) -> float:
    """A model of log10 sigma_max / sigma_min of A (w_p = w p), which sets the precisions that the
    high-precision sigma_min and the certificate reach:

        max(2.2 m^0.47 + 4 max(0, log10(0.3 / w)),  0.1 w m^1.25),   m = min(N^L, P d)

    the first term for moderate and small w (the rows; small w brings every head's softmax near
    the uniform one), the second for large w (the heads' softmaxes saturate, and sigma_min falls
    like exp(-c w)). Fitted on the explicit embeddings' sigma_min / sigma_max measured in high
    precision: invertibility.conditioning's quick preset (N^L = 4..64, w = 0.01..30) and 18 cases
    of 8 to 256 rows at w = 1..30 (e.g. 1e-27.9 at (2, 5, 5), w = 10; 1e-50 at (5, 3, 6), w = 1;
    1e-69.7 and 1e-121 at (2, 8, 8) and (4, 4, 6), w = 1). The exponent depends on the
    embeddings' values more than on the sizes: the model gives 0.7x to 3.4x of it (a least-squares
    fit, 0.075 w m^1.25, leaves 2.6x either way; 0.1 errs towards more bits), so the precisions
    come within one or two doublings."""
    m = min(N ** L, P * d)
    return max(2.2 * m ** 0.47 + 4 * max(0.0, math.log10(0.3 / w)), 0.1 * w * m ** 1.25)


def precision_cost(prec: int) -> float:
    """The cost of an Arb operation at ``prec`` bits against one at 256 bits (the rate R_arb is
    measured at 256): (prec / 256)^1.4 above, prec / 256 below (at least 1/4). Measured on the
    approximate solve of a 64 x 64 and 128 x 128 system: 0.35-0.67 at 128 bits, 1.8-2.1 at 512,
    5.8-6.3 at 1024, 44-52 at 4096."""
    return (prec / 256) ** 1.4 if prec >= 256 else max(prec / 256, 0.25)


def reached(precisions: Sequence[int], need: float, extra: int = 0) -> tuple[int, ...]:
    """The precisions tried in turn until the first >= ``need`` bits, and ``extra`` more (all of them
    when none suffices)."""
    for i, p in enumerate(precisions):
        if p >= need:
            return tuple(precisions[:i + 1 + extra])
    return tuple(precisions)


def high_precision_attempts(log10_cond: float) -> tuple[int, ...]:
    """The precisions :func:`sigma_min_high_precision` tries: the Gram inverse is right once the
    precision exceeds log2 cond(G) = 2 log2 cond(A) (+ 20 bits), and two successive values must
    agree, so it stops one doubling after that (all six, to 4096 bits, when none suffices)."""
    return reached(HP_PRECISIONS, 2 * math.log2(10) * log10_cond + 20, extra=1)


def certificate_attempts(method: str, first: int, log10_cond: float) -> tuple[int, ...]:
    """The precisions a certificate tries, starting at ``first`` bits. A ball determinant (method
    "det") doubles until it excludes 0, near 1.5 log2 cond(A) bits (the leading minor is worse
    conditioned than A); Rump's test ("inverse") needs log2 cond + 16 bits and asks for them
    after one failed attempt. Both fitted on the same cases as :func:`log10_condition`."""
    log2_cond = math.log2(10) * log10_cond
    if method == "det":
        doubled = [first << k for k in range(8) if first << k <= 8192]
        return reached(doubled if first > 64 else CERT_PRECISIONS, 1.5 * log2_cond)
    need = log2_cond + 16
    return (first,) if first >= need else (first, min(8192, 64 * math.ceil(need / 64)))


def high_precision_estimate(N: int, L: int, d: int, P: int, w: float, *, general_qk: bool = False,
                            explicit: bool = True) -> Estimate:
    """Peak memory and work of :func:`attnlab.papers.invertibility.spectrum.sigma_min_high_precision`
    on A (T = N^L rows, c = P d columns, m = min(T, c), K = L N^2 pieces) at the precisions p of
    :func:`high_precision_attempts` (``log10_condition``), b = :func:`ball_bytes` of the last, the
    float64 A held beside it (measured, the resident size it adds: 261 MiB where the balls' terms
    say 257 MiB at (N, L, d, P) = (4, 4, 6, 43), w = 1, 2048 bits, and 32 against 30 MiB at
    (2, 6, 6, 11), w = 10, 4096 bits; 1.4x and 2x the estimated time):

    memory  BASE_BYTES + 8 T c + 10 MiB                      A in float64; flint
            + b (K (c + P) + T K + T (c + P) + 2 T c + 9 m^2)  A in balls from its pieces, G, I, G^-1,
                                                               the solve's LU and the previous attempt's
                                                               A, G, I, G^-1
            + 48 m^2                                         G^-1 as Python balls, then float64
    arb     sum over p of precision_cost(p) (2 T K (c + P)  the pieces' sums,
                + 2 m^2 max(T, c) + HP_SOLVE_COST m^3)       the Gram matrix, G^-1 by an approximate solve
    python  per attempt: 2 K P (d + 1) + T c + 9 m^2        the pieces, the division, I, G^-1 to float64
                         + BALL_OPS (N + L) d                the explicit embeddings' balls (explicit)
                         + K P (general_qk)                  a 1 x d ball product per piece and head
    lapack  per attempt: 4 m^3 / 3                           lambda_max of G^-1 (eigvalsh)
    """
    T, c, K = N ** L, P * d, L * N * N
    m, n = min(T, c), max(T, c)
    attempts = high_precision_attempts(log10_condition(N, L, d, P, w))
    b = ball_bytes(attempts[-1])
    peak = (BASE_BYTES + 8 * T * c + 10 * 2 ** 20 + b * (K * (c + P) + T * K + T * (c + P) + 2 * T * c + 9 * m * m)
            + 48 * m * m)
    k = len(attempts)
    arb = sum(precision_cost(p) for p in attempts) * (2.0 * T * K * (c + P) + 2.0 * m * m * n
                                                      + HP_SOLVE_COST * float(m) ** 3)
    python = k * (2.0 * K * P * (d + 1) + T * c + 9.0 * m * m + (BALL_OPS * (N + L) * d if explicit else 0)
                  + (K * P if general_qk else 0))
    return Estimate(peak, f"sigma_min in {attempts[-1]}-bit balls: G and G^-1 ({m} x {m}) beside A ({T} x {c})",
                    arb=arb, python=python, lapack=k * 4.0 * m ** 3 / 3, calls=k, lower=("hp_max_rows",))


def certificate_estimate(N: int, L: int, d: int, P: int, w: float, method: str, first: int, r: int,
                         leading: bool, float_part: Estimate, *, explicit: bool = True) -> Estimate:
    """The certificate of an r x r minor by ``method`` from ``first`` bits, at the precisions of
    :func:`certificate_attempts`: each attempt's bytes, arb and interpreted operations as the
    construction counts them (:func:`attnlab.papers.invertibility.construction.certificate_work`),
    the arb ones times :func:`precision_cost`, + BALL_OPS (N + L) d interpreted operations for the
    explicit embeddings' balls; the memory of the last attempt on top of ``float_part``'s peak (as
    the construction adds them)."""
    attempts = certificate_attempts(method, first, log10_condition(N, L, d, P, w))
    arb = python = 0.0
    for p in attempts:
        balls, a, py = certificate_work(N, L, d, P, method, p, r, leading)
        arb += precision_cost(p) * a
        python += py + (BALL_OPS * (N + L) * d if explicit else 0)
    T, c = N ** L, P * d
    dominant = balls > float_part.peak_bytes
    what = (f"A ({T} x {c}) in {attempts[-1]}-bit balls and the {r} x {r} minor's certificate "
            f"({'Rump' if method == 'inverse' else 'determinant'})" if dominant else float_part.what)
    return Estimate(float_part.peak_bytes + balls, what, arb=arb, python=python, calls=2 * len(attempts),
                    lower=("certify_max_rows",) if dominant else ())


def case_estimate(N: int, L: int, d: int, P: int, w: float, *, embedding: str = "explicit",
                  high_precision: bool = True, certify: bool = True) -> Estimate:
    """Peak memory and work of :func:`attnlab.papers.invertibility.measurement.measure_case`, the largest
    peak of its steps and their work summed:

    - A: the construction's estimate of ``build(InvertibilityParams(N, L, d, P, embedding, w,
      certify=False))`` with its LAPACK work replaced by the one SVD of float_spectrum (+ the
      certificate's midpoint SVD when ``certify``), (1 + certify) svd_flops(N^L, P d), and
      EXPLICIT_OPS (N + L) d interpreted operations for the explicit embeddings;
    - :func:`high_precision_estimate` when ``high_precision`` and the rank cap is min(N^L, P d);
    - the certificate when ``certify`` (:func:`certificate_estimate`, with the plan
      :func:`attnlab.papers.invertibility.construction.certificate_plan` gives build: the method,
      the first precision, the minor), at every precision it is expected to try where the
      construction's estimate counts the first only: large w needs up to 4096 bits."""
    T, c = N ** L, P * d
    params = InvertibilityParams(N=N, L=L, d=d, P=P, embedding=embedding, w=w, certify=certify)
    explicit = embedding == "explicit"
    e = construction_estimate(params.replace(certify=False))
    e = dataclasses.replace(e, lapack=(1 + certify) * svd_flops(T, c),
                            python=e.python + EXPLICIT_OPS * (N + L) * d * explicit, calls=3, lower=())
    parts = [e]
    if high_precision and rank_cap(N, L, d, P) == min(T, c):
        parts.append(high_precision_estimate(N, L, d, P, w, explicit=explicit))
    if certify:
        parts.append(certificate_estimate(N, L, d, P, w, *certificate_plan(params), e, explicit=explicit))
    return total(parts)


def sweep_estimates(estimate_of: Callable[[Any], Estimate], values: Sequence[Any]) -> list[Estimate]:
    """Estimates whose :func:`attnlab.estimates.total` is that of ``estimate_of(v)`` over every v in
    ``values`` (a range may hold 10^9 heads: it is never listed). Up to EXACT_CASES values, one
    estimate per value; beyond, one per value for the first EXACT_CASES / 2, and over the rest
    strata [i, STRATUM i] of the index, each summed by Simpson's rule from its ends and middle
    (n (f(a) + 4 f(mid) + f(b)) / 6 for n values: exact where the work is a polynomial of
    degree <= 3 in the swept P or d, as it is between two precision steps); the peak is the
    largest of the values estimated, the last one included."""
    n = len(values)
    if n <= EXACT_CASES:
        return [estimate_of(v) for v in values]
    head = EXACT_CASES // 2
    out = [estimate_of(values[i]) for i in range(head)]
    a = head
    while a < n:
        b = min(n - 1, max(a + 2, int(a * STRATUM)))
        ends = [estimate_of(values[i]) for i in (a, (a + b) // 2, b)]
        count = b - a + 1
        work = {k: count * (getattr(ends[0], k) + 4 * getattr(ends[1], k) + getattr(ends[2], k)) / 6 for k in KINDS}
        top = max(ends, key=lambda e: e.peak_bytes)
        out.append(dataclasses.replace(top, **work))
        a = b + 1
    return out


def explicit_embeddings_estimate(N: int, L: int, d: int) -> Estimate:
    """The explicit embeddings in float64 (:func:`attnlab.papers.invertibility.embeddings.explicit_embeddings`):
    (N + L) d coefficients at EXPLICIT_OPS interpreted operations each, 8 (N + L) d bytes."""
    return Estimate(BASE_BYTES + 8 * (N + L) * d, f"the explicit embeddings ({N + L} x {d})",
                    python=EXPLICIT_OPS * (N + L) * d)


def expansion_estimate(N: int, L: int, d: int) -> Estimate:
    """:func:`attnlab.papers.invertibility.expansion.expansion_w` on the explicit embeddings: their
    cost (:func:`explicit_embeddings_estimate`) and 80 bisection steps over the T x L gaps
    (T = N^L), each ~6 passes over T L float64 (exp, products, the sum): traffic 80 * 48 T L bytes,
    memory 8 (N + L) d + 6 * 8 T L."""
    T = N ** L
    emb = explicit_embeddings_estimate(N, L, d)
    return dataclasses.replace(emb, peak_bytes=emb.peak_bytes + 48 * T * L, what=f"w* over {T} sequences",
                               traffic=80 * 48.0 * T * L, calls=20)


TRAINED_BYTES = 160 * 2 ** 20  # all-MiniLM-L6-v2's checkpoint read and its token table in float64: 150 MiB measured
TRAINED = Estimate(TRAINED_BYTES, "all-MiniLM-L6-v2's token and position tables read (float32 and float64)",
                   traffic=6.0 * 8 * 30522 * 384, calls=200)
"""the trained tables, read once per process (0.15 s measured)"""


def matrix_estimate(N: int, L: int, d: int, P: int, w: float, kind: str, *, high_precision: bool,
                    certify: bool) -> Estimate:
    """Peak memory and work of :func:`attnlab.papers.invertibility.measurement.measure_matrix` on the A of
    a W_QK ``kind`` ("E11" or "gaussian", T = N^L, c = P d, cap = rank_cap(N, L, d, P)):

    - A in float64: the construction's estimate (certify=false) with its LAPACK work replaced by
      float_spectrum's SVD, and with the certificate the midpoint's SVD and, where cap = T, the
      pivoted QR that picks the columns: (1 + certify) svd_flops(T, c) + qr_flops(T, c); for the
      Gaussian W_QK 48 P d^2 bytes of traffic for its draws;
    - the high-precision sigma_min (:func:`high_precision_estimate` for any W_QK) where
      ``high_precision`` and cap = min(T, c): counted although it runs only where float64 does
      not resolve sigma_min;
    - the certificate where ``certify`` (P d >= T always): of the T x T minor on the pivoted
      columns where cap = T, else of a cap x cap minor that select_minor picks, a ball
      determinant up to DET_MAX rows and Rump's test above, from certified_rank's first
      precision, 64 bits (:func:`certificate_estimate`).
    The largest peak of the three, the work summed."""
    T, c = N ** L, P * d
    cap = rank_cap(N, L, d, P)
    e = construction_estimate(InvertibilityParams(N=N, L=L, d=d, P=P, w=w, certify=False))
    lapack = (1 + certify) * svd_flops(T, c) + (qr_flops(T, c) if certify and cap == T else 0)
    e = dataclasses.replace(e, lapack=lapack,
                            traffic=48.0 * P * d * d if kind == "gaussian" else 0.0, calls=3, lower=())
    parts = [e]
    if high_precision and cap == min(T, c):
        parts.append(high_precision_estimate(N, L, d, P, w, general_qk=True, explicit=False))
    if certify and c >= T:
        r = min(cap, T)
        parts.append(certificate_estimate(N, L, d, P, w, "det" if r <= DET_MAX else "inverse", 64, r, cap == T, e,
                                          explicit=False))
    out = total(parts)
    return dataclasses.replace(out, what=f"(N, L, d, P) = ({N}, {L}, {d}, {P}), W_QK {kind}, w = {w:g}: {out.what}")


__all__ = [
    "BALL_OPS", "EXACT_CASES", "EXPLICIT_OPS", "HP_SOLVE_COST", "SETUP", "STRATUM", "TRAINED", "TRAINED_BYTES",
    "case_estimate", "certificate_attempts", "certificate_estimate", "expansion_estimate",
    "explicit_embeddings_estimate", "high_precision_attempts", "high_precision_estimate", "log10_condition",
    "matrix_estimate", "precision_cost", "reached", "sweep_estimates",
]
