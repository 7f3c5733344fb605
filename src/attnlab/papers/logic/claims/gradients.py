"""§3.1: the closed-form gradient of E[SSE], the stationary points and the scale of q, v at
initialisation (:mod:`attnlab.papers.logic.gradients`; errata: :mod:`attnlab.papers.logic.errata`).

The gradient checks use the exact expectation: the average over all N^M sequences at
(N, M) = (3, 4), (2, 5), (4, 3), differentiated by autograd in float64.
"""

from __future__ import annotations

import numpy as np

from attnlab.papers.logic.gradients import (autograd_gradient, closed_form_gradient, eq39_ratio, eq39_terms,
                                            stationary_points)
from attnlab.checks import Check, above, at_most
from attnlab.registry import claim

TOL = 1e-12
SIZES = ((3, 4), (2, 5), (4, 3))
MOVING = 1e-2  # a generic point's gradient must exceed this (the control)


INIT_N, INIT_DRAWS = 100, 2000  # the size and the draws of the text's comparison of 3.12 with 3.10
INIT_SIZES = (10, 50, 100)      # N and M of the eq. 3.9 checks
EQ39_DRAWS = 1000               # draws of v and q per size (E|blue| / E|red| within about 5%)
THRESHOLD_EXPONENT = 0.75       # sigma = N^(-3/4): an order below the text's 1/sqrt N


@claim("logic.gradient-closed-form", where="§3.1, eq. 3.6-3.8, 3.18",
       statement="dE[SSE]/dq_ji and dE[SSE]/dv_kl of attention on positions only are the printed expressions "
                 "3.6-3.8 and 3.18, up to the constant factor -2 the text leaves out (its convention: the printed "
                 "bracket is the direction descent moves)",
       paper_value="eq. 3.6-3.8, 3.18", anchor="logic.gradient-q",
       falsifier="a relative gap above 1e-12 between -2 times the printed expressions and autograd's gradient of "
                 "the exact E[SSE] at some random q, v")
def _closed_form(seed: int) -> Check:
    """Measured: max |-2 x printed expression - autograd gradient| / max(1, max |autograd|) over random
    q, v ~ N(0, 1) (the printed expressions with the /10 of the text read as /N, errata logic.trace-over-ten,
    and the sums as in errata logic.sse-range). The text writes the bracket alone, -1/2 of the derivative (a
    convention with the same zeros, read as such: the ledger's note); the values keep the gap of the printed
    expressions taken literally (1.5 = |1 - (-1/2)|)."""
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
    return at_most(max(scaled.values()), TOL,
                   "relative gap of -2 times the printed expressions " + "; ".join(f"{k}: {x:.1e}" for k, x in
                                                                                   scaled.items())
                   + f"; of the printed expressions taken literally: {max(printed.values()):.2f}",
                   {"printed": printed, "minus_two_times_printed": scaled},
                   quantity="relative gap of -2 x eq. 3.6-3.8, 3.18 to autograd")


@claim("logic.stationary-set", where="§3.1, eq. 3.23-3.34",
       statement="attnlab's stationary points of E[SSE] are zeros of the gradient: the solution v = lambda I, "
                 "q_(i-1)i = 1/lambda, q_ji = 0 otherwise, q = v = 0, and the two degenerate sets of errata "
                 "logic.degenerate-sets (known points only; no search for other zeros is made, so the text's "
                 "'only degenerate zeros' is not tested)",
       paper_value="the solution; degenerate points such as q = v = 0")
def _stationary(seed: int) -> Check:
    """Sanity: the largest gradient entry (autograd) over representatives of the solution and of the
    degenerate zeros: q = v = 0, and the two larger sets the derivation misses (q = 0 with Tr v = 1^t v 1 = 0;
    v = 0 with sum q_(i-1)i = sum Q_i = 0; errata logic.degenerate-sets); <= 1e-12. It checks that points
    attnlab built are zeros (the solution is a global minimum and q = v = 0 a zero of every term), not that
    the zero set is what the text says (ledger: logic.zeros-only-degenerate, not measured). Values: E[SSE]
    there (0 at the solution, M - 1 at the degenerate zeros) and the gradient at a generic point (the control)."""
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
                   {"gradient": grads, "expected_sse": sse, "control": control}, role="sanity",
                   quantity="largest gradient entry at attnlab's stationary points")


def init_terms(N: int, sigma: float, draws: int, rng: np.random.Generator) -> tuple[float, float]:
    """(E |Tr(v^t)| / N, E Tr(v^t v) / N) over ``draws`` matrices v with i.i.d. N(0, sigma^2) entries: the terms
    3.12 and 3.10 that the text compares (without the red term's factor q_(i-1)i - q_ji of eq. 3.9)."""
    v = rng.standard_normal((draws, N, N)) * sigma
    blue = np.abs(np.trace(v, axis1=1, axis2=2)).mean() / N
    red = (v ** 2).sum(axis=(1, 2)).mean() / N
    return float(blue), float(red)


def _typical_cases() -> dict[str, tuple[int, float]]:
    """{case: (N, sigma)}: sigma = 1/sqrt(P) with P the parameters of §3.1's model (q: M x M, v: N x N) or v's
    N^2 alone, for N, M in INIT_SIZES."""
    cases = {}
    for N in INIT_SIZES:
        cases[f"sigma = 1/N, N={N}"] = (N, 1.0 / N)
        for M in INIT_SIZES:
            cases[f"sigma = 1/sqrt(N^2 + M^2), N={N}, M={M}"] = (N, (N * N + M * M) ** -0.5)
    return cases


