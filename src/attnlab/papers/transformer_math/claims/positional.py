"""Claim about the sinusoidal positional encoding (math-behind-transformers §1.2.1, eq. 1)."""

from __future__ import annotations

import torch

from attnlab.nn.positional import shift_matrix, sinusoidal_encoding
from attnlab.checks import Check, at_most
from attnlab.registry import claim


@claim(
    "transformer-math.pe-shift-linear",
    where="§1.2.1, eq. (1)",
    statement="for every shift s, PE(t+s) = M_s PE(t) with one fixed linear map M_s for all positions t",
    paper_value="exact identity (M_s block-diagonal 2x2 rotations)",
    anchor="transformer-math.pe-shift-linear",
    falsifier="max |PE(t+s) - M_s PE(t)| above 1e-9 for a shift s: no fixed linear map takes position t to t + s",
)
def _pe_shift_linear(seed: int) -> Check:
    # A few fixed shifts and a few drawn from the seed.
    g = torch.Generator().manual_seed(seed)
    drawn = torch.randint(2, 1000, (3,), generator=g).tolist()
    shifts = [1, 7, 64, 511] + drawn
    T = 512
    worst, where, worst_at = 0.0, "", {}
    for d in (16, 512):
        P = sinusoidal_encoding(T + max(shifts), d, dtype=torch.float64)  # (T + s_max, d)
        for s in shifts:
            M = shift_matrix(s, d)  # (d, d), fixed for every t
            err = (P[s : s + T] - P[:T] @ M.T).abs().max().item()  # rows: PE(t+s) - M_s PE(t)
            if err > worst:
                worst, where, worst_at = err, f"d={d}, s={s}", {"d": d, "shift": s}
    detail = (
        f"max |PE(t+s) - M_s PE(t)| over t in 0..{T - 1}, s in {shifts}, d in {{16, 512}}, float64 "
        f"(worst at {where}); the text's b, b' depend on t through the paired cos/sin coordinate, "
        "and its complex form should read e^(i w_k t)"
    )
    values = {"max_error": worst, "worst_at": worst_at, "shifts": shifts, "dims": [16, 512], "T": T}
    return at_most(worst, 1e-9, detail, values=values)
