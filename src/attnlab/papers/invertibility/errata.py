"""Where the invertibility note is wrong or loose: one :class:`attnlab.errata.TextError` per finding.

Every record says where the note says it, what is right instead, whose error it is (all
are the note's own: it cites no source for its proof), what kind of error, the witness
(the smallest counterexample, or the measured numbers and the claim that measures
them) and whether Theorem 1 survives. They are registered (:func:`attnlab.registry.register_errata`,
listed by :func:`attnlab.registry.all_errata`); the report of ``invertibility.proof-notes``
shows them as a table, and beside each the number that measures it.

Theorem 1 in one sentence, as attnlab reads it after these records: with N tokens,
length L, dimension d and P heads, rank A <= rank_cap = min(N^L, Pd, 1 + P (N + L - 2))
for *every* embedding and every W_QK (a proof, :func:`attnlab.papers.invertibility.matrix.rank_cap`),
so A can be invertible only if Pd >= N^L and 1 + P (N + L - 2) >= N^L. That the proof's
construction reaches rank_cap for generic w_p (so that those heads also suffice) is a
conjecture, certified exactly in the cases of :data:`CERTIFIED_FULL` and :data:`CERTIFIED_BELOW`.

One record per error: the rows that witness one error (the claims positional-cap and
minimal-heads and a row of the experiment conditioning, for the cap) name that record as their
``erratum`` and are counted as one finding; ``check`` lists them.
"""

from __future__ import annotations

from typing import Iterable

from attnlab.errata import TextError
from attnlab.papers.invertibility.anchors import CAP, FINAL_DETERMINANT, HYPERPLANE_VT, TAYLOR_SIGN
from attnlab.registry import register_errata

CERTIFIED_FULL = ((2, 2, 3, 2), (3, 2, 4, 3), (2, 3, 4, 3), (2, 2, 4, 2), (4, 2, 5, 4), (3, 3, 5, 7), (2, 4, 6, 4))
"""(N, L, d, P) with d > N + L - 2 and 1 + P (N + L - 2) >= N^L: certified rank N^L (claim
invertibility.theorem1-full-rank), so d > N + L - 2 alone does not break Theorem 1."""

CERTIFIED_BELOW = ((2, 2, 4, 1), (2, 3, 4, 2), (3, 3, 5, 6), (2, 4, 6, 3), (2, 3, 8, 1))
"""(N, L, d, P) with Pd >= N^L and 1 + P (N + L - 2) < N^L: certified rank 1 + P (N + L - 2) =
3, 7, 25, 13, 4 below N^L = 4, 8, 27, 16, 8 (claim invertibility.positional-cap)."""


def _cases(cases: Iterable[tuple[int, int, int, int]]) -> str:
    return ", ".join(f"({N},{L},{d},{P})" for N, L, d, P in cases)