@claim("logic.init-scale", where="§3.1, after eq. 3.13",
       statement="at the typical initialisation, sigma = 1 over the square root of the number of parameters, the "
                 "blue term of eq. 3.9 (Tr(v^t)/N - 1^t v^t 1/N^2) dominates the red one ((q_(i-1)i - q_ji) "
                 "(Tr(v^t v)/N - 1^t v^t v 1/N^2))",
       paper_value="'we are in business'", anchor="logic.init-typical",
       falsifier="E|blue| / E|red| <= 1 for some N, M in {10, 50, 100} with q, v ~ N(0, sigma^2), sigma = "
                 "1/sqrt(N^2 + M^2) or 1/N")
def _init_scale(seed: int) -> Check:
    """Measured: the smallest E|blue| / E|red| of eq. 3.9 over N, M in {10, 50, 100}, q and v i.i.d.
    N(0, sigma^2) (1000 draws each), sigma = 1/sqrt(P) with P the parameters of §3.1's model (q: M^2, v: N^2)
    or v's N^2 alone; the text says > 1. Exactly the ratio is P / (sqrt 2 N sqrt(N - 1)): 2.36 at N = 10 with
    P = N^2, more elsewhere. The red term carries (q_(i-1)i - q_ji), O(sigma) at initialisation: that is why the
    conclusion holds although the text's comparison of 3.12 with 3.10 alone does not (logic.init-threshold)."""
    rng = np.random.default_rng(seed)
    ratios, exact = {}, {}
    for name, (N, sigma) in _typical_cases().items():
        blue, red = eq39_terms(N, sigma, EQ39_DRAWS, rng)
        ratios[name], exact[name] = blue / red, eq39_ratio(N, sigma)
    worst = min(ratios, key=ratios.get)
    return above(ratios[worst], 1.0, f"E|blue| / E|red| from {ratios[worst]:.2f} ({worst}; exactly "
                                     f"{exact[worst]:.2f}) to {max(ratios.values()):.0f} over {len(ratios)} cases",
                 {"ratio": ratios, "exact_ratio": exact},
                 quantity="smallest E|blue| / E|red| of eq. 3.9 at sigma = 1/sqrt(parameters)")


@claim("logic.init-threshold", where="§3.1, after eq. 3.13",
       statement="as soon as sigma is of any order smaller than 1/sqrt N, the blue term of eq. 3.9 dominates the "
                 "red one at initialisation ('we are in business')",
       paper_value="sigma << 1/sqrt(N) suffices", anchor="logic.init-threshold",
       falsifier="E|blue| / E|red| <= 1 at sigma = N^(-3/4) (an order below 1/sqrt N) for some N in {10, 50, 100}",
       erratum="logic.init-scale")
def _init_threshold(seed: int) -> Check:
    """Measured: the smallest E|blue| / E|red| of eq. 3.9 over N in {10, 50, 100} at sigma = N^(-3/4), q and v
    i.i.d. N(0, sigma^2), 1000 draws; the text says > 1 (the blue term dominates). Exactly the ratio is
    1 / (sqrt 2 sigma^2 N sqrt(N - 1)): the blue term dominates iff sigma << N^(-3/4), so at N^(-3/4) the ratio
    is sqrt(N/(N - 1)) / sqrt 2 < 1 (errata logic.init-scale). Values: the text's own comparison, 3.12
    (E|Tr v|/N) against 3.10 (E Tr(v^t v)/N) without the red term's factor q_(i-1)i - q_ji, at sigma = 1/N and
    N = 100 (sqrt(2/pi)/sqrt N = 0.080: alone, 3.12 dominates 3.10 only for sigma << N^(-3/2)), and at
    sigma = N^(-2)."""
    rng = np.random.default_rng(seed)
    N = INIT_N
    b1, r1 = init_terms(N, 1.0 / N, INIT_DRAWS, rng)
    b2, r2 = init_terms(N, 1.0 / N ** 2, INIT_DRAWS, rng)
    ratios = {}
    for n in INIT_SIZES:
        blue, red = eq39_terms(n, n ** -THRESHOLD_EXPONENT, EQ39_DRAWS, rng)
        ratios[f"N={n}"] = blue / red
    exact = {f"N={n}": eq39_ratio(n, n ** -THRESHOLD_EXPONENT) for n in INIT_SIZES}
    worst = min(ratios, key=ratios.get)
    return above(ratios[worst], 1.0,
                 "sigma = N^(-3/4): E|blue| / E|red| = " + ", ".join(f"{k}: {x:.2f}" for k, x in ratios.items())
                 + f" (exactly {', '.join(f'{x:.3f}' for x in exact.values())}); the text's 3.12 against 3.10 "
                   f"alone at N = {N}: {b1 / r1:.3f} at sigma = 1/N (exactly sqrt(2/pi)/sqrt N = "
                   f"{np.sqrt(2 / np.pi) / np.sqrt(N):.3f}), {b2 / r2:.2f} at sigma = N^-2",
                 {"ratio": ratios, "exact_ratio": exact, "blue_3_12": b1, "red_3_10": r1,
                  "ratio_3_12_over_3_10": b1 / r1, "ratio_3_12_over_3_10_at_N_minus_2": b2 / r2},
                 quantity="smallest E|blue| / E|red| of eq. 3.9 at sigma = N^(-3/4)")
