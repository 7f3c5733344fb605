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
    CHUNK,
    SOLUTIONS,
    LogicWeights,
    build,
    forward,
    linear_q_true,
    relu_threshold,
    solution1_linear,
)
from attnlab.checks import at_most
from attnlab.estimates import Estimate
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


THIN_SLOWDOWN = 10  # products with M columns per sequence (v X, B H): against one large GEMM, measured
BASE_BYTES = 8 * 2 ** 20  # what any build holds beside its arrays, measured


def sequence_count(p: LogicParams) -> int:
    """S: N^M when N^M <= 10^5 (every sequence), else ``samples``."""
    return p.N ** p.M if p.N ** p.M <= EXHAUSTIVE_LIMIT else p.samples


def estimate_logic(p: LogicParams) -> Estimate:
    """Peak memory and work of :func:`construct_logic`, with S sequences (:func:`sequence_count`),
    D = N + M rows of X, c = min(S, CHUNK) sequences per forward chunk, float64 (8 bytes):

    memory  BASE_BYTES + 8 (S D M                 X (S, D, M)
                            + 6 S M               tokens (int64, and the index arrays that
                                                  build them), Y, Y_hat
                            + 2 M D + D^2 + N^2   q, k, v, q_true
                            + [solution 1] N^2 (D + 2)               B, bias, C
                            + c M (3 N^2 [solution 1] | 6 D))        one chunk's B H + bias, ReLU
                                                                     (or the attention's products)
    gemm    S 2 M D^2                                                X^t k^t q: one GEMM per chunk
            + THIN_SLOWDOWN S (2 D^2 M + 4 M^2 D)                    v X and the M x M products of
                                                                     eq. 2.28, M columns each
            + [solution 1] THIN_SLOWDOWN S (2 N^2 D M + 2 N^2 M)     B H and C Z
    traffic 8 S D M (4 + 2)                       X written, read by the products and the read-out
            + [solution 1] 8 S N^2 M 6            B H + bias, ReLU, C Z over the N^2 rows
    calls   30 S / CHUNK + 20

    The memory is what the build holds at once. glibc's allocator may keep more: freed blocks
    under its mmap threshold (up to 32 MiB) stay with the process, so many chunks of a few MiB
    each can raise the resident size above the estimate (4x measured for solution 1 at N = 10,
    M = 5; with MALLOC_MMAP_THRESHOLD_=1048576 the estimate holds). Measured against this
    estimate (one BLAS thread, that threshold): peak memory within 1.5x, time within 3x for
    S >= 10^4 sequences (below, a few milliseconds of fixed costs).
    """
    S, D, M, N2 = sequence_count(p), p.N + p.M, p.M, p.N * p.N
    c = min(S, CHUNK)
    one = p.solution == "1"
    peak = BASE_BYTES + 8 * (S * D * M + 6 * S * M + 2 * M * D + D * D + N2 + (N2 * (D + 2) if one else 0)
                             + c * M * (3 * N2 if one else 6 * D))
    gemm = S * 2.0 * M * D * D + THIN_SLOWDOWN * S * (2.0 * D * D * M + 4.0 * M * M * D
                                                     + ((2.0 * N2 * D * M + 2.0 * N2 * M) if one else 0))
    traffic = 8.0 * S * D * M * 6 + (8.0 * S * N2 * M * 6 if one else 0)
    what = (f"X ({S} x {D} x {M} float64)" + (f" and B H per chunk ({c} x {N2} x {M})" if one else ""))
    lower = ("samples", "N", "M") if p.N ** p.M > EXHAUSTIVE_LIMIT else ("N", "M")
    return Estimate(peak, what, gemm=gemm, traffic=traffic, calls=30 * S / CHUNK + 20, lower=lower)


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
    # attnlab's weights (solution 1's corrected C, the offset m of 2 and 3, Y_1 = d_(X_1) in the linear case), on
    # q_true ~ N(0, 1) where the text's hypotheses for 2 and 3 (q_true >= 0) do not hold: unanchored, so the
    # check is sanity (it tests attnlab's construction, not a statement of the text)
    return ConstructionResult(
        arrays=dict(tokens=tokens, X=X, Y=Y, q_true=q_true, form=np.array(w.form), **w.arrays()), values=values,
        check=at_most(err, MAX_ERROR, f"{len(tokens)} sequences, float64", quantity="max |Y_hat - Y|",
                      role="construction", where="§2"), notes=notes)


register_construction(Construction(
    "logic", "logic",
    "§2: a one-level transformer without softmax giving Y_i = q_true(X_{i-1}, X_i) (solutions 1, 1-linear, 2, 3)",
    LogicParams, construct_logic, estimate=estimate_logic))
