"""Errors in the math text, as sourced records (:class:`attnlab.errata.TextError`).

Each record says where the text is wrong or loose, what attnlab implements instead, whose error it
is, the witness and whether the text's conclusion survives; ``check`` names the claim or experiment
that measures it. ``attnlab errata transformer-math`` lists them and every report of the paper
shows them as a table.
"""

from __future__ import annotations

from attnlab.errata import TextError
from attnlab.registry import register_errata

_P = "transformer-math"
TEXT = "the text"

ERRATA: tuple[TextError, ...] = (
    # ---- §1.2 -------------------------------------------------------------------------------
    TextError(
        f"{_P}.pe-complex-form", "§1.2.1, after eq. (1)", "f(t)^(i) = e^{i t / w_k}",
        "f(t)^(k) = e^{i w_k t} (the real and imaginary parts are eq. (1)'s cos and sin)", TEXT, "typo",
        "e^{i t / w_k} has frequency 1/w_k = N^{2k/d}, not eq. (1)'s w_k", "yes",
        check=f"{_P}.pe-shift-linear"),
    TextError(
        f"{_P}.pe-shift-affine", "§1.2.1, the shift by s",
        "f(t+s)^(2k) = a sin(w_k t) + b (likewise a' cos(w_k t) + b')",
        "b = sin(w_k s) cos(w_k t) depends on t through the pair's other coordinate: PE(t+s) = M_s PE(t) with M_s "
        "one 2x2 rotation per frequency, not a per-coordinate affine map", TEXT, "notation",
        "max |PE(t+s) - M_s PE(t)| = 1.7e-13 over 512 positions with the rotation; b varies with t", "yes",
        "a shift is a fixed linear map, as the text concludes", f"{_P}.pe-shift-linear"),
    TextError(
        f"{_P}.scale-by-k", "§1.2.2, eq. (5); §2.1.3, the display before (16) and eq. (17)",
        "Softmax(Q K^T / k)", "Softmax(Q K^T / sqrt(k)), as §1.2.3 motivates and [1] defines", TEXT, "typo",
        "§1.2.3 and §2.1.1 write sqrt(d_k); dividing by k shrinks the logits' variance to 1/k", "yes",
        check=f"{_P}.dot-product-variance"),
    TextError(
        f"{_P}.jacobian-sign", "§1.2.3, the matrix J_s after eq. (8)",
        "diagonal entries (2,2) and (n,n) printed -s_2 (1 - s_2), -s_n (1 - s_n)",
        "+s_i (1 - s_i) on the whole diagonal, as the derivation above the matrix gives", TEXT, "typo",
        "max |autograd Jacobian - (diag(s) - s s^T)| = 7.6e-17", "yes", check=f"{_P}.softmax-jacobian"),
    # ---- §2.1 -------------------------------------------------------------------------------
    TextError(
        f"{_P}.taylor-display", "§2.1.2, the first-order Taylor example (both displays)",
        "sum_j (1 + q^_i^T sum_j k^_j) V_j / sum_j (1 + q^_i^T k^_j); simplified: (sum_j V_j + q^_i^T k^_j V_j) / "
        "(n + q^_i^T sum_j k^_j)",
        "(sum_j V_j + q^_i^T sum_j k^_j V_j^T) / (n + q^_i^T sum_j k^_j): phi(x) = [1, x/|x|] in eq. (15)",
        TEXT, "wrong statement",
        "the first display weights every V_j by the same 1 + q^_i.sum_j k^_j: off by 1.90 (n = 29); the second "
        "leaves q^_i^T k^_j V_j outside the sum over j", "yes",
        "the Taylor kernel is a linear attention, as the text concludes", f"{_P}.linear-taylor-identity"),
    TextError(
        f"{_P}.eq16-any-w", "§2.1.3, eq. (16)", "Pr(||P~ w - P w|| < eps ||P w||) > 1 - o(1) for any w",
        "the JL lemma bounds each entry by eps ||p_i|| ||w||; relative to ||P w|| the error grows like sqrt(n/k') "
        "for zero-mean w", "Wang et al. (2020), Linformer, Theorem 1, copied by the text", "missing hypothesis",
        "w ~ N(0, 1), k' = 8 ln n: mean relative error 1.75 at n = 256 and 7.8 at n = 2048; no draw below 1",
        "partly", "low rank suffices for values with a non-zero mean (error 0.26 at k' = 128, n = 256, w ~ N(1, 1))",
        f"{_P}.lowrank-relative-error"),
    TextError(
        f"{_P}.eq16-typos", "§2.1.3, eq. (16) and Lemma 2.1",
        "||P w^T - P w^T||; the \"JR lemma\"; P = exp(A) D_A^{-1}; softmax of an n x n matrix costs o(n^2)",
        "||P~ w^T - P w^T||; the Johnson-Lindenstrauss lemma; P = D_A^{-1} exp(A) (rows normalised); O(n^2)",
        TEXT, "typo", "eq. (16) as printed compares a matrix with itself; exp(A) D_A^{-1} normalises columns",
        "yes", check="transformer-math.efficient-attention-error"),
    # ---- §3.1 -------------------------------------------------------------------------------
    TextError(
        f"{_P}.most-heads-diagonal", "§3.1, Figs. 11-12", "Most of the heads show a diagonal structure",
        "on the thesis's own eight saved heads no head is diagonal: Sigma_2 or Sigma_3 fits each better than the "
        "identity or any shift; the weight concentrates in a band around the diagonal", TEXT, "overstatement",
        "0 of 8 positional; d_Sigma1 / 2n = 0.81-0.97 against d_Sigma / 2n = 0.38-0.59; the largest weight on "
        "the token itself in 0-25% of rows; weight within |i - j| <= 2: 0.47-0.82 (uniform 0.29)", "partly",
        "attention concentrates near the diagonal (§3.1.1), in bands (Sigma_2), not on it (Sigma_1)",
        f"{_P}.head-thesis-most-diagonal"),
    TextError(
        f"{_P}.low-l2-norm", "§3.1", "all the matrix involved are full rank with low l2 norm",
        "full rank holds; the spectral norm of any row-stochastic n x n map lies in [1, sqrt(n)], so \"low\" has "
        "no content without a reference", TEXT, "omission",
        "the thesis's eight maps: rank 16 each, spectral norm 1.31-1.97 of [1, 4]", "partly",
        "full rank holds", f"{_P}.head-thesis-full-rank"),
    TextError(
        f"{_P}.permutation-matrix", "§3.1.1, eq. (19) and §3.1.2", "P is a permutation matrix taken from Sigma",
        "only I_n in Sigma is a permutation: a Sigma_3 member repeats the column e_t in w rows (rank "
        "n - sum (w_i - 1)) and a Sigma_2 member has several nonzeros per row", TEXT, "wrong statement",
        "sigma3(5, [3], [3]) has rank 3 < 5", "partly",
        "the families are well defined as templates; the best true permutation is fitted apart",
        f"{_P}.head-sigma-fits-exact"),
    TextError(
        f"{_P}.sigma3-block-diagonal", "§3.1.2, \"up to a proper permutation of rows as block-diagonal\"",
        "the maps sigma_i: (1, 0, ..., 0) -> (0, ..., 1, ..., 0) make a rare-token matrix diagonal",
        "no permutation of rows or columns makes a Sigma_3 member diagonal (w rows share one column); it is "
        "already block diagonal", TEXT, "wrong statement", "a permutation keeps the rank; a Sigma_3 member has "
        "rank < n and I_n rank n", "partly", "the set X of band + error does contain every family",
        f"{_P}.head-sigma-fits-exact"),
    TextError(
        f"{_P}.pr-anchor", "§3.1.2, P_r and Fig. 13", "P_r has its w ones in the first column (token t opens its "
        "window); Fig. 13 has tokens 3, 4, 5 attend token 4", "either anchor: blocks (t, a, w) with a <= t < a + w; "
        "P_r in R^{w_1 x w_1} and d_1 + w + d_2 = n name one width w_1 = w", TEXT, "notation",
        "Fig. 13's block has t in the middle of its window", "yes", check=f"{_P}.head-sigma-fits-exact"),
    TextError(
        f"{_P}.x-convex", "§3.1.2, existence of solution", "X is convex: the sum of error matrices is an error matrix",
        "with E sparse (at most s nonzeros) X is not convex: two supports give up to 2s nonzeros, and |e1 + e2| "
        "can reach 2 eps; in the box case (no sparsity) X is convex", TEXT, "wrong statement",
        "n = 13, w = 2, eps = 0.05, s = 4: 100% of 200 midpoints leave X (7-8 nonzeros off the band)", "partly",
        "existence holds (closed set, finite dimension)", f"{_P}.head-set-convex"),
    TextError(
        f"{_P}.uniqueness", "§3.1.2, Theorem 3.1", "existence and uniqueness of the solution to (21), by the "
        "Hilbert projection theorem", "Theorem 3.1 needs a Hilbert norm and a convex set; the L1 norm of (22) is "
        "not one (the parallelogram law fails). With a sparsity budget the minimiser is not unique; in the box "
        "case it is, by |H - X| = |H - X~| + |X - X~|", TEXT, "wrong statement",
        "H = [[0.7, 0, 0.3], [0, 1, 0], [0.3, 0, 0.7]], w = 0, eps = 0.1, s = 1: two minimisers at distance 0.5, "
        "|X1 - X2| = 0.2", "partly", "existence holds; uniqueness holds in the box case only",
        f"{_P}.head-projection-unique"),
    TextError(
        f"{_P}.closedness", "§3.1.2, X closed", "the limit of the sparse errors \"is mostly 0\"",
        "for a fixed budget s, X is a finite union over supports of closed boxes, hence closed", TEXT, "omission",
        "the argument never fixes the number of nonzeros that \"sparse\" allows", "yes",
        "X is closed for every fixed s", f"{_P}.head-projection-exact"),
)
register_errata(list(ERRATA))


__all__ = ["ERRATA"]
