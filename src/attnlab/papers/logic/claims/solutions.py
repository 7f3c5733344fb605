"""Each hand-programmed solution of §2 outputs Y_i = q_true(X_{i-1}, X_i) on every input.

Checked in float64 (:mod:`attnlab.papers.logic.solutions`) on every one of the N^M sequences
at (N, M) = (3, 6) and (4, 5), and on RANDOM uniform sequences at the text's §4 size
N = 10, M = 50. The measured number is the largest |Y_hat - Y| over all of them; the
tolerance 1e-12 is round-off (the weights are exact and the sums have at most N + M terms of
size max |q_true|).

Each claim measures the text's construction as the text states it, for a table q_true ~ N(0, 1)
drawn from the seed (the text: "any function" into R; §4 draws N(0, 1)): eq. 2.11's C for
solution 1, the read-out with the constant 100 and no offset for solutions 2 and 3. Where that
differs (:mod:`attnlab.papers.logic.errata`), the values give what holds instead: the same
construction on a table q_true >= 0, and attnlab's corrected one (the C of
:func:`~attnlab.papers.logic.solutions.solution1`, the offset m of solutions 2 and 3).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from attnlab.checks import Check, at_most
from attnlab.papers.logic.encoding import all_sequences, encode, random_sequences, targets
from attnlab.papers.logic.solutions import build, forward, linear_q_true, solution1_linear
from attnlab.registry import claim

TOL = 1e-12
TEXT_CONST = 100.0  # the text's ReLU constant (§2.2, §2.3)
EXHAUSTIVE = ((3, 6), (4, 5))
RANDOM = (10, 50, 10_000)  # N, M, sequences


def _cases(seed: int) -> Any:
    """(name, tokens, N, M, rng) for the exhaustive and the random sets."""
    rng = np.random.default_rng(seed)
    for N, M in EXHAUSTIVE:
        yield f"all {N}^{M}", all_sequences(N, M), N, M, rng
    N, M, S = RANDOM
    yield f"{S} random at N={N}, M={M}", random_sequences(N, M, S, rng), N, M, rng


def max_error(solution: str, seed: int, *, table: str = "normal", **build_kw) -> tuple[float, dict]:
    """Largest |Y_hat - Y| of ``solution`` over the cases, and per case (plus "min q_true", the most
    negative table entry over the cases, under the key "min_q").

    solution: "1", "2", "3" (built with ``build_kw``: text_C=True, relu_const=100, shift=False give the
    text's versions) or "1-linear" (random digits d ~ N(0, 1), base N; the error over i >= 2, and
    |Y_hat_1| apart under the key "Y_1"). table: "normal" (q_true ~ N(0, 1)) or "nonnegative" (|N(0, 1)|)."""
    per, first, min_q = {}, 0.0, np.inf
    for name, tokens, N, M, rng in _cases(seed):
        X = encode(tokens, N)
        if solution == "1-linear":
            d = rng.standard_normal(N)
            out = forward(solution1_linear(d, M, float(N)), X)
            Y = targets(tokens, linear_q_true(d, float(N)))
            per[name] = float(np.abs(out[:, 1:] - Y[:, 1:]).max())
            first = max(first, float(np.abs(out[:, 0]).max()))
            continue
        q_true = rng.standard_normal((N, N))
        if table == "nonnegative":
            q_true = np.abs(q_true)
        min_q = min(min_q, float(q_true.min()))
        per[name] = float(np.abs(forward(build(solution, q_true, M, **build_kw), X) - targets(tokens, q_true)).max())
    if solution == "1-linear":
        per["Y_1"] = first
        return max(v for k, v in per.items() if k != "Y_1"), per
    err = max(per.values())
    per["min_q"] = min_q
    return err, per


def _fmt(per: dict) -> str:
    return "; ".join(f"{k}: {v:.2e}" for k, v in per.items() if k not in ("Y_1", "min_q"))


@claim("logic.solution-1", where="§2.1, eq. 2.11-2.12",
       statement="q = (0 | 2 D_-1), k = (0 | I_M), v = diag(I_N, 0), B with N^2 rows, bias and C = (q_true(1,1), "
                 "q_true(2,2), ..., q_true(4,3)) give Y = C ReLU(B(ATTENTION_*^t + X) + bias) = (0, q(X_1, X_2), ..., "
                 "q(X_{M-1}, X_M))",
       paper_value="exact", anchor="logic.solution-1",
       falsifier="a sequence among all 3^6, all 4^5 and 10,000 at N = 10, M = 50 whose output differs from "
                 "(0, q(X_1, X_2), ..., q(X_{M-1}, X_M)) by more than 1e-12",
       erratum="logic.solution1-repeated-pairs")
def _solution1(seed: int) -> Check:
    """The text's C (eq. 2.11, C_ab = q_true(a, b) on every hidden unit, B's rows 2 e_a + e_b with bias -4, and
    -8 on the diagonal rows): wrong whenever X_{i-1} = X_i (errata: logic.solution1-repeated-pairs). Values:
    the same weights with attnlab's C (C_aa = q(a, a) - 2 sum_{b != a} q(a, b)), exact."""
    err, per = max_error("1", seed, text_C=True)
    fixed, per_fixed = max_error("1", seed)
    return at_most(err, TOL, f"the text's C: max |Y_hat - Y| ({_fmt(per)}); with C_aa corrected: {fixed:.1e}",
                   {"per_case": per, "corrected_C": fixed, "corrected_C_per_case": per_fixed})


