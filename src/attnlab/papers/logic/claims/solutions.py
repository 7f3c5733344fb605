"""Each hand-programmed solution of §2 outputs Y_i = q_true(X_{i-1}, X_i) on every input.

Checked in float64 (:mod:`attnlab.papers.logic.solutions`) on every one of the N^M sequences
at (N, M) = (3, 6) and (4, 5), and on RANDOM uniform sequences at the text's §4 size
N = 10, M = 50, with q_true ~ N(0, 1) drawn from the seed (negative targets included). The
measured number is the largest |Y_hat - Y| over all of them; the tolerance 1e-12 is round-off
(the weights are exact and the sums have at most N + M terms of size max |q_true|).
Where the text is wrong (eq. 2.11's C, the missing offset for negative q_true, Y_1 in the
linear case) the corrected construction is the one checked: see notes_errors.
"""

from __future__ import annotations

import numpy as np

from attnlab.papers.logic.encoding import all_sequences, encode, random_sequences, targets
from attnlab.papers.logic.solutions import build, forward, linear_q_true, solution1_linear
from attnlab.registry import Measurement, at_most, claim

TOL = 1e-12
EXHAUSTIVE = ((3, 6), (4, 5))
RANDOM = (10, 50, 10_000)  # N, M, sequences


def _cases(seed: int):
    """(name, tokens, N, M) for the exhaustive and the random sets."""
    rng = np.random.default_rng(seed)
    for N, M in EXHAUSTIVE:
        yield f"all {N}^{M}", all_sequences(N, M), N, M, rng
    N, M, S = RANDOM
    yield f"{S} random at N={N}, M={M}", random_sequences(N, M, S, rng), N, M, rng


def max_error(solution: str, seed: int) -> tuple[float, dict]:
    """Largest |Y_hat - Y| of ``solution`` ("1", "1-linear", "2", "3") over the cases, per case."""
    per = {}
    for name, tokens, N, M, rng in _cases(seed):
        X = encode(tokens, N)
        if solution == "1-linear":
            d = rng.standard_normal(N)
            w, Y = solution1_linear(d, M, float(N)), targets(tokens, linear_q_true(d, float(N)))
            Y[:, 0] = d[tokens[:, 0]]
        else:
            q_true = rng.standard_normal((N, N))
            w, Y = build(solution, q_true, M), targets(tokens, q_true)
        per[name] = float(np.abs(forward(w, X) - Y).max())
    return max(per.values()), per


def _measure(solution: str, seed: int) -> Measurement:
    err, per = max_error(solution, seed)
    detail = "; ".join(f"{k}: {v:.2e}" for k, v in per.items())
    return at_most(err, TOL, f"max |Y_hat - Y| ({detail})", {"per_case": per})


@claim("logic.solution-1", where="§2.1, eq. 2.12",
       statement="q = (0 | 2 D_-1), k = (0 | I_M), v = diag(I_N, 0), B with N^2 rows, bias and C give "
                 "Y = C ReLU(B(ATTENTION_*^t + X) + bias) = (0, q(X_1, X_2), ..., q(X_{M-1}, X_M))",
       paper_value="exact")
def _solution1(seed: int) -> Measurement:
    """Solution 1 with C corrected on the diagonal pairs (eq. 2.11's C is wrong there: notes_errors)."""
    return _measure("1", seed)


@claim("logic.solution-1-linear", where="§2.1, eq. 2.13",
       statement="for q_true(a, b) = base d_a + d_b, q = (0 | base D_-1) with no B and no ReLU gives "
                 "Y = C (ATTENTION_*^t + X), C = (d | 0)",
       paper_value="exact (base 10, digits 0..9)")
def _linear(seed: int) -> Measurement:
    """Random digits d ~ N(0, 1), base N; Y_i = base d_{X_{i-1}} + d_{X_i}, Y_1 = d_{X_1} (notes_errors)."""
    return _measure("1-linear", seed)


@claim("logic.solution-2", where="§2.2, eq. 2.21",
       statement="k^t q = diag(A_2, 0), v = diag(0, S), skip and ReLU read the diagonal of S X_C^t A_2 X_C: "
                 "Y_i = q(X_{i-1}, X_i)",
       paper_value="exact")
def _solution2(seed: int) -> Measurement:
    """Solution 2 with the offset m that keeps negative q_true (the text clips them: notes_errors)."""
    return _measure("2", seed)


@claim("logic.solution-3", where="§2.3, eq. 2.32",
       statement="k^t q = diag(0, D_-1), v = diag(A_2^t, 0), skip and ReLU give Y = 1 ReLU(c X_C + A_2^t X_C D_-1 - c)",
       paper_value="exact")
def _solution3(seed: int) -> Measurement:
    """Solution 3 with the offset m that keeps negative q_true (notes_errors)."""
    return _measure("3", seed)
