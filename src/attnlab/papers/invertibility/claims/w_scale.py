"""How large w must be: not large at all. The proof lets W_11 = w -> oo to expand the softmax;
the rank is already full for small distinct w_p, and large w only worsens the conditioning."""

from __future__ import annotations

import math

from attnlab.papers.invertibility.claims._cases import certified
from attnlab.registry import Measurement, at_most, claim

SCALES = (0.01, 0.1, 1.0, 10.0, 100.0)
GRID = ((2, 4, 4), (3, 3, 4))


@claim(
    "invertibility.any-w",
    where="Theorem 1's proof ('taking W_11 -> +oo')",
    statement="rank A = N^L for w_p = w p at every scale w from 0.01 to 100 (certified); |det| of the "
              "N^L x N^L minor shrinks at both ends",
)
def _any_w(seed: int) -> Measurement:
    cases = [certified(N, L, d, math.ceil(N ** L / d), embedding="explicit", w=w) for N, L, d in GRID for w in SCALES]
    bad = [f"(N={c['N']},L={c['L']},w={c['w']:g})" for c in cases if not c["lower"] == c["upper"] == c["N"] ** c["L"]]
    return at_most(len(bad), 0, (
        f"(case, w) without certified rank N^L, of {len(cases)}: {bad or 'none'}; log10 |det| by w = "
        + "; ".join(f"(N={N},L={L},d={d}): " + ", ".join(f"{c['w']:g}: {c['log10_det']:.0f}" for c in cases
                                                         if (c['N'], c['L'], c['d']) == (N, L, d))
                    for N, L, d in GRID)),
        values={"cases": [{k: c[k] for k in ("N", "L", "d", "P", "w", "lower", "prec_bits", "margin", "log10_det",
                                             "float_ratio")} for c in cases], "failures": bad})
