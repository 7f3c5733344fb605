"""Shared by the claims: build a case and certify its rank, with the numbers a claim reports."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from attnlab.checks import Bound
from attnlab.papers.invertibility.construction import InvertibilityParams, build_case, certify_case
from attnlab.papers.invertibility.matrix import rank_cap
from attnlab.stored import Stored


@dataclass(frozen=True)
class CertifiedCase(Stored):
    """One case (N, L, d, P) of A (N^L x Pd) with its certified rank bracket lower <= rank A <= upper."""

    N: int  # tokens
    L: int  # sequence length
    d: int  # embedding width
    P: int  # heads
    embedding: str  # "explicit" or "random" (positive) embeddings
    w: float  # the scale of W_QK^p = w p E_11
    positions: bool  # whether positional embeddings are added
    cap: int  # the proven upper bound rank_cap(N, L, d, P, positions)
    lower: int  # certified lower bound on rank A (ball determinant or Rump's test)
    upper: int  # min(the certificate's upper bound, cap)
    null_upper: int  # the certificate's own upper bound (N^L minus the exhibited null vectors)
    prec_bits: int  # working precision of the certificate in bits
    margin: float  # 1 - D_rad / |D_mid| of the determinant ball
    log10_det: float  # lower bound on log10 |det| of the certified minor
    float_rank: int  # numpy's float64 rank of A
    float_ratio: float  # sigma_min / sigma_max of A in float64
    seconds: float  # wall time of the certificate
    method: str  # "det" (ball determinant) or "inverse" (Rump's test)
    residual: float  # Rump's proved bound on ||I - B R||_1 (nan for "det")

    def select(self, keys: tuple[str, ...]) -> dict:
        """The fields named in ``keys``, in that order (a claim's stored row)."""
        return {k: getattr(self, k) for k in keys}


def certified(N: int, L: int, d: int, P: int, *, embedding: str = "explicit", seed: int = 0, w: float = 0.1,
              positions: bool = True) -> CertifiedCase:
    """Certified rank bracket of one case, beside its cap (a proven upper bound) and the float64 rank."""
    params = InvertibilityParams(N=N, L=L, d=d, P=P, embedding=embedding, seed=seed, w=w, positions=positions,
                                 certify=True)
    cert = certify_case(build_case(params))
    cap = rank_cap(N, L, d, P, positions)
    return CertifiedCase(N=N, L=L, d=d, P=P, embedding=embedding, w=w, positions=positions, cap=cap, lower=cert.lower,
                         upper=min(cert.upper, cap), null_upper=cert.upper, prec_bits=cert.prec, margin=cert.margin,
                         log10_det=cert.log10_det, float_rank=cert.float_rank, float_ratio=cert.float_ratio,
                         seconds=cert.seconds, method=cert.method, residual=cert.residual)


def label(c: CertifiedCase) -> str:
    return f"(N={c.N},L={c.L},d={c.d},P={c.P})"


def count_rank(cases: list[CertifiedCase], target: Callable[[CertifiedCase], int]) -> tuple[int | Bound, list[str]]:
    """How many cases have certified rank == target(case), and the labels of those that do not.

    A case whose certificate brackets the target without pinning it (lower < target <= upper)
    is undecided: the count is then a :class:`attnlab.checks.Bound` [decided, decided + undecided]."""
    held, undecided, missed = 0, 0, []
    for c in cases:
        t = target(c)
        if c.lower == c.upper == t:
            held += 1
        elif c.lower < t <= c.upper:
            undecided += 1
            missed.append(label(c) + " undecided")
        else:
            missed.append(label(c))
    if undecided:
        return Bound(held, held + undecided, f"{undecided} certificate(s) did not pin the rank"), missed
    return held, missed
