"""The ReLU constant of solutions 2 and 3 (§2.2: "that number simply needs to be larger than
all values of q_true"; §2.3: "larger than any entry of A_2").

The text's read-out (constant c, bias -c, no offset) returns ReLU(q_true), so its statement
can hold only for tables q_true >= 0; there it is exact iff c >= max q_true ("larger than all
values" is the text's condition, and "at least" suffices since ReLU(0) = 0). With the offset
m = max(0, -min q_true) that keeps negative targets (:mod:`attnlab.papers.logic.solutions`),
the exact condition becomes c >= c* = max(0, max q_true) + max(0, -min q_true). Checked on
every one of the 4^5 sequences:

* q_true = |N(0, 1)|, the text's read-out: exact at c = max q_true, leaking by >= delta at
  c = max q_true - delta (delta = 1e-3 c): the measured claim;
* q_true ~ N(0, 1) (both signs), attnlab's read-out with the offset: exact at c = c*, leaking
  below; the text's read-out with c = 100 errs by exactly max(0, -min q_true), so no c repairs
  it (the values; errata: logic.negative-targets).
"""

from __future__ import annotations

import numpy as np

from attnlab.papers.logic.encoding import all_sequences, encode, targets
from attnlab.papers.logic.solutions import build, forward, relu_threshold
from attnlab.checks import Check, at_most
from attnlab.registry import claim

TOL = 1e-12
N, M, REL_DELTA = 4, 5, 1e-3


def text_threshold_errors(seed: int) -> dict:
    """The text's read-out on q_true = |N(0, 1)|: errors at c = max q_true and just below, solutions 2 and 3."""
    q_true = np.abs(np.random.default_rng(seed).standard_normal((N, N)))
    tokens = all_sequences(N, M)
    X, Y = encode(tokens, N), targets(tokens, q_true)
    c = float(q_true.max())
    out = {"max_q": c, "delta": REL_DELTA * c}
    for s in ("2", "3"):
        err = lambda w: float(np.abs(forward(w, X) - Y).max())  # noqa: E731
        out[f"at_max_q_{s}"] = err(build(s, q_true, M, relu_const=c, shift=False))
        out[f"below_{s}"] = err(build(s, q_true, M, relu_const=c - out["delta"], shift=False))
    return out


def threshold_errors(seed: int) -> dict:
    """Signed q_true ~ N(0, 1): errors at c*, just below c* (with the offset), and of the text's read-out
    (c = 100, no offset), for solutions 2 and 3."""
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


@claim("logic.relu-constant", where="§2.2, after eq. 2.21; §2.3, end",
       statement="the constant of the ReLU read-out (the text's 100) simply needs to be larger than all values of "
                 "q_true, for q_true >= 0 (the read-out clips negative targets: logic.solution-2)",
       paper_value="100, 'larger than all values of q_true'")
def _relu_constant(seed: int) -> Check:
    """Measured: the largest error of solutions 2 and 3 with the text's read-out at c = max q_true on a table
    q_true >= 0 (<= 1e-12: the condition suffices); the detail shows it is also needed (a leak >= delta just
    below) and what holds for a signed table (values of :func:`threshold_errors`)."""
    t = text_threshold_errors(seed)
    v = threshold_errors(seed)
    at = max(t["at_max_q_2"], t["at_max_q_3"])
    detail = (f"q_true >= 0: error {at:.1e} at c = max q_true = {t['max_q']:.3f}, "
              f"{min(t['below_2'], t['below_3']):.2e} at c - {t['delta']:.1e}; signed q_true: the text's read-out "
              f"errs by {v['text_readout_2']:.4f} = -min q_true at c = 100, attnlab's (offset m) is exact from "
              f"c* = {v['c_star']:.4f} = max q - min q ({max(v['at_c_star_2'], v['at_c_star_3']):.1e}) and leaks "
              f"{min(v['below_2'], v['below_3']):.2e} below")
    return at_most(at, TOL, detail, {"nonnegative": t, "signed": v})
