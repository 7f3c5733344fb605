"""How large w must be, from a sweep over w of one (N, L, d): the w of the grid where A is best
conditioned, the range of w where float64 resolves sigma_min / sigma_max, and the conditioning at w*,
the scale from which the proof's series converges (:func:`attnlab.papers.invertibility.expansion.expansion_w`).

Each point of the sweep is a :class:`attnlab.papers.invertibility.measurement.MeasuredCase` at
W_QK^p = w p E_11; its ``log10_ratio`` is log10 sigma_min / sigma_max (high precision where computed,
else float64 where resolved, None when neither), ``resolution_log10`` float64's resolution
log10 max(N^L, Pd) eps.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Sequence

from attnlab.papers.invertibility.measurement import MeasuredCase


@dataclass(frozen=True)
class WSummary:
    """One (N, L, d) of the w sweep, summarised (log10 ratios are of sigma_min / sigma_max).

    Attributes:
        N, L, d, P: the case; P = ceil(N^L / d).
        best_w, best_log10_ratio: the w of the grid with the largest resolved log10 ratio, and that
            ratio; None when no w resolved it.
        resolved_w_min, resolved_w_max: the range of w whose ratio lies above float64's resolution
            max(N^L, Pd) eps; None when none does.
        w_star: the scale from which the proof's series converges for every sequence.
        log10_ratio_at_w_star, w_at_w_star: the resolved ratio at the first grid w >= w*, and that
            w; None when no resolved grid point reaches w*.
        full_rank_all_w: whether every certified w has certified rank N^L.
        certified: how many w were certified; count: how many were measured.
    """

    N: int
    L: int
    d: int
    P: int
    best_w: float | None
    best_log10_ratio: float | None
    resolved_w_min: float | None
    resolved_w_max: float | None
    w_star: float
    log10_ratio_at_w_star: float | None
    w_at_w_star: float | None
    full_rank_all_w: bool
    certified: int
    count: int

    def to_dict(self) -> dict[str, Any]:
        """The stored form: every field by name, in declaration order."""
        return asdict(self)


def summarise_w_sweep(rows: Sequence[MeasuredCase], w_star: float) -> WSummary:
    """The :class:`WSummary` of one (N, L, d)'s sweep over w: ``rows`` its cases in grid order (at
    least one, all of the same N, L, d and P), ``w_star`` the proof's w* for its embeddings."""
    known = [r for r in rows if r.log10_ratio is not None]
    best = max(known, key=lambda r: r.log10_ratio) if known else None
    ok = [r.w for r in known if r.log10_ratio > r.resolution_log10]
    at_exp = [r for r in known if r.w >= w_star]
    first = rows[0]
    return WSummary(N=first.N, L=first.L, d=first.d, P=first.P, best_w=None if best is None else best.w,
                    best_log10_ratio=None if best is None else best.log10_ratio,
                    resolved_w_min=min(ok) if ok else None, resolved_w_max=max(ok) if ok else None,
                    w_star=w_star, log10_ratio_at_w_star=at_exp[0].log10_ratio if at_exp else None,
                    w_at_w_star=at_exp[0].w if at_exp else None,
                    full_rank_all_w=all(r.cert_lower == r.rows for r in rows if r.cert_lower is not None),
                    certified=sum(r.cert_lower is not None for r in rows), count=len(rows))


__all__ = ["WSummary", "summarise_w_sweep"]
