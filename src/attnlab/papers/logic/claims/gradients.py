"""§3.1: the closed-form gradient of E[SSE], the stationary points and the scale of v at
initialisation (:mod:`attnlab.papers.logic.gradients`; errata: :mod:`attnlab.papers.logic.errata`).

The gradient checks use the exact expectation: the average over all N^M sequences at
(N, M) = (3, 4), (2, 5), (4, 3), differentiated by autograd in float64.
"""

from __future__ import annotations

import numpy as np

from attnlab.papers.logic.gradients import autograd_gradient, closed_form_gradient, stationary_points
from attnlab.checks import Check, above, at_most
from attnlab.registry import claim

TOL = 1e-12
SIZES = ((3, 4), (2, 5), (4, 3))
MOVING = 1e-2  # a generic point's gradient must exceed this (the control)


INIT_N, INIT_DRAWS = 100, 2000  # the size and the draws of the initialisation check


@claim("logic.gradient-closed-form", where="§3.1, eq. 3.6-3.8, 3.18",
       statement="dE[SSE]/dq_ji and dE[SSE]/dv_kl of attention on positions only are the printed expressions "
                 "3.6-3.8 and 3.18",
       paper_value="eq. 3.6-3.8, 3.18")
def _closed_form(seed: int) -> Check:
    """Measured: max |printed expression - autograd gradient| / max(1, max |autograd|) over random q, v ~ N(0, 1)
    (the printed expressions with the /10 and 1/100 of the text read as /N and 1/N^2, and the sums as in
    errata logic.sse-range). They are -1/2 of the gradient (errata: logic.gradient-factor): the values give
    the gap of -2 times the printed expressions, round-off."""
    rng = np.random.default_rng(seed)
    printed, scaled = {}, {}
    for N, M in SIZES:
        q, v = rng.standard_normal((M, M)), rng.standard_normal((N, N))
        cq, cv = closed_form_gradient(q, v)  # the gradient: -2 times the printed bracket
        aq, av, _ = autograd_gradient(q, v)
        scale = max(1.0, np.abs(aq).max(), np.abs(av).max())
        key = f"N={N}, M={M}"
        printed[key] = float(max(np.abs(cq / -2 - aq).max(), np.abs(cv / -2 - av).max()) / scale)
        scaled[key] = float(max(np.abs(cq - aq).max(), np.abs(cv - av).max()) / scale)
    return at_most(max(printed.values()), TOL,
                   "relative gap of the printed expressions " + "; ".join(f"{k}: {x:.2f}" for k, x in printed.items())
                   + f"; of -2 times them: {max(scaled.values()):.1e}",
                   {"printed": printed, "minus_two_times_printed": scaled})


@claim("logic.stationary-set", where="§3.1, eq. 3.23-3.34",
       statement="the gradient of E[SSE] vanishes at the solution v = lambda I, q_(i-1)i = 1/lambda, q_ji = 0 "
                 "otherwise, and at degenerate points like q = v = 0 (these points are zeros; no search for "
                 "other zeros is made)",
       paper_value="the solution; degenerate points such as q = v = 0")
def _stationary(seed: int) -> Check:
    """Measured: the largest gradient entry (autograd) over representatives of the solution and of the
    degenerate zeros: q = v = 0, and the two larger sets the derivation misses (q = 0 with Tr v = 1^t v 1 = 0;
    v = 0 with sum q_(i-1)i = sum Q_i = 0; errata logic.degenerate-sets); <= 1e-12. Values: E[SSE] there (0 at
    the solution, M - 1 at the degenerate zeros) and the gradient at a generic point (the control)."""
    rng = np.random.default_rng(seed)
    grads, sse, control = {}, {}, {}
    for N, M in SIZES:
        for name, (q, v) in stationary_points(N, M, rng).items():
            aq, av, E = autograd_gradient(q, v)
            key = f"{name} (N={N}, M={M})"
            grads[key], sse[key] = float(max(np.abs(aq).max(), np.abs(av).max())), E
        aq, av, _ = autograd_gradient(rng.standard_normal((M, M)), rng.standard_normal((N, N)))
        control[f"N={N}, M={M}"] = float(max(np.abs(aq).max(), np.abs(av).max()))
    worst = max(grads.values())
    return at_most(worst, TOL, f"largest gradient entry {worst:.1e} over {len(grads)} zeros (the solution and three "
                               f"degenerate sets); generic points: >= {min(control.values()):.2f}",
                   {"gradient": grads, "expected_sse": sse, "control": control})


def init_terms(N: int, sigma: float, draws: int, rng: np.random.Generator) -> tuple[float, float]:
    """(E |Tr(v^t)| / N, E Tr(v^t v) / N) over ``draws`` matrices v with i.i.d. N(0, sigma^2) entries: the terms
    3.12 (the blue term of eq. 3.9, which lifts q_(i-1)i) and 3.10 (the red one, which pushes it down)."""
    v = rng.standard_normal((draws, N, N)) * sigma
    blue = np.abs(np.trace(v, axis1=1, axis2=2)).mean() / N
    red = (v ** 2).sum(axis=(1, 2)).mean() / N
    return float(blue), float(red)


@claim("logic.init-scale", where="§3.1, eq. 3.10-3.13 and after",
       statement="at initialisation with v_kl ~ N(0, sigma^2), the term 3.12, Tr(v^t)/N = +- sigma O(1/sqrt N), "
                 "dominates the term 3.10, Tr(v^t v)/N = sigma^2 O(N), as soon as sigma is of any order smaller than "
                 "1/sqrt N",
       paper_value="sigma << 1/sqrt(N) suffices")
def _init_scale(seed: int) -> Check:
    """Measured: E|Tr(v^t)|/N divided by E Tr(v^t v)/N at sigma = 1/N (an order below 1/sqrt N, and 1 over the
    square root of v's N^2 parameters, the text's 'typical' initialisation), N = 100, 2000 draws; the text says
    > 1. Exactly the ratio is sqrt(2/pi) / (sigma N^(3/2)): 3.12 dominates iff sigma << N^(-3/2) (errata
    logic.init-scale). Values: the same at sigma = N^(-2), where it does."""
    rng = np.random.default_rng(seed)
    N = INIT_N
    blue, red = init_terms(N, 1.0 / N, INIT_DRAWS, rng)
    blue2, red2 = init_terms(N, 1.0 / N ** 2, INIT_DRAWS, rng)
    exact = float(np.sqrt(2 / np.pi) / np.sqrt(N))
    return above(blue / red, 1.0, f"N = {N}, sigma = 1/N: E|Tr v|/N = {blue:.2e}, E Tr(v^t v)/N = {red:.2e} "
                                  f"(exact ratio sqrt(2/pi)/sqrt(N) = {exact:.3f}); at sigma = N^-2 the ratio is "
                                  f"{blue2 / red2:.2f}",
                 {"blue": blue, "red": red, "exact_ratio": exact, "ratio_at_N_minus_2": blue2 / red2})
