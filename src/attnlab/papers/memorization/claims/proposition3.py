"""Claims of memorization-capacity-of-mha on Proposition 3 (§4.3, Appendix F): a two-layer ReLU
network on the flattened inputs memorizes at most (n+1) m / d_out + m + 1 examples, beside an
attention layer of matched size that memorizes H (r - 1) + 1 by Theorem 1's construction.

Anchored to the text: the reduction to App. F's identity (it differs as printed: the sign of
the map, memorization.appF-map-sign), the trained FCN to Proposition 3's upper bound (weights
found beyond it would refute it), and the attention layer beside it to Theorem 1 (a
construction: eq. (29)'s data satisfy Assumptions 1 and 2, n < d).

All three use the data set of the proof, eq. (29)
(:func:`attnlab.papers.memorization.fcn.draw_eq29_dataset`): contexts = the first n standard
basis rows, queries e^(t) = [0_{d-n}; x^(t)] with x^(t) ~ N(0, I_n), labels y^(t) ~ N(0, 1)
(d_out = 1).
"""

from __future__ import annotations

import torch

from attnlab.papers.memorization.construction import build_memorizing_weights, check_memorization
from attnlab.papers.memorization.fcn import (
    check_reduction,
    draw_eq29_dataset,
    homogeneity_bound,
    matched_hidden_width,
    max_examples,
    proposition3_bound,
    train_fcn,
)
from attnlab.papers.memorization.model import theorem1_bound
from attnlab.checks import Check, at_least, at_most
from attnlab.registry import claim

REDUCTION_TOL = 1e-12  # float64 identity f_{(n+1)d}(x_FCN) = f_n(x)
# the attention layer whose size the FCN matches: m = matched_hidden_width(...) = 7
H, d, n, d_h, d_v, d_out = 4, 6, 3, 3, 1, 1
RESIDUAL_FLOOR = 1e-3  # relative residual the trained FCN must stay above beyond the bound
CONTROL_TOL = 1e-8  # relative residual the same training must reach well below the bound
ATTENTION_TOL = 1e-8  # max |y_hat - y| of Theorem 1's construction
RESTARTS, STEPS = 4, 3  # L-BFGS restarts, x 50 iterations each


@claim(
    "memorization.proposition3-reduction",
    where="App. F, eq. (29) and the weight map (proof of Proposition 3)",
    statement="on eq. (29)'s data set (Assumptions 1 and 2 hold), every f_{(n+1)d,m,d_out} equals an "
              "f_{n,m,d_out} on x^(t) under App. F's weight map, b_1 := b'_1 - W'_1[...]^T c_FCN",
    paper_value="f_{(n+1)d,m,d_out}(x_FCN^(t)) = f_{n,m,d_out}(x^(t)) for all t",
    anchor="memorization.appf-reduction",
    falsifier="the two networks' outputs differ by more than 1e-12 under the printed map",
    erratum="memorization.appF-map-sign",
)
def _reduction(seed: int) -> Check:
    r = check_reduction(T=11, n=3, d=7, m=5, d_out=2, seed=seed)
    ok = r["assumption1"] and r["assumption2"]
    return at_most(r["max_abs_error_paper_sign"], REDUCTION_TOL, (
        f"max |f_(n+1)d(x_FCN) - f_n(x)| with the printed map, float64; T={r['T']} n={r['n']} d={r['d']} "
        f"m={r['m']} d_out={r['d_out']}, outputs up to {r['output_scale']:.2g}; with b_1 = b'_1 + W'_1[...]^T "
        f"c_FCN the error is {r['max_abs_error']:.1e}, so the reduction holds with a + (a sign slip); Kruskal "
        f"rank of queries {r['kruskal_rank_queries']} (Assumption 1 needs {r['n']}), rank E {r['rank_E']} "
        "(Assumption 2)"), values=r,
        cannot_decide="" if ok else "the drawn data set does not satisfy Assumptions 1 and 2")


