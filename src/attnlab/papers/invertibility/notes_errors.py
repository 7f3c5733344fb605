"""Where the invertibility note is wrong or thin, what is right, and why.

One entry per finding: (where in the note, what the text says, what attnlab implements,
the reason). The modules and claims named in each reason check the finding; the report
prints them as one table.
"""

from __future__ import annotations

NOTES_ERRORS: tuple[tuple[str, str, str, str], ...] = (
    ("Theorem 1",
     "For Pd >= N^k",
     "Pd >= N^L",
     "k is never defined; A is N^L x Pd, so rank A <= Pd makes Pd >= N^L necessary for rank N^L "
     "(claim invertibility.minimal-heads)."),
    ("Theorem 1",
     "Pd >= N^L suffices",
     "it suffices when d <= N + L - 2; in general rank A <= 1 + P (N + L - 2)",
     "A^p = C^p [E; Pos] with coefficient rows whose token part and position part each sum to 1: "
     "col A^p lies in span{1} + an (N+L-2)-dimensional space. (N, L, d, P) = (3, 3, 5, 6) has Pd = 30 >= 27 "
     "and certified rank 25 (matrix.rank_cap; claim invertibility.positional-cap)."),
    ("Proof, property (2)",
     "'Such embeddings exist using transcendental numbers'",
     "c_i = 2^(-m_i) exp(sqrt(p_i)), p_i the primes",
     "Lindemann-Weierstrass (Baker's form) with the Q-linear independence of square roots of distinct "
     "primes gives algebraic independence; the powers of 2 keep c_i in [1, 2) (embeddings module). "
     "Any degree must be excluded, not only degree d."),
    ("Proof, first paragraph",
     "A invertible <=> its rows span R^{N^L} <=> the image of f is in no hyperplane",
     "the columns must span; and 'the curve w -> f(w) spans' does not by itself give P = ceil(N^L/d) "
     "points whose d-column blocks are independent",
     "the rows lie in R^{Pd}. Spanning is necessary, not sufficient for a given P: F(w) = [[1, w], [w^2, w^3]] "
     "has independent coordinate functions and det F(w) = 0 for every w. The minimal P is certified "
     "numerically instead (claim invertibility.minimal-heads)."),
    ("Proof, the hyperplane",
     "(v_t) with v_t in R^d and sum_t v_t^T f_t = 0",
     "a hyperplane of R^{N^L} is (u_t) with u_t scalar",
     "with v_t in R^d the statement proved is the linear independence of the N^L d functions f_t(w)_k, "
     "which is false when d > L: any v_t orthogonal to x(t, 1..L) gives v_t^T f_t(w) = 0 for all w "
     "(claim invertibility.proof-steps)."),
    ("Proof, Taylor expansion",
     "1/(1 + x) = 1 + sum_{j>=1} x^j",
     "1/(1 + x) = sum_{j>=0} (-1)^j x^j, |x| < 1",
     "the displayed series is 1/(1 - x) plus a sign slip; the next display does carry (-1)^j "
     "(claim invertibility.proof-steps measures the gap)."),
    ("Proof, the expansion",
     "|x| < 1 'for a large enough w'",
     "the sum of exponentials is < 1 only when every non-maximal exponent is below -ln(L - 1) "
     "and the maximum is unique",
     "sum_{i != i_max} exp(w q (x_i - x_max)) < 1 needs w q gap > ln(L - 1); ties x(t, i)_1 = x(t, i_max)_1 "
     "(the same token at the same position is impossible, but equal first coordinates are excluded only by "
     "property (2))."),
    ("Proof, counting argument",
     "S(t), N(j_1, ..., j_i), i_1, ..., i_i: indices reused",
     "the multinomial coefficients of the expansion of (sum_i z_i)^j",
     "the symbols are overloaded (i is both an index and a count); what is meant is the multinomial "
     "theorem, whose coefficients are positive integers."),
    ("Proof, final determinant",
     "'The matrix of this system has non-zero determinant by property (2)'",
     "the d vectors sum_i N_i x(t, i) lie in span{x(t, 1), ..., x(t, L)}: their determinant is zero "
     "for every embedding when d > L",
     "property (2) only excludes polynomials that are not identically zero; this one is identically zero "
     "for d > L (claim invertibility.proof-steps). The theorem still holds for L < d <= N + L - 2 "
     "(claim invertibility.theorem1-full-rank: (3, 2, 3), (3, 3, 4), (4, 3, 5) have d > L)."),
    ("Proof, the limit",
     "'taking W_11 -> +oo'",
     "any distinct positive w_p: rank N^L is certified from w = 0.01 to 100; the conditioning is best "
     "near w = 0.1-1 (w_p = w p) and degrades at both ends",
     "det of a maximal minor is analytic in w, so it vanishes only on a null set; large w saturates the "
     "softmax and worsens the conditioning (claim invertibility.any-w)."),
)

COLUMNS = ("where", "the note says", "attnlab implements", "why")

__all__ = ["COLUMNS", "NOTES_ERRORS"]
