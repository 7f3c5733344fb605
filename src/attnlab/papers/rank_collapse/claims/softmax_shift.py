"""The softmax ignores a shift of each row (rank-collapse notes §2.1)."""

from __future__ import annotations

import torch

from attnlab.checks import Check, at_most
from attnlab.registry import claim


@claim(
    "rank-collapse.softmax-shift-invariance",
    where="§2.1",
    statement="softmax(A + x 1^T) = softmax(A) row-wise, for every shift vector x",
    paper_value="exact identity",
    anchor="rank-collapse.softmax-shift",
    falsifier="a row shift x 1^T (|x| ~ 100) that moves softmax(A) by more than 1e-13 in float64",
)
def _shift_invariance(seed: int) -> Check:
    g = torch.Generator().manual_seed(seed)
    worst = 0.0
    for n in (3, 7, 31):
        A = torch.randn(n, n, generator=g, dtype=torch.float64) * 5
        x = torch.randn(n, 1, generator=g, dtype=torch.float64) * 100  # large shifts
        diff = torch.softmax(A + x, dim=-1) - torch.softmax(A, dim=-1)  # x 1^T broadcast
        worst = max(worst, diff.abs().max().item())
    return at_most(worst, 1e-13, "max |softmax(A + x1^T) - softmax(A)|, float64, n in {3,7,31}, |x| ~ 100",
                   values={"max_error": worst, "n_values": [3, 7, 31], "logit_std": 5.0, "shift_std": 100.0})
