"""One attention matrix A (N^L x Pd) measured: its float64 spectrum, sigma_min in high precision where
float64 cannot see it, and its certified rank, with the tolerance behind each number.

Two ways in:

- :func:`measure_case`: A of the construction (:func:`attnlab.papers.invertibility.construction.build_case`,
  W_QK^p = w p E_11), its rank certified for the exact embeddings
  (:func:`attnlab.papers.invertibility.construction.certify_case`), as a :class:`MeasuredCase`;
- :func:`measure_matrix`: A of given float64 e, pos and any W_QK (P, d, d), the float64 values taken
  as exact, as a :class:`MatrixSpectrum`.

sigma_1 = sigma_max is A's largest singular value in float64; m = min(N^L, Pd); the float64 rank is
#{sigma_i > max(N^L, Pd) eps sigma_1} and float64 resolves sigma_m / sigma_1 only above
max(N^L, Pd) eps (:mod:`attnlab.papers.invertibility.spectrum`).
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import scipy.linalg

from attnlab.analysis.certified_rank import certified_rank
from attnlab.papers.invertibility.cases import CaseKey
from attnlab.papers.invertibility.construction import InvertibilityParams, build_case, certify_case
from attnlab.papers.invertibility.matrix import attention_matrix, attention_matrix_arb_qk, rank_cap
from attnlab.papers.invertibility.spectrum import float_spectrum, sigma_min_high_precision


@dataclass(frozen=True)
class MeasuredCase(CaseKey):
    """One A (N^L x Pd) as :func:`measure_case` measures it, after its :class:`CaseKey` (N, L, d, P, w).
    All logarithms are base 10 of a dimensionless ratio or of a singular value of A. A field that is
    None was not computed (its step was switched off, or the rank cap makes it moot) unless its entry
    says it means "not resolved".

    Attributes:
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
        """The stored form (results.json): every field by name, in declaration order (the key's first)."""
        return asdict(self)


def measure_case(N: int, L: int, d: int, P: int, w: float, *, embedding: str = "explicit", seed: int = 0,
                 high_precision: bool = True, certify: bool = True) -> MeasuredCase:
    """One A of the construction (``embedding`` "explicit" or "random" from ``seed``, W_QK^p = w p E_11):
    its float64 spectrum, sigma_min in high precision when ``high_precision`` and A has full rank
    min(N^L, Pd) by its cap, and its certified rank when ``certify``, with the tolerances behind each."""
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


@dataclass(frozen=True)
class MatrixSpectrum:
    """One A (N^L x Pd) as :func:`measure_matrix` measures it; None means "not computed" unless the
    entry says otherwise.

    Attributes:
        rows: T = N^L; cols: P d.
        cap: the rank cap min(T, P d, 1 + P (N + L - 2)) (:func:`attnlab.papers.invertibility.matrix.rank_cap`).
        float_rank: #{sigma_i > float_tol}, the float64 rank.
        float_tol: max(T, P d) eps sigma_1 (absolute).
        log10_sigma_max: log10 sigma_1 (float64).
        float_log10_ratio: log10 sigma_m / sigma_1 (m = min(T, P d)) from float64's SVD (round-off
            when not ``float_resolved``).
        float_resolved: whether sigma_m / sigma_1 exceeds max(T, P d) eps.
        resolution_log10: log10 max(T, P d) eps, float64's resolution relative to sigma_1.
        hp_log10_ratio: log10 sigma_m / sigma_1 from the Gram inverse in Arb balls; None when not
            computed (off, float64 resolved it, or cap < m) or not resolved at ``hp_bits``.
        hp_bits: the precision in bits of the high-precision attempt; None when not computed.
        cert_lower: the certified lower bound on the rank (the float64 e, pos and W_QK taken as
            exact); None when not certified (off, or P d < T).
        cert_bits: the working precision in bits of the certifying minor (0: none certified); None
            when not certified.
        log10_ratio: float64's ratio where resolved, else the high-precision one (None when neither).
        seconds: wall time of the measurement.
    """

    rows: int
    cols: int
    cap: int
    float_rank: int
    float_tol: float
    log10_sigma_max: float
    float_log10_ratio: float
    float_resolved: bool
    resolution_log10: float
    hp_log10_ratio: float | None
    hp_bits: int | None
    cert_lower: int | None
    cert_bits: int | None
    log10_ratio: float | None
    seconds: float


def measure_matrix(e: np.ndarray, pos: np.ndarray, W: np.ndarray, *, high_precision: bool,
                   certify: bool) -> MatrixSpectrum:
    """Rank and conditioning of A built from e (N, d), pos (L, d) and W_QK (P, d, d), their float64
    values taken as exact: float64's spectrum; sigma_min in high precision where ``high_precision``,
    float64 does not resolve it and the cap allows full rank; and where ``certify`` and P d >= N^L the
    certified rank (:func:`attnlab.analysis.certified_rank.certified_rank`) of the N^L x N^L minor on
    the columns a pivoted QR of the float64 A picks, or of a minor of the cap's size where the cap
    1 + P (N + L - 2) is below N^L."""
    start = time.perf_counter()
    N, d = e.shape
    L, P = pos.shape[0], W.shape[0]
    T = N ** L
    A = attention_matrix(e, pos, W)
    fs = float_spectrum(A)
    cap = rank_cap(N, L, d, P)
    s1 = math.log10(fs.sigma[0])
    hp_log10_ratio = hp_bits = cert_lower = cert_bits = None
    build = lambda prec: attention_matrix_arb_qk(e, pos, W)  # noqa: E731 (flint's precision is set by the caller)
    if high_precision and not fs.resolved() and cap == min(T, P * d):
        hp = sigma_min_high_precision(build)
        hp_bits, hp_log10_ratio = hp.bits, None if hp.log10_sigma_min is None else hp.log10_sigma_min - s1
    if certify and P * d >= T and cap < T:  # no choice reaches N^L: certify the cap on a minor of its size
        cert = certified_rank(build, size=cap)
        cert_lower, cert_bits = cert.lower, cert.prec
    elif certify and P * d >= T:
        piv = scipy.linalg.qr(A, mode="r", pivoting=True)[1]
        cert = certified_rank(build, rows=range(T), cols=sorted(int(j) for j in piv[:T]))
        cert_lower, cert_bits = cert.lower, cert.prec
    float_log10_ratio = fs.log10_ratio()
    return MatrixSpectrum(rows=T, cols=P * d, cap=cap, float_rank=fs.rank, float_tol=fs.tol, log10_sigma_max=s1,
                          float_log10_ratio=float_log10_ratio, float_resolved=fs.resolved(),
                          resolution_log10=math.log10(fs.resolution), hp_log10_ratio=hp_log10_ratio, hp_bits=hp_bits,
                          cert_lower=cert_lower, cert_bits=cert_bits,
                          log10_ratio=float_log10_ratio if fs.resolved() else hp_log10_ratio,
                          seconds=time.perf_counter() - start)


__all__ = ["MatrixSpectrum", "MeasuredCase", "measure_case", "measure_matrix"]