@claim(
    "memorization.proposition3-fcn-trained",
    where="§4.3, Proposition 3 (proof: App. F)",
    statement="an FCN of the attention layer's size, trained to its limit on eq. (29)'s data, keeps a "
              "residual beyond (n+1)m/d_out+m+1 examples, while the same training memorizes well below it",
    paper_value="T <= (n+1)m/d_out + m + 1",
    anchor="memorization.proposition-3",
    falsifier="the trained FCN's relative residual falls below 1e-3 at twice the bound (weights found that "
              "memorize beyond it), while the control shows the training reaches 1e-8 below the bound",
)
def _fcn_trained(seed: int) -> Check:
    m = matched_hidden_width(H, d, n, d_h, d_v, d_out)
    bound = proposition3_bound(n, m, d_out)
    T_above, T_below = 2 * max_examples(bound), theorem1_bound(H, n, d_h)
    residuals = []
    for T in (T_above, T_below):
        _, _, x_FCN, y = draw_eq29_dataset(T, n, d, d_out, seed)
        fit = train_fcn(torch.from_numpy(x_FCN), torch.from_numpy(y), m, restarts=RESTARTS, steps=STEPS, seed=seed)
        residuals.append(fit["residual"])
    above, below = residuals
    control = ("" if below <= CONTROL_TOL else
               f"the same training leaves {below:.1e} > {CONTROL_TOL:g} below the bound (T={T_below}): the "
               "optimizer, not the bound, may be what stops it above")
    return at_least(above, RESIDUAL_FLOOR, (
        f"min relative residual ||f - y||/||y|| of the trained f_(n+1)d,m,1 at T={T_above} > bound "
        f"{bound:g} (m={m} matched to H={H} d={d} n={n} d_h={d_h} d_v={d_v}); control at T={T_below}: "
        f"{below:.1e} (must be <= {CONTROL_TOL:g}); full-batch float64 L-BFGS, {RESTARTS} restarts; "
        f"ReLU homogeneity tightens the bound to nm/d_out+m+1 = {homogeneity_bound(n, m, d_out):g}"),
        values={"T_above": T_above, "T_below": T_below, "bound": bound, "m": m, "H": H, "d": d, "n": n,
                "d_h": d_h, "d_v": d_v, "residual_above": above, "residual_below": below,
                "control_tol": CONTROL_TOL, "restarts": RESTARTS,
                "homogeneity_bound": homogeneity_bound(n, m, d_out)}, cannot_decide=control)


@claim(
    "memorization.proposition3-attention-beside",
    where="§4.3 beside Theorem 1 (§4, App. B)",
    statement="the attention layer the FCN is matched to memorizes T = H(r-1)+1 examples of the same "
              "eq. (29) data set exactly (Theorem 1's construction)",
    paper_value="T = H(min(n, d_h) - 1) + 1",
    anchor="memorization.theorem-1",
    falsifier="the proof's weights leave max |y_hat - y| > 1e-8 on eq. (29)'s T = H(r-1)+1 examples",
)
def _attention_beside(seed: int) -> Check:
    T = theorem1_bound(H, n, d_h)
    E, e, _, y = draw_eq29_dataset(T, n, d, d_out, seed)
    W = build_memorizing_weights(E, e, y, H=H, d_h=d_h, d_v=d_v, seed=seed)
    r = check_memorization(W, E, e, y)
    m = matched_hidden_width(H, d, n, d_h, d_v, d_out)
    p3 = proposition3_bound(n, m, d_out)
    return at_most(r["max_abs_error"], ATTENTION_TOL, (
        f"max |y_hat - y|, float64; H={H} d={d} n={n} d_h={d_h} d_v={d_v}, T={T} ({r['bound_name']}); "
        f"rank Z {r['rank_Z']}, sigma_min(Z) {r['sigma_min_Z']:.1e}, saturation scale c {r['c']:.2g}; "
        f"the matched FCN (m={m}) has Proposition 3 bound {p3:g}"),
        values={"H": H, "d": d, "n": n, "d_h": d_h, "d_v": d_v, "T": T, "bound_name": r["bound_name"],
                "max_abs_error": r["max_abs_error"], "rank_Z": r["rank_Z"], "sigma_min_Z": r["sigma_min_Z"],
                "c": r["c"], "m": m, "proposition3_bound": p3}, role="construction")