ERRATA = (
    TextError(
        id="invertibility.n-to-the-k",
        where="Theorem 1",
        says="For Pd >= N^k, there exist W_QK^p, e and pos such that A is invertible",
        correct="Pd >= N^L: A is N^L x Pd, so rank A <= Pd and Pd >= N^L is necessary for rank N^L",
        whose="the text", kind="typo",
        witness="k appears nowhere else in the note, and L is the sequence length of every other line; A in "
                "R^{N^L, Pd} has rank at most Pd, below N^L when Pd < N^L",
        survives="yes", conclusion="read with N^L, as every check of attnlab does"),
    TextError(
        id=CAP,
        where="Theorem 1",
        says="Pd >= N^L heads' dimensions suffice for an invertible A",
        correct="also 1 + P (N + L - 2) >= N^L is needed: each block A^p = C^p [E; Pos] has coefficient rows whose "
                "token part and position part each sum to 1, so col A^p lies in span{1} + an (N+L-2)-dimensional "
                "space and rank A <= 1 + P (N + L - 2) for every e, pos and W_QK. So P >= max(ceil(N^L / d), "
                "ceil((N^L - 1) / (N + L - 2))) heads are necessary (proved). That this many suffice, i.e. that the "
                "rank reaches min(N^L, Pd, 1 + P (N + L - 2)) for generic w_p, is a conjecture, certified in the "
                "cases named in the witness",
        whose="the text", kind="missing hypothesis",
        witness="smallest: (N, L, d, P) = (2, 2, 4, 1), Pd = 4 = N^L but rank A <= 1 + 1 x 2 = 3 for every choice. "
                f"Certified rank 1 + P (N+L-2) < N^L at (N,L,d,P) = {_cases(CERTIFIED_BELOW)} (e.g. (3,3,5,6): "
                f"Pd = 30 >= 27, rank 25); certified rank N^L although d > N + L - 2 at {_cases(CERTIFIED_FULL)}, "
                "where 1 + P (N + L - 2) >= N^L. The claims positional-cap (these cases) and minimal-heads (P = "
                "ceil(N^L/d) falls short at (2,3,4), (3,3,5), (2,4,6)) and the experiment conditioning's d sweep "
                "measure the same error",
        survives="partly",
        conclusion="A is invertible for enough heads: false for Pd >= N^L when 1 + P (N + L - 2) < N^L; true "
                   "(certified) in every case tried where both bounds allow it",
        check="invertibility.positional-cap, invertibility.minimal-heads, invertibility.conditioning"),
    TextError(
        id="invertibility.property-2",
        where="Proof, property (2), and 'Such embeddings exist using transcendental numbers'",
        says="every nonzero integer polynomial of degree d in the (N + L) d coefficients is nonzero at them; "
             "transcendental coefficients give this",
        correct="the proof applies property (2) to the degree-2 exponents x(t, L)_1 (x(t, i)_1 - x(t, i_max)_1) "
                "and to a d x d determinant (degree d): it needs every degree up to max(2, d), which algebraically "
                "independent coefficients give; attnlab uses c_i = 2^(-m_i) exp(sqrt(p_i)), p_i the primes "
                "(Lindemann-Weierstrass, sqrt of distinct primes being Q-linearly independent)",
        whose="the text", kind="omission",
        witness="transcendental is not enough: e and e^2 are both transcendental and x^2 - y vanishes on them; "
                "with d = 1 the exponents are degree-2 polynomials, outside 'degree d'",
        survives="yes", conclusion="such embeddings exist (attnlab's explicit embeddings)"),
    TextError(
        id="invertibility.rows-span",
        where="Proof, first paragraph",
        says="A is invertible iff its rows span R^{N^L}, i.e. iff the image of f is contained in no hyperplane",
        correct="the columns must span R^{N^L} (the rows lie in R^{Pd}); and that the columns of f(W) over all W "
                "span R^{N^L} gives rank N^L for some finite set of W_QK^p, i.e. for some number of heads, not for "
                "every P with Pd >= N^L: the proof leaves the number of heads unproved",
        whose="the text", kind="omission",
        witness="on paper: A is N^L x Pd, so its N^L rows lie in R^{Pd}. If no u != 0 is orthogonal to f(W)_k for "
                "every W and k, some N^L columns f(W_1)_k1, ..., f(W_m)_km span R^{N^L}, but nothing bounds the "
                "number m of heads by ceil(N^L/d): a block's rank is at most N + L - 1 at every W, below d when "
                "d > N + L - 1, and where 1 + P (N + L - 2) < N^L no choice of P heads suffices (record "
                "cap-below-n-to-the-l, which the claims measure)",
        survives="partly", conclusion="spanning gives invertibility for some number of heads; the number the "
                                      "theorem states is not proved by it"),
    TextError(
        id="invertibility.w-support",
        where="Proof, 'Let us only consider matrices W such that W_ij = 0 if i != 1 != j'",
        says="W_ij = 0 if i != 1 != j, and then x(t, L)^T W (x(t, i) - x(t, i_max)) = x(t, L)_1 W_11 "
             "(x(t, i)_1 - x(t, i_max)_1)",
        correct="W = w E_11: W_ij = 0 unless i = j = 1",
        whose="the text", kind="typo",
        witness="'i != 1 != j' (i != 1 and j != 1) leaves the first row and column free: W = E_11 + E_12 satisfies "
                "it and its score has the extra term x(t, L)_1 (x(t, i)_2 - x(t, i_max)_2)",
        survives="yes", conclusion="the next line computes with W = w E_11, as attnlab does"),
    TextError(
        id=HYPERPLANE_VT,
        where="Proof, 'take (v_t) such that sum_t v_t^T f_{x(t,j)} = 0'",
        says="(v_t) with v_t in R^d, sum_t v_t^T f_t(W) = 0 as a functional equality, forces v = 0",
        correct="a hyperplane of R^{N^L} is (u_t) with u_t scalar: u^T f_k(W) = 0 for each column k. With v_t in "
                "R^d the claim is that the N^L d functions f_t(W)_k are linearly independent, which is false for "
                "d >= L. With scalar u_t the proof's last step needs only y_n != 0, true for every d (record "
                "final-determinant)",
        whose="the text", kind="wrong statement",
        witness="f_t(W) - x(t, i_max) is a combination of the L - 1 vectors x(t, i) - x(t, i_max); for d >= L a v_t "
                "orthogonal to them makes v_t^T f_t(W) = v_t^T x(t, i_max) constant in W, and two sequences give "
                "a vanishing combination. Measured for (N, L, d) = (2, 3, 3) over 64 w in [0.01, 50] (experiment "
                "invertibility.proof-notes)",
        survives="partly", conclusion="the scalar (u_t) statement, which is what invertibility needs, holds in "
                                      "every certified case",
        check="invertibility.proof-notes"),
    TextError(
        id=TAYLOR_SIGN,
        where="Proof, the Taylor expansion of x -> 1/(1+x)",
        says="1/(1 + x) = 1 + sum_{j>=1} x^j",
        correct="1/(1 + x) = sum_{j>=0} (-1)^j x^j for |x| < 1",
        whose="the text", kind="typo",
        witness="at x = 1/2 the note's series sums to 1/(1 - x) = 2, not 2/3 (experiment invertibility.proof-notes); "
                "the next display carries the (-1)^j",
        survives="yes", conclusion="the expansion that follows uses the right signs",
        check="invertibility.proof-notes"),
    TextError(
        id="invertibility.exponent-i0",
        where="Proof, the expanded sum of products",
        says="... v_t^T x(t, i_0) e^{x(t, L)^T W sum_{k=1}^{j} x(t, i_k) - x(t, i_max(t))}",
        correct="the exponent is x(t, L)^T W sum_{k=0}^{j} (x(t, i_k) - x(t, i_max(t))): the numerator's index i_0 "
                "carries its own exponential",
        whose="the text", kind="typo",
        witness="j = 0: expanding the numerator gives v_t^T x(t, i_0) e^{x(t,L)^T W (x(t, i_0) - x(t, i_max))}, "
                "whose exponent the display drops for every i_0 != i_max(t)",
        survives="yes"),
    TextError(
        id="invertibility.multinomial-notation",
        where="Proof, 'S(t) = {i_1, ..., i_i != i_max(t), unordered}' and 'N(j_1, ..., j_i)'",
        says="S(t), N(j_1, ..., j_i) and i_1, ..., i_i, with i both an index and a count",
        correct="the coefficients of (z_1 + ... + z_m)^j by the multinomial theorem, j! / prod_i k_i!",
        whose="the text", kind="notation",
        witness="(z_1 + z_2 + z_3)^6 expanded term by term: 729 ordered terms in 28 monomials, every count equal to "
                "the multinomial coefficient (experiment invertibility.proof-notes)",
        survives="yes", check="invertibility.proof-notes"),
    TextError(
        id="invertibility.final-sum-n",
        where="Proof, the last display 'v_t^T sum_{i=1}^N x(t, i) N_i = 0'",
        says="sum_{i=1}^N x(t, i) N_i",
        correct="sum_{i=1}^L: x(t, i) is defined for the positions i = 1..L",
        whose="the text", kind="typo",
        witness="for N > L the terms x(t, L+1), ..., x(t, N) do not exist", survives="yes"),
    TextError(
        id=FINAL_DETERMINANT,
        where="Proof, last sentence",
        says="the matrix of this system has non-zero determinant by property (2), so v_t = 0",
        correct="with v_t in R^d (the formulation of record hyperplane-vt) the d x d system has rows y_n = sum_i "
                "N_i(n) x(t, i), n = 2..d+1, in a space of dimension L - 1: the counts satisfy N_{i_max}(n) = "
                "sum_{i != i_max} N_i(n), so y_n = sum_{i != i_max} N_i(n) (x(t, i) + x(t, i_max)) (with the "
                "expansion's signs, +-(x(t, i_max) - x(t, i))), and its determinant is identically zero when d >= "
                "L; property (2) excludes only polynomials that are not identically zero. With that record's own "
                "fix, a scalar u_t per sequence, the equation is u_t y_n = 0 and needs only y_n != 0, which holds "
                "for every d: y_n has positive entries by property (1) (with the signs, its first coordinate is a "
                "positive combination of x(t, i_max)_1 - x(t, i)_1 > 0)",
        whose="the text", kind="wrong statement",
        witness="(N, L, d) = (2, 3, 3), t = (1, 2, 2): the 3 x 3 matrix has exact rank 2, and each of its 3 rows "
                "is nonzero (claim invertibility.proof-steps); exact rank min(d, L - 1) in every case tried",
        survives="partly",
        conclusion="false as written for d >= L; with the scalar u_t of record hyperplane-vt the step proves u_t = 0 "
                   "for every d, so invertibility for d >= L is not left unproved by it: what the proof leaves "
                   "unproved is the number of heads (records rows-span, cap-below-n-to-the-l)",
        check="invertibility.proof-steps"),
)

register_errata(ERRATA)

__all__ = ["CERTIFIED_BELOW", "CERTIFIED_FULL", "ERRATA"]
