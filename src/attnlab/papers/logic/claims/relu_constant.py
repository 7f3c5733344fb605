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

from dataclasses import dataclass

import numpy as np

from attnlab.papers.logic.encoding import all_sequences, encode, targets
from attnlab.papers.logic.solutions import LogicWeights, build, forward, relu_threshold
from attnlab.checks import Check, at_most
from attnlab.registry import claim
from attnlab.stored import Stored

TOL = 1e-12
N, M, REL_DELTA = 4, 5, 1e-3


@dataclass(frozen=True)
class TextThresholdErrors(Stored):
    """The text's read-out (constant c, bias -c, no offset) on q_true = |N(0, 1)|: the largest error
    max |Y^ - Y| over every sequence, at c = max q_true and at c - delta, for solutions 2 and 3."""

    max_q: float  # max q_true, the text's threshold
    delta: float  # REL_DELTA max q_true, the step below it
    at_max_q_2: float  # solution 2's error at c = max q_true
    below_2: float  # solution 2's error at c = max q_true - delta
    at_max_q_3: float  # solution 3's error at c = max q_true
    below_3: float  # solution 3's error at c = max q_true - delta


def _max_error(w: LogicWeights, X: np.ndarray, Y: np.ndarray) -> float:
    """max |Y^ - Y| of the hand-built weights w over every sequence."""
    return float(np.abs(forward(w, X) - Y).max())


def text_threshold_errors(seed: int) -> TextThresholdErrors:
    """The text's read-out on q_true = |N(0, 1)|: errors at c = max q_true and just below, solutions 2 and 3."""
    q_true = np.abs(np.random.default_rng(seed).standard_normal((N, N)))
    tokens = all_sequences(N, M)
    X, Y = encode(tokens, N), targets(tokens, q_true)
    c = float(q_true.max())
    delta = REL_DELTA * c
    at = {s: _max_error(build(s, q_true, M, relu_const=c, shift=False), X, Y) for s in ("2", "3")}
    below = {s: _max_error(build(s, q_true, M, relu_const=c - delta, shift=False), X, Y) for s in ("2", "3")}
    return TextThresholdErrors(max_q=c, delta=delta, at_max_q_2=at["2"], below_2=below["2"], at_max_q_3=at["3"],
                               below_3=below["3"])


@dataclass(frozen=True)
class ThresholdErrors(Stored):
    """Signed q_true ~ N(0, 1): the largest error max |Y^ - Y| over every sequence of solutions 2 and 3 with
    attnlab's read-out (offset m = max(0, -min q_true)) at c* and c* - delta, and with the text's (c = 100, no
    offset)."""

    c_star: float  # c* = max(0, max q_true) + max(0, -min q_true), the exact threshold with the offset
    delta: float  # REL_DELTA c*, the step below it
    max_q: float  # max q_true
    min_q: float  # min q_true (< 0 for a signed table)
    at_c_star_2: float  # solution 2's error at c = c*
    below_2: float  # solution 2's error at c = c* - delta
    text_readout_2: float  # solution 2's error with the text's read-out at c = 100
    at_c_star_3: float  # solution 3's error at c = c*
    below_3: float  # solution 3's error at c = c* - delta
    text_readout_3: float  # solution 3's error with the text's read-out at c = 100


def threshold_errors(seed: int) -> ThresholdErrors:
    """Signed q_true ~ N(0, 1): errors at c*, just below c* (with the offset), and of the text's read-out
    (c = 100, no offset), for solutions 2 and 3."""
    q_true = np.random.default_rng(seed).standard_normal((N, N))
    tokens = all_sequences(N, M)
    X, Y = encode(tokens, N), targets(tokens, q_true)
    c_star = relu_threshold(q_true)
    delta = REL_DELTA * c_star
    at = {s: _max_error(build(s, q_true, M, relu_const=c_star), X, Y) for s in ("2", "3")}
    below = {s: _max_error(build(s, q_true, M, relu_const=c_star - delta), X, Y) for s in ("2", "3")}
    text = {s: _max_error(build(s, q_true, M, relu_const=100.0, shift=False), X, Y) for s in ("2", "3")}
    return ThresholdErrors(c_star=c_star, delta=delta, max_q=float(q_true.max()), min_q=float(q_true.min()),
                           at_c_star_2=at["2"], below_2=below["2"], text_readout_2=text["2"],
                           at_c_star_3=at["3"], below_3=below["3"], text_readout_3=text["3"])


@claim("logic.relu-constant", where="§2.2, after eq. 2.21; §2.3, end",
       statement="the constant of the ReLU read-out (the text's 100) simply needs to be larger than all values of "
                 "q_true, for q_true >= 0 (the read-out clips negative targets: logic.solution-2)",
       paper_value="100, 'larger than all values of q_true'", anchor="logic.relu-constant",
       falsifier="an error above 1e-12 of solution 2 or 3 with the text's read-out at c = max q_true on a table "
                 "q_true >= 0, over all 4^5 sequences")
def _relu_constant(seed: int) -> Check:
    """Measured: the largest error of solutions 2 and 3 with the text's read-out at c = max q_true on a table
    q_true >= 0 (<= 1e-12: the condition suffices); the detail shows it is also needed (a leak >= delta just
    below) and what holds for a signed table (values of :func:`threshold_errors`)."""
    t = text_threshold_errors(seed)
    v = threshold_errors(seed)
    at = max(t.at_max_q_2, t.at_max_q_3)
    detail = (f"q_true >= 0: error {at:.1e} at c = max q_true = {t.max_q:.3f}, "
              f"{min(t.below_2, t.below_3):.2e} at c - {t.delta:.1e}; signed q_true: the text's read-out "
              f"errs by {v.text_readout_2:.4f} = -min q_true at c = 100, attnlab's (offset m) is exact from "
              f"c* = {v.c_star:.4f} = max q - min q ({max(v.at_c_star_2, v.at_c_star_3):.1e}) and leaks "
              f"{min(v.below_2, v.below_3):.2e} below")
    return at_most(at, TOL, detail, {"nonnegative": t.to_dict(), "signed": v.to_dict()})
