"""Shared by the invertibility experiments: case strings, one measured case of A (float64
spectrum, high-precision sigma_min, certified rank) as a :class:`MeasuredCase`, and the
estimates of what they cost (:func:`case_estimate`, :func:`high_precision_estimate`,
:func:`sweep_estimates`)."""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from attnlab.analysis.certified_rank import PRECISIONS as CERT_PRECISIONS
from attnlab.deviations import Deviation
from attnlab.errors import ConfigError
from attnlab.estimates import KINDS, Estimate, svd_flops, total
from attnlab.papers.invertibility.construction import (
    BASE_BYTES,
    MAX_ROWS,
    InvertibilityParams,
    ball_bytes,
    build_case,
    certificate_plan,
    certificate_work,
    certify_case,
)
from attnlab.papers.invertibility.construction import estimate as construction_estimate
from attnlab.papers.invertibility.matrix import rank_cap
from attnlab.papers.invertibility.spectrum import PRECISIONS as HP_PRECISIONS
from attnlab.papers.invertibility.spectrum import float_spectrum, sigma_min_high_precision

# Theorem 1 states that *some* W_QK^p, e and pos make A invertible. A certified rank N^L exhibits such a
# choice whatever the choice is, so these departures from the proof's setting cannot turn a case that
# reaches N^L into one that does not; they touch only a case that misses N^L where the rank cap allows it:
# another choice (the exact transcendental values, a larger w) might reach it, so such a miss decides nothing.
FINITE_W = Deviation(
    "finite-w", "budget", "W_QK^p = w p E_11 at finite w (0.01 to 100) where the proof takes W_11 -> +oo",
    "a limit cannot be computed; full rank at a finite w exhibits the matrices Theorem 1 says exist",
    control="the certified rank at a larger w (--set w_grid=...)")
FLOAT64_VALUES = Deviation(
    "float64-values", "precision", "the embeddings' float64 values taken as exact, where the proof takes "
    "transcendental numbers with property (2)",
    "exact arithmetic on the transcendental numbers is not available; a certified rank of the rounded values "
    "exhibits an embedding (positive entries) for which A is invertible")
THEOREM1_DEVIATIONS = (FINITE_W, FLOAT64_VALUES)
"""The departures of the rank sweeps from the proof's setting; they touch a Theorem 1 row only where a case
misses N^L although its rank cap allows it (:func:`touched_by`)."""


def touched_by(missed_under_cap: bool) -> tuple[str, ...]:
    """The deviations that touch a Theorem 1 row: none when every case reaches N^L or misses it because
    the cap 1 + P (N+L-2) < N^L forbids it for every choice; both otherwise."""
    return tuple(d.id for d in THEOREM1_DEVIATIONS) if missed_under_cap else ()


CPU_ONLY = ("float64 SVDs of small dense matrices and Arb ball arithmetic (python-flint), which run on the CPU "
            "only")


def parse_cases(name: str, values, parts: int) -> tuple[tuple[int, ...], ...]:
    """Cases written "N:L:d" (parts = 3) or "N:L" (parts = 2) as integer tuples; ConfigError otherwise."""
    form = ":".join("NLd"[:parts])
    try:
        values = tuple(values)
    except TypeError:
        raise ConfigError(f"{name} must list cases written {form}, got {values!r}") from None
    out = []
    for v in values:
        try:
            case = tuple(int(x) for x in str(v).split(":"))
        except ValueError:
            raise ConfigError(f"{name}: {v!r} is not {form} with integers, e.g. {':'.join(['2', '4', '4'][:parts])}") \
                from None
        if len(case) != parts or case[0] < 1 or case[1] < 2 or (parts == 3 and case[2] < 1):
            raise ConfigError(f"{name}: {v!r} must be {form} with N >= 1, L >= 2" + (", d >= 1" if parts == 3 else ""))
        if case[0] ** case[1] > MAX_ROWS:
            raise ConfigError(f"{name}: {v!r} has N^L = {case[0] ** case[1]} rows, more than {MAX_ROWS}; lower N or L")
        out.append(case)
    if not out:
        raise ConfigError(f"{name} must list at least one case written {form}")
    return tuple(out)


