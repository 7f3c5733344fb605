"""Shared by the claims: build a case and certify its rank, with the numbers a claim reports."""

from __future__ import annotations

from typing import Callable

from attnlab.checks import Bound
from attnlab.papers.invertibility.construction import InvertibilityParams, build_case, certify_case
from attnlab.papers.invertibility.matrix import rank_cap


def certified(N: int, L: int, d: int, P: int, *, embedding: str = "explicit", seed: int = 0, w: float = 0.1,
              positions: bool = True) -> dict:
    """Certified rank bracket of one case, beside its cap (a proven upper bound) and the float64 rank."""
    params = InvertibilityParams(N=N, L=L, d=d, P=P, embedding=embedding, seed=seed, w=w, positions=positions,
                                 certify=True)
    cert = certify_case(build_case(params))
    cap = rank_cap(N, L, d, P, positions)
    return dict(N=N, L=L, d=d, P=P, embedding=embedding, w=w, positions=positions, cap=cap, lower=cert.lower,
                upper=min(cert.upper, cap), null_upper=cert.upper, prec_bits=cert.prec, margin=cert.margin,
                log10_det=cert.log10_det, float_rank=cert.float_rank, float_ratio=cert.float_ratio,
                seconds=cert.seconds, method=cert.method, residual=cert.residual)


def label(c: dict) -> str:
    return f"(N={c['N']},L={c['L']},d={c['d']},P={c['P']})"


def count_rank(cases: list[dict], target: Callable[[dict], int]) -> tuple[int | Bound, list[str]]:
    """How many cases have certified rank == target(case), and the labels of those that do not.

    A case whose certificate brackets the target without pinning it (lower < target <= upper)
    is undecided: the count is then a :class:`attnlab.checks.Bound` [decided, decided + undecided]."""
    held, undecided, missed = 0, 0, []
    for c in cases:
        t = target(c)
        if c["lower"] == c["upper"] == t:
            held += 1
        elif c["lower"] < t <= c["upper"]:
            undecided += 1
            missed.append(label(c) + " undecided")
        else:
            missed.append(label(c))
    if undecided:
        return Bound(held, held + undecided, f"{undecided} certificate(s) did not pin the rank"), missed
    return held, missed
