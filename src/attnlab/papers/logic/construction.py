"""``attnlab construct logic``: one of the text's hand-programmed transformers (§2), saved.

    attnlab construct logic --set solution=1|1-linear|2|3 --set N=4 --set M=5 --set seed=0 --out F.npz

q_true ~ N(0, 1) i.i.d. from the seed (as in §4); for ``1-linear`` the table is
q_true(a, b) = base d_a + d_b with digits d = 0..N-1 and base N (eq. 2.13 at N = 10: the
two-digit number X_{i-1} X_i). The sequences are every one of the N^M when N^M <= 10^5,
else ``samples`` uniform ones. The .npz holds, in the text's orientation (tokens are
columns): tokens (S, M) 0-based categories, X (S, N + M, M), Y (S, M), q_true (N, N), and
q, k, v, C, bias (and B for solution 1) with every constant folded in, so that with
A = v X X^t k^t q X (eq. 2.28):

    solution 1:        Y = C ReLU(B (A + X) + bias[:, None])
    solution 1-linear: Y = C (A + X)               (bias zeros; Y_1 = d_{X_1}, see solutions)
    solutions 2, 3:    Y = C ReLU(A + X + bias[:, None])

and ``form`` (a 0-d string) names which: "relu-B", "linear" or "relu".

The check recomputes Y from X with the weights (float64) and compares with q_true.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnlab.config import Config, check_choice, check_int, check_number, check_seed, param
from attnlab.errors import ConfigError
from attnlab.papers.logic.encoding import all_sequences, encode, random_sequences, targets
from attnlab.papers.logic.solutions import (
    SOLUTIONS,
    LogicWeights,
    build,
    forward,
    linear_q_true,
    relu_threshold,
    solution1_linear,
)
from attnlab.checks import at_most
from attnlab.registry import Construction, ConstructionResult, register_construction

EXHAUSTIVE_LIMIT = 10 ** 5  # all N^M sequences up to this many
MAX_ERROR = 1e-12  # the check: max |Y_hat - Y| in float64


@dataclass(frozen=True)
class LogicParams(Config):
    """Parameters of ``attnlab construct logic``."""

    solution: str = param("3", "which hand-programmed solution: 1, 1-linear, 2 or 3 (§2.1-2.3)")
    N: int = param(4, "number of categories N")
    M: int = param(5, "sequence length M (>= 2)")
    seed: int = param(0, "seed for q_true ~ N(0, 1) and the sampled sequences")
    samples: int = param(1000, "sequences drawn when N^M > 10^5 (else every sequence is used)")
    relu_const: float | None = param(None, "solutions 2, 3: the ReLU constant c (default 2 c*; exact iff c >= c*)")

    def validate(self) -> None:
        check_choice("solution", self.solution, SOLUTIONS)
        check_int("N", self.N, minimum=1)
        check_int("M", self.M, minimum=2)
        check_seed(self.seed)
        check_int("samples", self.samples, minimum=1)
        if self.relu_const is not None:
            check_number("relu_const", self.relu_const, 0, open_min=True)
            if self.solution not in ("2", "3"):
                raise ConfigError(f"relu_const applies to solutions 2 and 3 only, not {self.solution}: drop it")


def logic_data(p: LogicParams) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, LogicWeights, bool]:
    """(tokens, X, Y, q_true, weights, exhaustive) for the parameters; Y from q_true (linear
    case: Y_1 = d_{X_1}); exhaustive: whether tokens are all N^M sequences."""
    rng = np.random.default_rng(p.seed)
    if p.solution == "1-linear":
        digits, base = np.arange(p.N, dtype=np.float64), float(p.N)
        q_true, w = linear_q_true(digits, base), solution1_linear(digits, p.M, base)
    else:
        q_true = rng.standard_normal((p.N, p.N))
        kw = {"relu_const": p.relu_const} if p.solution in ("2", "3") else {}
        w = build(p.solution, q_true, p.M, **kw)
    exhaustive = p.N ** p.M <= EXHAUSTIVE_LIMIT
    tokens = all_sequences(p.N, p.M) if exhaustive else random_sequences(p.N, p.M, p.samples, rng)
    Y = targets(tokens, q_true)
    if p.solution == "1-linear":
        Y[:, 0] = digits[tokens[:, 0]]
    return tokens, encode(tokens, p.N), Y, q_true, w, exhaustive


def construct_logic(p: LogicParams) -> ConstructionResult:
    """Build, check (max |Y_hat - Y| over the sequences) and return the arrays listed above."""
    tokens, X, Y, q_true, w, exhaustive = logic_data(p)
    err = float(np.abs(forward(w, X) - Y).max())
    values = {"solution": p.solution, "N": p.N, "M": p.M, "seed": p.seed, "sequences": len(tokens),
              "exhaustive": exhaustive, "max_abs_error": err}
    notes = []
    if w.relu_const is not None:
        values.update(relu_const=w.relu_const, relu_threshold=relu_threshold(q_true), offset=w.offset)
    if p.solution == "1":
        notes.append("C corrected on the diagonal pairs (the text's eq. 2.11 C fails when X_{i-1} = X_i)")
    if p.solution == "1-linear":
        notes.append("Y_1 = d_{X_1} (a linear read-out cannot make column 1 vanish)")
    if w.relu_const is not None:
        notes.append("offset m keeps negative q_true (the text's read-out outputs ReLU(q_true))")
    return ConstructionResult(
        arrays=dict(tokens=tokens, X=X, Y=Y, q_true=q_true, form=np.array(w.form), **w.arrays()), values=values,
        check=at_most(err, MAX_ERROR, f"{len(tokens)} sequences, float64", quantity="max |Y_hat - Y|",
                      role="construction", where="§2"), notes=notes)


register_construction(Construction(
    "logic", "logic",
    "§2: a one-level transformer without softmax giving Y_i = q_true(X_{i-1}, X_i) (solutions 1, 1-linear, 2, 3)",
    LogicParams, construct_logic))
