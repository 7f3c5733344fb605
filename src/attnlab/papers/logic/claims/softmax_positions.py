"""§3.2: with softmax (columns of q on the simplex), gradient descent on the exact E[SSE] of
attention on positions only reaches v = I, q_{(i-1)i} = 1 (:mod:`attnlab.papers.logic.softmax_positions`).

Both checks run the same descent: N = 3 categories, M = 4 positions (E[SSE] exact over the
3^4 sequences), 32 random starts batched, plain gradient descent with lr 0.5 for 2000 steps on
the logits L (q = softmax of each column) and on v, float64. The text prints the constraint
as "q_ji >= 1"; the one implemented is q_ji >= 0, sum_j q_ji = 1 (errata: logic.simplex).
"""

from __future__ import annotations

import numpy as np

from attnlab.papers.logic.softmax_positions import descend, intended, stationary_conditions
from attnlab.checks import Check, at_least, at_most
from attnlab.registry import claim

N, M, STARTS = 3, 4, 32
DIST_TOL, LOSS_TOL = 0.05, 1e-3   # "reached": max entry gap to (D_-1, I) and E[SSE] after 2000 steps
MIN_FRACTION = 0.9
RATE, RATE_TOL = np.sqrt(2.0), 0.1  # distance(T/2) / distance(T) for eps ~ t^(-1/2)
COND_TOL, EXACT_TOL = 0.05, 1e-12


@claim("logic.softmax-descent", where="§3.2, eq. 3.35",
       statement="with softmax (q_ji >= 0, sum_j q_ji = 1) gradient descent on E[SSE] cannot get stuck and finds "
                 "v = I, q_(i-1)i = 1, q_ji = 0 otherwise",
       paper_value="the only minimum; reached from any start", anchor="logic.softmax-finds-solution",
       falsifier="fewer than 29 of 32 random starts within 0.05 of (D_-1, I) with E[SSE] <= 1e-3 after 2000 steps "
                 "(a start stuck elsewhere)")
def _softmax_descent(seed: int) -> Check:
    """Measured: the fraction of the 32 starts within 0.05 (max entry) of (D_-1, I) with E[SSE] <= 1e-3
    after 2000 steps (>= 0.9). Values: the rate, median distance(1000) / distance(2000), sqrt 2 for the
    minimum at infinite logits (distance ~ t^(-1/2), E[SSE] ~ 1/t): descent finds the solution in the
    limit, as softmax reaches the boundary of the simplex only as the logits diverge."""
    r = descend(N, M, STARTS, seed)
    reached = (r.distance <= DIST_TOL) & (r.loss <= LOSS_TOL)
    frac = float(reached.mean())
    rate = float(np.median(r.distance_half / r.distance))
    loss_rate = float(np.median(r.loss_half / r.loss))
    detail = (f"{reached.sum()}/{STARTS} starts within {DIST_TOL} of (D_-1, I) with E[SSE] <= {LOSS_TOL:g} after "
              f"{r.steps} steps (lr {r.lr}); distance {r.distance.min():.4f}..{r.distance.max():.4f}, E[SSE] "
              f"<= {r.loss.max():.2e}; halving t: distance x{rate:.3f} (sqrt 2 +- {RATE_TOL}), E[SSE] x{loss_rate:.2f}")
    return at_least(frac, MIN_FRACTION, detail,
                    {"fraction": frac, "max_distance": float(r.distance.max()), "max_loss": float(r.loss.max()),
                     "distance_ratio": rate, "loss_ratio": loss_rate, "distance_tolerance": DIST_TOL,
                     "loss_tolerance": LOSS_TOL})


@claim("logic.softmax-stationary", where="§3.2 (with eq. 3.22, 3.23, 3.26)",
       statement="under the constraint the q-gradient is colinear with (1, ..., 1) per column, Delta q = 1/Delta v, "
                 "the rows of v have mean 1/N, and this forces Delta q = Delta v = 1",
       paper_value="Delta q = Delta v = 1, v = I", anchor="logic.softmax-only-minimum",
       falsifier="an end point of the 32 descents whose q-gradient is not colinear with (1, ..., 1) per column, or "
                 "with Delta q Delta v, Delta q or Delta v farther than 0.05 from 1")
def _softmax_stationary(seed: int) -> Check:
    """Measured: the largest of (q-gradient spread within a column, |Delta q Delta v - 1|, |Delta q - 1|,
    |Delta v - 1|) over the 32 end points of the descent (<= 0.05, shrinking like t^(-1/2)). Values: the row
    sums of v (1), |dE/dv|, and every condition at the exact point (D_-1, I) (round-off)."""
    r = descend(N, M, STARTS, seed)
    conds = [stationary_conditions(r.q[b], r.v[b]) for b in range(STARTS)]
    worst = {"lagrange": max(abs(c.lagrange) for c in conds),
             "delta_q_times_delta_v": max(abs(c.delta_q_times_delta_v - 1.0) for c in conds),
             "delta_q": max(abs(c.delta_q - 1.0) for c in conds), "delta_v": max(abs(c.delta_v - 1.0) for c in conds),
             "row_sum_spread": max(abs(c.row_sum_spread) for c in conds), "grad_v": max(abs(c.grad_v) for c in conds)}
    q0, v0 = intended(N, M)
    q0[0, 0] = 1.0  # column 1 (no target) on the simplex too
    exact = stationary_conditions(q0, v0)
    exact_gap = max(exact.lagrange, exact.grad_v, abs(exact.delta_q_times_delta_v - 1), exact.row_sum_spread)
    measured = max(worst["lagrange"], worst["delta_q_times_delta_v"], worst["delta_q"], worst["delta_v"])
    detail = (f"over {STARTS} end points: column spread of dE/dq <= {worst['lagrange']:.4f}, |Dq Dv - 1| <= "
              f"{worst['delta_q_times_delta_v']:.4f}, |Dq - 1| <= {worst['delta_q']:.4f}, |Dv - 1| <= "
              f"{worst['delta_v']:.4f}, row sums of v 1 +- {worst['row_sum_spread']:.1e}, |dE/dv| <= "
              f"{worst['grad_v']:.1e}; at (D_-1, I) all {exact_gap:.1e}")
    return at_most(measured, COND_TOL, detail, {"worst": worst, "exact_point_gap": exact_gap})