def minimal_theorem_heads(N: int, L: int, d: int) -> int:
    """P = ceil(N^L / d): the fewest heads with Pd >= N^L (the theorem's hypothesis)."""
    return math.ceil(N ** L / d)


@dataclass(frozen=True)
class MeasuredCase:
    """One A (N^L x Pd) as :func:`measure_case` measures it. All logarithms are base 10 of a
    dimensionless ratio or of a singular value of A; sigma_1 = sigma_max is A's largest singular
    value in float64. A field that is None was not computed (its step was switched off, or the
    rank cap makes it moot) unless its entry says it means "not resolved".

    Attributes:
        N, L, d, P: vocabulary size, sequence length, embedding dimension and number of heads.
        w: the scale of W_QK^p = w p E_11.
        rows: T = N^L, the number of sequences (rows of A).
        cols: P d, the columns of A.
        m: min(T, P d), the largest rank A can have by its shape.
        cap: the rank cap min(T, P d, 1 + P (N + L - 2))
            (:func:`attnlab.papers.invertibility.matrix.rank_cap`).
        theorem: whether Theorem 1's hypothesis P d >= N^L holds.
        float_rank: #{sigma_i > float_tol}, the float64 rank (numpy's tolerance).
        float_tol: max(T, P d) eps sigma_1, the float64 rank's tolerance (absolute).
        log10_sigma_max: log10 sigma_1 (float64).
        float_log10_ratio: log10 sigma_m / sigma_1 from float64's SVD (round-off when not
            ``float_resolved``).
        float_resolved: whether sigma_m / sigma_1 exceeds max(T, P d) eps, so float64 resolves it.
        float_log10_ratio_cap: log10 sigma_cap / sigma_1 (float64).
        float_log10_ratio_next: log10 sigma_{cap+1} / sigma_1 (float64); None where cap = m (there is
            no sigma_{cap+1}).
        resolution_log10: log10 of float64's resolution max(T, P d) eps, relative to sigma_1.
        hp_log10_sigma_min: log10 sigma_m from the Gram inverse in Arb balls; None when not computed
            (off, or cap < m) or when no precision up to the last resolved it (then ``hp_bits`` is set).
        hp_log10_ratio: hp_log10_sigma_min - log10_sigma_max, log10 sigma_m / sigma_1 in high
            precision; None as for ``hp_log10_sigma_min``.
        hp_bits: the precision in bits of the high-precision attempt that gave (or last tried)
            sigma_min; None when not computed.
        cert_lower, cert_upper: bounds on the rank of the exact A: the size of the largest minor
            certified nonsingular in ball arithmetic, and min(the certificate's upper bound, cap);
            equal when the rank is certified. None when the certificate was not computed.
        cert_bits: the working precision in bits of the minor that certified ``cert_lower`` (0 when
            none was certified); None when not computed.
        log10_ratio: log10 sigma_m / sigma_1 as reported: high precision if computed, else float64
            where resolved; None when neither resolved it.
        seconds: wall time of the measurement.
    """

    N: int
    L: int
    d: int
    P: int
    w: float
    rows: int
    cols: int
    m: int
    cap: int
    theorem: bool
    float_rank: int
    float_tol: float
    log10_sigma_max: float
    float_log10_ratio: float
    float_resolved: bool
    float_log10_ratio_cap: float
    float_log10_ratio_next: float | None
    resolution_log10: float
    hp_log10_sigma_min: float | None
    hp_log10_ratio: float | None
    hp_bits: int | None
    cert_lower: int | None
    cert_upper: int | None
    cert_bits: int | None
    log10_ratio: float | None
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        """The stored form (results.json): every field by name, in declaration order."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


def measure_case(N: int, L: int, d: int, P: int, w: float, *, embedding: str = "explicit", seed: int = 0,
                 high_precision: bool = True, certify: bool = True) -> MeasuredCase:
    """One A: its float64 spectrum, sigma_min in high precision (when A has full rank min(N^L, Pd)
    by its cap) and its certified rank, with the tolerances behind each."""
    start = time.perf_counter()
    case = build_case(InvertibilityParams(N=N, L=L, d=d, P=P, embedding=embedding, w=w, seed=seed, certify=False))
    T, cols = N ** L, P * d
    m = min(T, cols)
    cap = rank_cap(N, L, d, P)
    fs = float_spectrum(case.A)
    s1 = math.log10(fs.sigma[0])
    hp_log10_sigma_min = hp_log10_ratio = hp_bits = None
    if high_precision and cap == m:
        hp = sigma_min_high_precision(case.arb_matrix)
        hp_bits, hp_log10_sigma_min = hp.bits, hp.log10_sigma_min
        hp_log10_ratio = None if hp.log10_sigma_min is None else hp.log10_sigma_min - s1
    cert_lower = cert_upper = cert_bits = None
    if certify:
        cert = certify_case(case)
        cert_lower, cert_upper, cert_bits = cert.lower, min(cert.upper, cap), cert.prec
    float_log10_ratio, float_resolved = fs.log10_ratio(), fs.resolved()
    log10_ratio = hp_log10_ratio if hp_log10_ratio is not None else (float_log10_ratio if float_resolved else None)
    return MeasuredCase(
        N=N, L=L, d=d, P=P, w=w, rows=T, cols=cols, m=m, cap=cap, theorem=cols >= T, float_rank=fs.rank,
        float_tol=fs.tol, log10_sigma_max=s1, float_log10_ratio=float_log10_ratio, float_resolved=float_resolved,
        float_log10_ratio_cap=fs.log10_ratio(cap), float_log10_ratio_next=fs.log10_ratio(cap + 1) if cap < m else None,
        resolution_log10=math.log10(fs.resolution), hp_log10_sigma_min=hp_log10_sigma_min,
        hp_log10_ratio=hp_log10_ratio, hp_bits=hp_bits, cert_lower=cert_lower, cert_upper=cert_upper,
        cert_bits=cert_bits, log10_ratio=log10_ratio, seconds=time.perf_counter() - start)


def ratio_text(r: MeasuredCase) -> str:
    """log10 sigma_min/sigma_max as table text: high precision if computed, else float64 or its label."""
    if r.hp_log10_ratio is not None:
        return f"{r.hp_log10_ratio:.2f} ({r.hp_bits} bits)"
    if r.float_resolved:
        return f"{r.float_log10_ratio:.2f} (float64)"
    if r.hp_bits is not None:
        return f"below float resolution (< {r.resolution_log10:.1f}); not resolved at {r.hp_bits} bits"
    return f"below float resolution (< {r.resolution_log10:.1f})"


def float_ratio_text(r: MeasuredCase) -> str:
    """float64's log10 sigma_min/sigma_max as table text, labelled as round-off where unresolved."""
    return f"{r.float_log10_ratio:.2f}" if r.float_resolved else \
        f"below float resolution ({r.float_log10_ratio:.1f} is round-off)"


def cert_text(r: MeasuredCase) -> str:
    """The certified rank as table text: the rank and its bits, its bounds, or "-" when not certified."""
    if r.cert_lower is None:
        return "-"
    if r.cert_lower == r.cert_upper:
        return f"{r.cert_lower} ({r.cert_bits} bits)"
    return f"[{r.cert_lower}, {r.cert_upper}]"


# ---- estimates -------------------------------------------------------------------------------
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
    """Peak memory and work of :func:`measure_case`, the largest peak of its steps and their work summed:

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


def sweep_estimates(estimate_of: Callable[[Any], Estimate], values: Sequence) -> list[Estimate]:
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