@claim("logic.solution-1-linear", where="§2.1, eq. 2.13",
       statement="for q_true(a, b) = base d_a + d_b (the two-digit number at base 10), q = (0 | base D_-1) with no B "
                 "and no ReLU gives Y_i = C (ATTENTION_*^t + X)_i, C = (d | 0), for i = 2..M",
       paper_value="exact (base 10, digits 0..9)", anchor="logic.solution-1-linear",
       falsifier="an entry i >= 2 of some sequence among all 3^6, all 4^5 and 10,000 at N = 10, M = 50 whose output "
                 "differs from base d_(X_{i-1}) + d_(X_i) by more than 1e-12")
def _linear(seed: int) -> Check:
    """Random digits d ~ N(0, 1), base N; the error over i >= 2. Entry 1 of the output is d_{X_1}, not the 0 of
    the text's (0, Y_2, ..., Y_M) (errata: logic.linear-first-entry): its largest |value| is in the values."""
    err, per = max_error("1-linear", seed)
    return at_most(err, TOL, f"max |Y_hat_i - Y_i|, i >= 2 ({_fmt(per)}); "
                             f"entry 1 is d_(X_1), up to {per['Y_1']:.2f}", {"per_case": per})


def _read_out_claim(solution: str, seed: int) -> Check:
    err, per = max_error(solution, seed, relu_const=TEXT_CONST, shift=False)
    nonneg, _ = max_error(solution, seed, table="nonnegative", relu_const=TEXT_CONST, shift=False)
    offset, _ = max_error(solution, seed)
    return at_most(err, TOL, f"the text's read-out (c = 100, no offset), q_true ~ N(0, 1): max |Y_hat - Y| "
                             f"({_fmt(per)}) against -min q_true = {-per['min_q']:.2f}: every negative target comes out 0; on |N(0, 1)| tables "
                             f"{nonneg:.1e}; with the offset m = -min q_true: {offset:.1e}",
                   {"per_case": per, "min_q_true": per["min_q"], "nonnegative_table": nonneg, "with_offset": offset})


@claim("logic.solution-2", where="§2.2, eq. 2.16-2.21",
       statement="k^t q = diag(A_2, 0) with A_2 = q_true (any functional into R), v = diag(0, S), skip and "
                 "ReLU with bias -100 read the diagonal of S X_C^t A_2 X_C: Y_i = q(X_{i-1}, X_i)",
       paper_value="exact", anchor="logic.solution-2",
       falsifier="a sequence among all 3^6, all 4^5 and 10,000 at N = 10, M = 50 whose output differs from "
                 "(0, q(X_1, X_2), ..., q(X_{M-1}, X_M)) by more than 1e-12 for a table q_true ~ N(0, 1)",
       erratum="logic.negative-targets")
def _solution2(seed: int) -> Check:
    """The text's read-out (constant 100, no offset) on q_true ~ N(0, 1): it outputs ReLU(q_true) (errata:
    logic.negative-targets). Values: the same on q_true >= 0 (exact) and with the offset m (exact)."""
    return _read_out_claim("2", seed)


@claim("logic.solution-3", where="§2.3, eq. 2.27-2.32",
       statement="k^t q = diag(0, D_-1), v = diag(A_2^t, 0), skip and ReLU give Y = 1 ReLU(100 X_C + A_2^t X_C D_-1 "
                 "- 100) = (0, q(X_1, X_2), ..., q(X_{M-1}, X_M)) for any functional q_true into R",
       paper_value="exact", anchor="logic.solution-3",
       falsifier="a sequence among all 3^6, all 4^5 and 10,000 at N = 10, M = 50 whose output differs from "
                 "(0, q(X_1, X_2), ..., q(X_{M-1}, X_M)) by more than 1e-12 for a table q_true ~ N(0, 1)",
       erratum="logic.negative-targets")
def _solution3(seed: int) -> Check:
    """As solution 2 (the same read-out, the same clipping of negative targets)."""
    return _read_out_claim("3", seed)
