"""§2.3.1: the second and third solutions amount to the same.

Two checks on every one of the 4^5 and 3^6 sequences (float64):

* the identity the text proves, column by column: for q_true >= 0 and c >= max q_true,
      diag(S X_C^t A_2 X_C) = 1 ReLU(c X_C + A_2^t X_C D_-1 - c)        (eq. 2.29, 2.30, 2.32)
  (entry i is q(X_{i-1}, X_i), entry 1 is 0), with q_true = |N(0, 1)| and c = 100 as in the
  text. It needs q_true >= 0: for negative entries the right side is ReLU of the left;
* solutions 2 and 3 give identical outputs on every input for q_true ~ N(0, 1), both as the
  text builds them (constant 100, no offset: both then output ReLU(q_true)) and as attnlab
  builds them (:mod:`attnlab.papers.logic.solutions`, with the offset).
"""

from __future__ import annotations

import numpy as np

from attnlab.papers.logic.encoding import all_sequences, encode, shift_matrix
from attnlab.papers.logic.solutions import build, forward
from attnlab.checks import Check, at_most
from attnlab.registry import claim

TOL = 1e-12
SIZES = ((4, 5), (3, 6))


def diagonal_identity_gap(q_true: np.ndarray, tokens: np.ndarray, c: float) -> float:
    """max |diag(S X_C^t A_2 X_C) - 1 ReLU(c X_C + A_2^t X_C D_-1 - c)| over the sequences."""
    N, M = q_true.shape[0], tokens.shape[1]
    XC = encode(tokens, N)[:, :N, :]  # (S, N, M)
    D = shift_matrix(M)
    left = np.diagonal(D.T @ XC.transpose(0, 2, 1) @ q_true @ XC, axis1=1, axis2=2)
    right = np.maximum(c * XC + q_true.T @ XC @ D - c, 0.0).sum(axis=1)
    return float(np.abs(left - right).max())


@claim("logic.equivalence", where="§2.3.1, eq. 2.29-2.32",
       statement="diag(S X_C^t A_2 X_C) = 1 ReLU(100 X_C + A_2^t X_C D_-1 - 100) column by column, so "
                 "solutions 2 and 3 give the same output on every input",
       paper_value="identical", anchor="logic.equivalence",
       falsifier="a sequence among all 4^5 and 3^6 where the two sides of the identity (computed apart) or the "
                 "outputs of solutions 2 and 3 differ by more than 1e-12")
def _equivalence(seed: int) -> Check:
    """Measured: the larger of the identity's gap and max |Y_2 - Y_3| over all sequences (<= 1e-12)."""
    rng = np.random.default_rng(seed)
    gaps, diffs = {}, {}
    for N, M in SIZES:
        tokens = all_sequences(N, M)
        gaps[f"{N}^{M}"] = diagonal_identity_gap(np.abs(rng.standard_normal((N, N))), tokens, 100.0)
        q_true = rng.standard_normal((N, N))
        X = encode(tokens, N)
        text = dict(relu_const=100.0, shift=False)
        diffs[f"{N}^{M}"] = float(max(
            np.abs(forward(build("2", q_true, M, **text), X) - forward(build("3", q_true, M, **text), X)).max(),
            np.abs(forward(build("2", q_true, M), X) - forward(build("3", q_true, M), X)).max()))
    worst = max(*gaps.values(), *diffs.values())
    return at_most(worst, TOL, f"identity gap {max(gaps.values()):.1e}, max |Y_2 - Y_3| {max(diffs.values()):.1e}",
                   {"identity_gap": gaps, "solution_2_vs_3": diffs})
