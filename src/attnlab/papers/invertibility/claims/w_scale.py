"""How large w must be: not large at all. The proof lets W_11 = w -> oo to expand the softmax
("taking W_11 -> +oo", ledger invertibility.proof-w-limit); that the rank is already full for
small distinct w_p, and that large w only worsens the conditioning, is attnlab's own statement
(role own: the text proves the limit, it states nothing at a given w)."""

from __future__ import annotations

import math

from attnlab.checks import Check, equals
from attnlab.papers.invertibility.claims._cases import certified, count_rank
from attnlab.registry import claim

SCALES = (0.01, 0.1, 1.0, 10.0, 100.0)
GRID = ((2, 4, 4), (3, 3, 4))


@claim(
    "invertibility.any-w",
    where="Theorem 1's proof ('taking W_11 -> +oo')",
    statement="attnlab's statement: the proof's W_QK^p = w_p E_11 give rank A = N^L at every scale tried, not only "
              "as w -> oo: w_p = w p at every w from 0.01 to 100 (certified); |det| of the N^L x N^L minor shrinks "
              "at both ends",
)
def _any_w(seed: int) -> Check:
    cases = [certified(N, L, d, math.ceil(N ** L / d), embedding="explicit", w=w) for N, L, d in GRID for w in SCALES]
    held, bad = count_rank(cases, lambda c: c.N ** c.L)
    return equals(held, len(cases), (
        f"{len(cases)} (case, w); not at N^L: {bad or 'none'}; log10 |det| by w = "
        + "; ".join(f"(N={N},L={L},d={d}): " + ", ".join(f"{c.w:g}: {c.log10_det:.0f}" for c in cases
                                                         if (c.N, c.L, c.d) == (N, L, d))
                    for N, L, d in GRID)),
        values={"cases": [c.select(("N", "L", "d", "P", "w", "lower", "prec_bits", "margin", "log10_det",
                                            "float_ratio")) for c in cases], "failures": bad},
        quantity="(case, w) with certified rank N^L",
        role="own")  # the text proves the limit w -> oo; full rank at each w is attnlab's statement
