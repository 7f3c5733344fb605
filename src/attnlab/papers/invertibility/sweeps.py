"""The four sweeps of invertibility.conditioning: which cases (N, L, d, P, w) of A it measures, in
which order, what that costs, and the measured cases.

With T = N^L and P = ceil(T / d) (Theorem 1's hypothesis Pd >= T at its fewest heads,
:func:`attnlab.papers.invertibility.cases.minimal_theorem_heads`):

    w sweep:    (N, L, d) in w_cases, w in w_values
    size sweep: w in size_w, (N, L, d) in size_cases
    P sweep:    (N, L, d) in head_cases, P = 1 .. ceil(T / d) + extra_heads, w = head_w
    d sweep:    (N, L) in dim_cases, d = 1 .. N + L - 2 + dims_beyond, w = head_w

Each case is measured by :func:`attnlab.papers.invertibility.measurement.measure_case` (high-precision
sigma_min where T <= hp_max_rows, the certified rank where T <= certify_max_rows), and per (N, L, d)
of w_cases the proof's w* (:func:`attnlab.papers.invertibility.expansion.case_expansion`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from attnlab.estimates import Estimate, total
from attnlab.papers.invertibility.cases import minimal_theorem_heads
from attnlab.papers.invertibility.cost import SETUP, case_estimate, expansion_estimate, sweep_estimates
from attnlab.papers.invertibility.expansion import CaseExpansion, case_expansion
from attnlab.papers.invertibility.measurement import MeasuredCase, measure_case
from attnlab.papers.invertibility.w_sweep import WSummary

SWEEPS = ("w", "size", "heads", "dims")
LOWER = {"w": ("w_cases",), "size": ("size_cases",), "heads": ("extra_heads", "head_cases"),
         "dims": ("dims_beyond", "dim_cases")}
"""what to lower when the largest case lies in a sweep (the config's fields)"""

CaseOf = Callable[[Any], tuple[int, int, int, int, float]]
"""a sweep's case of one swept value v: (N, L, d, P, w)"""


@dataclass(frozen=True)
class SweepPlan:
    """Every case the four sweeps measure, and how (module docstring): the config's fields, with the
    cases parsed to integer tuples ((N, L, d), or (N, L) for dim_cases)."""

    w_cases: tuple[tuple[int, ...], ...]
    w_values: tuple[float, ...]
    size_cases: tuple[tuple[int, ...], ...]
    size_w: tuple[float, ...]
    head_cases: tuple[tuple[int, ...], ...]
    extra_heads: int
    dim_cases: tuple[tuple[int, ...], ...]
    dims_beyond: int
    head_w: float
    hp_max_rows: int
    certify_max_rows: int
    embedding: str
    seed: int

    def groups(self) -> list[tuple[str, CaseOf, Sequence[Any]]]:
        """The cases in the order :func:`measure_sweeps` runs them, as (sweep, case, values): the
        group's cases are case(v) = (N, L, d, P, w) for v in values (ranges, so that 10^9 heads are
        counted, by :meth:`estimate`, without being listed)."""
        out: list[tuple[str, CaseOf, Sequence[Any]]] = []
        for N, L, d in self.w_cases:
            out.append(("w", lambda w, N=N, L=L, d=d: (N, L, d, minimal_theorem_heads(N, L, d), w), self.w_values))
        for w in self.size_w:
            out.append(("size", lambda c, w=w: (*c, minimal_theorem_heads(*c), w), self.size_cases))
        for N, L, d in self.head_cases:
            out.append(("heads", lambda P, N=N, L=L, d=d: (N, L, d, P, self.head_w),
                        range(1, minimal_theorem_heads(N, L, d) + self.extra_heads + 1)))
        for N, L in self.dim_cases:
            out.append(("dims", lambda d, N=N, L=L: (N, L, d, minimal_theorem_heads(N, L, d), self.head_w),
                        range(1, N + L - 2 + self.dims_beyond + 1)))
        return out

    def estimate(self) -> Estimate:
        """Every case of :meth:`groups` as :func:`measure_case` measures it, SETUP once and w* per w case:

            peak = max over the cases of case_estimate(N, L, d, P, w)
            work = sum over the cases of their work + sum over w_cases of expansion_estimate(N, L, d)

        case_estimate (:func:`attnlab.papers.invertibility.cost.case_estimate`): A
        (T = N^L rows, c = P d columns) in float64 as the construction estimates it, BASE_BYTES +
        8 (T L d + P d^2 + max(4 T c, T c + 3 P T L)) bytes and one SVD; its high-precision
        sigma_min where T <= hp_max_rows and its certificate where T <= certify_max_rows, in
        balls at the precisions that cost.log10_condition implies.

        A sweep of more than EXACT_CASES cases is summed by strata (:func:`sweep_estimates`), so
        extra_heads = 10^9 is estimated in a fraction of a second. The memory grows with T c and
        P d^2 (W_QK): lower names the fields of the sweep that holds the largest case, then
        hp_max_rows or certify_max_rows where that case's balls hold its peak."""
        parts = [SETUP]
        for sweep, case, values in self.groups():
            def one(v: Any, case: CaseOf = case, sweep: str = sweep) -> Estimate:
                N, L, d, P, w = case(v)
                T = N ** L
                e = case_estimate(N, L, d, P, w, embedding=self.embedding, high_precision=T <= self.hp_max_rows,
                                  certify=T <= self.certify_max_rows)
                return dataclasses.replace(e, what=f"{sweep} sweep, (N, L, d, P) = ({N}, {L}, {d}, {P}), w = {w:g}: "
                                                   f"{e.what}", lower=LOWER[sweep] + e.lower)
            parts += sweep_estimates(one, values)
        parts += [dataclasses.replace(expansion_estimate(N, L, d), lower=LOWER["w"]) for N, L, d in self.w_cases]
        return total(parts)


@dataclass(frozen=True)
class SweptCase(MeasuredCase):
    """A :class:`MeasuredCase` and the sweep that measured it.

    Attributes:
        sweep: "w", "size", "heads" or "dims" (:data:`SWEEPS`).
    """

    sweep: str


@dataclass(frozen=True)
class SweepData:
    """What :func:`measure_sweeps` measures: the cases of each sweep in :meth:`SweepPlan.groups`' order,
    and per (N, L, d) of w_cases the scale w* from which the proof's series converges.

    Attributes:
        w, size, heads, dims: the sweeps' cases.
        expansion: per w case, w* and the rest of :func:`attnlab.papers.invertibility.expansion.expansion_w`
            (:func:`attnlab.papers.invertibility.expansion.case_expansion`).
    """

    w: list[SweptCase]
    size: list[SweptCase]
    heads: list[SweptCase]
    dims: list[SweptCase]
    expansion: list[CaseExpansion]

    def to_dict(self, w_summary: Sequence[WSummary]) -> dict[str, Any]:
        """The stored form (results.json "data"), with the w sweep's summaries as "w_summary"."""
        rows = {k: [r.to_dict() for r in getattr(self, k)] for k in SWEEPS}
        return {**rows, "expansion": [x.to_dict() for x in self.expansion],
                "w_summary": [x.to_dict() for x in w_summary]}


def measure_sweeps(plan: SweepPlan, log: Callable[[dict[str, Any]], None] | None = None) -> SweepData:
    """Every case of ``plan.groups()`` by :func:`measure_case`, and w* per w case; ``log`` receives one
    line per case (sweep, N, L, d, P, w, float_rank, log10_ratio)."""
    def one(N: int, L: int, d: int, P: int, w: float, sweep: str) -> SweptCase:
        T = N ** L
        r = measure_case(N, L, d, P, w, embedding=plan.embedding, seed=plan.seed,
                         high_precision=T <= plan.hp_max_rows, certify=T <= plan.certify_max_rows)
        if log is not None:
            log({"sweep": sweep, "N": N, "L": L, "d": d, "P": P, "w": w, "float_rank": r.float_rank,
                 "log10_ratio": r.log10_ratio})
        return SweptCase(**r.to_dict(), sweep=sweep)

    rows: dict[str, list[SweptCase]] = {k: [] for k in SWEEPS}
    for sweep, case, values in plan.groups():
        rows[sweep] += [one(*case(v), sweep) for v in values]
    expansion = [case_expansion(N, L, d, plan.embedding, plan.seed) for N, L, d in plan.w_cases]
    return SweepData(**rows, expansion=expansion)


__all__ = ["LOWER", "SWEEPS", "SweepData", "SweepPlan", "SweptCase", "measure_sweeps"]
