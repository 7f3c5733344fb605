"""Theorem 1 beyond the small grid: rank A = N^L certified for 128 to 343 sequences.

With d = N + L - 2 (the largest d at which the proved cap 1 + P (N + L - 2) never stops
P = ceil(N^L / d) heads below N^L; that these heads reach N^L is what is certified here) and
P = ceil(N^L / d), the condition number of the N^L x N^L minor grows like 2^(0.2..0.5 N^L)
(log2 cond ~ 92 at 128 rows, ~138 at 343 by Rump's residual; benchmarks/results/invertibility_certificate.md),
so float64 ranks are meaningless and the certificate needs 128-256 bits. Up to 256 rows
the proof is a ball determinant that excludes 0; above, Rump's test ||I - B R||_1 < 1
(:mod:`attnlab.analysis.certified_rank`).
"""

from __future__ import annotations

from attnlab.checks import Check

import math

from attnlab.checks import equals
from attnlab.papers.invertibility.anchors import THEOREM_1
from attnlab.papers.invertibility.claims._cases import certified, count_rank, label
from attnlab.registry import claim

# (N, L) with N^L = 128, 216, 243, 343; d = N + L - 2
GRID = ((2, 7), (6, 3), (3, 5), (7, 3))


@claim(
    "invertibility.theorem1-mid-size",
    where="Theorem 1",
    statement="rank A = N^L for 128 to 343 sequences (d = N + L - 2, P = ceil(N^L / d), explicit embeddings): "
              "certified, while float64 sees a lower rank",
    paper_value="A invertible for Pd >= N^k (read N^L)",
    anchor=THEOREM_1,
    falsifier="a case (Pd >= N^L, 1 + P (N+L-2) >= N^L) whose certified rank is below N^L",
)
def _mid_size(seed: int) -> Check:
    cases = []
    for N, L in GRID:
        d = N + L - 2
        cases.append(certified(N, L, d, math.ceil(N ** L / d), embedding="explicit"))
    held, bad = count_rank(cases, lambda c: c.N ** c.L)
    rows = [c.select(("N", "L", "d", "P", "lower", "upper", "method", "prec_bits", "margin", "residual",
                      "float_rank", "float_ratio", "seconds")) for c in cases]
    for r in rows:
        r["residual"] = None if math.isnan(r["residual"]) else r["residual"]
    return equals(held, len(cases), (
        f"{len(cases)} cases; not at N^L: {bad or 'none'}; "
        + "; ".join(f"{label(c)}: {c.method} at {c.prec_bits} bits, margin {c.margin:.3g}, float64 rank "
                    f"{c.float_rank}" for c in cases)),
        values={"cases": rows, "failures": bad,
                "float_rank_wrong": sum(c.float_rank != c.N ** c.L for c in cases)},
        quantity="cases with certified rank N^L")
