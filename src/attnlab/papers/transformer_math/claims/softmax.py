"""Claims about the softmax itself (math text §1.2.3)."""

from __future__ import annotations

import torch

from attnlab.analysis.softmax_jacobian import (
    jacobian_norm_vs_scale,
    softmax_jacobian,
    softmax_jacobian_autograd,
)
from attnlab.checks import Check, at_most
from attnlab.registry import claim


@claim(
    "transformer-math.softmax-jacobian",
    where="§1.2.3, eq. (8)",
    statement="the Jacobian of softmax is diag(s) - s s^T",
    paper_value="J_ii = s_i(1-s_i), J_ik = -s_i s_k",
    anchor="transformer-math.softmax-jacobian",
    falsifier="autograd's Jacobian of softmax more than 1e-14 away from diag(s) - s s^T at some logits (float64)",
)
def _jacobian_formula(seed: int) -> Check:
    g = torch.Generator().manual_seed(seed)
    worst = 0.0
    for n in (2, 5, 13):
        z = torch.randn(n, generator=g, dtype=torch.float64) * 3
        worst = max(worst, (softmax_jacobian_autograd(z) - softmax_jacobian(z)).abs().max().item())
    return at_most(worst, 1e-14, "max |autograd Jacobian - closed form|, float64, n in {2,5,13}",
                   values={"max_error": worst, "n_values": [2, 5, 13], "logit_std": 3.0})


@claim(
    "transformer-math.softmax-jacobian-vanishes",
    where="§1.2.3, eq. (9)",
    statement="the softmax Jacobian is zero at one-hot outputs and vanishes exponentially as the logits are scaled up",
    paper_value="J = 0 at one-hot s",
    anchor="transformer-math.jacobian-zero-one-hot",
    falsifier="a nonzero Jacobian at a one-hot s, or ||J(tz)||_F above 4(n-1)e^{-t gap} at some scale t",
)
def _jacobian_vanishes(seed: int) -> Check:
    """||J(t z)||_F <= 4 (n - 1) exp(-t g), g = gap between the two largest z.

    Proof: sum_ij |J_ij| = 2 sum_i s_i (1 - s_i) <= 4 (1 - s_max), and
    1 - s_max <= (n - 1) exp(-t g). Measured: the largest ratio of ||J(t z)||_F
    to that bound over t in [1, 1e3] (must be <= 1), and ||J|| at exact one-hots.
    """
    g = torch.Generator().manual_seed(seed)
    n = 11
    one_hot_norm = max(
        torch.linalg.matrix_norm(torch.diag(e) - torch.outer(e, e)).item()
        for e in torch.eye(n, dtype=torch.float64)
    )
    z = torch.randn(n, generator=g, dtype=torch.float64)
    top2 = z.topk(2).values
    gap = (top2[0] - top2[1]).item()
    scales = torch.logspace(0, 3, 13, dtype=torch.float64)
    norms = jacobian_norm_vs_scale(z, scales)
    bound = 4 * (n - 1) * torch.exp(-scales * gap)
    ratio = torch.where(bound > 0, norms / bound, torch.zeros_like(norms)).max().item()
    detail = (
        f"||J||_F at one-hot: {one_hot_norm:.1e}; gap {gap:.3f}; ||J(tz)||_F at t = 1, 10, 100, 1000: "
        + ", ".join(f"{x:.2e}" for x in norms[::4].tolist())
    )
    values = {"max_ratio_to_bound": ratio, "one_hot_norm": one_hot_norm, "gap": gap, "n": n,
              "scales": scales[::4].tolist(), "jacobian_norms": norms[::4].tolist()}  # t = 1, 10, 100, 1000
    measured = ratio if one_hot_norm == 0.0 else float("inf")  # J != 0 at a one-hot: eq. (9) differs
    return at_most(measured, 1.0, "max ||J|| / (4(n-1)e^{-t gap}); " + detail, values)
