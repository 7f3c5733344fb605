"""Theorem 1 and its number of heads, with every rank certified by a ball determinant.

Theorem 1 (read with Pd >= N^L, and d <= N + L - 2, see notes_errors): with the
proof's W_QK^p = w_p E_11 and embeddings with properties (1)-(2), rank A = N^L once
Pd >= N^L; so the minimal P is ceil(N^L / d). With fewer heads rank A = Pd exactly
(full column rank), and when d > N + L - 2 the cap 1 + P (N + L - 2) moves the
minimal P to ceil((N^L - 1) / (N + L - 2)).
"""

from __future__ import annotations

import math

from attnlab.papers.invertibility.claims._cases import certified, label
from attnlab.papers.invertibility.matrix import minimal_heads
from attnlab.registry import Measurement, at_most, claim

# (N, L, d) with d <= N + L - 2 and N^L <= 64
FULL_GRID = ((2, 2, 2), (2, 3, 2), (2, 3, 3), (3, 2, 3), (2, 4, 4), (3, 3, 4), (2, 5, 5), (4, 3, 5), (2, 6, 6))


def _summary(cases: list[dict]) -> dict:
    return dict(cases=[{k: c[k] for k in ("N", "L", "d", "P", "lower", "upper", "prec_bits", "margin", "log10_det",
                                          "float_rank", "float_ratio")} for c in cases],
                max_prec_bits=max(c["prec_bits"] for c in cases), min_margin=min(c["margin"] for c in cases),
                min_log10_det=min(c["log10_det"] for c in cases),
                float_rank_wrong=sum(c["float_rank"] != c["upper"] for c in cases))


@claim(
    "invertibility.theorem1-full-rank",
    where="Theorem 1",
    statement="with W_QK^p = w_p E_11 and Pd >= N^L (d <= N + L - 2) the attention matrix A has rank N^L: "
              "certified for explicit and random positive embeddings",
    paper_value="A invertible for Pd >= N^k (meaning N^L)",
)
def _full_rank(seed: int) -> Measurement:
    cases = []
    for N, L, d in FULL_GRID:
        P = math.ceil(N ** L / d)
        cases.append(certified(N, L, d, P, embedding="explicit"))
        cases.append(certified(N, L, d, P, embedding="random", seed=seed))
    bad = [label(c) + c["embedding"] for c in cases if not (c["lower"] == c["upper"] == c["N"] ** c["L"])]
    s = _summary(cases)
    return at_most(len(bad), 0, (
        f"cases without certified rank N^L, of {len(cases)} ({len(FULL_GRID)} (N,L,d), P = ceil(N^L/d), explicit and "
        f"random embeddings, w_p = 0.1 p): {bad or 'none'}; ball determinants exclude 0 at <= {s['max_prec_bits']} bits, "
        f"margin >= {s['min_margin']:.3g}, |det| >= 1e{s['min_log10_det']:.0f}; float64 rank wrong in "
        f"{s['float_rank_wrong']} cases"), values={**s, "failures": bad})


@claim(
    "invertibility.minimal-heads",
    where="Theorem 1 (the bound Pd >= N^L)",
    statement="the minimal number of heads is ceil(N^L / d) when d <= N + L - 2 and ceil((N^L - 1)/(N + L - 2)) "
              "otherwise: certified rank N^L at that P and rank < N^L one head fewer",
    paper_value="Pd >= N^k heads suffice",
)
def _minimal_heads(seed: int) -> Measurement:
    grid = ((2, 4, 4), (3, 3, 4), (2, 5, 5), (2, 3, 4), (3, 3, 5), (2, 4, 6))
    rows, bad = [], []
    for N, L, d in grid:
        T = N ** L
        P = minimal_heads(N, L, d)
        formula = math.ceil(T / d) if d <= N + L - 2 else math.ceil((T - 1) / (N + L - 2))
        at = certified(N, L, d, P, embedding="random", seed=seed)
        below = certified(N, L, d, P - 1, embedding="random", seed=seed) if P > 1 else None
        ok = (P == formula and at["lower"] == T and (below is None or below["upper"] < T))
        rows.append(dict(N=N, L=L, d=d, minimal_P=P, formula=formula, ceil_T_over_d=math.ceil(T / d),
                         rank_at=at["lower"], rank_below=None if below is None else below["upper"]))
        if not ok:
            bad.append(f"(N={N},L={L},d={d})")
    return at_most(len(bad), 0, (
        f"(N,L,d) whose minimal P differs from the formula, of {len(grid)}: {bad or 'none'}; minimal P "
        + ", ".join(f"({r['N']},{r['L']},{r['d']}): {r['minimal_P']} (ceil(N^L/d) = {r['ceil_T_over_d']})"
                    for r in rows)
        + "; rank certified at P (ball determinant) and one head fewer (rank <= cap < N^L)"),
        values={"cases": rows, "failures": bad})


@claim(
    "invertibility.fewer-heads-rank-Pd",
    where="Theorem 1 (P below ceil(N^L/d))",
    statement="with fewer heads than needed, A has full column rank Pd (certified for every P below the minimum)",
)
def _fewer_heads(seed: int) -> Measurement:
    cases = [certified(N, L, d, P, embedding="explicit")
             for N, L, d in ((2, 4, 4), (3, 3, 4), (2, 5, 5)) for P in range(1, math.ceil(N ** L / d))]
    bad = [label(c) for c in cases if not (c["lower"] == c["upper"] == c["P"] * c["d"])]
    s = _summary(cases)
    return at_most(len(bad), 0, (
        f"cases without certified rank Pd, of {len(cases)} ((N,L,d) = (2,4,4), (3,3,4), (2,5,5), P = 1 .. "
        f"ceil(N^L/d) - 1): {bad or 'none'}; <= {s['max_prec_bits']} bits, margin >= {s['min_margin']:.3g}"),
        values={**s, "failures": bad})
