"""§3.1: the closed-form gradient of E[SSE] and the stationary points
(:mod:`attnlab.papers.logic.gradients`; where the text is loose, notes_errors).

Both checks use the exact expectation: the average over all N^M sequences at
(N, M) = (3, 4), (2, 5), (4, 3), differentiated by autograd in float64.
"""

from __future__ import annotations

import numpy as np

from attnlab.papers.logic.gradients import autograd_gradient, closed_form_gradient, stationary_points
from attnlab.registry import Measurement, at_most, claim

TOL = 1e-12
SIZES = ((3, 4), (2, 5), (4, 3))
MOVING = 1e-2  # a generic point's gradient must exceed this (the control)


@claim("logic.gradient-closed-form", where="§3.1, eq. 3.3-3.18",
       statement="dE[SSE]/dq_ji and dE[SSE]/dv_kl of attention on positions only are the closed forms 3.6-3.8 "
                 "and 3.18 (times -2)",
       paper_value="eq. 3.6-3.8, 3.18")
def _closed_form(seed: int) -> Measurement:
    """Measured: max |closed form - autograd| / max(1, max |autograd|) over random q, v ~ N(0, 1)."""
    rng = np.random.default_rng(seed)
    worst = {}
    for N, M in SIZES:
        q, v = rng.standard_normal((M, M)), rng.standard_normal((N, N))
        cq, cv = closed_form_gradient(q, v)
        aq, av, _ = autograd_gradient(q, v)
        scale = max(1.0, np.abs(aq).max(), np.abs(av).max())
        worst[f"N={N}, M={M}"] = float(max(np.abs(cq - aq).max(), np.abs(cv - av).max()) / scale)
    return at_most(max(worst.values()), TOL, "relative gap " + "; ".join(f"{k}: {x:.1e}" for k, x in worst.items()),
                   worst)


@claim("logic.stationary-set", where="§3.1, eq. 3.23-3.34",
       statement="the gradient vanishes at the solution v = lambda I, q_(i-1)i = 1/lambda and at degenerate points "
                 "(q = v = 0, and more: q = 0 with Tr v = 1^t v 1 = 0; v = 0 with sum q_(i-1)i = sum Q_i = 0)",
       paper_value="the solution and q = v = 0 only")
def _stationary(seed: int) -> Measurement:
    """Measured: the largest gradient entry (autograd) over representatives of the four sets
    (<= 1e-12); passes only if a generic point's gradient exceeds 1e-2 (the control) and
    E[SSE] is 0 at the solution and M - 1 at the degenerate points."""
    rng = np.random.default_rng(seed)
    grads, sse, ok = {}, {}, True
    for N, M in SIZES:
        for name, (q, v) in stationary_points(N, M, rng).items():
            aq, av, E = autograd_gradient(q, v)
            key = f"{name} (N={N}, M={M})"
            grads[key], sse[key] = float(max(np.abs(aq).max(), np.abs(av).max())), E
            ok &= abs(E - (0.0 if name == "solution" else M - 1)) <= TOL
        aq, av, _ = autograd_gradient(rng.standard_normal((M, M)), rng.standard_normal((N, N)))
        ok &= max(np.abs(aq).max(), np.abs(av).max()) > MOVING
    worst = max(grads.values())
    return Measurement(worst, TOL, bool(ok and worst <= TOL), "<=",
                       f"largest gradient entry {worst:.1e} over {len(grads)} stationary points; E[SSE] as expected: {ok}",
                       None, {"gradient": grads, "expected_sse": sse})
