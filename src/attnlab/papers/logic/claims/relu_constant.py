"""The ReLU constant of solutions 2 and 3 (§2.2: "that number simply needs to be larger than
all values of q_true"; §2.3: "larger than any entry of A_2").

The exact condition (derived in :mod:`attnlab.papers.logic.solutions`): with the offset
m = max(0, -min q_true) that keeps negative targets, the read-out is exact on every input
iff c >= c* = max(0, max q_true) + max(0, -min q_true) (N >= 2, M >= 3). Checked on every
one of the 4^5 sequences with q_true ~ N(0, 1) (both signs, so c* is the range of q_true):

* at c = c* the largest |Y_hat - Y| is round-off (tolerance 1e-12);
* at c = c* - delta (delta = 1e-3 c*) a sequence leaks: the largest error is >= delta, the
  leak ReLU(max q_true + m - c) of a single unselected entry;
* the text's read-out (m = 0) with c = 100 > max |q_true| outputs ReLU(q_true): its largest
  error equals max(0, -min q_true) exactly, so no c repairs it.
"""

from __future__ import annotations

import numpy as np

from attnlab.papers.logic.encoding import all_sequences, encode, targets
from attnlab.papers.logic.solutions import build, forward, relu_threshold
from attnlab.registry import Measurement, claim

TOL = 1e-12
N, M, REL_DELTA = 4, 5, 1e-3


def threshold_errors(seed: int) -> dict:
    """Errors at c*, just below c*, and of the text's read-out, for solutions 2 and 3."""
    q_true = np.random.default_rng(seed).standard_normal((N, N))
    tokens = all_sequences(N, M)
    X, Y = encode(tokens, N), targets(tokens, q_true)
    c_star = relu_threshold(q_true)
    delta = REL_DELTA * c_star
    out = {"c_star": c_star, "delta": delta, "max_q": float(q_true.max()), "min_q": float(q_true.min())}
    for s in ("2", "3"):
        err = lambda w: float(np.abs(forward(w, X) - Y).max())  # noqa: E731
        out[f"at_c_star_{s}"] = err(build(s, q_true, M, relu_const=c_star))
        out[f"below_{s}"] = err(build(s, q_true, M, relu_const=c_star - delta))
        out[f"text_readout_{s}"] = err(build(s, q_true, M, relu_const=100.0, shift=False))
    return out


@claim("logic.relu-constant", where="§2.2, eq. 2.21; §2.3",
       statement="the ReLU read-out is exact iff the constant c >= max(0, max q) + max(0, -min q) (with the "
                 "offset that keeps negative q); below it outputs leak; without the offset negatives are clipped",
       paper_value="100, 'larger than all values of q_true'")
def _relu_constant(seed: int) -> Measurement:
    """Measured: the largest error at c = c* (<= 1e-12); passes only if also every below-c*
    error is >= delta and the text's read-out errs by exactly max(0, -min q_true) (to 1e-12)."""
    v = threshold_errors(seed)
    at = max(v["at_c_star_2"], v["at_c_star_3"])
    leaks = min(v["below_2"], v["below_3"]) >= v["delta"] * (1 - 1e-9)
    clip = max(abs(v[f"text_readout_{s}"] - max(0.0, -v["min_q"])) for s in "23") <= TOL
    detail = (f"c* = {v['c_star']:.4f}: error {at:.1e} at c*, {min(v['below_2'], v['below_3']):.2e} at c* - "
              f"{v['delta']:.1e}; text read-out error {v['text_readout_2']:.4f} = -min q")
    return Measurement(at, TOL, bool(at <= TOL and leaks and clip), "<=", detail, None, v)
